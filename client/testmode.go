package client

import (
	"context"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Products, as POST /v1/test/generate and usage name them.
const (
	ProductDrift       = "drift"
	ProductConvergence = "convergence"
	ProductCascade     = "cascade"
	ProductMeridian    = "meridian"
)

// TestDataParams ask POST /v1/test/generate for synthetic requests with known truth.
type TestDataParams struct {
	// Product is one of the Product* constants.
	Product string `json:"product"`
	// Scenario is one of the product's scenarios: drift shadow_principal_detected, aligned,
	// legitimate_shift, prompt_injection; convergence collusion_found, competitive,
	// parallel_cost_shock, bid_rigging; cascade fragile_network, robust_network,
	// provider_concentration; meridian clean, dirty.
	Scenario string `json:"scenario"`
	// Count is how many items, 1–100; zero means 1.
	Count int `json:"count,omitzero"`
	// Seed makes the output reproducible; nil lets the service choose one.
	Seed *int64 `json:"seed,omitzero"`
}

// TestData is what POST /v1/test/generate answers.
type TestData struct {
	Product  string     `json:"product"`
	Scenario string     `json:"scenario"`
	Seed     int64      `json:"seed"`
	Count    int        `json:"count"`
	Items    []TestItem `json:"items"`
}

// TestItem is one generated request and the truth planted in it.
type TestItem struct {
	// Request is a complete, valid body for the product's analysis endpoint; decode it
	// with DecodeRequest into a *drift.Input, *convergence.Input, *cascade.Input or
	// *meridian.Request.
	Request jsontext.Value `json:"request"`
	// Expected is the ground truth: shadow_principal_detected, collusion_detected,
	// systemic_risk_detected or passed, with the guilty party, group or injected errors.
	Expected map[string]any `json:"expected"`
}

// DecodeRequest decodes the item's request into v.
func (t *TestItem) DecodeRequest(v any) error { return json.Unmarshal(t.Request, v) }

// GenerateTestData makes synthetic requests with known truth (POST /v1/test/generate; test
// keys only, a live key gets 403 FORBIDDEN). Drift agents' events are also stored in test
// mode, so AnalyzeDrift with only the agent id works.
func (c *Client) GenerateTestData(ctx context.Context, params TestDataParams, opts ...RequestOption) (*TestData, error) {
	return post[TestData](ctx, c, "/v1/test/generate", params, opts)
}
