// Package simulation runs Cascade simulations in the background, for the requests that ask
// for it (async) or are too large to answer in the request: the River workers that run a
// simulation's chunks and merge them, and the simulation object that both the API and the
// workers store.
package simulation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/riverqueue/river"

	"riskapi/cascade"
	"riskapi/engine"
	"riskapi/internal/admission"
	"riskapi/internal/event"
	"riskapi/internal/jobs"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// A background simulation is a River job per chunk of runs (cascade.Plan): chunk 0, the first
// job, marks it running and queues chunks 1 … Window; every chunk stored queues the next, so
// each simulation keeps Window chunks in River's queue, which any process works; the chunk that
// completes the set queues the merge, which combines the chunks in chunk order into exactly
// the result Analyze gives and stores it with its event, once. A small simulation (one chunk
// of runs) runs whole in its first job. The store dispatches one simulation per account and
// mode at a time, so the queue holds a few chunks of each account's current simulation and
// the workers serve the accounts in turn; first jobs and merges have workers of their own
// (jobs.QueueSimulationStarts), so a small simulation never waits behind a long one's runs.
//
// A process that dies mid-chunk leaves the job running in River's table until River rescues
// it (jobs.DefaultRescueAfter) and another process redoes it, with the same bytes. A
// simulation whose chunks keep being interrupted is failed after MaxAttempts, never left
// running forever. On shutdown the running chunks stop and go back to the queue at once.
//
// Cancellation: a canceled simulation is marked in the store, and the workers stop its
// running chunks when they next look (StoppedSimulations): at once in the process that took
// the cancel request (Wake), else within checkEvery; the engine stops within 100 ms of its
// context ending. Its queued chunks find it canceled and end without running.
const (
	// Window is how many chunks of a simulation are queued at a time.
	Window     = 16
	checkEvery = 250 * time.Millisecond
	// MaxAttempts: a chunk interrupted this many times fails its simulation.
	MaxAttempts = 3
	// sweepEvery: how often the leader dispatches simulations left queued undispatched.
	sweepEvery = 30 * time.Second
)

// DefaultConcurrency is how many chunks of runs a process works at once by default: one per
// core, each chunk on one core, so a simulation spreads over every core of every process.
func DefaultConcurrency() int { return runtime.GOMAXPROCS(0) }

// errStopped is the cause of a chunk's context ending because its simulation was canceled.
var errStopped = errors.New("simulation canceled")

// Store is the part of the store the workers use.
type Store interface {
	BackgroundSimulation(ctx context.Context, id string) (store.Simulation, error)
	StartSimulation(ctx context.Context, id string, chunks, window int, payload []byte, now time.Time) (int, error)
	StoreSimulationChunk(ctx context.Context, id string, c int, body []byte, worker string, progress func(done []int) ([]byte, error), now time.Time) error
	SimulationChunks(ctx context.Context, id string) ([]store.SimulationChunk, error)
	FinishSimulation(ctx context.Context, id, status string, payload, summary []byte, ev *store.Event, now time.Time) error
	StoppedSimulations(ctx context.Context, ids []string) ([]string, error)
	DispatchQueuedSimulations(ctx context.Context) (int, error)
}

// RunnerConfig configures NewRunner. Store, Logger and Owner are required.
type RunnerConfig struct {
	Store  Store
	Logger *slog.Logger
	// Owner names this process in the stored chunks and the logs.
	Owner string
	// Now is the clock of completion times; nil means time.Now.
	Now func() time.Time
	// Notify wakes the webhook dispatcher after a cascade.simulation_completed event was
	// stored; nil does nothing.
	Notify func()
	// Memory is the process's memory budget, shared with the API: each simulation whose plan
	// this process holds reserves its estimated peak (platform contract §11). Nil: no budget.
	Memory *admission.Memory
}

