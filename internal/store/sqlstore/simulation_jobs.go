package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"riskapi/internal/jobs"
	"riskapi/internal/store"
)

// simulationsLockKey names the lock (PostgreSQL) that makes an account and mode's checks and
// dispatches atomic across processes: the per-account limit, and "no other simulation of the
// account is dispatched" before one is.
func simulationsLockKey(accountID, mode string) string {
	return "cascade_simulations " + accountID + " " + mode
}

// dispatchNext queues the first chunk of the account and mode's oldest queued simulation that
// is not dispatched yet, unless another unfinished one is: an account has the jobs of one
// simulation at a time in River's queue, so the queue interleaves accounts (round-robin)
// however many simulations each has queued. It reports whether it dispatched one. The caller
// holds simulationsLockKey.
func (s *Store) dispatchNext(ctx context.Context, tx *sql.Tx, accountID, mode string) (bool, error) {
	var busy int
	if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM cascade_simulations
		WHERE account_id = ? AND mode = ? AND status IN ('queued', 'running') AND dispatched = 1`), accountID, mode).Scan(&busy); err != nil {
		return false, fmt.Errorf("dispatch: %w", err)
	}
	if busy > 0 {
		return false, nil
	}
	var id string
	err := tx.QueryRowContext(ctx, s.rebind(`SELECT id FROM cascade_simulations
		WHERE account_id = ? AND mode = ? AND status = 'queued' AND dispatched = 0
		ORDER BY created_at, id LIMIT 1`), accountID, mode).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dispatch: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations SET dispatched = 1 WHERE id = ?`), id); err != nil {
		return false, fmt.Errorf("dispatch %s: %w", id, err)
	}
	return true, s.insertJobs(ctx, tx, chunkJob(id, 0))
}

// chunkJob is the insert of chunk c of simulation id.
func chunkJob(id string, c int) river.InsertManyParams {
	return river.InsertManyParams{Args: jobs.SimulationChunk{SimulationID: id, Chunk: c}}
}

// insertJobs inserts River jobs in tx.
func (s *Store) insertJobs(ctx context.Context, tx *sql.Tx, params ...river.InsertManyParams) error {
	if len(params) == 0 {
		return nil
	}
	if _, err := s.inserter.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	return nil
}

// BackgroundSimulation returns a simulation by id alone, its request included, for the job
// that works it; ErrNotFound if there is none.
func (s *Store) BackgroundSimulation(ctx context.Context, id string) (store.Simulation, error) {
	sim, err := scanSimulation(s.writer.QueryRowContext(ctx, s.rebind(`SELECT `+simulationColumns+` FROM cascade_simulations WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Simulation{}, fmt.Errorf("store simulation %s: %w", id, err)
	}
	return sim, nil
}

// StartSimulation marks a queued simulation running with payload, records its number of
// chunks, and queues its chunks 1 … window (chunk 0's job is the caller). A simulation already
// running was started by an earlier attempt of the same job: nothing changes. A finished or
// canceled one is ErrSimulationFinished. attempts grows by one either way, so a simulation
// whose first job keeps being interrupted can be failed.
func (s *Store) StartSimulation(ctx context.Context, id string, chunks, window int, payload []byte, now time.Time) (attempts int, err error) {
	err = s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var status string
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT status FROM cascade_simulations WHERE id = ?`+s.rowLock(` FOR UPDATE`)), id).Scan(&status); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		switch status {
		case store.SimulationRunning:
			return tx.QueryRowContext(ctx, s.rebind(`UPDATE cascade_simulations SET attempts = attempts + 1 WHERE id = ? RETURNING attempts`), id).Scan(&attempts)
		case store.SimulationQueued:
		default:
			return store.ErrSimulationFinished
		}
		next := min(1+window, chunks)
		if err := tx.QueryRowContext(ctx, s.rebind(`UPDATE cascade_simulations
			SET status = 'running', payload = ?, chunks = ?, next_chunk = ?, attempts = attempts + 1, updated_at = ?
			WHERE id = ? RETURNING attempts`), nonNil(payload), chunks, next, now.UnixMilli(), id).Scan(&attempts); err != nil {
			return err
		}
		params := make([]river.InsertManyParams, 0, next-1)
		for c := 1; c < next; c++ {
			params = append(params, chunkJob(id, c))
		}
		return s.insertJobs(ctx, tx, params...)
	})
	if err != nil {
		return 0, fmt.Errorf("store start simulation %s: %w", id, err)
	}
	return attempts, nil
}

