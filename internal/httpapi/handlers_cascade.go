package httpapi

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/cascade"
	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// simulateRequest is the body of POST /v1/cascade/simulate: the engine's input as it is.
type simulateRequest struct {
	cascade.Input `json:",inline"`
	// work is the simulation's size by the contract's measure, found while validating.
	work int64
}

// validate applies the engine's own checks, so the API and the library refuse exactly the
// same inputs with the same codes and paths; cascade.Work validates as it measures, so the
// network is compiled once here rather than twice.
func (req *simulateRequest) validate() *Error {
	var ie *cascade.InputError
	var err error
	if req.work, err = cascade.Work(req.Input); errors.As(err, &ie) {
		return engineInputError(ie.Code, ie.Field, ie.Expected, ie.Received, ie.Message)
	} else if err != nil {
		return invalidField("network", "object", "object", "%v", err)
	}
	return nil
}

// engineInputError is an engine's validation failure in the envelope: the engine already
// names the contract's code, the path, and the types.
func engineInputError(code, field, expected, received, message string) *Error {
	if code == "" {
		code = "INVALID_" + strings.ToUpper(topLevelField(field))
	}
	return &Error{Code: code, Message: message, Details: map[string]any{"field": field, "expected": expected, "received": received}}
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
	return handleJSON(s, func(w http.ResponseWriter, r *http.Request, req *simulateRequest) {
		in := req.Input
		if in.Seed == nil {
			seed := rand.Int64N(1 << 53) // exact in JSON, so it can be sent back to reproduce
			in.Seed = &seed
		}
		p := principalFrom(r.Context())
		now := s.cfg.Now().UTC().Truncate(time.Millisecond)
		h := resourceHeader{ID: ident.New("csm"), Object: "cascade.simulation", Livemode: p.Livemode(), CreatedAt: formatTime(now)}
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
				writeError(w, r, err)
				return
			}
			s.wakeSimulationRunner()
			writeData(w, r, http.StatusAccepted, jsontext.Value(sim.Payload))
			return
		}
		res, err := cascade.Simulate(r.Context(), in, cascade.Options{})
		if err != nil && r.Context().Err() != nil {
			// The client went away (or the server is stopping): nothing is stored, and an
			// Idempotency-Key is released so that a retry runs the simulation again.
			writeError(w, r, newError(CodeServiceUnavailable, "The simulation was cancelled before it finished. Retry."))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		obj := newSimulationObject(h, store.SimulationRunning, in)
		obj.complete(res, s.cfg.Now())
		payload, evPayload, err := obj.encode()
		if err != nil {
			writeError(w, r, err)
			return
		}
		ev, err := newEvent(p.Account.ID, p.Key.Mode, EventCascadeSimulationCompleted, jsontext.Value(evPayload), now)
		if err != nil {
			writeError(w, r, err)
			return
		}
		sim.Status, sim.Payload, sim.Summary, sim.Request = store.SimulationCompleted, payload, evPayload, []byte{}
		if err := s.cfg.Store.CreateSimulation(r.Context(), sim, &ev); err != nil {
			writeError(w, r, err)
			return
		}
		s.cfg.Webhooks.Notify()
		writeData(w, r, http.StatusOK, jsontext.Value(payload))
	})
}

// handleListSimulations is GET /v1/cascade/simulations, newest first.
func (s *Server) handleListSimulations() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, "cascade_simulations")
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
		writePage(s, w, r, "cascade_simulations", q, page, store.SimulationPosition,
			func(sim store.Simulation) any { return jsontext.Value(sim.Payload) })
	})
}

// handleGetSimulation is GET /v1/cascade/simulations/{id}.
func (s *Server) handleGetSimulation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		sim, err := s.cfg.Store.Simulation(r.Context(), p.Account.ID, p.Key.Mode, r.PathValue("id"))
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, r, newError(CodeNotFound, "No Cascade simulation %s.", r.PathValue("id")))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, jsontext.Value(sim.Payload))
	})
}
