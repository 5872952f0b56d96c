package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/product"
	"riskapi/internal/store"
)

func TestConcurrentPOSTsWithOneKeyExecuteOnce(t *testing.T) {
	t.Parallel()
	const n = 20
	// The first execution is held in flight until every other request has been answered.
	p := &probe{hold: make(chan struct{}), started: make(chan int64, n)}
	b := setup(t, nil, p.mount)
	responses := make([]response, n)
	answered := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			responses[i] = b.postProbe(b.liveKey, `{"value": "once"}`, map[string]string{"Idempotency-Key": "order-42"})
			answered <- struct{}{}
		})
	}
	fail := func(format string, args ...any) {
		t.Helper()
		close(p.hold)
		wg.Wait()
		t.Fatalf(format, args...)
	}
	select {
	case <-p.started:
	case <-time.After(10 * time.Second):
		fail("no request started executing within 10 s")
	}
	for range n - 1 {
		select {
		case <-answered:
		case x := <-p.started:
			fail("execution %d started while the first was in flight", x)
		case <-time.After(10 * time.Second):
			fail("the requests that arrived during the first execution were not answered within 10 s")
		}
	}
	close(p.hold)
	wg.Wait()
	if got := p.executions.Load(); got != 1 {
		t.Fatalf("%d executions, want exactly 1", got)
	}
	var original response
	for _, r := range responses {
		if r.status == http.StatusOK && r.header.Get("Idempotent-Replayed") == "" {
			original = r
		}
	}
	if original.raw == nil {
		t.Fatal("no response was the original execution")
	}
	originals := 0
	for i, r := range responses {
		switch {
		case r.status == http.StatusConflict:
			r.wantError(t, http.StatusConflict, "idempotency_error", CodeIdempotencyKeyInUse)
			if r.header.Get("Retry-After") != "1" {
				t.Fatalf("409 without Retry-After: 1")
			}
		case r.status == http.StatusOK && r.header.Get("Idempotent-Replayed") == "true":
			if !bytes.Equal(r.raw, original.raw) {
				t.Fatalf("replay %d differs from the original:\n%s\n%s", i, r.raw, original.raw)
			}
		case r.status == http.StatusOK:
			originals++
		default:
			t.Fatalf("response %d: %d %s", i, r.status, r.raw)
		}
	}
	if originals != 1 {
		t.Fatalf("%d original responses, want 1", originals)
	}
	if conflicts := countStatus(responses, http.StatusConflict); conflicts != n-1 {
		t.Fatalf("%d of the %d requests that arrived during the execution got 409, want all", conflicts, n-1)
	}
	// After it finished, a retry is a replay with the original request id.
	r := b.postProbe(b.liveKey, `{"value": "once"}`, map[string]string{"Idempotency-Key": "order-42"})
	if r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.raw, original.raw) {
		t.Fatalf("retry after completion: %d %v %s", r.status, r.header, r.raw)
	}
	if r.header.Get("X-Request-Id") != original.field("metadata.request_id") {
		t.Fatalf("replay X-Request-Id %q, want the original %v", r.header.Get("X-Request-Id"), original.field("metadata.request_id"))
	}
	if p.executions.Load() != 1 {
		t.Fatal("a replay executed the request")
	}
}

func TestSameKeyDifferentRequestIs422(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	key := map[string]string{"Idempotency-Key": "k1"}
	if r := b.postProbe(b.liveKey, `{"value": "a"}`, key); r.status != http.StatusOK {
		t.Fatalf("first: %d", r.status)
	}
	b.postProbe(b.liveKey, `{"value": "b"}`, key).wantError(t, http.StatusUnprocessableEntity, "idempotency_error", CodeIdempotencyKeyReused)
	// Byte-level fingerprint: the same JSON with other spacing is another request.
	b.postProbe(b.liveKey, `{"value":"a"}`, key).wantError(t, http.StatusUnprocessableEntity, "idempotency_error", CodeIdempotencyKeyReused)
	if p.executions.Load() != 1 {
		t.Fatalf("%d executions", p.executions.Load())
	}
}

