package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"riskapi/internal/jobs"
	"riskapi/internal/monitor"
	"riskapi/internal/simulation"
	"riskapi/internal/store"
)

// Retention: idempotency records live 24 hours, events 30 days; both are purged hourly, and
// when a process becomes River's leader, by a River periodic job, which only the elected
// leader inserts, so one process purges at a time.
const (
	idempotencyRetention = 24 * time.Hour
	eventRetention       = 30 * 24 * time.Hour
	purgeInterval        = time.Hour
	// jobStopTimeout bounds how long shutdown waits for running jobs to hand their work back:
	// a canceled chunk returns within about 100 ms, a purge as soon as its statement ends.
	jobStopTimeout = 5 * time.Second
)

// newJobClient returns the process's River client: the simulation workers, the Drift
// monitors' looks, the purge, and their periodic jobs, on the store's database.
func newJobClient(st store.Store, sims *simulation.Runner, looks *monitor.Looker, cfg serveConfig, owner string, logger *slog.Logger) (*jobs.Client, error) {
	workers := river.NewWorkers()
	if err := sims.Register(workers); err != nil {
		return nil, err
	}
	if err := looks.Register(workers); err != nil {
		return nil, err
	}
	purge := purgeWorker{store: st, logger: logger}
	if err := river.AddWorkerSafely(workers, river.WorkFunc(purge.work)); err != nil {
		return nil, err
	}
	periodic := append(sims.Periodic(), river.NewPeriodicJob(river.PeriodicInterval(purgeInterval),
		func() (river.JobArgs, *river.InsertOpts) { return jobs.Purge{}, nil },
		&river.PeriodicJobOpts{ID: jobs.Purge{}.Kind(), RunOnStart: true}))
	return jobs.NewWorker(st.JobDriver(), jobs.WorkerConfig{
		Workers:           workers,
		Periodic:          periodic,
		SimulationWorkers: cfg.simulationWorkers,
		RescueAfter:       cfg.jobRescueAfter,
		ID:                owner,
		// River reports its own failures (a job's error, a lost leadership) at warn and above.
		Logger: slog.New(leveled{logger.Handler(), slog.LevelWarn}),
	})
}

// stopJobs stops the job client: running chunks are canceled and put back in the queue at
// once (simulation workers snooze on shutdown), so another process, or this one restarted,
// takes them.
func stopJobs(c *jobs.Client, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), jobStopTimeout)
	defer cancel()
	if err := c.StopAndCancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Warn("stop background jobs", "err", err)
	}
}

// purgeWorker deletes idempotency records older than 24 hours and events older than 30 days
// (with their finished deliveries).
type purgeWorker struct {
	store  store.Store
	logger *slog.Logger
}

func (p purgeWorker) work(ctx context.Context, _ *river.Job[jobs.Purge]) error {
	now := time.Now()
	keys, err := p.store.PurgeIdempotency(ctx, now.Add(-idempotencyRetention))
	if err != nil {
		return err
	}
	events, err := p.store.PurgeEvents(ctx, now.Add(-eventRetention))
	if err != nil {
		return err
	}
	p.logger.Info("purged expired records", "idempotency_keys", keys, "events", events)
	return nil
}

// leveled drops records below a level before its handler sees them.
type leveled struct {
	slog.Handler
	min slog.Level
}

func (l leveled) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= l.min && l.Handler.Enabled(ctx, level)
}

func (l leveled) WithAttrs(attrs []slog.Attr) slog.Handler {
	return leveled{l.Handler.WithAttrs(attrs), l.min}
}

func (l leveled) WithGroup(name string) slog.Handler {
	return leveled{l.Handler.WithGroup(name), l.min}
}
