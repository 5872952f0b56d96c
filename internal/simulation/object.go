package simulation

import (
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/cascade"
	"riskapi/internal/product"
	"riskapi/internal/resource"
	"riskapi/internal/store"
)

// Object is a Cascade simulation as GET returns it. Until it completes the result members
// are null; a failed one says why in failure_reason; completed_at is when it finished
// (completed, failed or canceled). Nodes is omitted (not null) only in the event's copy,
// which the contract keeps small.
type Object struct {
	resource.Header      `json:",inline"`
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

// NewObject is the object of sim, a simulation of in that has not finished, with status.
func NewObject(sim store.Simulation, status string, in cascade.Input) Object {
	h := resource.Header{ID: sim.ID, Object: product.Cascade.Results.Object, Livemode: sim.Mode == store.ModeLive,
		CreatedAt: resource.FormatTime(sim.CreatedAt)}
	o := Object{Header: h, Status: status, Model: cascade.ModelThreshold,
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

// Complete fills the result in.
func (o *Object) Complete(res cascade.Result, at time.Time) {
	done := resource.FormatTime(at)
	o.Status, o.CompletedAt, o.Progress = store.SimulationCompleted, &done, 1
	o.Model, o.Seed, o.Simulations, o.MethodVersion = res.Model, res.Seed, res.Simulations, res.MethodVersion
	o.SystemicRiskDetected, o.Score, o.RiskBand = &res.SystemicRiskDetected, &res.Score, &res.RiskBand
	o.Dimensions, o.Scenarios, o.Nodes = &res.Dimensions, &res.Scenarios, res.Nodes
}

// Fail marks the simulation failed at at, for reason.
func (o *Object) Fail(reason string, at time.Time) {
	done := resource.FormatTime(at)
	o.Status, o.CompletedAt, o.FailureReason = store.SimulationFailed, &done, &reason
}

// Canceled returns payload, a stored unfinished simulation's object, canceled at at: status
// canceled, completed_at the time it was canceled, the progress it had reached, and the
// result members still null.
func Canceled(payload []byte, at time.Time) ([]byte, error) {
	var o Object
	if err := json.Unmarshal(payload, &o); err != nil {
		return nil, err
	}
	done := resource.FormatTime(at)
	o.Status, o.CompletedAt, o.Nodes = store.SimulationCanceled, &done, jsontext.Value("null")
	object, _, err := o.Encode()
	return object, err
}

// Encode renders the object for GET and, without the per-node array, for the event.
func (o Object) Encode() (object, event []byte, err error) {
	if object, err = json.Marshal(o, resource.ObjectEncodeOptions); err != nil {
		return nil, nil, err
	}
	o.Nodes = nil
	if event, err = json.Marshal(o, resource.ObjectEncodeOptions); err != nil {
		return nil, nil, err
	}
	return object, event, nil
}

// Queued returns sim ready to be stored for a runner to pick up: status queued, in as its
// request and its object as its payload.
func Queued(sim store.Simulation, in cascade.Input) (store.Simulation, error) {
	request, err := json.Marshal(in)
	if err != nil {
		return sim, err
	}
	payload, _, err := NewObject(sim, store.SimulationQueued, in).Encode()
	if err != nil {
		return sim, err
	}
	sim.Status, sim.Request, sim.Payload = store.SimulationQueued, request, payload
	return sim, nil
}
