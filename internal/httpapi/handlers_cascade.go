package httpapi

import (
	"errors"
	"math/rand/v2"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/cascade"
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
				product.Cascade.Analyze:            s.handleSimulate(),
				"GET /v1/cascade/simulations":      s.handleListSimulations(),
				"GET /v1/cascade/simulations/{id}": s.handleGetSimulation(),
			}
		},
	})
}

// simulateRequest is the body of POST /v1/cascade/simulate: the engine's input as it is.
type simulateRequest struct {
	cascade.Input `json:",inline"`
	// work is the simulation's size by the contract's measure, found while validating.
	work int64
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
		if in.Async || req.work > cascade.AsyncWorkThreshold {
			queued, err := simulation.Queued(sim, in)
			if err == nil {
				err = s.cfg.Store.CreateSimulation(r.Context(), queued, nil)
			}
			if err != nil {
				return 0, nil, err
			}
			s.cfg.WakeSimulations()
			return http.StatusAccepted, jsontext.Value(queued.Payload), nil
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
		if err := s.cfg.Store.CreateSimulation(r.Context(), sim, &ev); err != nil {
			return 0, nil, err
		}
		s.cfg.Webhooks.Notify()
		return http.StatusOK, jsontext.Value(payload), nil
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
		p := principalFrom(r.Context())
		sim, err := s.cfg.Store.Simulation(r.Context(), p.Account.ID, p.Key.Mode, r.PathValue("id"))
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, r, newError(CodeNotFound, "No %s %s.", product.Cascade.Results.Noun, r.PathValue("id")))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, jsontext.Value(sim.Payload))
	})
}
