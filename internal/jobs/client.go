package jobs

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
)

// DefaultRescueAfter is how long a job may stay running before River takes it for stuck and
// runs it again: the time a chunk of a process that died (kill -9, a lost node) waits before
// another process redoes it, plus up to 30 s for River's rescuer to look. A job's own time
// limit is a second less (River only rescues jobs past their limit, and the limit stops a job
// before it could be rescued while its process still runs it). A chunk is about a second of
// one core (cascade's chunk sizing) and the structure chunk of the largest accepted network
// well under a minute, so a live process's chunk meets the limit only under extreme load;
// redoing it gives the same bytes.
const DefaultRescueAfter = 2 * time.Minute

// MinRescueAfter is the shortest RescueAfter: the job limit must stay positive.
const MinRescueAfter = 2 * time.Second

// StartWorkers is how many simulation starts (and merges) a process works at once, besides
// its chunks of runs: two, so that one large network's start (its structure chunk, up to
// seconds) leaves room for a small simulation.
const StartWorkers = 2

// WorkerConfig configures NewWorker.
type WorkerConfig struct {
	Workers *river.Workers
	// Periodic are the periodic jobs; River's elected leader (one process) inserts them.
	Periodic []*river.PeriodicJob
	// SimulationWorkers is how many chunks of runs this process works at once; besides them
	// it works up to StartWorkers simulation starts and merges.
	SimulationWorkers int
	// RescueAfter overrides DefaultRescueAfter when positive.
	RescueAfter time.Duration
	// ID names this process among River's clients (unique per process).
	ID     string
	Logger *slog.Logger
}

// NewWorker returns a client that works the simulation and maintenance queues: Start it, and
// Stop it on shutdown. RescueAfter takes back the jobs of processes that died; a job runs at
// most a second less.
func NewWorker(d Driver, cfg WorkerConfig) (*Client, error) {
	rescue := cfg.RescueAfter
	if rescue <= 0 {
		rescue = DefaultRescueAfter
	}
	if rescue < MinRescueAfter {
		return nil, fmt.Errorf("jobs: RescueAfter %s is below %s", rescue, MinRescueAfter)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = discardLogger()
	}
	c, err := river.NewClient(d, &river.Config{
		ID:                   cfg.ID,
		Workers:              cfg.Workers,
		PeriodicJobs:         cfg.Periodic,
		FetchPollInterval:    pollInterval,
		FetchCooldown:        pollInterval / 4,
		JobTimeout:           rescue - time.Second,
		RescueStuckJobsAfter: rescue,
		Logger:               logger,
		Queues: map[string]river.QueueConfig{
			QueueSimulationStarts: {MaxWorkers: StartWorkers},
			QueueSimulationRuns:   {MaxWorkers: max(1, cfg.SimulationWorkers)},
			QueueMaintenance:      {MaxWorkers: 2},
			QueueDriftMonitors:    {MaxWorkers: 1},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: worker client: %w", err)
	}
	return c, nil
}

// discardLogger silences River where the caller gives no logger (tests, migrations).
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
