package httpapi

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/cascade"
	"riskapi/engine"
	"riskapi/internal/event"
	"riskapi/internal/ident"
	"riskapi/internal/product"
	"riskapi/internal/simulation"
	"riskapi/internal/store"
)

func init() {
	registerProduct(product.Cascade, productAPI{
		routes: func(s *Server) map[string]http.Handler {
			return map[string]http.Handler{
				product.Cascade.Analyze:                    s.handleSimulate(),
				"GET /v1/cascade/simulations":              s.handleListSimulations(),
				"GET /v1/cascade/simulations/{id}":         s.handleGetSimulation(),
				"POST /v1/cascade/simulations/{id}/cancel": s.handleCancelSimulation(),
			}
		},
	})
}

// Background simulations are shared fairly between tenants (docs/methods/cascade.md,
// "Background work"): an account has at most maxBackgroundSimulations queued or running per
// mode; beyond that POST /v1/cascade/simulate answers 429 with Retry-After
// backgroundRetryAfter. The runner serves one simulation per account at a time, so the
// account's next one starts once one of its own finishes; 5 s is the order of the shortest
// background run (work above the synchronous budget of 5 s of one core goes to the
// background), and a client that waits that long between tries spends at most 720 of its
// hourly requests on an hour of waiting.
const (
	maxBackgroundSimulations = 5
	backgroundRetryAfter     = 5 * time.Second
)

// simulateRequest is the body of POST /v1/cascade/simulate: the engine's input as it is.
type simulateRequest struct {
	cascade.Input `json:",inline"`
	// work is the simulation's size by the contract's measure, found while validating.
	work int64
	// inBackground is where the simulation runs, decided by estimate.
	inBackground bool
}

// validate applies the engine's own checks, so the API and the library refuse exactly the
// same inputs with the same codes and paths. The engine keeps the network it compiled, so
// measuring the work here and simulating later compile it once; a request without a seed
// gets one drawn first, so that the compiled input holds it.
func (req *simulateRequest) validate() *Error {
	if req.Seed == nil {
		seed := rand.Int64N(1 << 53) // exact in JSON, so it can be sent back to reproduce
		req.Seed = &seed
	}
	if e := asValidation(req.Input.Validate()); e != nil {
		return e
	}
	req.work, _ = cascade.Work(req.Input) // validated: no error
	return nil
}

// estimate is the engine's estimate of the simulation's work (platform contract §11), which
// also decides where it runs: in the background when asked for (async), when its work is
// above the contract's threshold, or when its estimated CPU is above the synchronous budget.
func (req *simulateRequest) estimate(syncBudget time.Duration) (engine.Cost, bool, error) {
	cost, err := cascade.Estimate(req.Input)
	if err != nil {
		return cost, false, err
	}
	req.inBackground = req.Async || req.work > cascade.AsyncWorkThreshold || cost.CPU > syncBudget
	return cost, req.inBackground, nil
}

// validateIn refuses a background simulation while the account already has the most it may
// have queued or running in this mode: 429, before the Idempotency-Key is taken, so that a
// retry with the same key runs once the account has room (a 429 is never stored). The
// store's atomic check when queueing catches concurrent requests that pass this one together.
func (req *simulateRequest) validateIn(ctx context.Context, s *Server) *Error {
	if !req.inBackground {
		return nil
	}
	p := principalFrom(ctx)
	n, err := s.cfg.Store.UnfinishedSimulations(ctx, p.Account.ID, p.Key.Mode)
	if err != nil {
		return fmtInternal(ctx, "count unfinished simulations", err)
	}
	if n < maxBackgroundSimulations {
		return nil
	}
	e := newError(CodeRateLimited, "This account already has %d background simulations queued or running in %s mode, the most it may have at once. Retry after the time in the Retry-After header, or cancel one (POST /v1/cascade/simulations/{id}/cancel).",
		n, p.Key.Mode)
	e.Details["limit"] = maxBackgroundSimulations
	e.Details["policy"] = "cascade-background"
	e.retryAfter = int(backgroundRetryAfter / time.Second)
	return e
}