// Runner holds the workers of background simulations (Register) and stops the chunks of
// canceled simulations (Run).
type Runner struct {
	cfg   RunnerConfig
	plans *plans
	wake  chan struct{}
	mu    sync.Mutex
	// running holds, by simulation id, the cancel functions of the chunks this process runs.
	running map[string]map[*int]context.CancelCauseFunc
}

// NewRunner returns a Runner over cfg's store.
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
	return &Runner{cfg: cfg, plans: newPlans(cfg.Memory), wake: make(chan struct{}, 1),
		running: map[string]map[*int]context.CancelCauseFunc{}}, nil
}

// Register adds the simulation workers to workers.
func (r *Runner) Register(workers *river.Workers) error {
	return errors.Join(
		river.AddWorkerSafely(workers, river.WorkFunc(r.workChunk)),
		river.AddWorkerSafely(workers, river.WorkFunc(r.workMerge)),
		river.AddWorkerSafely(workers, river.WorkFunc(r.workSweep)),
	)
}

// Periodic is the dispatch sweep, run by the elected leader every sweepEvery and at start.
func (r *Runner) Periodic() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(sweepEvery),
		func() (river.JobArgs, *river.InsertOpts) { return jobs.DispatchSweep{}, nil },
		&river.PeriodicJobOpts{ID: jobs.DispatchSweep{}.Kind(), RunOnStart: true})}
}

// Wake makes Run look at once for canceled simulations (the API calls it after a cancel in
// this process). It never blocks.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run stops the running chunks of simulations that were canceled, when woken and every
// checkEvery, and evicts the plans left unused, until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	ticker := time.NewTicker(checkEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-ticker.C:
			r.plans.expire(time.Now())
		}
		r.stopCanceled(ctx)
	}
}

func (r *Runner) stopCanceled(ctx context.Context) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.running))
	for id := range r.running {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	stopped, err := r.cfg.Store.StoppedSimulations(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("check running simulations", "err", err)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range stopped {
		for _, cancel := range r.running[id] {
			cancel(errStopped)
		}
	}
}

// runningChunks is how many chunks of simulation id this process runs now.
func (r *Runner) runningChunks(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running[id])
}

// track registers a running chunk of simulation id and returns its context and the function
// that unregisters it.
func (r *Runner) track(ctx context.Context, id string) (context.Context, func()) {
	runCtx, cancel := context.WithCancelCause(ctx)
	key := new(int)
	r.mu.Lock()
	if r.running[id] == nil {
		r.running[id] = map[*int]context.CancelCauseFunc{}
	}
	r.running[id][key] = cancel
	r.mu.Unlock()
	return runCtx, func() {
		r.mu.Lock()
		delete(r.running[id], key)
		if len(r.running[id]) == 0 {
			delete(r.running, id)
		}
		r.mu.Unlock()
		cancel(nil)
	}
}

// load reads a simulation for a job: ok is false when there is nothing to do (it no longer
// exists, or has finished or been canceled).
func (r *Runner) load(ctx context.Context, id string) (sim store.Simulation, in cascade.Input, ok bool, err error) {
	sim, err = r.cfg.Store.BackgroundSimulation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return sim, in, false, nil
	}
	if err != nil {
		return sim, in, false, err
	}
	if sim.Status != store.SimulationQueued && sim.Status != store.SimulationRunning {
		return sim, in, false, nil
	}
	if err := json.Unmarshal(sim.Request, &in); err != nil {
		r.cfg.Logger.Error("decode stored simulation request", "simulation", id, "err", err)
		return sim, in, false, r.fail(sim, NewObject(sim, store.SimulationRunning, in), "The stored request could not be read.")
	}
	// Each chunk on one core: the process works --simulation-workers chunks at once.
	in.Run = cascade.Options{Workers: 1}
	return sim, in, true, nil
}

