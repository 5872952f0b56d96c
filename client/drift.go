package client

import (
	"context"
	"iter"
	"net/url"

	"riskapi/drift"
)

// DriftEventBatch is the answer of IngestDriftEvents.
type DriftEventBatch struct {
	AgentID string `json:"agent_id"`
	// Accepted events were stored; Duplicates repeated an id the agent already had (or an
	// earlier one in the batch) and were skipped.
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
	// TotalEvents is how many events the agent now has.
	TotalEvents int64 `json:"total_events"`
}

// DriftAnalysis is a stored Drift analysis: the engine's drift.Analysis with the members the
// API adds (id dra_…, object "drift.analysis", livemode, created_at).
type DriftAnalysis struct {
	Resource
	// MonitorID is the monitor whose look made the analysis; "" for one asked for.
	MonitorID string `json:"monitor_id,omitzero"`
	drift.Analysis
}

// IngestDriftEvents appends 1–10,000 events to an agent's stored history
// (POST /v1/drift/events); events whose id the agent already has are skipped. Analyse the
// history with AnalyzeDrift and no Events.
func (c *Client) IngestDriftEvents(ctx context.Context, batch *drift.EventBatch, opts ...RequestOption) (*DriftEventBatch, error) {
	return post[DriftEventBatch](ctx, c, "/v1/drift/events", batch, opts)
}

// AnalyzeDrift analyses an agent for shadow principals (POST /v1/drift/analyze): the
// events in in.Events (20–100,000), or without them the agent's stored events within
// in.Window. A detection also emits drift.shadow_detected.
func (c *Client) AnalyzeDrift(ctx context.Context, in *drift.Input, opts ...RequestOption) (*DriftAnalysis, error) {
	return post[DriftAnalysis](ctx, c, "/v1/drift/analyze", in, opts)
}

// DriftAnalysisListParams filter and page GET /v1/drift/analyses.
type DriftAnalysisListParams struct {
	ListParams
	// AgentID, when set, lists only that agent's analyses.
	AgentID string
}

func (p DriftAnalysisListParams) values() url.Values {
	q := p.ListParams.values()
	if p.AgentID != "" {
		q.Set("agent_id", p.AgentID)
	}
	return q
}

// ListDriftAnalyses iterates over the key's mode's Drift analyses, newest first, following
// the pages.
func (c *Client) ListDriftAnalyses(ctx context.Context, params DriftAnalysisListParams, opts ...RequestOption) iter.Seq2[DriftAnalysis, error] {
	return all[DriftAnalysis](ctx, c, "/v1/drift/analyses", params.values(), opts)
}

// DriftAnalysesPage returns one page of Drift analyses.
func (c *Client) DriftAnalysesPage(ctx context.Context, params DriftAnalysisListParams, opts ...RequestOption) (*Page[DriftAnalysis], error) {
	return listPage[DriftAnalysis](ctx, c, "/v1/drift/analyses", params.values(), opts)
}

// DriftAnalysis returns one Drift analysis (GET /v1/drift/analyses/{id}).
func (c *Client) DriftAnalysis(ctx context.Context, id string, opts ...RequestOption) (*DriftAnalysis, error) {
	return get[DriftAnalysis](ctx, c, pathOf("drift", "analyses", id), nil, opts)
}