// StoreSimulationChunk keeps chunk c's result of a running simulation (a chunk stored before,
// by an earlier attempt, keeps its first bytes: both are the same), rewrites the payload with
// progress(done chunks), queues the next chunk of the simulation's window, and once every
// chunk is stored, the merge job; all in one transaction, which on PostgreSQL locks the
// simulation's row so that concurrent chunks take turns. ErrSimulationFinished if the
// simulation is no longer running.
func (s *Store) StoreSimulationChunk(ctx context.Context, id string, c int, body []byte, worker string, progress func(done []int) ([]byte, error), now time.Time) error {
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var (
			status      string
			chunks, nxt int
		)
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT status, chunks, next_chunk FROM cascade_simulations WHERE id = ?`+s.rowLock(` FOR UPDATE`)), id).
			Scan(&status, &chunks, &nxt); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		if status != store.SimulationRunning {
			return store.ErrSimulationFinished
		}
		if c < 0 || c >= chunks {
			return fmt.Errorf("chunk %d of %d", c, chunks)
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO cascade_simulation_chunks (simulation_id, chunk, body, worker, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (simulation_id, chunk) DO NOTHING`), id, c, nonNil(body), worker, now.UnixMilli()); err != nil {
			return err
		}
		done, err := s.storedChunks(ctx, tx, id)
		if err != nil {
			return err
		}
		payload, err := progress(done)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations SET payload = ?, next_chunk = ?, updated_at = ? WHERE id = ?`),
			nonNil(payload), min(nxt+1, chunks), now.UnixMilli(), id); err != nil {
			return err
		}
		var params []river.InsertManyParams
		if nxt < chunks {
			params = append(params, chunkJob(id, nxt))
		}
		if len(done) == chunks {
			params = append(params, river.InsertManyParams{Args: jobs.SimulationMerge{SimulationID: id}})
		}
		return s.insertJobs(ctx, tx, params...)
	})
	if err != nil {
		return fmt.Errorf("store simulation %s chunk %d: %w", id, c, err)
	}
	return nil
}

// storedChunks lists the chunk indexes stored for a simulation, in order.
func (s *Store) storedChunks(ctx context.Context, db *sql.Tx, id string) ([]int, error) {
	rows, err := db.QueryContext(ctx, s.rebind(`SELECT chunk FROM cascade_simulation_chunks WHERE simulation_id = ? ORDER BY chunk`), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var done []int
	for rows.Next() {
		var c int
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		done = append(done, c)
	}
	return done, rows.Err()
}

// SimulationChunks returns the stored chunk results of a simulation in chunk order, and the
// worker that stored each.
func (s *Store) SimulationChunks(ctx context.Context, id string) ([]store.SimulationChunk, error) {
	rows, err := s.writer.QueryContext(ctx, s.rebind(`SELECT chunk, body, worker FROM cascade_simulation_chunks WHERE simulation_id = ? ORDER BY chunk`), id)
	if err != nil {
		return nil, fmt.Errorf("store simulation %s chunks: %w", id, err)
	}
	defer rows.Close()
	var out []store.SimulationChunk
	for rows.Next() {
		var c store.SimulationChunk
		if err := rows.Scan(&c.Chunk, &c.Body, &c.Worker); err != nil {
			return nil, fmt.Errorf("store simulation %s chunks: %w", id, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store simulation %s chunks: %w", id, err)
	}
	return out, nil
}

// FinishSimulation records the final status (completed or failed), payload and summary of a
// queued or running simulation and ev when not nil, drops its chunks and dispatches the
// account's next simulation, in one transaction. ErrSimulationFinished when it had already
// finished or been canceled: a merge that runs twice stores one result and one event.
func (s *Store) FinishSimulation(ctx context.Context, id, status string, payload, summary []byte, ev *store.Event, now time.Time) error {
	if status != store.SimulationCompleted && status != store.SimulationFailed {
		return fmt.Errorf("store finish simulation %s: status %q is not final", id, status)
	}
	err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		var account, mode string
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT account_id, mode FROM cascade_simulations WHERE id = ?`), id).Scan(&account, &mode); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		if err := s.lockKey(ctx, tx, simulationsLockKey(account, mode)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE cascade_simulations SET status = ?, payload = ?, summary = ?, updated_at = ?
			WHERE id = ? AND status IN ('queued', 'running')`), status, nonNil(payload), nonNil(summary), now.UnixMilli(), id)
		if err != nil {
			return err
		}
		if err := matchedOr(res, store.ErrSimulationFinished); err != nil {
			return err
		}
		if ev != nil {
			if _, err := s.createEvent(ctx, tx, *ev); err != nil {
				return err
			}
		}
		return s.endSimulation(ctx, tx, id, account, mode)
	})
	if err != nil {
		return fmt.Errorf("store finish simulation %s: %w", id, err)
	}
	return nil
}

// endSimulation drops the chunks of a simulation that just ended and dispatches the next of
// its account. The caller holds simulationsLockKey.
func (s *Store) endSimulation(ctx context.Context, tx *sql.Tx, id, accountID, mode string) error {
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM cascade_simulation_chunks WHERE simulation_id = ?`), id); err != nil {
		return err
	}
	_, err := s.dispatchNext(ctx, tx, accountID, mode)
	return err
}

