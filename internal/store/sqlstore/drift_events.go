package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"riskapi/internal/store"
)

// driftEventsPerInsert is how many events one INSERT statement carries: 6 parameters each,
// 3,000 in all, well under SQLite's 32,766 and PostgreSQL's 65,535 parameters a statement.
// A batch of 10,000 events is then 20 statements instead of 10,000 round trips.
const driftEventsPerInsert = 500

// AddDriftEvents appends events to the agent's history in one transaction. Repeated event ids
// (stored before, or earlier in the batch) are skipped by the unique index with ON CONFLICT DO
// NOTHING; what each statement inserted is its affected-row count. Batches of one agent are
// serialised by a lock on the agent: on PostgreSQL, two batches inserting the same ids in
// different orders would otherwise wait on each other's unique-index entries and deadlock.
func (s *Store) AddDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, events []store.DriftEvent, answer func(store.DriftEventBatch) (*store.IdempotencyCompletion, error)) (store.DriftEventBatch, error) {
	var batch store.DriftEventBatch
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, "drift_events "+accountID+" "+string(mode)+" "+agentID); err != nil {
			return fmt.Errorf("lock agent: %w", err)
		}
		for start := 0; start < len(events); start += driftEventsPerInsert {
			chunk := events[start:min(start+driftEventsPerInsert, len(events))]
			var q strings.Builder
			q.WriteString(`INSERT INTO drift_events (account_id, mode, agent_id, event_id, ts, payload) VALUES `)
			args := make([]any, 0, 6*len(chunk))
			for i, ev := range chunk {
				if i > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?, ?, ?, ?)")
				eventID := sql.NullString{String: ev.EventID, Valid: ev.EventID != ""}
				args = append(args, accountID, string(mode), agentID, eventID, ev.Timestamp.UnixNano(), ev.Payload)
			}
			q.WriteString(` ON CONFLICT DO NOTHING`)
			res, err := tx.ExecContext(ctx, s.rebind(q.String()), args...)
			if err != nil {
				return fmt.Errorf("insert events: %w", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("insert events: %w", err)
			}
			batch.Accepted += int(n)
		}
		batch.Duplicates = len(events) - batch.Accepted
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM drift_events
			WHERE account_id = ? AND mode = ? AND agent_id = ?`), accountID, string(mode), agentID).Scan(&batch.Total); err != nil {
			return fmt.Errorf("count events: %w", err)
		}
		return answerIn(ctx, s, tx, answer, batch)
	})
	if err != nil {
		return store.DriftEventBatch{}, fmt.Errorf("store add drift events of %s: %w", agentID, err)
	}
	return batch, nil
}

// DriftEvents returns up to limit of the agent's events in insertion order, within
// [from, to) when those are given.
func (s *Store) DriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, from, to *time.Time, limit int) ([]store.DriftEvent, error) {
	query := `SELECT event_id, ts, payload FROM drift_events WHERE account_id = ? AND mode = ? AND agent_id = ?`
	args := []any{accountID, string(mode), agentID}
	if from != nil {
		query += ` AND ts >= ?`
		args = append(args, from.UnixNano())
	}
	if to != nil {
		query += ` AND ts < ?`
		args = append(args, to.UnixNano())
	}
	query += ` ORDER BY seq LIMIT ?`
	args = append(args, limit)
	rows, err := s.reader.QueryContext(ctx, s.rebind(query), args...)
	if err != nil {
		return nil, fmt.Errorf("store drift events of %s: %w", agentID, err)
	}
	defer rows.Close()
	var out []store.DriftEvent
	for rows.Next() {
		var (
			ev      store.DriftEvent
			eventID sql.NullString
			ts      int64
		)
		if err := rows.Scan(&eventID, &ts, &ev.Payload); err != nil {
			return nil, fmt.Errorf("store drift events of %s: %w", agentID, err)
		}
		ev.EventID = eventID.String
		ev.Timestamp = time.Unix(0, ts).UTC()
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store drift events of %s: %w", agentID, err)
	}
	return out, nil
}

// CountDriftEvents returns how many events the agent has stored.
func (s *Store) CountDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string) (int64, error) {
	var n int64
	err := s.reader.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM drift_events
		WHERE account_id = ? AND mode = ? AND agent_id = ?`), accountID, string(mode), agentID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store count drift events of %s: %w", agentID, err)
	}
	return n, nil
}
