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
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/cascade"
	"riskapi/internal/admission"
	"riskapi/internal/event"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// A Runner runs up to Concurrency simulations at once, each of a different account and mode:
// the store hands out one simulation per account at a time, the account served least recently
// first, so a small simulation of one account starts beside another account's long one
// instead of behind it, and the Go scheduler shares the cores between them. Each runs under a
// lease the runner renews; a process that dies stops renewing, and once the lease expires any
// runner resumes the simulation from its stored request — with the same seed, so the result is
// the one the first run would have given. A simulation whose runs were interrupted maxAttempts
// times is marked failed with the reason, never left running forever. On shutdown the runner
// stops the engines and hands the simulations back to the queue at once.
//
// Cancellation: a canceled simulation is marked in the store, and its runner stops the engine
// when it next looks (LostSimulations): at once when woken in the process that took the
// cancel request (Wake), else within checkEvery. The engine stops within 100 ms of its context
// ending, so a cancel stops the CPU within about 100 ms in the process that runs it and within
// checkEvery + 100 ms (350 ms) from another process.
const (
	lease       = 30 * time.Second
	renewEvery  = 10 * time.Second
	poll        = time.Second
	checkEvery  = 250 * time.Millisecond
	maxAttempts = 3
	// DefaultConcurrency is how many simulations a runner runs at once by default: enough for
	// 16 accounts to be served side by side, while each simulation keeps spreading its runs
	// over every core (the scheduler shares them).
	DefaultConcurrency = 16
)

// errLost is the cause of a run's context ending because this runner no longer holds the
// simulation: it was canceled, or its lease expired and another runner took it.
var errLost = errors.New("simulation canceled or taken over")

// Store is the part of the store a Runner works on: the queue of simulations and their
// leases. Every method returns store.ErrLeaseLost once owner no longer holds the
// simulation, and ClaimSimulation store.ErrNotFound when nothing is due.
type Store interface {
	ClaimSimulation(ctx context.Context, owner string, lease time.Duration, now time.Time) (store.Simulation, error)
	UpdateSimulation(ctx context.Context, id, owner string, payload []byte, until, now time.Time) error
	FinishSimulation(ctx context.Context, id, owner, status string, payload, summary []byte, ev *store.Event, now time.Time) error
	ReleaseSimulation(ctx context.Context, id, owner string, payload []byte, now time.Time) error
	LostSimulations(ctx context.Context, owner string, ids []string) ([]string, error)
}

// RunnerConfig configures NewRunner. Store, Logger and Owner are required.
type RunnerConfig struct {
	Store  Store
	Logger *slog.Logger
	// Owner names this process in leases; unique among the processes sharing the store.
	Owner string
	// Concurrency is how many simulations this runner runs at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Now is the clock of leases and completion times; nil means time.Now.
	Now func() time.Time
	// Notify wakes the webhook dispatcher after a cascade.simulation_completed event was
	// stored; nil does nothing.
	Notify func()
	// Memory is the process's memory budget, shared with the API: each running simulation
	// holds its estimated peak against it (platform contract §11). Nil: no budget.
	Memory *admission.Memory
}

// Runner runs queued Cascade simulations (see Run).
type Runner struct {
	cfg   RunnerConfig
	wake  chan struct{}
	ended chan struct{} // a run ended: a slot is free
	mu    sync.Mutex
	// running holds the cancel function of each simulation this runner runs, by id.
	running map[string]context.CancelCauseFunc
}

// NewRunner returns a Runner over cfg's store; Run starts it.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Store == nil || cfg.Logger == nil || cfg.Owner == "" {
		return nil, errors.New("simulation runner: Store, Logger and Owner are required")
	}
	if cfg.Concurrency < 0 {
		return nil, fmt.Errorf("simulation runner: Concurrency %d is negative", cfg.Concurrency)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Notify == nil {
		cfg.Notify = func() {}
	}
	return &Runner{cfg: cfg, wake: make(chan struct{}, 1), ended: make(chan struct{}, 1),
		running: map[string]context.CancelCauseFunc{}}, nil
}

// Wake nudges the runner when a simulation was queued or canceled in this process, so it
// starts, or stops, at once instead of at its next poll. It never blocks.
func (r *Runner) Wake() { signal(r.wake) }

// signal sends on a channel of capacity one unless a signal is already pending.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Run runs queued simulations until ctx ends: it claims one whenever a slot is free (at
// once when woken or when a run ends, else every poll), and stops those it no longer holds
// (when woken, and every checkEvery). It returns after every run has handed back (or
// finished) its simulation.
func (r *Runner) Run(ctx context.Context) {
	var runs sync.WaitGroup
	defer runs.Wait()
	claims := time.NewTicker(poll)
	defer claims.Stop()
	checks := time.NewTicker(checkEvery)
	defer checks.Stop()
	r.fill(ctx, &runs)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			r.stopLost(ctx)
			r.fill(ctx, &runs)
		case <-r.ended:
			r.fill(ctx, &runs)
		case <-claims.C:
			r.fill(ctx, &runs)
		case <-checks.C:
			r.stopLost(ctx)
		}
	}
}

