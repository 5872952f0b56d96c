package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"riskapi/internal/store"
)

// simulationColumns is the column list scanSimulation reads, in its order. Lists leave the
// request out (it can be tens of megabytes); see listSimulationColumns.
const (
	simulationColumns     = `id, account_id, mode, status, request, payload, summary, attempts, created_at, updated_at`
	listSimulationColumns = `id, account_id, mode, status, NULL, CASE WHEN length(summary) > 0 THEN summary ELSE payload END, summary, attempts, created_at, updated_at`
)

// CreateSimulation inserts sim and, when ev is not nil, its event with the deliveries, in one
// transaction, which also completes done's Idempotency-Key when done is not nil.
func (s *Store) CreateSimulation(ctx context.Context, sim store.Simulation, ev *store.Event, done *store.IdempotencyCompletion) error {
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if err := s.insertSimulation(ctx, tx, sim); err != nil {
			return err
		}
		if ev != nil {
			if _, err := s.createEvent(ctx, tx, *ev); err != nil {
				return err
			}
		}
		return s.completeIn(ctx, tx, done)
	})
	if err != nil {
		return fmt.Errorf("store create simulation: %w", err)
	}
	return nil
}

func (s *Store) insertSimulation(ctx context.Context, db execer, sim store.Simulation) error {
	_, err := db.ExecContext(ctx, s.rebind(`INSERT INTO cascade_simulations (`+simulationColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		sim.ID, sim.AccountID, string(sim.Mode), sim.Status, nonNil(sim.Request), nonNil(sim.Payload), nonNil(sim.Summary), sim.Attempts,
		sim.CreatedAt.UnixMilli(), sim.UpdatedAt.UnixMilli())
	if err != nil {
		return s.constraintError("simulation "+sim.ID, err)
	}
	return nil
}

// QueueSimulation inserts a queued simulation unless its account and mode already have max
// unfinished ones. On PostgreSQL a transaction-level lock on the account and mode makes
// concurrent queues take turns (each counts what the previous one committed); on SQLite the
// write transaction itself excludes every other writer. The transaction also completes done's
// Idempotency-Key when done is not nil.
func (s *Store) QueueSimulation(ctx context.Context, sim store.Simulation, max int, done *store.IdempotencyCompletion) error {
	err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, "cascade_simulations "+sim.AccountID+" "+string(sim.Mode)); err != nil {
			return err
		}
		n, err := s.unfinishedSimulations(ctx, tx, sim.AccountID, sim.Mode)
		if err != nil {
			return fmt.Errorf("count unfinished: %w", err)
		}
		if n >= max {
			return fmt.Errorf("account %s has %d unfinished %s simulations, at most %d: %w", sim.AccountID, n, sim.Mode, max, store.ErrLimitReached)
		}
		if err := s.insertSimulation(ctx, tx, sim); err != nil {
			return err
		}
		return s.completeIn(ctx, tx, done)
	})
	if err != nil {
		return fmt.Errorf("store queue simulation: %w", err)
	}
	return nil
}

// UnfinishedSimulations counts the account's queued and running simulations of one mode.
func (s *Store) UnfinishedSimulations(ctx context.Context, accountID string, mode store.Mode) (int, error) {
	n, err := s.unfinishedSimulations(ctx, s.reader, accountID, mode)
	if err != nil {
		return 0, fmt.Errorf("store unfinished simulations: %w", err)
	}
	return n, nil
}

