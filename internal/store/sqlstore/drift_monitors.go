package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"riskapi/internal/jobs"
	"riskapi/internal/store"
)

// monitorColumns is the column list scanMonitor reads, in its order.
const monitorColumns = `id, account_id, mode, agent_id, principal_id, sensitivity, baseline, min_events, description,
	status, events_seen, looks, spent, last_evaluated_at, alerts, detected, created_at, updated_at`

// CreateDriftMonitor inserts m; the unique index on (account, mode, agent) makes a second
// monitor of the agent ErrConflict, in one statement on both databases.
func (s *Store) CreateDriftMonitor(ctx context.Context, m store.DriftMonitor, done *store.IdempotencyCompletion) error {
	alerts, detected, err := monitorState(m)
	if err != nil {
		return fmt.Errorf("store create drift monitor %s: %w", m.ID, err)
	}
	err = s.inTx(ctx, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO drift_monitors (`+monitorColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			m.ID, m.AccountID, string(m.Mode), m.AgentID, m.PrincipalID, m.Sensitivity, string(m.Baseline), m.MinEvents,
			m.Description, m.Status, m.EventsSeen, m.Looks, m.Spent, nullMillis(m.LastEvaluatedAt), alerts, detected,
			m.CreatedAt.UnixMilli(), m.UpdatedAt.UnixMilli())
		if err != nil {
			return s.constraintError("drift monitor "+m.ID, err)
		}
		return s.completeIn(ctx, tx, done)
	})
	if err != nil {
		return fmt.Errorf("store create drift monitor %s: %w", m.ID, err)
	}
	return nil
}

// DriftMonitor returns the monitor of that account and mode, or ErrNotFound.
func (s *Store) DriftMonitor(ctx context.Context, accountID string, mode store.Mode, id string) (store.DriftMonitor, error) {
	return s.oneMonitor(ctx, s.reader, "id = ? AND account_id = ? AND mode = ?", id, accountID, string(mode))
}

// BackgroundDriftMonitor returns a monitor by id alone (read through the writer, so a job
// sees the state the previous look committed).
func (s *Store) BackgroundDriftMonitor(ctx context.Context, id string) (store.DriftMonitor, error) {
	return s.oneMonitor(ctx, s.writer, "id = ?", id)
}

// DriftMonitorOfAgent returns the agent's monitor in that mode, or ErrNotFound.
func (s *Store) DriftMonitorOfAgent(ctx context.Context, accountID string, mode store.Mode, agentID string) (store.DriftMonitor, error) {
	return s.oneMonitor(ctx, s.reader, "account_id = ? AND mode = ? AND agent_id = ?", accountID, string(mode), agentID)
}

func (s *Store) oneMonitor(ctx context.Context, db *sql.DB, where string, args ...any) (store.DriftMonitor, error) {
	m, err := scanMonitor(db.QueryRowContext(ctx, s.rebind(`SELECT `+monitorColumns+` FROM drift_monitors WHERE `+where), args...))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.DriftMonitor{}, fmt.Errorf("store drift monitor %v: %w", args[0], err)
	}
	return m, nil
}

// ListDriftMonitors pages through an account's monitors of one mode, newest first, of one
// agent unless agentID is "".
func (s *Store) ListDriftMonitors(ctx context.Context, accountID string, mode store.Mode, agentID string, q store.PageQuery) (store.Page[store.DriftMonitor], error) {
	where, args := "account_id = ? AND mode = ?", []any{accountID, string(mode)}
	if agentID != "" {
		where += " AND agent_id = ?"
		args = append(args, agentID)
	}
	page, err := listPage(ctx, s, "drift_monitors", monitorColumns, where, args, q, scanMonitor)
	if err != nil {
		return store.Page[store.DriftMonitor]{}, fmt.Errorf("store list drift monitors: %w", err)
	}
	return page, nil
}

// UpdateDriftMonitor stores the configuration the API lets a client change.
func (s *Store) UpdateDriftMonitor(ctx context.Context, m store.DriftMonitor) error {
	res, err := s.writer.ExecContext(ctx, s.rebind(`UPDATE drift_monitors SET sensitivity = ?, description = ?, status = ?, updated_at = ?
		WHERE id = ? AND account_id = ? AND mode = ?`),
		m.Sensitivity, m.Description, m.Status, m.UpdatedAt.UnixMilli(), m.ID, m.AccountID, string(m.Mode))
	if err == nil {
		err = matchedOr(res, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store update drift monitor %s: %w", m.ID, err)
	}
	return nil
}

// DeleteDriftMonitor deletes the monitor; ErrNotFound if absent.
func (s *Store) DeleteDriftMonitor(ctx context.Context, accountID string, mode store.Mode, id string) error {
	res, err := s.writer.ExecContext(ctx, s.rebind(`DELETE FROM drift_monitors WHERE id = ? AND account_id = ? AND mode = ?`),
		id, accountID, string(mode))
	if err == nil {
		err = matchedOr(res, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store delete drift monitor %s: %w", id, err)
	}
	return nil
}

// RecordDriftMonitorLook writes the look's state, analysis and event in one transaction; the
// state's UPDATE matches only while the stored monitor has prevLooks looks, so of two
// concurrent looks one is recorded (the other is ErrConflict and rolls back its analysis).
func (s *Store) RecordDriftMonitorLook(ctx context.Context, m store.DriftMonitor, prevLooks int, a store.Analysis, ev *store.Event) error {
	alerts, detected, err := monitorState(m)
	if err != nil {
		return fmt.Errorf("store record drift monitor %s look: %w", m.ID, err)
	}
	err = s.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE drift_monitors
			SET events_seen = ?, looks = ?, spent = ?, last_evaluated_at = ?, alerts = ?, detected = ?
			WHERE id = ? AND looks = ?`),
			m.EventsSeen, m.Looks, m.Spent, nullMillis(m.LastEvaluatedAt), alerts, detected, m.ID, prevLooks)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			var exists int
			if qerr := tx.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM drift_monitors WHERE id = ?`), m.ID).Scan(&exists); qerr != nil {
				return errors.Join(err, qerr)
			}
			if exists == 0 {
				return store.ErrNotFound
			}
			return fmt.Errorf("another look was recorded first: %w", store.ErrConflict)
		}
		payload := a.Payload
		if payload == nil {
			payload = []byte{}
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO analyses (`+analysisColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			a.ID, a.AccountID, string(a.Mode), a.Product, a.Subject, payload, a.CreatedAt.UnixMilli()); err != nil {
			return s.constraintError("analysis "+a.ID, err)
		}
		if ev != nil {
			if _, err := s.createEvent(ctx, tx, *ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store record drift monitor %s look: %w", m.ID, err)
	}
	return nil
}

