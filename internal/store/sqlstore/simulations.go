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
// transaction.
func (s *Store) CreateSimulation(ctx context.Context, sim store.Simulation, ev *store.Event) error {
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO cascade_simulations (`+simulationColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			sim.ID, sim.AccountID, string(sim.Mode), sim.Status, nonNil(sim.Request), nonNil(sim.Payload), nonNil(sim.Summary), sim.Attempts,
			sim.CreatedAt.UnixMilli(), sim.UpdatedAt.UnixMilli())
		if err != nil {
			return s.constraintError("simulation "+sim.ID, err)
		}
		if ev != nil {
			_, err = s.createEvent(ctx, tx, *ev)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store create simulation: %w", err)
	}
	return nil
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

// ClaimSimulation leases the oldest unfinished simulation whose lease is free or expired. On
// PostgreSQL the candidate row is locked with SKIP LOCKED, so concurrent claimers take
// different simulations; SQLite's single writer serialises claims.
func (s *Store) ClaimSimulation(ctx context.Context, owner string, lease time.Duration, now time.Time) (store.Simulation, error) {
	var sim store.Simulation
	err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		var id string
		err := tx.QueryRowContext(ctx, s.rebind(`SELECT id FROM cascade_simulations
			WHERE status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < ?)
			ORDER BY created_at, id LIMIT 1`+s.rowLock(` FOR UPDATE SKIP LOCKED`)), now.UnixMilli()).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations
			SET status = 'running', attempts = attempts + 1, lease_owner = ?, lease_until = ?, updated_at = ?
			WHERE id = ?`), owner, now.Add(lease).UnixMilli(), now.UnixMilli(), id); err != nil {
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