func (s *Store) unfinishedSimulations(ctx context.Context, db rowQuerier, accountID string, mode store.Mode) (n int, err error) {
	err = db.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM cascade_simulations
		WHERE account_id = ? AND mode = ? AND status IN ('queued', 'running')`), accountID, string(mode)).Scan(&n)
	return n, err
}

// Simulation returns the simulation of that account and mode, or ErrNotFound.
func (s *Store) Simulation(ctx context.Context, accountID string, mode store.Mode, id string) (store.Simulation, error) {
	row := s.reader.QueryRowContext(ctx, s.rebind(`SELECT `+simulationColumns+` FROM cascade_simulations
		WHERE id = ? AND account_id = ? AND mode = ?`), id, accountID, string(mode))
	sim, err := scanSimulation(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Simulation{}, fmt.Errorf("store simulation %s: %w", id, err)
	}
	return sim, nil
}

// ListSimulations pages through an account's simulations of one mode, newest first, without
// their requests.
func (s *Store) ListSimulations(ctx context.Context, accountID string, mode store.Mode, q store.PageQuery) (store.Page[store.Simulation], error) {
	page, err := listPage(ctx, s, "cascade_simulations", listSimulationColumns, "account_id = ? AND mode = ?",
		[]any{accountID, string(mode)}, q, scanSimulation)
	if err != nil {
		return store.Page[store.Simulation]{}, fmt.Errorf("store list simulations: %w", err)
	}
	return page, nil
}

// claimLockSimulations serialises ClaimSimulation across processes on PostgreSQL, so that the
// check "this account has nothing running" and the claim are atomic everywhere: two processes
// never start two simulations of one account. A claim is one short transaction (a few
// milliseconds), taken when a runner has a free slot, so claimers take turns without waiting
// noticeably; SQLite's single writer serialises them anyway.
const claimLockSimulations = "cascade_simulations claim"

// ClaimSimulation leases the next simulation in the fair order (see store.SimulationStore):
// among the unfinished simulations whose lease is free or expired and whose account and mode
// has none running under a live lease, the account served least recently first
// (cascade_simulation_turns; never served counts as the oldest), then the oldest simulation.
// The claim records the account's turn in the same transaction.
func (s *Store) ClaimSimulation(ctx context.Context, owner string, lease time.Duration, now time.Time) (store.Simulation, error) {
	var sim store.Simulation
	at := now.UnixMilli()
	err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, claimLockSimulations); err != nil {
			return err
		}
		var id, account, mode string
		err := tx.QueryRowContext(ctx, s.rebind(`SELECT q.id, q.account_id, q.mode FROM cascade_simulations q
			LEFT JOIN cascade_simulation_turns t ON t.account_id = q.account_id AND t.mode = q.mode
			WHERE q.status IN ('queued', 'running') AND (q.lease_until IS NULL OR q.lease_until < ?)
			  AND NOT EXISTS (SELECT 1 FROM cascade_simulations r
			      WHERE r.account_id = q.account_id AND r.mode = q.mode AND r.status = 'running' AND r.lease_until >= ?)
			ORDER BY COALESCE(t.claimed_at, 0), q.created_at, q.id LIMIT 1`+s.rowLock(` FOR UPDATE OF q SKIP LOCKED`)), at, at).
			Scan(&id, &account, &mode)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations
			SET status = 'running', attempts = attempts + 1, lease_owner = ?, lease_until = ?, updated_at = ?
			WHERE id = ?`), owner, now.Add(lease).UnixMilli(), at, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO cascade_simulation_turns (account_id, mode, claimed_at) VALUES (?, ?, ?)
			ON CONFLICT (account_id, mode) DO UPDATE SET claimed_at = excluded.claimed_at`), account, mode, at); err != nil {
			return err
		}
		sim, err = scanSimulation(tx.QueryRowContext(ctx, s.rebind(`SELECT `+simulationColumns+` FROM cascade_simulations WHERE id = ?`), id))
		return err
	})
	if err != nil {
		return store.Simulation{}, fmt.Errorf("store claim simulation: %w", err)
	}
	return sim, nil
}

// UpdateSimulation replaces the payload and extends the lease of a simulation owner holds.
func (s *Store) UpdateSimulation(ctx context.Context, id, owner string, payload []byte, until, now time.Time) error {
	res, err := s.writer.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations SET payload = ?, lease_until = ?, updated_at = ?
		WHERE id = ? AND lease_owner = ? AND status = 'running'`), nonNil(payload), until.UnixMilli(), now.UnixMilli(), id, owner)
	if err == nil {
		err = leaseHeld(res)
	}
	if err != nil {
		return fmt.Errorf("store update simulation %s: %w", id, err)
	}
	return nil
}