// ScheduleDriftMonitorLook inserts the look's River job (unique while one of its kind waits
// or runs: jobs.DriftMonitorLook).
func (s *Store) ScheduleDriftMonitorLook(ctx context.Context, monitorID string, seen int64, soon bool, at time.Time) error {
	opts := jobs.DriftMonitorLook{}.InsertOpts()
	opts.ScheduledAt = at
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		return s.insertJobs(ctx, tx, river.InsertManyParams{Args: jobs.DriftMonitorLook{MonitorID: monitorID, Seen: seen, Soon: soon}, InsertOpts: &opts})
	})
	if err != nil {
		return fmt.Errorf("store schedule drift monitor %s look: %w", monitorID, err)
	}
	return nil
}

// monitorState encodes the monitor's alerts and detected parties as stored (JSON arrays).
func monitorState(m store.DriftMonitor) (alerts, detected string, err error) {
	a, d := m.Alerts, m.Detected
	if a == nil {
		a = []store.DriftMonitorAlert{}
	}
	if d == nil {
		d = []string{}
	}
	ab, err := json.Marshal(a)
	if err != nil {
		return "", "", err
	}
	db, err := json.Marshal(d)
	if err != nil {
		return "", "", err
	}
	return string(ab), string(db), nil
}

func scanMonitor(row scanner) (store.DriftMonitor, error) {
	var (
		m                store.DriftMonitor
		mode, baseline   string
		alerts, detected string
		created, updated int64
		lastEvaluated    sql.NullInt64
	)
	err := row.Scan(&m.ID, &m.AccountID, &mode, &m.AgentID, &m.PrincipalID, &m.Sensitivity, &baseline, &m.MinEvents,
		&m.Description, &m.Status, &m.EventsSeen, &m.Looks, &m.Spent, &lastEvaluated, &alerts, &detected, &created, &updated)
	if err != nil {
		return store.DriftMonitor{}, err
	}
	m.Mode = store.Mode(mode)
	if baseline != "" {
		m.Baseline = []byte(baseline)
	}
	if err := json.Unmarshal([]byte(alerts), &m.Alerts); err != nil {
		return store.DriftMonitor{}, fmt.Errorf("alerts: %w", err)
	}
	if err := json.Unmarshal([]byte(detected), &m.Detected); err != nil {
		return store.DriftMonitor{}, fmt.Errorf("detected: %w", err)
	}
	for i := range m.Alerts {
		m.Alerts[i].RaisedAt = m.Alerts[i].RaisedAt.UTC()
	}
	m.LastEvaluatedAt = fromNullMillis(lastEvaluated)
	m.CreatedAt = fromMillis(created)
	m.UpdatedAt = fromMillis(updated)
	return m, nil
}