// handleSimulate is POST /v1/cascade/simulate: small work runs in the request and answers 200
// with the completed simulation; async requests and work above the contract's threshold are
// stored queued, answered 202, and run by the background runner (internal/simulation).
// Either way the finished simulation is stored with its cascade.simulation_completed event
// in one transaction.
func (s *Server) handleSimulate() http.Handler {
	return handleJSON(s, func(r *http.Request, req *simulateRequest) (int, any, error) {
		in := req.Input
		p := principalFrom(r.Context())
		now := s.now()
		sim := store.Simulation{ID: ident.New(product.Cascade.Results.IDPrefix), AccountID: p.Account.ID, Mode: p.Key.Mode, CreatedAt: now, UpdatedAt: now}
		if req.inBackground {
			queued, err := simulation.Queued(sim, in)
			if err != nil {
				return 0, nil, err
			}
			status, data, err := s.commitWithResponse(r, http.StatusAccepted, jsontext.Value(queued.Payload), func(done *store.IdempotencyCompletion) error {
				return s.cfg.Store.QueueSimulation(r.Context(), queued, maxBackgroundSimulations, done)
			})
			if errors.Is(err, store.ErrLimitReached) {
				// Only requests that passed validateIn together get here; a 429 is never
				// stored under the Idempotency-Key, so the retry runs again.
				e := newError(CodeRateLimited, "Other background simulations of this account were accepted at the same moment, which reached the limit of %d queued or running at once. Retry after the time in the Retry-After header.", maxBackgroundSimulations)
				e.Details["limit"] = maxBackgroundSimulations
				e.Details["policy"] = "cascade-background"
				e.retryAfter = int(backgroundRetryAfter / time.Second)
				return 0, nil, e
			}
			if err != nil {
				return 0, nil, err
			}
			s.cfg.WakeSimulations()
			return status, data, nil
		}
		res, err := cascade.Analyze(r.Context(), in)
		if err != nil {
			return 0, nil, err
		}
		obj := simulation.NewObject(sim, store.SimulationRunning, in)
		obj.Complete(res, s.cfg.Now())
		payload, evPayload, err := obj.Encode()
		if err != nil {
			return 0, nil, err
		}
		ev, err := event.New(p.Account.ID, p.Key.Mode, product.Cascade.Event, jsontext.Value(evPayload), now)
		if err != nil {
			return 0, nil, err
		}
		sim.Status, sim.Payload, sim.Summary, sim.Request = store.SimulationCompleted, payload, evPayload, []byte{}
		status, data, err := s.commitWithResponse(r, http.StatusOK, jsontext.Value(payload), func(done *store.IdempotencyCompletion) error {
			return s.cfg.Store.CreateSimulation(r.Context(), sim, &ev, done)
		})
		if err != nil {
			return 0, nil, err
		}
		s.cfg.Webhooks.Notify()
		return status, data, nil
	})
}

// handleListSimulations is GET /v1/cascade/simulations, newest first.
func (s *Server) handleListSimulations() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, product.Cascade.Results.List)
		if e != nil {
			writeError(w, r, e)
			return
		}
		p := principalFrom(r.Context())
		page, err := s.cfg.Store.ListSimulations(r.Context(), p.Account.ID, p.Key.Mode, q.page)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writePage(s, w, r, product.Cascade.Results.List, q, page, store.SimulationPosition,
			func(sim store.Simulation) any { return jsontext.Value(sim.Payload) })
	})
}

// handleGetSimulation is GET /v1/cascade/simulations/{id}.
func (s *Server) handleGetSimulation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sim, err := s.simulationFromPath(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, jsontext.Value(sim.Payload))
	})
}

// simulationFromPath reads the caller's simulation named by the path's {id}: 404 when the
// account has none of that id in the key's mode.
func (s *Server) simulationFromPath(r *http.Request) (store.Simulation, error) {
	p := principalFrom(r.Context())
	sim, err := s.cfg.Store.Simulation(r.Context(), p.Account.ID, p.Key.Mode, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		return sim, newError(CodeNotFound, "No %s %s.", product.Cascade.Results.Noun, r.PathValue("id"))
	}
	return sim, err
}

// handleCancelSimulation is POST /v1/cascade/simulations/{id}/cancel: a queued simulation
// never runs, a running one stops (the runner is woken so that, when it runs in this process,
// the engine stops within about 100 ms; a runner in another process notices within its check
// interval), and no cascade.simulation_completed is sent. 200 with the canceled simulation;
// 400 INVALID_STATUS when it has already finished.
func (s *Server) handleCancelSimulation() http.Handler {
	return handleJSON(s, func(r *http.Request, _ *emptyRequest) (int, any, error) {
		sim, err := s.simulationFromPath(r)
		if err != nil {
			return 0, nil, err
		}
		if finished(sim.Status) {
			return 0, nil, errFinished(sim)
		}
		payload, err := simulation.Canceled(sim.Payload, s.now())
		if err != nil {
			return 0, nil, err
		}
		sim, err = s.cfg.Store.CancelSimulation(r.Context(), sim.AccountID, sim.Mode, sim.ID, payload, s.now())
		if errors.Is(err, store.ErrSimulationFinished) {
			return 0, nil, errFinished(sim) // it finished while this request ran
		}
		if err != nil {
			return 0, nil, err
		}
		s.cfg.WakeSimulations()
		return http.StatusOK, jsontext.Value(sim.Payload), nil
	})
}

// finished reports whether a simulation of that status has ended.
func finished(status string) bool {
	return status != store.SimulationQueued && status != store.SimulationRunning
}

// errFinished is the answer to canceling a simulation that has ended: a validation error of
// the simulation's status, whose value the message names (details.received is its JSON type,
// as in every validation error).
func errFinished(sim store.Simulation) *Error {
	return invalidField("status", "string (queued or running)", "string",
		"Simulation %s is already %s; only a queued or running simulation can be canceled.", sim.ID, sim.Status)
}
