package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"

	"riskapi/drift"
)

// DriftMonitor watches one agent continuously (/v1/drift/monitors): it looks at the agent's
// stored events as they arrive, and its Sensitivity bounds the probability that it ever
// alerts on an agent without a shadow principal, over all its looks.
type DriftMonitor struct {
	Resource
	AgentID     string          `json:"agent_id"`
	PrincipalID *string         `json:"principal_id"`
	Sensitivity float64         `json:"sensitivity"`
	Baseline    *drift.Baseline `json:"baseline"`
	MinEvents   int             `json:"min_events"`
	Description *string         `json:"description"`
	// Status is active or paused.
	Status string `json:"status"`
	// EventsSeen is how many events the last look analysed; Looks how many looks ran.
	EventsSeen      int64               `json:"events_seen"`
	Looks           int                 `json:"looks"`
	LastEvaluatedAt *time.Time          `json:"last_evaluated_at"`
	Alerts          []DriftMonitorAlert `json:"alerts"`
}

// DriftMonitorAlert is a party's first detection by one of the monitor's looks.
type DriftMonitorAlert struct {
	Party string `json:"party"`
	// AnalysisID is the look's analysis (DriftAnalysis), EventID its drift.shadow_detected.
	AnalysisID    string     `json:"analysis_id"`
	EventID       string     `json:"event_id"`
	RaisedAt      time.Time  `json:"raised_at"`
	ChangePointAt *time.Time `json:"change_point_at"`
}

// DriftMonitorCreateParams create a monitor (POST /v1/drift/monitors); zero members take
// the service's defaults (sensitivity 0.01, min_events 200, the first 30 % as baseline).
type DriftMonitorCreateParams struct {
	AgentID     string          `json:"agent_id"`
	PrincipalID string          `json:"principal_id,omitzero"`
	Sensitivity float64         `json:"sensitivity,omitzero"`
	Baseline    *drift.Baseline `json:"baseline,omitzero"`
	MinEvents   int             `json:"min_events,omitzero"`
	Description string          `json:"description,omitzero"`
}

// DriftMonitorUpdateParams change a monitor (PATCH /v1/drift/monitors/{id}); nil members
// keep their values.
type DriftMonitorUpdateParams struct {
	// Status is "active" or "paused".
	Status      *string  `json:"status,omitzero"`
	Sensitivity *float64 `json:"sensitivity,omitzero"`
	Description *string  `json:"description,omitzero"`
}

// DeletedDriftMonitor is the answer of DeleteDriftMonitor.
type DeletedDriftMonitor struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// DriftMonitorListParams filter and page GET /v1/drift/monitors.
type DriftMonitorListParams struct {
	ListParams
	// AgentID, when set, lists only that agent's monitor.
	AgentID string
}

func (p DriftMonitorListParams) values() url.Values {
	q := p.ListParams.values()
	if p.AgentID != "" {
		q.Set("agent_id", p.AgentID)
	}
	return q
}

// CreateDriftMonitor starts watching an agent (POST /v1/drift/monitors). A second monitor
// of the agent in the key's mode is an *Error with code CONFLICT.
func (c *Client) CreateDriftMonitor(ctx context.Context, params DriftMonitorCreateParams, opts ...RequestOption) (*DriftMonitor, error) {
	return post[DriftMonitor](ctx, c, "/v1/drift/monitors", params, opts)
}

// ListDriftMonitors iterates over the key's mode's monitors, newest first, following the
// pages.
func (c *Client) ListDriftMonitors(ctx context.Context, params DriftMonitorListParams, opts ...RequestOption) iter.Seq2[DriftMonitor, error] {
	return all[DriftMonitor](ctx, c, "/v1/drift/monitors", params.values(), opts)
}

// DriftMonitorsPage returns one page of monitors.
func (c *Client) DriftMonitorsPage(ctx context.Context, params DriftMonitorListParams, opts ...RequestOption) (*Page[DriftMonitor], error) {
	return listPage[DriftMonitor](ctx, c, "/v1/drift/monitors", params.values(), opts)
}

// DriftMonitor returns one monitor (GET /v1/drift/monitors/{id}).
func (c *Client) DriftMonitor(ctx context.Context, id string, opts ...RequestOption) (*DriftMonitor, error) {
	return get[DriftMonitor](ctx, c, pathOf("drift", "monitors", id), nil, opts)
}

// UpdateDriftMonitor changes a monitor (PATCH /v1/drift/monitors/{id}).
func (c *Client) UpdateDriftMonitor(ctx context.Context, id string, params DriftMonitorUpdateParams, opts ...RequestOption) (*DriftMonitor, error) {
	return send[DriftMonitor](ctx, c, http.MethodPatch, pathOf("drift", "monitors", id), params, opts)
}

// DeleteDriftMonitor stops watching the agent (DELETE /v1/drift/monitors/{id}); the looks'
// analyses stay.
func (c *Client) DeleteDriftMonitor(ctx context.Context, id string, opts ...RequestOption) (*DeletedDriftMonitor, error) {
	return send[DeletedDriftMonitor](ctx, c, http.MethodDelete, pathOf("drift", "monitors", id), nil, opts)
}
