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
// Idempotency-Key when done is not nil, and dispatches the simulation (queues its first job)
// when its account and mode has no other dispatched one.
func (s *Store) QueueSimulation(ctx context.Context, sim store.Simulation, max int, done *store.IdempotencyCompletion) error {
	err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, simulationsLockKey(sim.AccountID, string(sim.Mode))); err != nil {
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
		if _, err := s.dispatchNext(ctx, tx, sim.AccountID, string(sim.Mode)); err != nil {
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

// CancelSimulation marks a queued or running simulation canceled, drops the chunks it had
// stored and dispatches the account's next simulation, then reads it back in the same
// transaction (without its request); a simulation that had already finished is returned as it
// is with ErrSimulationFinished. Its queued chunk jobs find it canceled and end at once.
func (s *Store) CancelSimulation(ctx context.Context, accountID string, mode store.Mode, id string, payload []byte, now time.Time) (store.Simulation, error) {
	var sim store.Simulation
	err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, simulationsLockKey(accountID, string(mode))); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations
			SET status = 'canceled', payload = ?, updated_at = ?
			WHERE id = ? AND account_id = ? AND mode = ? AND status IN ('queued', 'running')`),
			nonNil(payload), now.UnixMilli(), id, accountID, string(mode))
		if err != nil {
			return err
		}
		canceled := matchedOr(res, store.ErrSimulationFinished)
		if canceled == nil {
			if err := s.endSimulation(ctx, tx, id, accountID, string(mode)); err != nil {
				return err
			}
		}
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