func TestIdempotencyKeysAreScopedToAccountAndMode(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	_, other := b.newAccount("starter", nil)
	key := map[string]string{"Idempotency-Key": "shared"}
	for _, k := range []string{b.liveKey, b.testKey, other} {
		if r := b.postProbe(k, `{"value": "a"}`, key); r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("key %s…: %d replayed=%q", k[:8], r.status, r.header.Get("Idempotent-Replayed"))
		}
	}
	if p.executions.Load() != 3 {
		t.Fatalf("%d executions, want 3 (one per account and mode)", p.executions.Load())
	}
}

func TestServerErrorsAndValidationErrorsAreNotStored(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	key := map[string]string{"Idempotency-Key": "retry-me"}
	// A validation error is answered before the key is taken: fixing the body and retrying
	// with the same key executes.
	b.postProbe(b.liveKey, `{}`, key).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_VALUE")
	// A 500 releases the key: the retry executes again and succeeds.
	p.failNext.Store(true)
	b.postProbe(b.liveKey, `{"value": "a"}`, key).wantError(t, http.StatusInternalServerError, "api_error", CodeInternal)
	r := b.postProbe(b.liveKey, `{"value": "a"}`, key)
	if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" || p.executions.Load() != 2 {
		t.Fatalf("retry after 500: %d replayed=%q executions=%d", r.status, r.header.Get("Idempotent-Replayed"), p.executions.Load())
	}
	// A 4xx the handler produced is stored like a success (here: none; the replay is the 200).
	if r := b.postProbe(b.liveKey, `{"value": "a"}`, key); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("completed request not replayed")
	}
}

func TestInvalidIdempotencyKeyHeader(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	for _, k := range []string{strings.Repeat("k", 256), "tab\there", "naïve"} {
		r := b.postProbe(b.liveKey, `{"value": "a"}`, map[string]string{"Idempotency-Key": k})
		r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_IDEMPOTENCY_KEY")
		if r.field("error.details.field") != "idempotency_key" {
			t.Fatalf("details: %s", r.raw)
		}
	}
	// 255 printable characters are fine; GET ignores the header.
	if r := b.postProbe(b.liveKey, `{"value": "a"}`, map[string]string{"Idempotency-Key": strings.Repeat("~", 255)}); r.status != http.StatusOK {
		t.Fatalf("255-char key: %d %s", r.status, r.raw)
	}
	if r := b.do(http.MethodGet, "/v1/account", nil, map[string]string{"Authorization": "Bearer " + b.liveKey, "Idempotency-Key": strings.Repeat("k", 300)}); r.status != http.StatusOK {
		t.Fatalf("GET with a bad Idempotency-Key: %d", r.status)
	}
	if p.executions.Load() != 1 {
		t.Fatalf("%d executions", p.executions.Load())
	}
}

func TestReplaysAreNotBilledAndTestModeIsFree(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	for i := range 3 {
		b.postProbe(b.liveKey, fmt.Sprintf(`{"value": "%d"}`, i), nil)
	}
	key := map[string]string{"Idempotency-Key": "billing"}
	b.postProbe(b.liveKey, `{"value": "once"}`, key)
	b.postProbe(b.liveKey, `{"value": "once"}`, key) // replay: not billed
	b.postProbe(b.liveKey, `{}`, nil)                // 400: not billed
	b.postProbe(b.testKey, `{"value": "sandbox"}`, nil)
	if err := b.meter.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := b.get("/v1/usage", b.liveKey)
	if r.status != http.StatusOK {
		t.Fatalf("usage: %d %s", r.status, r.raw)
	}
	if got := r.field("data.totals.drift"); got != 4.0 {
		t.Fatalf("billed drift units = %v, want 4 (3 plain + 1 idempotent, no replay, no 400, no test mode)\n%s", got, r.raw)
	}
	days := r.field("data.days").([]any)
	day := days[0].(map[string]any)
	if len(days) != 1 || day["date"] != "2026-11-21" || day["units"] != 4.0 || day["endpoints"].(map[string]any)["POST /v1/_test/drift"] != 4.0 {
		t.Fatalf("days = %v", days)
	}
	// Test keys see no billed units, only their daily sandbox limit.
	tr := b.get("/v1/usage", b.testKey)
	if tr.field("data.totals.drift") != 0.0 || len(tr.field("data.days").([]any)) != 0 {
		t.Fatalf("test-mode usage: %s", tr.raw)
	}
	limits := tr.field("data.rate_limits").([]any)
	if len(limits) != 1 || limits[0].(map[string]any)["policy"] != "test-day" {
		t.Fatalf("test-mode rate limits: %v", limits)
	}
}