// FinishSimulation records the final status and payload, and the event, in one transaction.
func (s *Store) FinishSimulation(ctx context.Context, id, owner, status string, payload, summary []byte, ev *store.Event, now time.Time) error {
	if status != store.SimulationCompleted && status != store.SimulationFailed {
		return fmt.Errorf("store finish simulation %s: status %q is not final", id, status)
	}
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations
			SET status = ?, payload = ?, summary = ?, lease_owner = NULL, lease_until = NULL, updated_at = ?
			WHERE id = ? AND lease_owner = ? AND status = 'running'`), status, nonNil(payload), nonNil(summary), now.UnixMilli(), id, owner)
		if err != nil {
			return err
		}
		if err := leaseHeld(res); err != nil {
			return err
		}
		if ev != nil {
			_, err = s.createEvent(ctx, tx, *ev)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store finish simulation %s: %w", id, err)
	}
	return nil
}

// ReleaseSimulation puts a simulation owner holds back in the queue, not counting the attempt.
func (s *Store) ReleaseSimulation(ctx context.Context, id, owner string, payload []byte, now time.Time) error {
	res, err := s.writer.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations
		SET status = 'queued', payload = ?, attempts = attempts - 1, lease_owner = NULL, lease_until = NULL, updated_at = ?
		WHERE id = ? AND lease_owner = ? AND status = 'running'`), nonNil(payload), now.UnixMilli(), id, owner)
	if err == nil {
		err = leaseHeld(res)
	}
	if err != nil {
		return fmt.Errorf("store release simulation %s: %w", id, err)
	}
	return nil
}

// LostSimulations returns those of ids that owner no longer holds: not running, or running
// under another owner's lease.
func (s *Store) LostSimulations(ctx context.Context, owner string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := inList(ids)
	rows, err := s.reader.QueryContext(ctx, s.rebind(`SELECT id FROM cascade_simulations
		WHERE id IN `+in+` AND (status <> 'running' OR lease_owner IS NULL OR lease_owner <> ?)`), append(args, owner)...)
	if err != nil {
		return nil, fmt.Errorf("store lost simulations: %w", err)
	}
	defer rows.Close()
	var lost []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store lost simulations: %w", err)
		}
		lost = append(lost, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store lost simulations: %w", err)
	}
	return lost, nil
}

// CancelSimulation marks a queued or running simulation canceled and releases its lease, then
// reads it back in the same transaction (without its request); a simulation that had already
// finished is returned as it is with ErrSimulationFinished.
func (s *Store) CancelSimulation(ctx context.Context, accountID string, mode store.Mode, id string, payload []byte, now time.Time) (store.Simulation, error) {
	var sim store.Simulation
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations
			SET status = 'canceled', payload = ?, lease_owner = NULL, lease_until = NULL, updated_at = ?
			WHERE id = ? AND account_id = ? AND mode = ? AND status IN ('queued', 'running')`),
			nonNil(payload), now.UnixMilli(), id, accountID, string(mode))
		if err != nil {
			return err
		}
		canceled := matchedOr(res, store.ErrSimulationFinished)
		sim, err = scanSimulation(tx.QueryRowContext(ctx, s.rebind(`SELECT `+listSimulationColumns+` FROM cascade_simulations
			WHERE id = ? AND account_id = ? AND mode = ?`), id, accountID, string(mode)))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		return canceled
	})
	if err != nil {
		return sim, fmt.Errorf("store cancel simulation %s: %w", id, err)
	}
	return sim, nil
}

// leaseHeld turns an update that matched no row (the lease was lost) into ErrLeaseLost.
func leaseHeld(res sql.Result) error { return matchedOr(res, store.ErrLeaseLost) }

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func scanSimulation(row scanner) (store.Simulation, error) {
	var (
		sim              store.Simulation
		mode             string
		created, updated int64
	)
	if err := row.Scan(&sim.ID, &sim.AccountID, &mode, &sim.Status, &sim.Request, &sim.Payload, &sim.Summary, &sim.Attempts, &created, &updated); err != nil {
		return store.Simulation{}, err
	}
	sim.Mode = store.Mode(mode)
	sim.CreatedAt = fromMillis(created)
	sim.UpdatedAt = fromMillis(updated)
	return sim, nil
}
