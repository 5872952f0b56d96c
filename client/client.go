// Package client is the Go client of the riskapi HTTP/JSON API: one typed method per
// operation of api/openapi.yaml, with the API's retry, idempotency and pagination rules built
// in, so a caller gets exactly-once POSTs and complete lists without writing them.
//
//   - Every call takes a context; cancelling it stops the call, its retries and its waits.
//   - Every POST carries an Idempotency-Key, random unless WithIdempotencyKey gives one, and
//     the same key on each of that call's retries: a retry after a lost response gets the
//     stored answer (Idempotent-Replayed: true) instead of a second analysis.
//   - Connection errors, 429, 500 and 503 are retried with exponential backoff and full
//     jitter, or after the Retry-After the service sends; other 4xx never are.
//   - Lists are iterators (iter.Seq2) that follow next_cursor page by page; each list also
//     has a one-page method.
//   - A response other than 2xx is an *Error carrying the envelope's type, code, message,
//     details and request id; use errors.As.
//
// Request and result types are the engines' own where they are the wire types (drift.Input,
// convergence.Input, cascade.Input, meridian.Request and their results); the objects the API
// adds around them are defined here. Webhook receivers verify deliveries with VerifyWebhook
// (package riskapi/webhook, re-exported).
package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Version is this client's version, sent in the User-Agent as riskapi-go/<Version>.
const Version = "1.0.0"

// DefaultBaseURL is where a client points without WithBaseURL: the address `riskapi serve`
// listens on by default (the README's quick start). A deployment has its own public base URL
// by configuration, and the specification fixes no public host, so production callers
// always pass theirs; Client.ForRegion finds a deployment's EU base URL from GET /v1.
const DefaultBaseURL = "http://127.0.0.1:8080"

// Regions of a deployment (GET /v1 reports each one's base URL in base_urls).
const (
	RegionDefault = "default"
	RegionEU      = "eu"
)

// Defaults of the retry policy; the options below change them.
const (
	// DefaultMaxRetries is how many times a call is retried after its first attempt: 3, so at
	// most 4 attempts, which without Retry-After wait 1.75 s in all on average (0.25 + 0.5 +
	// 1 s, the means of full jitter under ceilings of 0.5, 1 and 2 s) and at most 3.5 s.
	DefaultMaxRetries = 3
	// DefaultInitialBackoff is the ceiling of the first retry's random wait; each retry
	// doubles it, up to DefaultMaxBackoff.
	DefaultInitialBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff caps one computed wait.
	DefaultMaxBackoff = 8 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After the client waits out by itself: 60 s.
	// An hourly limit that is exhausted answers 429 with a Retry-After of up to an hour; the
	// client then returns the *Error at once (its RetryAfter says how long), rather than
	// holding the caller's goroutine that long.
	DefaultMaxRetryAfter = 60 * time.Second
)

// Client calls one riskapi deployment with one API key. It is safe for concurrent use.
type Client struct {
	baseURL        *url.URL // scheme and host (and any path prefix), without /v1
	apiKey         string
	httpClient     *http.Client
	userAgent      string
	maxRetries     int
	initialBackoff time.Duration
	maxBackoff     time.Duration
	maxRetryAfter  time.Duration
}

// Option configures a Client (New).
type Option func(*Client) error

// New returns a client. Without options it calls DefaultBaseURL without an API key, which
// only the service's public endpoints (GET /v1, /healthz, /readyz) accept.
func New(opts ...Option) (*Client, error) {
	c := &Client{
		httpClient:     http.DefaultClient,
		userAgent:      "riskapi-go/" + Version,
		maxRetries:     DefaultMaxRetries,
		initialBackoff: DefaultInitialBackoff,
		maxBackoff:     DefaultMaxBackoff,
		maxRetryAfter:  DefaultMaxRetryAfter,
	}
	if err := WithBaseURL(DefaultBaseURL)(c); err != nil {
		return nil, err
	}
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// WithBaseURL sets the deployment's public base URL, such as https://api.example.com (a
// trailing /v1 is accepted and ignored: the client adds it).
func WithBaseURL(base string) Option {
	return func(c *Client) error {
		u, err := url.Parse(strings.TrimSpace(base))
		if err != nil {
			return fmt.Errorf("riskapi: base URL %q: %w", base, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("riskapi: base URL %q: want an absolute http:// or https:// URL", base)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("riskapi: base URL %q: want no query or fragment", base)
		}
		u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
		u.RawPath = ""
		c.baseURL = u
		return nil
	}
}

// WithAPIKey sets the key every request is sent with (Authorization: Bearer): sk_live_…,
// sk_test_… or sk_rstr_…. Keep it out of source code; read it from the environment.
func WithAPIKey(key string) Option {
	return func(c *Client) error {
		c.apiKey = strings.TrimSpace(key)
		return nil
	}
}

// WithHTTPClient sets the *http.Client requests are sent with (its Transport, Timeout,
// proxy). The default is http.DefaultClient; a per-call deadline belongs in the context.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("riskapi: WithHTTPClient: nil *http.Client")
		}
		c.httpClient = hc
		return nil
	}
}

// WithUserAgent appends suffix to the User-Agent, "riskapi-go/<Version> <suffix>", so the
// service's logs can tell your application's requests apart (for example "acme-risk/2.1").
func WithUserAgent(suffix string) Option {
	return func(c *Client) error {
		c.userAgent = "riskapi-go/" + Version
		if s := strings.TrimSpace(suffix); s != "" {
			c.userAgent += " " + s
		}
		return nil
	}
}

// WithMaxRetries sets how many times a call is retried after its first attempt (default
// DefaultMaxRetries, 3); 0 turns retries off.
func WithMaxRetries(n int) Option {
	return func(c *Client) error {
		if n < 0 {
			return fmt.Errorf("riskapi: WithMaxRetries(%d): want 0 or more", n)
		}
		c.maxRetries = n
		return nil
	}
}

// WithBackoff sets the ceiling of the first retry's random wait and the cap of any computed
// wait (defaults DefaultInitialBackoff, 0.5 s, and DefaultMaxBackoff, 8 s). The n-th retry
// waits a uniformly random time in [0, min(max, initial·2ⁿ⁻¹)) ("full jitter"), so clients
// that failed together do not retry together.
func WithBackoff(initial, max time.Duration) Option {
	return func(c *Client) error {
		if initial <= 0 || max < initial {
			return fmt.Errorf("riskapi: WithBackoff(%v, %v): want 0 < initial <= max", initial, max)
		}
		c.initialBackoff, c.maxBackoff = initial, max
		return nil
	}
}

// WithMaxRetryAfter sets the longest Retry-After the client waits out before retrying
// (default DefaultMaxRetryAfter, 60 s); a longer one ends the call with the *Error.
func WithMaxRetryAfter(d time.Duration) Option {
	return func(c *Client) error {
		if d < 0 {
			return fmt.Errorf("riskapi: WithMaxRetryAfter(%v): want 0 or more", d)
		}
		c.maxRetryAfter = d
		return nil
	}
}

// BaseURL returns the base URL the client calls, without /v1.
func (c *Client) BaseURL() string { return c.baseURL.String() }

// UserAgent returns the User-Agent the client sends.
func (c *Client) UserAgent() string { return c.userAgent }
