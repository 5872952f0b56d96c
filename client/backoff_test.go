package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"riskapi/client"
)

// scripted is a fake service in memory: it answers the n-th request with the n-th answer
// (the last one repeats) and records when each request came and what it carried. Run in a
// synctest bubble, its clock is the bubble's, so waits are measured exactly and cost nothing.
type scripted struct {
	mu      sync.Mutex
	answers []answer
	times   []time.Time
	headers []http.Header
	bodies  []string
}

// answer is one scripted response; a nil handler is a connection error.
type answer http.HandlerFunc

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	s.mu.Lock()
	n := len(s.times)
	s.times = append(s.times, time.Now())
	s.headers = append(s.headers, req.Header.Clone())
	s.bodies = append(s.bodies, string(body))
	a := s.answers[min(n, len(s.answers)-1)]
	s.mu.Unlock()
	if a == nil {
		return nil, errors.New("dial tcp 127.0.0.1:443: connect: connection refused")
	}
	rec := httptest.NewRecorder()
	a(rec, req)
	return rec.Result(), nil
}

// gaps returns the time between consecutive requests.
func (s *scripted) gaps() []time.Duration {
	var out []time.Duration
	for i := 1; i < len(s.times); i++ {
		out = append(out, s.times[i].Sub(s.times[i-1]))
	}
	return out
}

