package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/cascade"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// Background simulations. A runner claims one queued simulation at a time (the engine already
// spreads one simulation over every core) under a lease it renews while it runs; a process
// that dies stops renewing, and once the lease expires any runner resumes the simulation from
// its stored request — with the same seed, so the result is the one the first run would have
// given. A simulation whose runs were interrupted maxSimulationAttempts times is marked failed
// with the reason, never left running forever. On shutdown the runner stops the engine and
// hands the simulation back to the queue at once.
const (
	simulationLease       = 30 * time.Second
	simulationRenewEvery  = 10 * time.Second
	simulationPoll        = time.Second
	maxSimulationAttempts = 3
)

// simulationWake nudges this process's runner when a simulation is queued here, so it starts
// at once instead of at the next poll.
type simulationWake struct {
	once sync.Once
	ch   chan struct{}
}

func (s *Server) wakeChannel() chan struct{} {
	s.simWake.once.Do(func() { s.simWake.ch = make(chan struct{}, 1) })
	return s.simWake.ch
}

func (s *Server) wakeSimulationRunner() {
	select {
	case s.wakeChannel() <- struct{}{}:
	default:
	}
}

// RunSimulations runs queued Cascade simulations until ctx ends; owner names this process in
// leases. It returns after handing back (or finishing) the simulation it holds.
func (s *Server) RunSimulations(ctx context.Context, owner string) {
	wake := s.wakeChannel()
	for ctx.Err() == nil {
		sim, err := s.cfg.Store.ClaimSimulation(ctx, owner, simulationLease, s.cfg.Now())
		switch {
		case errors.Is(err, store.ErrNotFound):
			select {
			case <-ctx.Done():
			case <-wake:
			case <-time.After(simulationPoll):
			}
			continue
		case err != nil:
			if ctx.Err() == nil {
				s.cfg.Logger.Error("claim simulation", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(simulationPoll):
				}
			}
			continue
		}
		s.runSimulation(ctx, owner, sim)
	}
}

// runSimulation runs one claimed simulation to its end, or hands it back when ctx ends.
func (s *Server) runSimulation(ctx context.Context, owner string, sim store.Simulation) {
	log := s.cfg.Logger.With("simulation", sim.ID, "attempt", sim.Attempts)
	var in cascade.Input
	err := json.Unmarshal(sim.Request, &in)
	h := resourceHeader{ID: sim.ID, Object: "cascade.simulation", Livemode: sim.Mode == store.ModeLive, CreatedAt: formatTime(sim.CreatedAt)}
	obj := newSimulationObject(h, store.SimulationRunning, in)
	switch {
	case err != nil:
		s.finishSimulation(owner, sim, obj, nil, "The stored request could not be read.", log)
		log.Error("decode stored simulation request", "err", err)
		return
	case sim.Attempts > maxSimulationAttempts:
		s.finishSimulation(owner, sim, obj, nil, fmt.Sprintf("The simulation was interrupted %d times (the process running it stopped) and was not retried again.", maxSimulationAttempts), log)
		return
	}
	if payload, _, err := obj.encode(); err == nil {
		if err := s.cfg.Store.UpdateSimulation(ctx, sim.ID, owner, payload, s.cfg.Now().Add(simulationLease), s.cfg.Now()); err != nil {
			log.Warn("mark simulation running", "err", err)
			if !errors.Is(err, store.ErrLeaseLost) {
				s.releaseSimulation(owner, sim, obj, log)
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
		ticker := time.NewTicker(simulationRenewEvery)
		defer ticker.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-ticker.C:
				mu.Lock()
				obj.Progress = progress
				payload, _, err := obj.encode()
				mu.Unlock()
				if err == nil {
					err = s.cfg.Store.UpdateSimulation(runCtx, sim.ID, owner, payload, s.cfg.Now().Add(simulationLease), s.cfg.Now())
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
		s.releaseSimulation(owner, sim, queued, log)
	case err != nil && leaseLost.Load():
		// Lease lost: another runner has it now.
	case err != nil:
		log.Error("simulation failed", "err", err)
		s.finishSimulation(owner, sim, obj, nil, "The simulation could not be completed because of an internal error; it has been logged with the simulation id.", log)
	default:
		s.finishSimulation(owner, sim, obj, &res, "", log)
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

// releaseSimulation hands a simulation back to the queue (shutdown, or a failure to start it).
func (s *Server) releaseSimulation(owner string, sim store.Simulation, obj simulationObject, log interface {
	Warn(string, ...any)
}) {
	obj.Status, obj.Progress = store.SimulationQueued, 0
	payload, _, _ := obj.encode()
	ctx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := s.cfg.Store.ReleaseSimulation(ctx, sim.ID, owner, payload, s.cfg.Now()); err != nil {
		log.Warn("hand simulation back", "err", err)
	}
}

// finishSimulation stores the final object (completed with res, or failed with reason) and
// its cascade.simulation_completed event in one transaction.
func (s *Server) finishSimulation(owner string, sim store.Simulation, obj simulationObject, res *cascade.Result, reason string, log interface {
	Error(string, ...any)
}) {
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	status := store.SimulationFailed
	if res != nil {
		obj.complete(*res, now)
		status = store.SimulationCompleted
	} else {
		obj.fail(reason, now)
	}
	payload, evPayload, err := obj.encode()
	if err != nil {
		log.Error("encode simulation", "err", err)
		return
	}
	ev, err := newEvent(sim.AccountID, sim.Mode, product.Cascade.Event, jsontext.Value(evPayload), now)
	if err != nil {
		log.Error("encode simulation event", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.cfg.Store.FinishSimulation(ctx, sim.ID, owner, status, payload, evPayload, &ev, now); err != nil {
		log.Error("store finished simulation", "err", err)
		return
	}
	s.cfg.Webhooks.Notify()
}
