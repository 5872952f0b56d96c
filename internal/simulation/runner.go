// Package simulation runs Cascade simulations in the background, for the requests that ask
// for it (async) or are too large to answer in the request: the Runner that works the queue
// the store keeps, and the simulation object that both the API and the Runner store.
package simulation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/cascade"
	"riskapi/internal/event"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// A Runner claims one queued simulation at a time (the engine already spreads one simulation
// over every core) under a lease it renews while it runs; a process that dies stops
// renewing, and once the lease expires any runner resumes the simulation from its stored
// request — with the same seed, so the result is the one the first run would have given. A
// simulation whose runs were interrupted maxAttempts times is marked failed with the reason,
// never left running forever. On shutdown the runner stops the engine and hands the
// simulation back to the queue at once.
const (
	lease       = 30 * time.Second
	renewEvery  = 10 * time.Second
	poll        = time.Second
	maxAttempts = 3
)

// Store is the part of the store a Runner works on: the queue of simulations and their
// leases. Every method returns store.ErrLeaseLost once owner no longer holds the
// simulation, and ClaimSimulation store.ErrNotFound when nothing is due.
type Store interface {
	ClaimSimulation(ctx context.Context, owner string, lease time.Duration, now time.Time) (store.Simulation, error)
	UpdateSimulation(ctx context.Context, id, owner string, payload []byte, until, now time.Time) error
	FinishSimulation(ctx context.Context, id, owner, status string, payload, summary []byte, ev *store.Event, now time.Time) error
	ReleaseSimulation(ctx context.Context, id, owner string, payload []byte, now time.Time) error
}

// RunnerConfig configures NewRunner. Store, Logger and Owner are required.
type RunnerConfig struct {
	Store  Store
	Logger *slog.Logger
	// Owner names this process in leases; unique among the processes sharing the store.
	Owner string
	// Now is the clock of leases and completion times; nil means time.Now.
	Now func() time.Time
	// Notify wakes the webhook dispatcher after a cascade.simulation_completed event was
	// stored; nil does nothing.
	Notify func()
}

// Runner runs queued Cascade simulations (see Run).
type Runner struct {
	cfg  RunnerConfig
	wake chan struct{}
}

// NewRunner returns a Runner over cfg's store; Run starts it.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Store == nil || cfg.Logger == nil || cfg.Owner == "" {
		return nil, errors.New("simulation runner: Store, Logger and Owner are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Notify == nil {
		cfg.Notify = func() {}
	}
	return &Runner{cfg: cfg, wake: make(chan struct{}, 1)}, nil
}

// Wake nudges the runner when a simulation was queued in this process, so it starts at once
// instead of at the next poll. It never blocks.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run runs queued simulations until ctx ends. It returns after handing back (or finishing)
// the simulation it holds.
func (r *Runner) Run(ctx context.Context) {
	for ctx.Err() == nil {
		sim, err := r.cfg.Store.ClaimSimulation(ctx, r.cfg.Owner, lease, r.cfg.Now())
		switch {
		case errors.Is(err, store.ErrNotFound):
			select {
			case <-ctx.Done():
			case <-r.wake:
			case <-time.After(poll):
			}
			continue
		case err != nil:
			if ctx.Err() == nil {
				r.cfg.Logger.Error("claim simulation", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(poll):
				}
			}
			continue
		}
		r.run(ctx, sim)
	}
}