// fill claims simulations and starts them until every slot is taken or nothing is due.
func (r *Runner) fill(ctx context.Context, runs *sync.WaitGroup) {
	for ctx.Err() == nil {
		r.mu.Lock()
		free := len(r.running) < r.cfg.Concurrency
		r.mu.Unlock()
		if !free {
			return
		}
		sim, err := r.cfg.Store.ClaimSimulation(ctx, r.cfg.Owner, lease, r.cfg.Now())
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
				r.cfg.Logger.Error("claim simulation", "err", err)
			}
			return
		}
		runCtx, cancel := context.WithCancelCause(ctx)
		r.mu.Lock()
		r.running[sim.ID] = cancel
		r.mu.Unlock()
		runs.Go(func() {
			defer func() {
				r.mu.Lock()
				delete(r.running, sim.ID)
				r.mu.Unlock()
				cancel(nil)
				signal(r.ended)
			}()
			r.run(ctx, runCtx, cancel, sim)
		})
	}
}

// stopLost asks the store which of the running simulations this runner no longer holds
// (canceled, or taken over after an expired lease) and stops them.
func (r *Runner) stopLost(ctx context.Context) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.running))
	for id := range r.running {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	lost, err := r.cfg.Store.LostSimulations(ctx, r.cfg.Owner, ids)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("check running simulations", "err", err)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range lost {
		if cancel, ok := r.running[id]; ok {
			cancel(errLost)
		}
	}
}

// run runs one claimed simulation to its end in runCtx: it hands the simulation back when ctx
// (the runner's) ends, and lets it go when runCtx ends with errLost.
func (r *Runner) run(ctx, runCtx context.Context, cancel context.CancelCauseFunc, sim store.Simulation) {
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

	// The engine runs in runCtx: cancelled on shutdown, or with errLost when the lease is lost
	// or the simulation canceled.
	var (
		mu       sync.Mutex
		progress float64
	)
	stopRenewing, renewDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewDone)
		ticker := time.NewTicker(renewEvery)
		defer ticker.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-stopRenewing:
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
					cancel(errLost)
					return
				}
			}
		}
	}()
	var res cascade.Result
	release, err := r.reserveMemory(runCtx, in)
	if err == nil {
		res, err = simulateGuarded(runCtx, in, func(done, total int64) {
			mu.Lock()
			progress = float64(done) / float64(max(total, 1))
			mu.Unlock()
		})
		release()
	}
	close(stopRenewing)
	<-renewDone
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutdown: back to the queue, not counted as an attempt.
		mu.Lock()
		queued := obj
		mu.Unlock()
		r.release(sim, queued, log)
	case err != nil && errors.Is(context.Cause(runCtx), errLost):
		// Canceled, or another runner has it now: nothing more to write.
		log.Info("simulation stopped: canceled or taken over by another runner")
	case err != nil:
		log.Error("simulation failed", "err", err)
		r.finish(sim, obj, nil, "The simulation could not be completed because of an internal error; it has been logged with the simulation id.", log)
	default:
		r.finish(sim, obj, &res, "", log)
	}
}

// reserveMemory holds the simulation's estimated peak (cascade.Estimate) against the
// process's memory budget until release, waiting as long as the budget is full: a background
// run has no client to answer 503 and keeps its place in line; its lease is renewed meanwhile. A peak above the whole
// budget (the API refuses such requests; an older one may be queued) holds the whole budget,
// so that it runs alone.
func (r *Runner) reserveMemory(ctx context.Context, in cascade.Input) (release func(), err error) {
	if r.cfg.Memory == nil {
		return func() {}, nil
	}
	cost, err := cascade.Estimate(in)
	if err != nil {
		return nil, err
	}
	res, err := r.cfg.Memory.ReserveWhenFree(ctx, min(cost.Memory, r.cfg.Memory.Limit()))
	if err != nil {
		return nil, err
	}
	return res.Release, nil
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
	err = r.cfg.Store.FinishSimulation(ctx, sim.ID, r.cfg.Owner, status, payload, evPayload, &ev, now)
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		// Canceled (or taken over) as it finished: the result is discarded, and no event is
		// sent for a canceled simulation.
		log.Info("simulation canceled or taken over before its result was stored; result discarded")
		return
	case err != nil:
		log.Error("store finished simulation", "err", err)
		return
	}
	r.cfg.Notify()
}
