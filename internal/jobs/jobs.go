// Package jobs is the service's background work on River (github.com/riverqueue/river), the
// job queue over the store's own database: the kinds of job, the client that inserts them in
// the store's transactions, the client that works them, and River's migrations. Both stores
// reach River through database/sql, whose transaction is *sql.Tx: the embedded SQLite store
// with River's SQLite driver (riversqlite), PostgreSQL with River's database/sql driver
// (riverdatabasesql) over the store's pgx pool. The database/sql driver has no LISTEN/NOTIFY,
// so workers poll (FetchPollInterval); a poll is one indexed query.
package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// Driver is River's driver over one of the stores' database/sql pools.
type Driver = riverdriver.Driver[*sql.Tx]

// Client is a River client of either store.
type Client = river.Client[*sql.Tx]

// Queues. A simulation's first job (chunk 0: it makes the plan, and runs a small simulation
// whole) and its merge go to QueueSimulationStarts, its chunks of runs to QueueSimulationRuns,
// each queue with its own workers: a simulation that starts never waits for a worker busy
// with another's runs, so a small simulation completes beside a long one instead of behind
// it. The chunks of runs queue in turn, each simulation a window at a time (the store keeps
// one simulation per account dispatched), so long simulations share the workers. Maintenance
// jobs (purges, the dispatch sweep) have their own queue, so a long simulation never delays
// them.
const (
	QueueSimulationStarts = "cascade_starts"
	QueueSimulationRuns   = "cascade_runs"
	QueueMaintenance      = "maintenance"
)

// SimulationChunk runs chunk Chunk of the background simulation SimulationID and stores its
// result; the chunk that completes the set queues SimulationMerge.
type SimulationChunk struct {
	SimulationID string `json:"simulation_id"`
	Chunk        int    `json:"chunk"`
}

// Kind is the job's kind in River's table.
func (SimulationChunk) Kind() string { return "cascade_simulation_chunk" }

// InsertOpts: chunk 0 goes to the starts queue, the chunks of runs to the runs queue.
func (c SimulationChunk) InsertOpts() river.InsertOpts {
	q := QueueSimulationRuns
	if c.Chunk == 0 {
		q = QueueSimulationStarts
	}
	return river.InsertOpts{Queue: q, MaxAttempts: chunkMaxAttempts}
}

// chunkMaxAttempts leaves River room to retry a chunk: the worker itself fails the simulation
// once a chunk was interrupted simulation.MaxAttempts times, before River would discard the
// job and leave the simulation unfinished.
const chunkMaxAttempts = 25

// SimulationMerge merges the stored chunks of SimulationID, in chunk order, into its result
// and completes it with its cascade.simulation_completed event.
type SimulationMerge struct {
	SimulationID string `json:"simulation_id"`
}

// Kind is the job's kind in River's table.
func (SimulationMerge) Kind() string { return "cascade_simulation_merge" }

// InsertOpts: one merge per simulation, in the starts queue.
func (SimulationMerge) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueSimulationStarts, MaxAttempts: chunkMaxAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Purge deletes expired idempotency records and events (a periodic job).
type Purge struct{}

// Kind is the job's kind in River's table.
func (Purge) Kind() string { return "purge_expired" }

// InsertOpts: maintenance queue.
func (Purge) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueMaintenance} }

// DispatchSweep queues the first chunk of simulations that are queued but not dispatched (a
// periodic job): those handed back by an older version's queue, or whose account's previous
// simulation ended in a transaction that could not dispatch the next.
type DispatchSweep struct{}

// Kind is the job's kind in River's table.
func (DispatchSweep) Kind() string { return "cascade_dispatch_sweep" }

// InsertOpts: maintenance queue.
func (DispatchSweep) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueMaintenance} }

// NewInserter returns a client that only inserts jobs (the store's, inside its transactions):
// it works none, and so checks no worker for the kinds it inserts.
func NewInserter(d Driver) (*Client, error) {
	c, err := river.NewClient(d, &river.Config{SkipUnknownJobCheck: true})
	if err != nil {
		return nil, fmt.Errorf("jobs: inserter: %w", err)
	}
	return c, nil
}

// Migrate applies River's pending migrations (River's own migrator, so its schema is the one
// its version expects), each in its own transaction: some of River's PostgreSQL migrations
// add an enum value and use it, which one transaction cannot do. The store calls it after its
// own migrations under a lock that processes starting together take in turn.
func Migrate(ctx context.Context, d Driver) error {
	m, err := rivermigrate.New(d, &rivermigrate.Config{Logger: discardLogger()})
	if err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	return nil
}

// pollInterval is how often an idle worker looks for jobs: a queued simulation starts within
// about this long on an idle process. 200 ms is five indexed queries a second per queue and
// process.
const pollInterval = 200 * time.Millisecond

// QueueDriftMonitors is the queue of Drift monitors' looks: a look is one analysis of an
// agent's stored events (tens of milliseconds at 10,000 events), never behind a long
// simulation.
const QueueDriftMonitors = "drift_monitors"

// DriftMonitorLook makes monitor MonitorID look at its agent's stored events again. Seen is
// the events the monitor's last look had seen when the job was queued, Soon marks the look
// due because enough new events arrived (the other kind is the one scheduled 60 s after new
// events came). Each (monitor, seen, kind) is unique while it waits or runs, so the
// ingestion calls between two looks queue at most one of each (the debounce of
// shared/spec/agents.md §2), across processes: River's unique insert holds in the shared
// database. Seen makes the key new once a look is recorded, even while River still counts
// the job that made it as running.
type DriftMonitorLook struct {
	MonitorID string `json:"monitor_id"`
	Seen      int64  `json:"seen"`
	Soon      bool   `json:"soon"`
}

// Kind is the job's kind in River's table.
func (DriftMonitorLook) Kind() string { return "drift_monitor_look" }

// InsertOpts: unique by arguments among the jobs that wait or run (River requires the running
// state in a unique set); a look that finds events arrived while it ran snoozes 60 s and
// looks again, so none is left unlooked.
func (DriftMonitorLook) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDriftMonitors, MaxAttempts: 5, UniqueOpts: river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
			rivertype.JobStateRunning, rivertype.JobStateScheduled, rivertype.JobStateRetryable},
	}}
}
