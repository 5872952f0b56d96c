package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"riskapi/internal/store"
)

// driftEventsPerInsert is how many events one INSERT statement carries: 4 parameters each,
// 2,000 in all, well under SQLite's 32,766 and PostgreSQL's 65,535 parameters a statement.
// A batch of 10,000 events is then 20 statements instead of 10,000 round trips.
const driftEventsPerInsert = 500

// AddDriftEvents appends events to the agent's history in one transaction. Repeated event ids
// (stored before, or earlier in the batch) are skipped by the unique index with ON CONFLICT DO
// NOTHING; what each statement inserted is its affected-row count, and the agent's row keeps
// the running total, so the answer costs the same on the millionth event as on the first.
// Batches of one agent are serialised by a lock on the agent: on PostgreSQL, two batches
// inserting the same ids in different orders would otherwise wait on each other's
// unique-index entries and deadlock, and the total is read and written back under it.
func (s *Store) AddDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, events []store.DriftEvent, answer func(store.DriftEventBatch) (*store.IdempotencyCompletion, error)) (store.DriftEventBatch, error) {
	var batch store.DriftEventBatch
	// The prepared statement is fetched before the transaction begins: preparing it takes a
	// connection of the writer, whose only one (SQLite) the transaction would hold.
	var full *sql.Stmt
	if !s.dialect.ArrayParams && len(events) >= driftEventsPerInsert {
		var err error
		if full, err = s.driftInsertStmt(ctx); err != nil {
			return store.DriftEventBatch{}, fmt.Errorf("store add drift events of %s: prepare: %w", agentID, err)
		}
	}
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, "drift_events "+accountID+" "+string(mode)+" "+agentID); err != nil {
			return fmt.Errorf("lock agent: %w", err)
		}
		agent, stored, err := s.driftAgent(ctx, tx, accountID, mode, agentID)
		if err != nil {
			return err
		}
		perInsert := driftEventsPerInsert
		if s.dialect.ArrayParams {
			perInsert = max(len(events), 1) // arrays have no parameter limit
		}
		for start := 0; start < len(events); start += perInsert {
			n, err := s.insertDriftEvents(ctx, tx, full, agent, events[start:min(start+perInsert, len(events))])
			if err != nil {
				return fmt.Errorf("insert events: %w", err)
			}
			batch.Accepted += n
		}
		batch.Duplicates = len(events) - batch.Accepted
		batch.Total = stored + int64(batch.Accepted)
		if batch.Accepted > 0 {
			if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE drift_agents SET events = ? WHERE id = ?`), batch.Total, agent); err != nil {
				return fmt.Errorf("count events: %w", err)
			}
		}
		return answerIn(ctx, s, tx, answer, batch)
	})
	if err != nil {
		return store.DriftEventBatch{}, fmt.Errorf("store add drift events of %s: %w", agentID, err)
	}
	return batch, nil
}

// driftAgent returns the number of the agent's row, created on its first batch, and how many
// events it holds. The caller holds the agent's lock (or SQLite's one writer), so no other
// transaction creates the row between the read and the insert.
func (s *Store) driftAgent(ctx context.Context, tx *sql.Tx, accountID string, mode store.Mode, agentID string) (agent, events int64, err error) {
	err = tx.QueryRowContext(ctx, s.rebind(`SELECT id, events FROM drift_agents WHERE account_id = ? AND mode = ? AND agent_id = ?`),
		accountID, string(mode), agentID).Scan(&agent, &events)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRowContext(ctx, s.rebind(`INSERT INTO drift_agents (account_id, mode, agent_id) VALUES (?, ?, ?) RETURNING id`),
			accountID, string(mode), agentID).Scan(&agent)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read agent: %w", err)
	}
	return agent, events, nil
}

// insertDriftEvents inserts one statement's worth of the agent's events, skipping ids it
// holds, and returns how many it inserted; full is driftInsertStmt's statement, used for a
// full statement's worth.
func (s *Store) insertDriftEvents(ctx context.Context, tx *sql.Tx, full *sql.Stmt, agent int64, events []store.DriftEvent) (int, error) {
	if s.dialect.ArrayParams {
		return s.insertDriftEventArrays(ctx, tx, agent, events)
	}
	args := make([]any, 0, 4*len(events))
	for _, ev := range events {
		eventID := sql.NullString{String: ev.EventID, Valid: ev.EventID != ""}
		args = append(args, agent, eventID, ev.Timestamp.UnixNano(), ev.Payload)
	}
	var res sql.Result
	if full != nil && len(events) == driftEventsPerInsert {
		txStmt := tx.StmtContext(ctx, full)
		var err error
		res, err = txStmt.ExecContext(ctx, args...)
		txStmt.Close()
		if err != nil {
			return 0, err
		}
	} else {
		var err error
		if res, err = tx.ExecContext(ctx, s.rebind(driftInsertQuery(len(events))), args...); err != nil {
			return 0, err
		}
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// driftInsertQuery is the INSERT of n events, 4 parameters each.
func driftInsertQuery(n int) string {
	var q strings.Builder
	q.Grow(96 + 14*n)
	q.WriteString(`INSERT INTO drift_events (agent, event_id, ts, payload) VALUES `)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?)")
	}
	q.WriteString(` ON CONFLICT DO NOTHING`)
	return q.String()
}

// driftInsertStmt returns the INSERT of driftEventsPerInsert events, prepared once on the
// writer: SQLite compiling the 2,000-parameter statement anew took a sixth of the insert's
// time. A failed prepare is not kept, so the next batch tries again. Call it outside a
// transaction of the writer.
func (s *Store) driftInsertStmt(ctx context.Context) (*sql.Stmt, error) {
	s.driftInsert.mu.Lock()
	defer s.driftInsert.mu.Unlock()
	if s.driftInsert.stmt == nil {
		stmt, err := s.writer.PrepareContext(ctx, s.rebind(driftInsertQuery(driftEventsPerInsert)))
		if err != nil {
			return nil, err
		}
		s.driftInsert.stmt = stmt
	}
	return s.driftInsert.stmt, nil
}

// insertDriftEventArrays is insertDriftEvents with each column passed as one array and
// unnested (PostgreSQL): 3 parameters however many events, instead of 4 an event to encode,
// send and bind. WITH ORDINALITY and ORDER BY keep the batch's order, which seq records.
func (s *Store) insertDriftEventArrays(ctx context.Context, tx *sql.Tx, agent int64, events []store.DriftEvent) (int, error) {
	ids := make([]*string, len(events))
	ts := make([]int64, len(events))
	payloads := make([][]byte, len(events))
	for i := range events {
		if events[i].EventID != "" {
			ids[i] = &events[i].EventID
		}
		ts[i] = events[i].Timestamp.UnixNano()
		payloads[i] = events[i].Payload
	}
	res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO drift_events (agent, event_id, ts, payload)
		SELECT ?, e.event_id, e.ts, e.payload
		FROM unnest(?::text[], ?::bigint[], ?::bytea[]) WITH ORDINALITY AS e (event_id, ts, payload, n)
		ORDER BY e.n
		ON CONFLICT DO NOTHING`), agent, ids, ts, payloads)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// DriftEvents returns up to limit of the agent's events in insertion order, within
