package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"riskapi/client"
	"riskapi/drift"
	"riskapi/internal/auth"
	"riskapi/internal/httpapi"
	"riskapi/internal/store"
)

// loseFirstAnswer delivers the first request to the service, waits for its whole answer
// (so the service has committed), then drops it and reports a broken connection, as a
// network that fails between the service's commit and the client's read would. Later
// requests pass through.
type loseFirstAnswer struct {
	next   http.RoundTripper
	mu     sync.Mutex
	keys   []string // Idempotency-Key of every request
	bodies []string // body of every request
	lost   bool
}

func (l *loseFirstAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	l.mu.Lock()
	l.keys = append(l.keys, req.Header.Get("Idempotency-Key"))
	l.bodies = append(l.bodies, string(body))
	first := !l.lost
	l.lost = true
	l.mu.Unlock()
	res, err := l.next.RoundTrip(req)
	if err != nil || !first {
		return res, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return nil, errors.New("read tcp 127.0.0.1: connection reset by peer (the answer was lost)")
}

// A POST whose answer is lost after the service committed is retried with the same
// Idempotency-Key and the same body, and receives the stored answer: one analysis, one
// event, whatever the network did.
func TestRetryAfterLostAnswerExecutesOnce(t *testing.T) {
	t.Parallel()
	s := startService(t)
	ctx := t.Context()
	items := generate(t, s.client(s.testKey), client.ProductDrift, "shadow_principal_detected", 1, 21)
	var in drift.Input
	if err := items[0].DecodeRequest(&in); err != nil {
		t.Fatal(err)
	}

	lossy := &loseFirstAnswer{next: s.checked()}
	c := s.client(s.testKey, client.WithHTTPClient(&http.Client{Transport: lossy}))
	var res client.Response
	a, err := c.AnalyzeDrift(ctx, &in, client.CaptureResponse(&res))
	if err != nil {
		t.Fatal(err)
	}
	if len(lossy.keys) != 2 || lossy.keys[0] == "" || lossy.keys[0] != lossy.keys[1] || res.IdempotencyKey != lossy.keys[0] {
		t.Fatalf("Idempotency-Keys sent %q (response %q), want the same one twice", lossy.keys, res.IdempotencyKey)
	}
	if lossy.bodies[0] != lossy.bodies[1] || len(lossy.bodies[0]) < 1000 {
		t.Fatalf("the retry sent %d bytes, the first attempt %d: want the same body", len(lossy.bodies[1]), len(lossy.bodies[0]))
	}
	if !res.Replayed || res.Attempts != 2 || res.StatusCode != http.StatusOK || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("second answer: replayed %v after %d attempts, status %d", res.Replayed, res.Attempts, res.StatusCode)
	}

	stored, err := s.store.ListAnalyses(context.Background(), s.account.ID, store.ModeTest, "drift", in.AgentID, store.PageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if stored.TotalCount != 1 || len(stored.Items) != 1 || stored.Items[0].ID != a.ID {
		t.Fatalf("the service stored %d analyses of %s, want exactly 1 (%s)", stored.TotalCount, in.AgentID, a.ID)
	}
	events, err := s.store.ListEvents(context.Background(), s.account.ID, store.ModeTest, client.EventDriftShadowDetected, store.PageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if events.TotalCount != 1 {
		t.Fatalf("%d drift.shadow_detected events, want 1", events.TotalCount)
	}

	// Without retries the same loss is the caller's error, and nothing hides it.
	lossy2 := &loseFirstAnswer{next: s.checked()}
	noRetry := s.client(s.testKey, client.WithHTTPClient(&http.Client{Transport: lossy2}), client.WithMaxRetries(0))
	if _, err := noRetry.AnalyzeDrift(ctx, &in); err == nil || len(lossy2.keys) != 1 {
		t.Fatalf("without retries: %v after %d requests, want the connection error after 1", err, len(lossy2.keys))
	}
}

// heldStore holds the first CreateAnalysis — the service's commit of an analysis, while its
// Idempotency-Key is in flight — until release is closed, and closes entered when it
// arrives there.
type heldStore struct {
	store.Store
	once             sync.Once
	entered, release chan struct{}
}

func (h *heldStore) CreateAnalysis(ctx context.Context, a store.Analysis, ev *store.Event, done *store.IdempotencyCompletion) error {
	h.once.Do(func() { close(h.entered); <-h.release })
	return h.Store.CreateAnalysis(ctx, a, ev, done)
}

// conflictCounter closes reached when it has passed on n answers 409.
type conflictCounter struct {
	next    http.RoundTripper
	mu      sync.Mutex
	n, seen int
	reached chan struct{}
}

func (c *conflictCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(req)
	if err == nil && res.StatusCode == http.StatusConflict {
		c.mu.Lock()
		if c.seen++; c.seen == c.n {
			close(c.reached)
		}
		c.mu.Unlock()
	}
	return res, err
}

// Calls that share a caller's Idempotency-Key while the first still runs get 409
// IDEMPOTENCY_KEY_IN_USE, wait its Retry-After (1 s) and receive the first call's answer:
// one analysis, however many callers. The first call is held inside the service until every
// other caller has been refused once, so the 409 path is taken every time.
func TestConcurrentCallsWithOneKeyExecuteOnce(t *testing.T) {
	t.Parallel()
	held := &heldStore{entered: make(chan struct{}), release: make(chan struct{})}
	s := startServiceWith(t, func(st store.Store) httpapi.Store { held.Store = st; return held })
	ctx := t.Context()
	items := generate(t, s.client(s.testKey), client.ProductDrift, "shadow_principal_detected", 1, 33)
	var in drift.Input
	if err := items[0].DecodeRequest(&in); err != nil {
		t.Fatal(err)
	}

	const callers = 6
	conflicts := &conflictCounter{next: s.checked(), n: callers - 1, reached: make(chan struct{})}
	c := s.client(s.testKey, client.WithHTTPClient(&http.Client{Transport: conflicts}))
	results := make([]*client.DriftAnalysis, callers)
	responses := make([]client.Response, callers)
	errs := make([]error, callers)
	call := func(i int) {
		results[i], errs[i] = c.AnalyzeDrift(ctx, &in, client.WithIdempotencyKey("analyze-agent-33"), client.CaptureResponse(&responses[i]))
	}
	var wg sync.WaitGroup
	wg.Go(func() { call(0) })
	<-held.entered
	for i := 1; i < callers; i++ {
		wg.Go(func() { call(i) })
	}
	<-conflicts.reached
	close(held.release)
	wg.Wait()

	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if results[i].ID != results[0].ID {
			t.Fatalf("caller %d got analysis %s, caller 0 %s", i, results[i].ID, results[0].ID)
		}
		// Caller 0 executed at its first attempt; every other was refused at least once while
		// it ran (2 attempts, or more on a machine slow enough that a retry came before
		// caller 0 was released) and then answered by its replay.
		if first := i == 0; first && (responses[i].Attempts != 1 || responses[i].Replayed) ||
			!first && (responses[i].Attempts < 2 || !responses[i].Replayed) {
			t.Fatalf("caller %d: %d attempts, replayed %v", i, responses[i].Attempts, responses[i].Replayed)
		}
	}
	stored, err := s.store.ListAnalyses(context.Background(), s.account.ID, store.ModeTest, "drift", in.AgentID, store.PageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if stored.TotalCount != 1 {
		t.Fatalf("the service stored %d analyses, want 1", stored.TotalCount)
	}
}

// The service's 429 reaches the caller as an *Error with its Retry-After, and the response's
// rate-limit state; a key's own hourly limit is the bucket here.
func TestRateLimitFromTheService(t *testing.T) {
	t.Parallel()
	s := startService(t)
	key, err := s.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"webhooks:read"}, RateLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := s.client(key, client.WithMaxRetries(0))
	for range 2 {
		if _, err := c.WebhooksPage(t.Context(), client.ListParams{}); err != nil {
			t.Fatal(err)
		}
	}
	var res client.Response
	_, err = c.WebhooksPage(t.Context(), client.ListParams{}, client.CaptureResponse(&res))
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != client.CodeRateLimited || apiErr.Type != client.TypeRateLimit {
		t.Fatalf("third request of 2 an hour: %v", err)
	}
	if apiErr.RetryAfter <= 0 || apiErr.RetryAfter > time.Hour || res.RateLimit.Limit != 2 || res.RateLimit.Remaining != 0 {
		t.Fatalf("Retry-After %v, rate limit %+v", apiErr.RetryAfter, res.RateLimit)
	}
}