// StoppedSimulations returns those of ids that are no longer queued or running (finished,
// canceled or gone): a worker asks while it runs their chunks, and stops them.
func (s *Store) StoppedSimulations(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := inList(ids)
	rows, err := s.writer.QueryContext(ctx, s.rebind(`SELECT id FROM cascade_simulations WHERE id IN `+in+` AND status IN ('queued', 'running')`), args...)
	if err != nil {
		return nil, fmt.Errorf("store stopped simulations: %w", err)
	}
	defer rows.Close()
	live := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store stopped simulations: %w", err)
		}
		live[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store stopped simulations: %w", err)
	}
	var stopped []string
	for _, id := range ids {
		if !live[id] {
			stopped = append(stopped, id)
		}
	}
	return stopped, nil
}

// DispatchQueuedSimulations dispatches, for every account and mode with a queued simulation
// that is not dispatched, its next one (dispatchNext), and returns how many it dispatched.
func (s *Store) DispatchQueuedSimulations(ctx context.Context) (int, error) {
	rows, err := s.writer.QueryContext(ctx, `SELECT DISTINCT account_id, mode FROM cascade_simulations WHERE status = 'queued' AND dispatched = 0`)
	if err != nil {
		return 0, fmt.Errorf("store dispatch simulations: %w", err)
	}
	type accountMode struct{ account, mode string }
	var pending []accountMode
	for rows.Next() {
		var am accountMode
		if err := rows.Scan(&am.account, &am.mode); err != nil {
			rows.Close()
			return 0, fmt.Errorf("store dispatch simulations: %w", err)
		}
		pending = append(pending, am)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store dispatch simulations: %w", err)
	}
	n := 0
	for _, am := range pending {
		err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
			if err := s.lockKey(ctx, tx, simulationsLockKey(am.account, am.mode)); err != nil {
				return err
			}
			dispatched, err := s.dispatchNext(ctx, tx, am.account, am.mode)
			if dispatched {
				n++
			}
			return err
		})
		if err != nil {
			return n, fmt.Errorf("store dispatch simulations: %w", err)
		}
	}
	return n, nil
}
