package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"

	"riskapi/client"
	"riskapi/drift"
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
