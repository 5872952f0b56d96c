package client

import (
	"context"
	"iter"
	"net/url"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Event kinds (Event.Type), which webhooks subscribe to.
const (
	EventDriftShadowDetected        = "drift.shadow_detected"
	EventConvergenceCollusionFound  = "convergence.collusion_found"
	EventCascadeSimulationCompleted = "cascade.simulation_completed"
	EventMeridianQualityCheckFailed = "meridian.quality_check_failed"
	EventWebhookTest                = "webhook.test"
	EventAll                        = "*" // in WebhookCreateParams.Events: every kind
)

// Event is an event of the outbox, exactly as webhooks deliver it: its data.object is the
// object it reports (a DriftAnalysis, a ConvergenceAnalysis, a CascadeSimulation without its
// nodes, a QualityCheck, or for webhook.test the WebhookEndpoint).
type Event struct {
	Resource
	// Type is one of the Event* kinds.
	Type       string `json:"type"`
	APIVersion string `json:"api_version"`
	Data       struct {
		Object jsontext.Value `json:"object"`
	} `json:"data"`
}

// DecodeObject decodes the event's data.object into v, for example a *DriftAnalysis for
// drift.shadow_detected.
func (e *Event) DecodeObject(v any) error { return json.Unmarshal(e.Data.Object, v) }

// EventListParams filter and page GET /v1/events.
type EventListParams struct {
	ListParams
	// Type, when set, lists only events of this kind.
	Type string
}

func (p EventListParams) values() url.Values {
	q := p.ListParams.values()
	if p.Type != "" {
		q.Set("type", p.Type)
	}
	return q
}

// ListEvents iterates over the account's events of the key's mode, newest first, kept 30
// days, following the pages.
func (c *Client) ListEvents(ctx context.Context, params EventListParams, opts ...RequestOption) iter.Seq2[Event, error] {
	return all[Event](ctx, c, "/v1/events", params.values(), opts)
}

// EventsPage returns one page of events.
func (c *Client) EventsPage(ctx context.Context, params EventListParams, opts ...RequestOption) (*Page[Event], error) {
	return listPage[Event](ctx, c, "/v1/events", params.values(), opts)
}

// Event returns one event (GET /v1/events/{id}).
func (c *Client) Event(ctx context.Context, id string, opts ...RequestOption) (*Event, error) {
	return get[Event](ctx, c, pathOf("events", id), nil, opts)
}
