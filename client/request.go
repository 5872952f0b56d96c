package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// RequestOption configures one call: its Idempotency-Key, or where to record the response's
// metadata.
type RequestOption func(*callOptions)

type callOptions struct {
	idempotencyKey string
	response       *Response
}

// WithIdempotencyKey sends key as the call's Idempotency-Key (1–255 printable ASCII
// characters) instead of a random one. Use it to make a logical operation exactly-once
// across calls, for example across a restart of your own process: the service answers a
// repeat of the same key and body with the first answer (Response.Replayed), for 24 hours.
// It is ignored on methods other than POST.
func WithIdempotencyKey(key string) RequestOption {
	return func(o *callOptions) { o.idempotencyKey = key }
}

// CaptureResponse records the metadata of the call's final response in r: status, headers,
// request id, whether it was an idempotent replay, the rate-limit state and how many
// attempts it took. On an error r holds what the last attempt received, if anything.
func CaptureResponse(r *Response) RequestOption {
	return func(o *callOptions) { o.response = r }
}

// Response is the metadata of a call's final HTTP response (CaptureResponse).
type Response struct {
	StatusCode int
	Header     http.Header
	// RequestID is the service's id of the request (X-Request-Id); quote it when asking
	// about a request. A replay carries the id of the request it replays.
	RequestID string
	// IdempotencyKey is the key the call sent (POST only).
	IdempotencyKey string
	// Replayed is true when the answer is the stored one of an earlier request with the same
	// Idempotency-Key (header Idempotent-Replayed: true): nothing was executed again.
	Replayed bool
	// Attempts is how many HTTP requests the call sent, retries included.
	Attempts int
	// RateLimit is the state of the bucket the request counted against.
	RateLimit RateLimit
}

// RateLimit is the X-RateLimit-* headers of a response.
type RateLimit struct {
	Limit     int64     // requests allowed in the window
	Remaining int64     // requests left in it
	Reset     time.Time // when the window ends (zero when the header is absent)
}

// envelope is the success envelope of every answer; Pagination is set on lists.
type envelope struct {
	Data       jsontext.Value `json:"data"`
	Pagination *struct {
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
		TotalCount int     `json:"total_count"`
	} `json:"pagination"`
	Metadata struct {
		RequestID string `json:"request_id"`
	} `json:"metadata"`
}

// errorEnvelope is the error envelope.
type errorEnvelope struct {
	Error *struct {
		Type    string         `json:"type"`
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
	Metadata struct {
		RequestID string `json:"request_id"`
	} `json:"metadata"`
}

// call sends one logical request (do) and decodes the success envelope it answers with.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, body any, opts []RequestOption) (*envelope, error) {
	raw, err := c.do(ctx, method, path, query, body, opts)
	if err != nil {
		return nil, err
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("riskapi: %s %s: the answer is not the success envelope: %w", method, path, err)
	}
	return &env, nil
}

// callRaw GETs path and returns the 2xx body as it is (for answers outside the envelope).
func (c *Client) callRaw(ctx context.Context, path string, opts []RequestOption) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, nil, nil, opts)
}

// encodedBody is a request body already encoded, sent as it is under its Content-Type (an
// OTLP export in protobuf or JSON).
type encodedBody struct {
	data        []byte
	contentType string
}

