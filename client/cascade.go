package client

import (
	"context"
	"iter"
	"time"

	"riskapi/cascade"
)

// Statuses of a CascadeSimulation.
const (
	SimulationQueued    = "queued"
	SimulationRunning   = "running"
	SimulationCompleted = "completed"
	SimulationFailed    = "failed"
	SimulationCanceled  = "canceled"
)

// CascadeSimulation is a Cascade simulation. A small one is answered completed; an async or
// large one is answered queued (202) and runs in the background: its results are nil until
// Status is completed (WaitCascadeSimulation waits for that). The nested result types are
// the engine's (package cascade).
type CascadeSimulation struct {
	Resource
	// Status is one of the Simulation* constants.
	Status        string     `json:"status"`
	CompletedAt   *time.Time `json:"completed_at"`
	FailureReason *string    `json:"failure_reason"`
	// Progress is the finished share of the runs, 0–1.
	Progress    float64 `json:"progress"`
	Model       string  `json:"model"`
	Seed        int64   `json:"seed"`
	Simulations int     `json:"simulations"`
	// The results, nil until the simulation is completed.
	SystemicRiskDetected *bool                    `json:"systemic_risk_detected"`
	Score                *float64                 `json:"score"`
	RiskBand             *string                  `json:"risk_band"`
	Dimensions           *cascade.Dimensions      `json:"dimensions"`
	Scenarios            []cascade.ScenarioResult `json:"scenarios"`
	// Nodes ranks every node; events about a simulation leave it out.
	Nodes         []cascade.NodeResult `json:"nodes"`
	MethodVersion string               `json:"method_version"`
}

// Finished reports whether the simulation has reached a final status.
func (s *CascadeSimulation) Finished() bool {
	return s.Status == SimulationCompleted || s.Status == SimulationFailed || s.Status == SimulationCanceled
}

// SimulateCascade simulates failure propagation through a network
// (POST /v1/cascade/simulate). Small work is answered completed (200); in.Async or work
// above the synchronous budget is answered queued (202). Finishing emits
// cascade.simulation_completed.
func (c *Client) SimulateCascade(ctx context.Context, in *cascade.Input, opts ...RequestOption) (*CascadeSimulation, error) {
	return post[CascadeSimulation](ctx, c, "/v1/cascade/simulate", in, opts)
}

// ListCascadeSimulations iterates over the key's mode's simulations, newest first,
// following the pages.
func (c *Client) ListCascadeSimulations(ctx context.Context, params ListParams, opts ...RequestOption) iter.Seq2[CascadeSimulation, error] {
	return all[CascadeSimulation](ctx, c, "/v1/cascade/simulations", params.values(), opts)
}

// CascadeSimulationsPage returns one page of simulations.
func (c *Client) CascadeSimulationsPage(ctx context.Context, params ListParams, opts ...RequestOption) (*Page[CascadeSimulation], error) {
	return listPage[CascadeSimulation](ctx, c, "/v1/cascade/simulations", params.values(), opts)
}

// CascadeSimulation returns one simulation (GET /v1/cascade/simulations/{id}).
func (c *Client) CascadeSimulation(ctx context.Context, id string, opts ...RequestOption) (*CascadeSimulation, error) {
	return get[CascadeSimulation](ctx, c, pathOf("cascade", "simulations", id), nil, opts)
}

// CancelCascadeSimulation cancels a queued or running simulation
// (POST /v1/cascade/simulations/{id}/cancel) and returns it.
func (c *Client) CancelCascadeSimulation(ctx context.Context, id string, opts ...RequestOption) (*CascadeSimulation, error) {
	return post[CascadeSimulation](ctx, c, pathOf("cascade", "simulations", id, "cancel"), nil, opts)
}

// WaitCascadeSimulation polls a simulation every interval (1 s when zero or less) until it
// is finished, and returns it; it stops with the context's error when ctx ends first.
func (c *Client) WaitCascadeSimulation(ctx context.Context, id string, interval time.Duration) (*CascadeSimulation, error) {
	if interval <= 0 {
		interval = time.Second
	}
	for {
		sim, err := c.CascadeSimulation(ctx, id)
		if err != nil || sim.Finished() {
			return sim, err
		}
		if err := sleep(ctx, interval); err != nil {
			return nil, err
		}
	}
}