// countStatus counts the responses with status.
func countStatus(responses []response, status int) int {
	n := 0
	for _, r := range responses {
		if r.status == status {
			n++
		}
	}
	return n
}

// A request whose client goes away mid-work answers 503 and releases its Idempotency-Key, so
// the client's retry with the same key runs the work again rather than meeting 409 until
// the record is reclaimed (its lease, 15 s): the release uses a context the cancel does not end.
func TestClientGoneReleasesIdempotencyKey(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	var calls atomic.Int64
	b := setup(t, nil, func(s *Server) {
		s.mux.Handle("POST /v1/_test/slow", s.protected("drift:write", handleJSON(s, func(r *http.Request, req *probeRequest) (int, any, error) {
			if calls.Add(1) == 1 {
				started <- struct{}{}
				<-r.Context().Done() // the client gives up
				return 0, nil, r.Context().Err()
			}
			return http.StatusOK, probeResult{Value: *req.Value, Execution: calls.Load()}, nil
		})))
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.http.URL+"/v1/_test/slow", strings.NewReader(`{"value": "v"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.testKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "gone-1")
	done := make(chan error, 1)
	go func() {
		res, err := b.http.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first request was not cancelled: %v", err)
	}
	h := map[string]string{"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json", "Idempotency-Key": "gone-1"}
	// The server settles the record just after the cancel; a 409 meanwhile is the contract's
	// "retry in a moment". A key left in flight would answer 409 for the 15 s lease.
	// Retries every 10 ms for up to 5 s stay under the test-mode daily limit.
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		r := b.do(http.MethodPost, "/v1/_test/slow", strings.NewReader(`{"value": "v"}`), h)
		if r.status == http.StatusOK {
			break
		}
		if r.status != http.StatusConflict {
			t.Fatalf("retry after the client went away: %d %s", r.status, r.raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key is still in flight 5 s after the client went away: %s", r.raw)
		}
		<-tick.C
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("the work ran %d times, want 2 (the cancelled run and the retry)", n)
	}
}

// A process killed right after its analysis committed never reaches the step after the work.
// The key's answer committed with the analysis, so the retry replays it: the same analysis,
// one analysis and one event for the key, never a second execution.
func TestCrashAfterCommitReplaysTheCommittedAnswer(t *testing.T) {
	t.Parallel()
	var executions atomic.Int64
	b := setup(t, nil, func(s *Server) {
		s.mux.Handle("POST /v1/_test/commit", s.protected("drift:write", handleJSON(s, func(r *http.Request, req *probeRequest) (int, any, error) {
			n := executions.Add(1)
			status, data, err := s.saveAnalysis(r, product.Drift, s.now(), "agent_crash", probeResult{Value: *req.Value, Execution: n}, true)
			if n == 1 && err == nil {
				panic(http.ErrAbortHandler) // the process dies before it answers
			}
			return status, data, err
		})))
	})
	body := `{"value": "v"}`
	req, err := http.NewRequest(http.MethodPost, b.http.URL+"/v1/_test/commit", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json", "Idempotency-Key": "crash-1"}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	if res, err := b.http.Client().Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the first request was answered %d; the test needs it cut off after the commit", res.StatusCode)
	}
	retry := b.do(http.MethodPost, "/v1/_test/commit", strings.NewReader(body), h)
	if retry.status != http.StatusOK || retry.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after the crash: %d, Idempotent-Replayed %q: %s", retry.status, retry.header.Get("Idempotent-Replayed"), retry.raw)
	}
	ctx := context.Background()
	analyses, err := b.store.ListAnalyses(ctx, b.account.ID, store.ModeTest, "drift", "", store.PageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if analyses.TotalCount != 1 || retry.field("data.id") != analyses.Items[0].ID || retry.field("data.execution") != 1.0 {
		t.Fatalf("%d analyses; the replay is of %v (execution %v); want the one stored analysis, of execution 1", analyses.TotalCount, retry.field("data.id"), retry.field("data.execution"))
	}
	events, err := b.store.ListEvents(ctx, b.account.ID, store.ModeTest, "", store.PageQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if events.TotalCount != 1 || executions.Load() != 1 {
		t.Fatalf("%d events and %d executions for one key, want 1 and 1", events.TotalCount, executions.Load())
	}
}

// A key left in flight by a process that died (it never renews the lease) is free once the
// lease runs out: 409 until then, and then the retry runs, once.
func TestDeadOwnersKeyIsFreeAfterTheLease(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	body := `{"value": "dead"}`
	sum := sha256.Sum256([]byte(body))
	k := store.IdempotencyKey{AccountID: b.account.ID, Mode: store.ModeLive, Key: "dead-1",
		Fingerprint: "POST /v1/_test/drift " + hex.EncodeToString(sum[:])}
	// The dead process's claim, taken now and never renewed.
	if state, _, _, err := b.store.BeginIdempotent(context.Background(), k, idempotencyPolicy, b.clock.Now()); err != nil || state != store.IdempotencyStarted {
		t.Fatalf("claim: %v %v", state, err)
	}
	h := map[string]string{"Idempotency-Key": "dead-1"}
	b.clock.Advance(idempotencyLease - time.Second)
	if r := b.postProbe(b.liveKey, body, h); r.status != http.StatusConflict {
		t.Fatalf("retry within the lease: %d %s, want 409", r.status, r.raw)
	}
	b.clock.Advance(time.Second + time.Millisecond)
	r := b.postProbe(b.liveKey, body, h)
	if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" || p.executions.Load() != 1 {
		t.Fatalf("retry after the lease: %d (replayed %q), %d executions; want a first execution: %s", r.status, r.header.Get("Idempotent-Replayed"), p.executions.Load(), r.raw)
	}
	if again := b.postProbe(b.liveKey, body, h); !bytes.Equal(again.raw, r.raw) || p.executions.Load() != 1 {
		t.Fatalf("the retry's answer was not stored: %s", again.raw)
	}
}

// renewWatch reports the clock time of each lease renewal the server makes.
type renewWatch struct {
	Store
	renewed chan time.Time
}

func (w renewWatch) RenewIdempotent(ctx context.Context, k store.IdempotencyKey, token string, now time.Time) error {
	err := w.Store.RenewIdempotent(ctx, k, token, now)
	if err == nil {
		select {
		case w.renewed <- now:
		default:
		}
	}
	return err
}

// A live request renews its lease while it runs, so however long it takes, a retry meets
// 409 rather than taking the key over and running the request a second time.
func TestLiveOwnerRenewsItsLease(t *testing.T) {
	t.Parallel()
	p := &probe{hold: make(chan struct{}), started: make(chan int64, 2)}
	watch := renewWatch{renewed: make(chan time.Time, 1)}
	b := setup(t, func(c *Config) {
		watch.Store = c.Store
		c.Store = watch
		c.IdempotencyRenewal = 10 * time.Millisecond
	}, p.mount)
	h := map[string]string{"Idempotency-Key": "live-1"}
	first := make(chan response, 1)
	go func() { first <- b.postProbe(b.liveKey, `{"value": "live"}`, h) }()
	select {
	case <-p.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not start within 10 s")
	}
	// Four leases pass on the clock, in steps of a third of one; after each step the server
	// renews at the new time before the next.
	for range 12 {
		b.clock.Advance(idempotencyLease / 3)
		want := b.clock.Now()
		deadline := time.After(10 * time.Second)
		for renewed := false; !renewed; {
			select {
			case at := <-watch.renewed:
				renewed = !at.Before(want)
			case <-deadline:
				close(p.hold)
				t.Fatal("no renewal within 10 s")
			}
		}
		if r := b.postProbe(b.liveKey, `{"value": "live"}`, h); r.status != http.StatusConflict {
			close(p.hold)
			t.Fatalf("retry while the first runs: %d %s, want 409", r.status, r.raw)
		}
	}
	close(p.hold)
	r := <-first
	if r.status != http.StatusOK || p.executions.Load() != 1 {
		t.Fatalf("first: %d, %d executions: %s", r.status, p.executions.Load(), r.raw)
	}
	if again := b.postProbe(b.liveKey, `{"value": "live"}`, h); again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.raw, r.raw) {
		t.Fatalf("after the first finished: %d %s, want its replay", again.status, again.raw)
	}
}