// workChunk runs one chunk of a simulation and stores it.
func (r *Runner) workChunk(ctx context.Context, job *river.Job[jobs.SimulationChunk]) error {
	id, c := job.Args.SimulationID, job.Args.Chunk
	log := r.cfg.Logger.With("simulation", id, "chunk", c, "attempt", job.Attempt)
	sim, in, ok, err := r.load(ctx, id)
	if err != nil || !ok {
		return err
	}
	obj := NewObject(sim, store.SimulationRunning, in)
	if job.Attempt > MaxAttempts {
		return r.fail(sim, obj, interrupted)
	}
	runCtx, untrack := r.track(ctx, id)
	defer untrack()
	plan, release, err := r.plans.get(runCtx, id, in)
	if err != nil {
		return r.chunkFailed(ctx, runCtx, sim, obj, err, log)
	}
	defer release()
	if c == 0 {
		payload, _, err := obj.Encode()
		if err != nil {
			return err
		}
		small := plan.Chunks() <= 2
		window := Window
		if small {
			window = 0
		}
		attempts, err := r.cfg.Store.StartSimulation(ctx, id, plan.Chunks(), window, payload, r.cfg.Now())
		if errors.Is(err, store.ErrSimulationFinished) {
			return nil
		}
		if err != nil {
			return err
		}
		if attempts > MaxAttempts {
			return r.fail(sim, obj, interrupted)
		}
		if small {
			return r.runWhole(ctx, runCtx, sim, obj, plan, log)
		}
	}
	res, err := runChunkGuarded(runCtx, plan, c)
	if err != nil {
		return r.chunkFailed(ctx, runCtx, sim, obj, err, log)
	}
	body, err := res.MarshalBinary()
	if err != nil {
		return err
	}
	err = r.cfg.Store.StoreSimulationChunk(ctx, id, c, body, r.cfg.Owner, func(done []int) ([]byte, error) {
		obj.Progress = plan.Progress(done)
		payload, _, err := obj.Encode()
		return payload, err
	}, r.cfg.Now())
	if errors.Is(err, store.ErrSimulationFinished) {
		r.plans.drop(id)
		return nil
	}
	if err == nil {
		log.Info("simulation chunk stored", "worker", r.cfg.Owner, "runs", plan.RunsIn(c))
	}
	return err
}

// runWhole runs every chunk of a small simulation in this job and finishes it.
func (r *Runner) runWhole(ctx, runCtx context.Context, sim store.Simulation, obj Object, plan *cascade.Plan, log *slog.Logger) error {
	results := make([]*cascade.ChunkResult, plan.Chunks())
	for c := range results {
		res, err := runChunkGuarded(runCtx, plan, c)
		if err != nil {
			return r.chunkFailed(ctx, runCtx, sim, obj, err, log)
		}
		results[c] = res
	}
	defer r.plans.drop(sim.ID)
	res, err := plan.Merge(results)
	if err != nil {
		log.Error("merge simulation", "err", err)
		return r.fail(sim, obj, internalFailure)
	}
	_, err = r.finish(sim, obj, &res, "")
	return err
}

// Failure reasons.
var (
	internalFailure = "The simulation could not be completed because of an internal error; it has been logged with the simulation id."
	interrupted     = fmt.Sprintf("The simulation was interrupted %d times (the process running it stopped) and was not retried again.", MaxAttempts)
)

// chunkFailed decides what a chunk's error means: shutdown (River cancels the job's context)
// puts the job back at once and a full memory budget a second later, neither counted as an
// attempt; a cancel of the simulation ends it; bad input or an engine error fails the
// simulation; anything else, the job's time limit included, is retried by River and counted.
func (r *Runner) chunkFailed(ctx, runCtx context.Context, sim store.Simulation, obj Object, err error, log *slog.Logger) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return river.JobSnooze(0)
	case errors.Is(err, errMemoryBusy):
		return river.JobSnooze(time.Second)
	case errors.Is(context.Cause(runCtx), errStopped):
		log.Info("simulation chunk stopped: simulation canceled")
		r.plans.drop(sim.ID)
		return nil
	case isEngineFailure(err):
		log.Error("simulation failed", "err", err)
		return r.fail(sim, obj, internalFailure)
	}
	return err
}