// do sends one logical request — retried as the policy allows — and returns the body of its
// 2xx answer. body, when not nil, is encoded once, so every attempt sends the same bytes.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, opts []RequestOption) ([]byte, error) {
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	var payload []byte
	contentType := "application/json"
	if encoded, ok := body.(encodedBody); ok {
		payload, contentType = encoded.data, encoded.contentType
	} else if body != nil {
		var err error
		// Deterministic: the same value always encodes to the same bytes, so a repeat under a
		// caller's Idempotency-Key has the fingerprint of the first (the service hashes the
		// raw body) even where the value holds a map.
		if payload, err = json.Marshal(body, json.Deterministic(true)); err != nil {
			return nil, fmt.Errorf("riskapi: encode %s %s body: %w", method, path, err)
		}
	}
	target := *c.baseURL
	target.RawPath = strings.TrimSuffix(c.baseURL.EscapedPath(), "/") + path
	unescaped, err := url.PathUnescape(target.RawPath)
	if err != nil {
		return nil, fmt.Errorf("riskapi: %s %s: %w", method, path, err)
	}
	target.Path = unescaped
	target.RawQuery = query.Encode()
	idempotencyKey := ""
	if method == http.MethodPost {
		idempotencyKey = o.idempotencyKey
		if idempotencyKey == "" {
			idempotencyKey = newIdempotencyKey()
		}
	}
	meta := o.response
	if meta == nil {
		meta = &Response{}
	}
	*meta = Response{IdempotencyKey: idempotencyKey}

	for attempt := 0; ; attempt++ {
		meta.Attempts = attempt + 1
		raw, retryAfter, err := c.attempt(ctx, method, target.String(), payload, contentType, idempotencyKey, meta)
		if err == nil {
			return raw, nil
		}
		var te *transportError
		if ctx.Err() != nil && errors.As(err, &te) {
			return nil, fmt.Errorf("riskapi: %s %s: %w (attempt %d: %v)", method, path, ctx.Err(), attempt+1, err)
		}
		if attempt >= c.maxRetries || !retryable(err) {
			return nil, err
		}
		wait := c.backoff(attempt)
		if retryAfter > 0 {
			if retryAfter > c.maxRetryAfter {
				return nil, err
			}
			wait = retryAfter
		}
		if werr := sleep(ctx, wait); werr != nil {
			return nil, fmt.Errorf("riskapi: %s %s: %w while waiting to retry (last: %v)", method, path, werr, err)
		}
	}
}

// attempt sends one HTTP request. It returns the body of a 2xx answer, or the error and the
// Retry-After the service asked for (zero when none).
func (c *Client) attempt(ctx context.Context, method, target string, payload []byte, contentType, idempotencyKey string, meta *Response) ([]byte, time.Duration, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, 0, fmt.Errorf("riskapi: %s %s: %w", method, target, err)
	}
	if payload != nil {
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(payload)), nil }
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", contentType) // OTLP answers in the request's encoding
	req.Header.Set("User-Agent", c.userAgent)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	res, err := c.httpClient.Do(req)
	if err != nil {
		return nil, 0, &transportError{method: method, target: req.URL.Redacted(), err: err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		// The answer was cut off: as lost as one that never came.
		return nil, 0, &transportError{method: method, target: req.URL.Redacted(), err: fmt.Errorf("reading the response: %w", err)}
	}
	meta.StatusCode, meta.Header = res.StatusCode, res.Header
	meta.RequestID = res.Header.Get("X-Request-Id")
	meta.Replayed = res.Header.Get("Idempotent-Replayed") == "true"
	meta.RateLimit = parseRateLimit(res.Header)

	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return raw, 0, nil
	}
	apiErr := parseError(res, raw)
	if apiErr.RequestID != "" {
		meta.RequestID = apiErr.RequestID
	}
	return nil, apiErr.RetryAfter, apiErr
}

// transportError is a request that got no complete answer: the connection failed, or broke
// before the whole response arrived.
type transportError struct {
	method, target string
	err            error
}

func (e *transportError) Error() string {
	return fmt.Sprintf("riskapi: %s %s: %v", e.method, e.target, e.err)
}

func (e *transportError) Unwrap() error { return e.err }