// run runs one claimed simulation to its end, or hands it back when ctx ends.
func (r *Runner) run(ctx context.Context, sim store.Simulation) {
	owner := r.cfg.Owner
	log := r.cfg.Logger.With("simulation", sim.ID, "attempt", sim.Attempts)
	var in cascade.Input
	err := json.Unmarshal(sim.Request, &in)
	obj := NewObject(sim, store.SimulationRunning, in)
	switch {
	case err != nil:
		r.finish(sim, obj, nil, "The stored request could not be read.", log)
		log.Error("decode stored simulation request", "err", err)
		return
	case sim.Attempts > maxAttempts:
		r.finish(sim, obj, nil, fmt.Sprintf("The simulation was interrupted %d times (the process running it stopped) and was not retried again.", maxAttempts), log)
		return
	}
	if payload, _, err := obj.Encode(); err == nil {
		if err := r.cfg.Store.UpdateSimulation(ctx, sim.ID, owner, payload, r.cfg.Now().Add(lease), r.cfg.Now()); err != nil {
			log.Warn("mark simulation running", "err", err)
			if !errors.Is(err, store.ErrLeaseLost) {
				r.release(sim, obj, log)
			}
			return
		}
	}

	// The engine runs in its own context: cancelled on shutdown or when the lease is lost.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		progress float64
	)
	var leaseLost atomic.Bool
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		ticker := time.NewTicker(renewEvery)
		defer ticker.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-ticker.C:
				mu.Lock()
				obj.Progress = progress
				payload, _, err := obj.Encode()
				mu.Unlock()
				if err == nil {
					err = r.cfg.Store.UpdateSimulation(runCtx, sim.ID, owner, payload, r.cfg.Now().Add(lease), r.cfg.Now())
				}
				if errors.Is(err, store.ErrLeaseLost) {
					log.Warn("simulation lease lost; stopping this run")
					leaseLost.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	res, err := simulateGuarded(runCtx, in, func(done, total int64) {
		mu.Lock()
		progress = float64(done) / float64(max(total, 1))
		mu.Unlock()
	})
	cancel()
	<-renewDone
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutdown: back to the queue, not counted as an attempt.
		mu.Lock()
		queued := obj
		mu.Unlock()
		r.release(sim, queued, log)
	case err != nil && leaseLost.Load():
		// Lease lost: another runner has it now.
	case err != nil:
		log.Error("simulation failed", "err", err)
		r.finish(sim, obj, nil, "The simulation could not be completed because of an internal error; it has been logged with the simulation id.", log)
	default:
		r.finish(sim, obj, &res, "", log)
	}
}

// simulateGuarded runs the engine, turning a panic into an error: a background run has no
// request to fail, and a panic must fail the simulation, not the process (which would claim
// it again after every restart).
func simulateGuarded(ctx context.Context, in cascade.Input, progress func(done, total int64)) (res cascade.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in the engine: %v", p)
		}
	}()
	in.Run = cascade.Options{Progress: progress}
	return cascade.Analyze(ctx, in)
}

// release hands a simulation back to the queue (shutdown, or a failure to start it).
func (r *Runner) release(sim store.Simulation, obj Object, log *slog.Logger) {
	obj.Status, obj.Progress = store.SimulationQueued, 0
	payload, _, _ := obj.Encode()
	ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := r.cfg.Store.ReleaseSimulation(ctx, sim.ID, r.cfg.Owner, payload, r.cfg.Now()); err != nil {
		log.Warn("hand simulation back", "err", err)
	}
}

// finish stores the final object (completed with res, or failed with reason) and its
// cascade.simulation_completed event in one transaction.
func (r *Runner) finish(sim store.Simulation, obj Object, res *cascade.Result, reason string, log *slog.Logger) {
	now := r.cfg.Now().UTC().Truncate(time.Millisecond)
	status := store.SimulationFailed
	if res != nil {
		obj.Complete(*res, now)
		status = store.SimulationCompleted
	} else {
		obj.Fail(reason, now)
	}
	payload, evPayload, err := obj.Encode()
	if err != nil {
		log.Error("encode simulation", "err", err)
		return
	}
	ev, err := event.New(sim.AccountID, sim.Mode, product.Cascade.Event, jsontext.Value(evPayload), now)
	if err != nil {
		log.Error("encode simulation event", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.cfg.Store.FinishSimulation(ctx, sim.ID, r.cfg.Owner, status, payload, evPayload, &ev, now); err != nil {
		log.Error("store finished simulation", "err", err)
		return
	}
	r.cfg.Notify()
}