// isEngineFailure: the engine refused the stored input or failed inside (a panic): running
// it again would fail again.
func isEngineFailure(err error) bool {
	return errors.As(err, new(*engineError)) || errors.As(err, new(*engine.InputError))
}

// engineError wraps a panic of the engine.
type engineError struct{ v any }

func (e *engineError) Error() string { return fmt.Sprintf("internal error in the engine: %v", e.v) }

// runChunkGuarded runs a chunk, turning a panic into an engineError.
func runChunkGuarded(ctx context.Context, plan *cascade.Plan, c int) (res *cascade.ChunkResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &engineError{v}
		}
	}()
	return plan.RunChunk(ctx, c)
}

// workMerge merges a simulation's stored chunks and completes it.
func (r *Runner) workMerge(ctx context.Context, job *river.Job[jobs.SimulationMerge]) error {
	id := job.Args.SimulationID
	log := r.cfg.Logger.With("simulation", id, "attempt", job.Attempt)
	sim, in, ok, err := r.load(ctx, id)
	if err != nil || !ok {
		return err
	}
	obj := NewObject(sim, store.SimulationRunning, in)
	plan, release, err := r.plans.get(ctx, id, in)
	if err != nil {
		return r.chunkFailed(ctx, ctx, sim, obj, err, log)
	}
	defer release()
	chunks, err := r.cfg.Store.SimulationChunks(ctx, id)
	if err != nil {
		return err
	}
	merger := plan.NewMerger()
	workers := map[string]int{}
	for _, c := range chunks {
		res, err := plan.DecodeChunk(c.Body)
		if err == nil {
			err = merger.Add(res)
		}
		if err != nil {
			log.Error("merge simulation: stored chunk refused", "chunk", c.Chunk, "err", err)
			return r.fail(sim, obj, internalFailure)
		}
		workers[c.Worker]++
	}
	defer r.plans.drop(id)
	res, err := merger.Result()
	if err != nil {
		log.Error("merge simulation", "err", err)
		return r.fail(sim, obj, internalFailure)
	}
	stored, err := r.finish(sim, obj, &res, "")
	if stored {
		log.Info("simulation merged", "chunks", len(chunks), "chunks_by_worker", workers)
	}
	return err
}

// workSweep dispatches simulations left queued without jobs.
func (r *Runner) workSweep(ctx context.Context, _ *river.Job[jobs.DispatchSweep]) error {
	n, err := r.cfg.Store.DispatchQueuedSimulations(ctx)
	if n > 0 {
		r.cfg.Logger.Info("dispatched queued simulations", "simulations", n)
	}
	return err
}

// finish stores the final object (completed with res, or failed with reason) and its
// cascade.simulation_completed event in one transaction, and reports whether it did: a
// simulation canceled or already finished meanwhile keeps what it has, with no event. A
// store error is returned for River to retry the job.
func (r *Runner) finish(sim store.Simulation, obj Object, res *cascade.Result, reason string) (bool, error) {
	log := r.cfg.Logger.With("simulation", sim.ID)
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
		return false, fmt.Errorf("encode simulation: %w", err)
	}
	ev, err := event.New(sim.AccountID, sim.Mode, product.Cascade.Event, jsontext.Value(evPayload), now)
	if err != nil {
		return false, fmt.Errorf("encode simulation event: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = r.cfg.Store.FinishSimulation(ctx, sim.ID, status, payload, evPayload, &ev, now)
	switch {
	case errors.Is(err, store.ErrSimulationFinished):
		log.Info("simulation canceled or finished before this result was stored; result discarded")
		return false, nil
	case err != nil:
		return false, err
	}
	r.cfg.Notify()
	return true, nil
}

// fail fails the simulation for reason (see finish).
func (r *Runner) fail(sim store.Simulation, obj Object, reason string) error {
	_, err := r.finish(sim, obj, nil, reason)
	return err
}