// retryable reports whether a failed attempt may be sent again: a connection error (but not
// a certificate the client refuses, which a retry cannot fix), or an answer the service
// gives for a passing condition: 429 (a limit or the account's concurrent requests), 500
// (the service released the Idempotency-Key, so the retry executes once), 503 (an outage or
// overload), and 409 IDEMPOTENCY_KEY_IN_USE — this call's own earlier attempt is still
// executing (its answer was lost), and the retry with the same key then receives its replay.
// No other 4xx is retried: the same request would be refused again.
func retryable(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		var certErr *tls.CertificateVerificationError
		return !errors.As(err, &certErr)
	}
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable:
		return true
	case http.StatusConflict:
		return apiErr.Code == CodeIdempotencyKeyInUse
	}
	return false
}

// backoff is the wait before retry number attempt+1: a uniformly random duration in
// [0, min(maxBackoff, initialBackoff·2^attempt)), "full jitter" (AWS Architecture Blog,
// "Exponential Backoff and Jitter", 2015), which spreads clients that failed together.
func (c *Client) backoff(attempt int) time.Duration {
	ceiling := c.maxBackoff
	if attempt < 32 {
		if d := c.initialBackoff << attempt; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(mathrand.Int64N(int64(ceiling)))
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// newIdempotencyKey returns a random key: 26 base32 characters (130 bits) from crypto/rand,
// so two logical operations never share one.
func newIdempotencyKey() string { return rand.Text() }

// parseRetryAfter reads Retry-After: delay seconds (what riskapi sends) or an HTTP date.
func parseRetryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func parseRateLimit(h http.Header) RateLimit {
	var rl RateLimit
	rl.Limit, _ = strconv.ParseInt(h.Get("X-RateLimit-Limit"), 10, 64)
	rl.Remaining, _ = strconv.ParseInt(h.Get("X-RateLimit-Remaining"), 10, 64)
	if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		rl.Reset = time.Unix(reset, 0).UTC()
	}
	return rl
}

// decodeData decodes an envelope's data into a new T.
func decodeData[T any](env *envelope) (*T, error) {
	out := new(T)
	if err := json.Unmarshal(env.Data, out); err != nil {
		return nil, decodeError(env, err)
	}
	return out, nil
}

func decodeError(env *envelope, err error) error {
	return fmt.Errorf("riskapi: decode response data (request %s): %w", env.Metadata.RequestID, err)
}

// get, post, patch and del call a path under /v1 and decode data into a T.
func get[T any](ctx context.Context, c *Client, path string, query url.Values, opts []RequestOption) (*T, error) {
	env, err := c.call(ctx, http.MethodGet, path, query, nil, opts)
	if err != nil {
		return nil, err
	}
	return decodeData[T](env)
}

func post[T any](ctx context.Context, c *Client, path string, body any, opts []RequestOption) (*T, error) {
	env, err := c.call(ctx, http.MethodPost, path, nil, body, opts)
	if err != nil {
		return nil, err
	}
	return decodeData[T](env)
}

func send[T any](ctx context.Context, c *Client, method, path string, body any, opts []RequestOption) (*T, error) {
	env, err := c.call(ctx, method, path, nil, body, opts)
	if err != nil {
		return nil, err
	}
	return decodeData[T](env)
}

// pathOf joins /v1 and segments, escaping each (ids come from callers).
func pathOf(segments ...string) string {
	var b strings.Builder
	b.WriteString("/v1")
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// Do sends one request to any operation of the API, by method and path under the base URL
// ("/v1/drift/analyze"), under the client's retry and idempotency rules, and returns the data
// of the success envelope as it came. body, when not nil, is JSON sent as it is. It serves
// callers that forward requests they did not build themselves, such as `riskapi mcp`, which
// relays an agent's tool calls; otherwise the typed methods are the better choice. An answer
// other than 2xx is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, opts ...RequestOption) (jsontext.Value, error) {
	var payload any
	if body != nil {
		payload = encodedBody{data: body, contentType: "application/json"}
	}
	env, err := c.call(ctx, method, path, nil, payload, opts)
	if err != nil {
		return nil, err
	}
	return env.Data, nil
}
