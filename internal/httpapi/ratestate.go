package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/event"
	"riskapi/internal/product"
	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
)

// This file is what the customer dashboard (internal/dashboard) shares with the API, so that
// both apply one set of rules: the rate-limit buckets a key counts against, the client IP
// behind trusted proxies, webhook validation and the webhook.test event.

// RateLimitState is one rate-limit bucket as GET /v1/usage reports it.
type RateLimitState struct {
	// Policy is the bucket's name in the RateLimit-Policy header: a product, "platform",
	// "test-day" or "key".
	Policy    string
	Product   string // the product limited, "" for the other buckets
	Window    ratelimit.Window
	Limit     int64
	Used      int64 // requests counted in the current window
	Remaining int64
	Reset     time.Time // end of the current window
}

// PeekRateLimits returns, without counting anything, the state at now of every bucket the
// requests of the principal's key count against: one per product and the platform bucket in
// live mode, the daily bucket in test mode, and the key's own bucket if it has a limit.
// ceiling is the hourly value behind "Unlimited" (0: DefaultUnlimitedCeiling).
func PeekRateLimits(ctx context.Context, limiter ratelimit.Limiter, ceiling int64, p auth.Principal, now time.Time) ([]RateLimitState, error) {
	if ceiling <= 0 {
		ceiling = DefaultUnlimitedCeiling
	}
	s := &Server{cfg: Config{UnlimitedCeiling: ceiling}}
	categories := []string{""}
	if p.Livemode() {
		categories = slices.Concat(product.Names(), categories)
	}
	var applied, keyBucket []limitBucket
	for _, product := range categories {
		for _, b := range s.bucketsFor(p, product) {
			if b.policy == "key" {
				keyBucket = []limitBucket{b}
				continue
			}
			applied = append(applied, b)
		}
	}
	applied = append(applied, keyBucket...)
	buckets := make([]ratelimit.Bucket, len(applied))
	for i, a := range applied {
		buckets[i] = a.bucket
	}
	states, err := limiter.Peek(ctx, now, buckets...)
	if err != nil {
		return nil, err
	}
	out := make([]RateLimitState, len(states))
	for i, st := range states {
		out[i] = RateLimitState{Policy: applied[i].policy, Product: applied[i].product, Window: st.Bucket.Window,
			Limit: st.Bucket.Limit, Used: st.Count, Remaining: st.Remaining(), Reset: st.Reset}
	}
	return out, nil
}

// ClientIP is the address of the client that sent r: the connection's peer, or, when the peer
// is one of the trusted proxies, the nearest X-Forwarded-For entry that is not.
func ClientIP(r *http.Request, trusted []netip.Prefix) string {
	s := &Server{cfg: Config{TrustedProxies: trusted}}
	return s.clientIP(r)
}

// WebhookEventKinds lists the event kinds a webhook endpoint may subscribe to (or "*").
func WebhookEventKinds() []string { return event.Kinds() }

// CheckWebhookFields validates an endpoint's events, secret and description as POST
// /v1/webhooks does (the URL is checked by delivery.Targets.CheckURL). The error's message
// names the field and the problem in plain words.
func CheckWebhookFields(events []string, secret, description string) error {
	f := webhookFields{Events: &events, Secret: &secret}
	if description != "" {
		f.Description = &description
	}
	if e := f.validate(); e != nil {
		field, _ := e.Details["field"].(string)
		return &FieldError{Field: field, Message: e.Message}
	}
	return nil
}

// FieldError is a validation failure of one field, for forms outside the JSON API.
type FieldError struct {
	Field   string // the field's JSON path, e.g. "events[1]"
	Message string
}

func (e *FieldError) Error() string { return e.Message }

// NewWebhookTestEvent builds the webhook.test event about endpoint e exactly as POST
// /v1/webhooks/{id}/test does; store it with store.CreateEventFor.
func NewWebhookTestEvent(e store.WebhookEndpoint, now time.Time) (store.Event, error) {
	if e.ID == "" {
		return store.Event{}, errors.New("webhook test event: endpoint has no id")
	}
	return event.New(e.AccountID, e.Mode, event.WebhookTest, newWebhookEndpointObject(e), now)
}