// refuse answers with the error envelope; retryAfter "" sends no Retry-After.
func refuse(status int, code, retryAfter string) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_fake")
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"success":false,"error":{"type":"x","code":%q,"message":"refused","details":{}},"metadata":{"request_id":"req_fake","timestamp":"2026-11-21T10:00:00.123Z"}}`, code)
	}
}

// accept answers 200 with a webhook endpoint.
func accept(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_ok")
	fmt.Fprint(w, `{"success":true,"data":{"id":"we_1","object":"webhook_endpoint","url":"https://8.8.8.8/h","events":["*"],"description":null,"status":"enabled","disabled_reason":null,"livemode":false,"created_at":"2026-11-21T10:00:00.123Z"},"metadata":{"request_id":"req_ok","timestamp":"2026-11-21T10:00:00.123Z","processing_time_ms":1}}`)
}

func fakeClient(t *testing.T, s *scripted, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(append([]client.Option{client.WithBaseURL("https://api.example.com"), client.WithAPIKey("sk_test_x"),
		client.WithHTTPClient(&http.Client{Transport: s})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var createParams = client.WebhookCreateParams{URL: "https://8.8.8.8/h", Events: []string{"*"}, Secret: testSecret}

// 429 and 503 are retried after exactly the Retry-After they carry, with the same
// Idempotency-Key and body, and the caller gets the answer that finally succeeded.
func TestRetryAfterIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []answer{refuse(429, client.CodeRateLimited, "2"), refuse(503, client.CodeServiceUnavailable, "1"), accept}}
		c := fakeClient(t, s, client.WithUserAgent("acme-risk/2.1"))
		var res client.Response
		we, err := c.CreateWebhook(t.Context(), createParams, client.CaptureResponse(&res))
		if err != nil {
			t.Fatal(err)
		}
		if we.ID != "we_1" || res.Attempts != 3 || res.RequestID != "req_ok" {
			t.Fatalf("got %s after %d attempts (request %s)", we.ID, res.Attempts, res.RequestID)
		}
		if g := s.gaps(); g[0] != 2*time.Second || g[1] != time.Second {
			t.Fatalf("waited %v, want exactly [2s 1s] as Retry-After said", g)
		}
		key := s.headers[0].Get("Idempotency-Key")
		for i, h := range s.headers {
			if h.Get("Idempotency-Key") != key || len(key) < 20 || s.bodies[i] != s.bodies[0] || s.bodies[0] == "" {
				t.Fatalf("attempt %d sent key %q body %q; the first %q %q", i, h.Get("Idempotency-Key"), s.bodies[i], key, s.bodies[0])
			}
			if h.Get("User-Agent") != "riskapi-go/"+client.Version+" acme-risk/2.1" || h.Get("Authorization") != "Bearer sk_test_x" || h.Get("Content-Type") != "application/json" {
				t.Fatalf("attempt %d headers: %v", i, h)
			}
		}
		// A second logical POST gets a key of its own.
		if _, err := c.CreateWebhook(t.Context(), createParams); err != nil {
			t.Fatal(err)
		}
		if s.headers[3].Get("Idempotency-Key") == key {
			t.Fatal("two logical POSTs shared an Idempotency-Key")
		}
	})
}

// Without Retry-After, 500s and connection errors wait a random time below the doubling
// ceiling (full jitter): initial 100 ms, then 200 ms, capped at 300 ms.
func TestBackoffWithoutRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []answer{refuse(500, client.CodeInternalError, ""), nil, refuse(500, client.CodeInternalError, ""), nil, accept}}
		c := fakeClient(t, s, client.WithBackoff(100*time.Millisecond, 300*time.Millisecond), client.WithMaxRetries(4))
		if _, err := c.Webhook(t.Context(), "we_1"); err != nil {
			t.Fatal(err)
		}
		ceilings := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
		g := s.gaps()
		if len(g) != 4 {
			t.Fatalf("%d retries, want 4", len(g))
		}
		for i, wait := range g {
			if wait < 0 || wait >= ceilings[i] {
				t.Fatalf("retry %d waited %v, want [0, %v)", i+1, wait, ceilings[i])
			}
		}
		if s.headers[0].Get("Idempotency-Key") != "" {
			t.Fatal("a GET carried an Idempotency-Key")
		}
	})
}

// The number of attempts is bounded; the last refusal is the caller's error.
func TestRetriesAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []answer{refuse(503, client.CodeServiceUnavailable, "1")}}
		c := fakeClient(t, s, client.WithMaxRetries(2))
		var res client.Response
		_, err := c.CreateWebhook(t.Context(), createParams, client.CaptureResponse(&res))
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.RetryAfter != time.Second || len(s.times) != 3 || res.Attempts != 3 {
			t.Fatalf("%v after %d requests, want 503 after 3", err, len(s.times))
		}
	})
}

// Other 4xx are never retried; neither is a Retry-After longer than the client waits.
func TestNotRetried(t *testing.T) {
	for name, a := range map[string]answer{
		"400":                   refuse(400, "INVALID_URL", ""),
		"401":                   refuse(401, client.CodeUnauthorized, ""),
		"404":                   refuse(404, client.CodeNotFound, ""),
		"409 other than in use": refuse(409, "CONFLICT", "1"),
		"422":                   refuse(422, client.CodeIdempotencyKeyReused, ""),
		"429 for an hour":       refuse(429, client.CodeRateLimited, "3600"),
		"502 from a proxy (html)": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			io.WriteString(w, "<html>bad gateway</html>")
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{answers: []answer{a, accept}}
				c := fakeClient(t, s)
				start := time.Now()
				_, err := c.CreateWebhook(t.Context(), createParams)
				var apiErr *client.Error
				if !errors.As(err, &apiErr) || len(s.times) != 1 || time.Since(start) != 0 {
					t.Fatalf("%v after %d requests and %v, want the error at once", err, len(s.times), time.Since(start))
				}
				if name == "429 for an hour" && apiErr.RetryAfter != time.Hour {
					t.Fatalf("RetryAfter %v, want 1h", apiErr.RetryAfter)
				}
				if name == "502 from a proxy (html)" && (apiErr.StatusCode != 502 || apiErr.Type != "" || apiErr.Details == nil) {
					t.Fatalf("proxy page: %+v", apiErr)
				}
			})
		})
	}
}

// 409 IDEMPOTENCY_KEY_IN_USE means this call's own earlier attempt is still running: it is
// retried after its Retry-After with the same key, and gets that attempt's answer.
func TestKeyInUseIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []answer{nil, refuse(409, client.CodeIdempotencyKeyInUse, "1"), accept}}
		c := fakeClient(t, s, client.WithBackoff(time.Millisecond, time.Millisecond))
		if _, err := c.CreateWebhook(t.Context(), createParams); err != nil {
			t.Fatal(err)
		}
		if g := s.gaps(); len(g) != 2 || g[1] != time.Second || s.headers[2].Get("Idempotency-Key") != s.headers[0].Get("Idempotency-Key") {
			t.Fatalf("gaps %v", g)
		}
	})
}

// The context bounds the whole call, waits included.
func TestContextEndsTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []answer{refuse(503, client.CodeServiceUnavailable, "30")}}
		c := fakeClient(t, s)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.CreateWebhook(ctx, createParams)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second || len(s.times) != 1 {
			t.Fatalf("%v after %v and %d requests, want the deadline after 5s", err, time.Since(start), len(s.times))
		}
	})
}

func TestOptions(t *testing.T) {
	for _, bad := range []string{"", "ftp://x", "/v1", "https://api.example.com?x=1"} {
		if _, err := client.New(client.WithBaseURL(bad)); err == nil {
			t.Errorf("base URL %q accepted", bad)
		}
	}
	c, err := client.New(client.WithBaseURL("https://api.example.com/v1/"))
	if err != nil || c.BaseURL() != "https://api.example.com" {
		t.Fatalf("base URL with /v1: %v %q", err, c.BaseURL())
	}
	if c, _ := client.New(); c.BaseURL() != client.DefaultBaseURL || c.UserAgent() != "riskapi-go/"+client.Version {
		t.Fatalf("defaults: %s %s", c.BaseURL(), c.UserAgent())
	}
	if _, err := client.New(client.WithMaxRetries(-1)); err == nil {
		t.Error("negative retries accepted")
	}
	if _, err := client.New(client.WithBackoff(time.Second, time.Millisecond)); err == nil {
		t.Error("backoff with max below initial accepted")
	}
	if _, err := client.New(client.WithHTTPClient(nil)); err == nil {
		t.Error("nil http client accepted")
	}
}
