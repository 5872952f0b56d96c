package httpapi

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/cascade"
	"riskapi/internal/product"
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

// simulationObject is a Cascade simulation as GET returns it. Until it completes the result
// members are null; a failed one says why in failure_reason. Nodes is omitted (not null)
// only in the event's copy, which the contract keeps small.
type simulationObject struct {
	resourceHeader       `json:",inline"`
	Status               string                    `json:"status"`
	CompletedAt          *string                   `json:"completed_at"`
	FailureReason        *string                   `json:"failure_reason"`
	Progress             float64                   `json:"progress"`
	Model                string                    `json:"model"`
	Seed                 int64                     `json:"seed"`
	Simulations          int                       `json:"simulations"`
	SystemicRiskDetected *bool                     `json:"systemic_risk_detected"`
	Score                *float64                  `json:"score"`
	RiskBand             *string                   `json:"risk_band"`
	Dimensions           *cascade.Dimensions       `json:"dimensions"`
	Scenarios            *[]cascade.ScenarioResult `json:"scenarios"`
	// Nodes is JSON null until completed, the node array then, and absent in the event.
	Nodes         any    `json:"nodes,omitzero"`
	MethodVersion string `json:"method_version"`
}

// newSimulationObject is the object of a simulation of in that has not finished.
func newSimulationObject(h resourceHeader, status string, in cascade.Input) simulationObject {
	o := simulationObject{resourceHeader: h, Status: status, Model: cascade.ModelThreshold,
		Simulations: cascade.DefaultSimulations, MethodVersion: cascade.MethodVersion, Nodes: jsontext.Value("null")}
	if in.Model != "" {
		o.Model = in.Model
	}
	if in.Seed != nil {
		o.Seed = *in.Seed
	}
	if in.Simulations != nil {
		o.Simulations = *in.Simulations
	}
	return o
}

// complete fills the result in.
func (o *simulationObject) complete(res cascade.Result, at time.Time) {
	done := formatTime(at)
	o.Status, o.CompletedAt, o.Progress = store.SimulationCompleted, &done, 1
	o.Model, o.Seed, o.Simulations, o.MethodVersion = res.Model, res.Seed, res.Simulations, res.MethodVersion
	o.SystemicRiskDetected, o.Score, o.RiskBand = &res.SystemicRiskDetected, &res.Score, &res.RiskBand
	o.Dimensions, o.Scenarios, o.Nodes = &res.Dimensions, &res.Scenarios, res.Nodes
}

func (o *simulationObject) fail(reason string, at time.Time) {
	done := formatTime(at)
	o.Status, o.CompletedAt, o.FailureReason = store.SimulationFailed, &done, &reason
}

// encode renders the object for GET and, without the per-node array, for the event.
func (o simulationObject) encode() (object, event []byte, err error) {
	if object, err = json.Marshal(o, objectEncodeOptions); err != nil {
		return nil, nil, err
	}
	o.Nodes = nil
	if event, err = json.Marshal(o, objectEncodeOptions); err != nil {
		return nil, nil, err
	}
	return object, event, nil
}

// handleSimulate is POST /v1/cascade/simulate: small work runs in the request and answers 200
// with the completed simulation; async requests and work above the contract's threshold are
// stored queued, answered 202, and run by a SimulationRunner. Either way the finished
// simulation is stored with its cascade.simulation_completed event in one transaction.
func (s *Server) handleSimulate() http.Handler {
	return handleJSON(s, func(r *http.Request, req *simulateRequest) (int, any, error) {
		in := req.Input
		p := principalFrom(r.Context())
		now := s.now()
		h := newHeader(r, product.Cascade, now)
		sim := store.Simulation{ID: h.ID, AccountID: p.Account.ID, Mode: p.Key.Mode, CreatedAt: now, UpdatedAt: now}
		var err error
		if in.Async || req.work > cascade.AsyncWorkThreshold {
			obj := newSimulationObject(h, store.SimulationQueued, in)
			if sim.Request, err = json.Marshal(in); err == nil {
				sim.Payload, _, err = obj.encode()
			}
			if err == nil {
				sim.Status = store.SimulationQueued
				err = s.cfg.Store.CreateSimulation(r.Context(), sim, nil)
			}
			if err != nil {
				return 0, nil, err
			}
			s.wakeSimulationRunner()
			return http.StatusAccepted, jsontext.Value(sim.Payload), nil
		}
		res, err := cascade.Analyze(r.Context(), in)
		if err != nil {
			return 0, nil, err
		}
		obj := newSimulationObject(h, store.SimulationRunning, in)
		obj.complete(res, s.cfg.Now())
		payload, evPayload, err := obj.encode()
		if err != nil {
			return 0, nil, err
		}
		ev, err := newEvent(p.Account.ID, p.Key.Mode, product.Cascade.Event, jsontext.Value(evPayload), now)
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