// [from, to) when those are given.
func (s *Store) DriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, from, to *time.Time, limit int) ([]store.DriftEvent, error) {
	query := `SELECT e.event_id, e.ts, e.payload FROM drift_agents a JOIN drift_events e ON e.agent = a.id
		WHERE a.account_id = ? AND a.mode = ? AND a.agent_id = ?`
	args := []any{accountID, string(mode), agentID}
	if from != nil {
		query += ` AND e.ts >= ?`
		args = append(args, from.UnixNano())
	}
	if to != nil {
		query += ` AND e.ts < ?`
		args = append(args, to.UnixNano())
	}
	query += ` ORDER BY e.seq LIMIT ?`
	args = append(args, limit)
	return s.scanDriftEvents(ctx, agentID, query, args)
}

// LatestDriftEvents returns the agent's newest limit events in insertion order: read newest
// first along the (agent, seq) index, then reversed.
func (s *Store) LatestDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, limit int) ([]store.DriftEvent, error) {
	out, err := s.scanDriftEvents(ctx, agentID, `SELECT e.event_id, e.ts, e.payload FROM drift_agents a JOIN drift_events e ON e.agent = a.id
		WHERE a.account_id = ? AND a.mode = ? AND a.agent_id = ? ORDER BY e.seq DESC LIMIT ?`,
		[]any{accountID, string(mode), agentID, limit})
	slices.Reverse(out)
	return out, err
}

// scanDriftEvents runs a query of (event_id, ts, payload) rows.
func (s *Store) scanDriftEvents(ctx context.Context, agentID, query string, args []any) ([]store.DriftEvent, error) {
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

// CountDriftEvents returns how many events the agent has stored: its row's count, none when
// it has no row.
func (s *Store) CountDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string) (int64, error) {
	var n int64
	err := s.reader.QueryRowContext(ctx, s.rebind(`SELECT events FROM drift_agents
		WHERE account_id = ? AND mode = ? AND agent_id = ?`), accountID, string(mode), agentID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store count drift events of %s: %w", agentID, err)
	}
	return n, nil
}
