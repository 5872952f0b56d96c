package client

import (
	"context"
	"iter"
	"net/http"
	"time"
)

// WebhookEndpoint is a registered webhook endpoint. Its secret is write-only: never
// returned.
type WebhookEndpoint struct {
	Resource
	URL string `json:"url"`
	// Events are the kinds it receives (Event* constants), or ["*"] for all.
	Events      []string `json:"events"`
	Description *string  `json:"description"`
	// Status is enabled or disabled; DisabledReason is user, gone (the receiver answered
	// 410) or failing (5 days without success), nil while enabled.
	Status         string  `json:"status"`
	DisabledReason *string `json:"disabled_reason"`
}

// WebhookCreateParams register an endpoint (POST /v1/webhooks).
type WebhookCreateParams struct {
	// URL is an absolute https:// URL (http:// in test mode) of a public host.
	URL string `json:"url"`
	// Events are the kinds to receive (Event* constants), or []string{EventAll}.
	Events []string `json:"events"`
	// Secret signs deliveries: "whsec_" and at least 24 more characters, at most 256 in all;
	// "whsec_" + the base64 of 32 random bytes works with stock Standard Webhooks verifiers.
	Secret      string `json:"secret"`
	Description string `json:"description,omitzero"`
}

// WebhookUpdateParams change an endpoint (PATCH /v1/webhooks/{id}); nil members keep their
// values.
type WebhookUpdateParams struct {
	URL         *string  `json:"url,omitzero"`
	Events      []string `json:"events,omitzero"`
	Secret      *string  `json:"secret,omitzero"`
	Description *string  `json:"description,omitzero"`
	// Status is "enabled" or "disabled"; enabling clears the disabled reason.
	Status *string `json:"status,omitzero"`
}

// DeletedWebhookEndpoint is the answer of DeleteWebhook.
type DeletedWebhookEndpoint struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// WebhookDelivery is one event on its way to one endpoint.
type WebhookDelivery struct {
	Resource
	WebhookID string `json:"webhook_id"`
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	// Status is pending, succeeded or failed.
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	LastStatusCode *int       `json:"last_status_code"`
	LastError      *string    `json:"last_error"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	// ManualRetry is true while a retry asked for with RetryWebhookDelivery is due.
	ManualRetry bool       `json:"manual_retry"`
	CompletedAt *time.Time `json:"completed_at"`
}

// WebhookTest is the answer of TestWebhook: the webhook.test event and its delivery.
type WebhookTest struct {
	EventID    string `json:"event_id"`
	DeliveryID string `json:"delivery_id"`
}

// CreateWebhook registers an endpoint (POST /v1/webhooks); at most 16 per account and mode.
func (c *Client) CreateWebhook(ctx context.Context, params WebhookCreateParams, opts ...RequestOption) (*WebhookEndpoint, error) {
	return post[WebhookEndpoint](ctx, c, "/v1/webhooks", params, opts)
}

// ListWebhooks iterates over the key's mode's endpoints, newest first, following the pages.
func (c *Client) ListWebhooks(ctx context.Context, params ListParams, opts ...RequestOption) iter.Seq2[WebhookEndpoint, error] {
	return all[WebhookEndpoint](ctx, c, "/v1/webhooks", params.values(), opts)
}

// WebhooksPage returns one page of endpoints.
func (c *Client) WebhooksPage(ctx context.Context, params ListParams, opts ...RequestOption) (*Page[WebhookEndpoint], error) {
	return listPage[WebhookEndpoint](ctx, c, "/v1/webhooks", params.values(), opts)
}

// Webhook returns one endpoint (GET /v1/webhooks/{id}).
func (c *Client) Webhook(ctx context.Context, id string, opts ...RequestOption) (*WebhookEndpoint, error) {
	return get[WebhookEndpoint](ctx, c, pathOf("webhooks", id), nil, opts)
}

// UpdateWebhook changes an endpoint (PATCH /v1/webhooks/{id}).
func (c *Client) UpdateWebhook(ctx context.Context, id string, params WebhookUpdateParams, opts ...RequestOption) (*WebhookEndpoint, error) {
	return send[WebhookEndpoint](ctx, c, http.MethodPatch, pathOf("webhooks", id), params, opts)
}

// DeleteWebhook deletes an endpoint and its delivery log (DELETE /v1/webhooks/{id}). When
// a retry follows a lost answer, the endpoint is already gone and the call returns an
// *Error with CodeNotFound.
func (c *Client) DeleteWebhook(ctx context.Context, id string, opts ...RequestOption) (*DeletedWebhookEndpoint, error) {
	return send[DeletedWebhookEndpoint](ctx, c, http.MethodDelete, pathOf("webhooks", id), nil, opts)
}

// ListWebhookDeliveries iterates over an endpoint's deliveries, newest first, following
// the pages.
func (c *Client) ListWebhookDeliveries(ctx context.Context, webhookID string, params ListParams, opts ...RequestOption) iter.Seq2[WebhookDelivery, error] {
	return all[WebhookDelivery](ctx, c, pathOf("webhooks", webhookID, "deliveries"), params.values(), opts)
}

// WebhookDeliveriesPage returns one page of an endpoint's deliveries.
func (c *Client) WebhookDeliveriesPage(ctx context.Context, webhookID string, params ListParams, opts ...RequestOption) (*Page[WebhookDelivery], error) {
	return listPage[WebhookDelivery](ctx, c, pathOf("webhooks", webhookID, "deliveries"), params.values(), opts)
}

// RetryWebhookDelivery adds one attempt of a delivery now
// (POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry), whatever its status.
func (c *Client) RetryWebhookDelivery(ctx context.Context, webhookID, deliveryID string, opts ...RequestOption) (*WebhookDelivery, error) {
	return post[WebhookDelivery](ctx, c, pathOf("webhooks", webhookID, "deliveries", deliveryID, "retry"), nil, opts)
}

// TestWebhook sends a webhook.test event to this endpoint only
// (POST /v1/webhooks/{id}/test).
func (c *Client) TestWebhook(ctx context.Context, webhookID string, opts ...RequestOption) (*WebhookTest, error) {
	return post[WebhookTest](ctx, c, pathOf("webhooks", webhookID, "test"), nil, opts)
}
