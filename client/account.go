package client

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// Resource is what every object the API stores starts with.
type Resource struct {
	// ID carries the object's typed prefix: dra_…, csm_…, we_…, evt_… .
	ID     string `json:"id"`
	Object string `json:"object"`
	// Livemode is false for objects of test mode (made with a test key).
	Livemode  bool      `json:"livemode"`
	CreatedAt time.Time `json:"created_at"`
}

// ServiceInfo describes a deployment (GET /v1).
type ServiceInfo struct {
	Object  string `json:"object"`
	Version string `json:"version"`
	// Region is this deployment's region, RegionDefault or RegionEU.
	Region   string `json:"region"`
	BaseURLs struct {
		Default string `json:"default"`
		// EU is the EU deployment's base URL; nil when none is configured.
		EU *string `json:"eu"`
	} `json:"base_urls"`
	OpenAPIURL        string   `json:"openapi_url"`
	SupportedVersions []string `json:"supported_versions"`
}

// Service describes the deployment the client calls: version, region and the base URLs of
// both regions. It needs no API key.
func (c *Client) Service(ctx context.Context, opts ...RequestOption) (*ServiceInfo, error) {
	return get[ServiceInfo](ctx, c, "/v1", nil, opts)
}

// OpenAPI returns the deployment's OpenAPI 3.1 document (GET /v1/openapi.json), as JSON.
func (c *Client) OpenAPI(ctx context.Context, opts ...RequestOption) ([]byte, error) {
	return c.callRaw(ctx, "/v1/openapi.json", opts)
}

// ForRegion returns a copy of c that calls the deployment of region (RegionDefault or
// RegionEU), whose base URL it reads from GET /v1. An account's data lives only in its
// region's deployment, so EU accounts call the EU base URL. It fails when the deployment
// reports no base URL for that region.
func (c *Client) ForRegion(ctx context.Context, region string) (*Client, error) {
	info, err := c.Service(ctx)
	if err != nil {
		return nil, err
	}
	var base string
	switch region {
	case RegionDefault:
		base = info.BaseURLs.Default
	case RegionEU:
		if info.BaseURLs.EU != nil {
			base = *info.BaseURLs.EU
		}
	default:
		return nil, fmt.Errorf("riskapi: unknown region %q (want %q or %q)", region, RegionDefault, RegionEU)
	}
	if base == "" {
		return nil, fmt.Errorf("riskapi: the deployment at %s reports no base URL for region %q", c.BaseURL(), region)
	}
	copied := *c
	if err := WithBaseURL(base)(&copied); err != nil {
		return nil, err
	}
	return &copied, nil
}

// Health is the answer of GET /healthz and GET /readyz.
type Health struct {
	// Status is "ok" (Health) or "ready" (Ready).
	Status string `json:"status"`
}

// Health checks that the deployment serves HTTP (GET /healthz, outside /v1, no key).
func (c *Client) Health(ctx context.Context, opts ...RequestOption) (*Health, error) {
	return get[Health](ctx, c, "/healthz", nil, opts)
}

// Ready checks that the deployment can take traffic (GET /readyz): its store answers and it
// is not shutting down; otherwise an *Error with status 503 (retried like any 503).
func (c *Client) Ready(ctx context.Context, opts ...RequestOption) (*Health, error) {
	return get[Health](ctx, c, "/readyz", nil, opts)
}

// Account is the account that owns the calling key, with that key's record.
type Account struct {
	Resource
	Name  string `json:"name"`
	Email string `json:"email"`
	// Plan is free_trial, starter, professional or enterprise.
	Plan   string `json:"plan"`
	Region string `json:"region"`
	// CustomLimits are hourly limits per product that replace the plan's.
	CustomLimits map[string]int64 `json:"custom_limits"`
	APIKey       APIKey           `json:"api_key"`
}

// APIKey is an API key's record (never the key itself).
type APIKey struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	// Type is live, test or restricted; Mode is live or test.
	Type string `json:"type"`
	Mode string `json:"mode"`
	Name string `json:"name"`
	// Display is the key's prefix and last four characters: sk_test_…wxyz.
	Display string   `json:"display"`
	Scopes  []string `json:"scopes"`
	// RateLimit is the key's own hourly limit; nil when it has none.
	RateLimit  *int64     `json:"rate_limit"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// Account returns the account and key of the client's API key (GET /v1/account).
func (c *Client) Account(ctx context.Context, opts ...RequestOption) (*Account, error) {
	return get[Account](ctx, c, "/v1/account", nil, opts)
}

// UsageParams choose the days of a usage report; zero values are the service's defaults
// (the 30 days up to today).
type UsageParams struct {
	// From and To are UTC days, inclusive; only their dates count.
	From, To time.Time
}

// Usage is the account's billable units per day and product, and the state of every
// rate-limit bucket the calling key counts against now.
type Usage struct {
	Object   string `json:"object"`
	Livemode bool   `json:"livemode"`
	// From and To are the report's first and last UTC days, YYYY-MM-DD.
	From   string     `json:"from"`
	To     string     `json:"to"`
	Totals UsageTotal `json:"totals"`
	// Days has one entry per day and product that has units.
	Days       []UsageDay       `json:"days"`
	RateLimits []RateLimitState `json:"rate_limits"`
}

// UsageTotal is the units of each product over the report's days.
type UsageTotal struct {
	Drift       int64 `json:"drift"`
	Convergence int64 `json:"convergence"`
	Cascade     int64 `json:"cascade"`
	Meridian    int64 `json:"meridian"`
}

// UsageDay is one product's units on one day, per endpoint.
type UsageDay struct {
	Date      string           `json:"date"`
	Product   string           `json:"product"`
	Units     int64            `json:"units"`
	Endpoints map[string]int64 `json:"endpoints"`
}

// RateLimitState is one rate-limit bucket now.
type RateLimitState struct {
	// Policy is drift, convergence, cascade, meridian, platform, test-day or key.
	Policy string `json:"policy"`
	// Product is set on product buckets.
	Product string `json:"product,omitempty"`
	// Window is hour or day.
	Window    string `json:"window"`
	Limit     int64  `json:"limit"`
	Remaining int64  `json:"remaining"`
	// Reset is when the window ends, in Unix epoch seconds.
	Reset int64 `json:"reset"`
}

// Usage returns the usage report (GET /v1/usage). Test keys see no units: test mode is
// never billed. Units are written in batches every 2 seconds.
func (c *Client) Usage(ctx context.Context, params UsageParams, opts ...RequestOption) (*Usage, error) {
	q := url.Values{}
	if !params.From.IsZero() {
		q.Set("from", params.From.UTC().Format(time.DateOnly))
	}
	if !params.To.IsZero() {
		q.Set("to", params.To.UTC().Format(time.DateOnly))
	}
	return get[Usage](ctx, c, "/v1/usage", q, opts)
}
