package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"riskapi/cascade"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// padded is body with trailing spaces up to length bytes.
func padded(body string, length int) string {
	return body + strings.Repeat(" ", max(length-len(body), 0))
}

// heldRequest is a quality check whose body arrives slowly: it holds its slot and its memory
// until finish sends the rest.
type heldRequest struct {
	body     *io.PipeWriter
	answer   chan response
	prefixed chan struct{} // closed once the first bytes are sent (or the request ended)
}

// heldPrefix is what a held request sends at once; finish sends the rest.
const heldPrefix = `{"source_id": "held", `

func (b *bundle) holdQualityCheck(key string, length int64) *heldRequest {
	b.t.Helper()
	pr, pw := io.Pipe()
	h := &heldRequest{body: pw, answer: make(chan response, 1), prefixed: make(chan struct{})}
	req, err := http.NewRequest(http.MethodPost, b.http.URL+"/v1/meridian/quality-check", pr)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = length
	go func() {
		res, err := b.http.Client().Do(req)
		// An answer ends the request's body: a write still waiting on the pipe (the server
		// answered before reading it all) returns instead of waiting for ever.
		pr.CloseWithError(io.ErrClosedPipe)
		if err != nil {
			h.answer <- response{status: -1, raw: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		h.answer <- response{status: res.StatusCode, header: res.Header, raw: raw}
	}()
	go func() { // returns once the transport has read it, or the request ended
		_, _ = pw.Write([]byte(heldPrefix))
		close(h.prefixed)
	}()
	// A test that stops early must not leave the body waiting: the server's Close, registered
	// before this, would wait for the request for ever. (After finish this changes nothing.)
	b.t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) })
	return h
}

// answered returns the held request's answer if it has one already (the server refused it
// before its body was complete).
func (h *heldRequest) answered() (response, bool) {
	select {
	case r := <-h.answer:
		return r, true
	default:
		return response{}, false
	}
}

// finish sends the rest of a held body (padded to its declared length) and returns the answer,
// failing t if none comes within 30 s.
func (h *heldRequest) finish(t *testing.T, declared int64) response {
	t.Helper()
	rest := `"data": {"records": [{"a": 1}]}}`
	pad := int(declared) - len(heldPrefix) - len(rest)
	go func() {
		<-h.prefixed
		if _, err := h.body.Write([]byte(strings.Repeat(" ", max(pad, 0)) + rest)); err == nil {
			h.body.Close()
		}
	}()
	select {
	case r := <-h.answer:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to the held request within 30 s of its body's end")
		return response{}
	}
}

func TestAccountRunsAtMostPerAccountRequestsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Bounds.PerAccount = 2 }, nil)
	const length = 200
	held := []*heldRequest{b.holdQualityCheck(b.testKey, length), b.holdQualityCheck(b.testKey, length)}
	// The held requests take their slots once authenticated; wait until the third is refused.
	// A probe that runs while a held request has not yet taken its slot takes one for a
	// moment, and a held request arriving then is the one refused: it is held again, and the
	// probes leave the held requests time to arrive (on a loaded machine, probing without a
	// pause kept refusing them).
	var r response
	for deadline := time.Now().Add(20 * time.Second); ; {
		time.Sleep(50 * time.Millisecond)
		r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "s", "data": {"records": [{"a": 1}]}}`)
		refusedHeld := false
		for i, h := range held {
			if early, ok := h.answered(); ok {
				if early.status != http.StatusTooManyRequests {
					t.Fatalf("a held request was answered before its body ended: %d %s", early.status, early.raw)
				}
				held[i], refusedHeld = b.holdQualityCheck(b.testKey, length), true
			}
		}
		if !refusedHeld && r.status == http.StatusTooManyRequests || time.Now().After(deadline) {
			break
		}
	}
	r.wantError(t, http.StatusTooManyRequests, "rate_limit_error", "RATE_LIMITED")
	if r.header.Get("Retry-After") != "1" || r.field("error.details.limit") != 2.0 {
		t.Fatalf("refusal without Retry-After: 1 or the limit: %v %s", r.header, r.raw)
	}
	// Another account is not held back by the first one's requests.
	_, other := b.newAccount(store.PlanStarter, nil)
	b.send(http.MethodPost, "/v1/meridian/quality-check", other, `{"source_id": "s", "data": {"records": [{"a": 1}]}}`).wantSuccess(t)
	// Reads are not product work: they are never refused for it.
	if g := b.get("/v1/meridian/quality-checks", b.testKey); g.status != http.StatusOK {
		t.Fatalf("a list while the account is busy: %d %s", g.status, g.raw)
	}
	for _, h := range held {
		if res := h.finish(t, length); res.status != http.StatusOK {
			t.Fatalf("held request: %d %s", res.status, res.raw)
		}
	}
	b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "s", "data": {"records": [{"a": 1}]}}`).wantSuccess(t)
}

func TestRequestsWaitForMemoryThenGet503(t *testing.T) {
	t.Parallel()
	const length = 1000
	b := setup(t, func(c *Config) {
		// Room for one body of that length, not two.
		c.Bounds.MemoryLimit, c.Bounds.MemoryWait = product.Meridian.BodyMemory(length)*3/2, time.Second
	}, nil)
	_, other := b.newAccount(store.PlanStarter, nil)
	held := b.holdQualityCheck(b.testKey, length)
	time.Sleep(100 * time.Millisecond) // let it reserve its memory
	start := time.Now()
	r := b.send(http.MethodPost, "/v1/meridian/quality-check", other, padded(`{"source_id": "s", "data": {"records": [{"a": 1}]}}`, length))
	waited := time.Since(start)
	r.wantError(t, http.StatusServiceUnavailable, "service_unavailable_error", "SERVICE_UNAVAILABLE")
	if r.header.Get("Retry-After") == "" || waited < 900*time.Millisecond {
		t.Fatalf("503 after %v with Retry-After %q: %s", waited, r.header.Get("Retry-After"), r.raw)
	}
	// Once the memory is given back, a request that waits gets it.
	done := make(chan response, 1)
	go func() {
		done <- b.send(http.MethodPost, "/v1/meridian/quality-check", other, padded(`{"source_id": "s", "data": {"records": [{"a": 1}]}}`, length))
	}()
	time.Sleep(50 * time.Millisecond)
	if res := held.finish(t, length); res.status != http.StatusOK {
		t.Fatalf("held request: %d %s", res.status, res.raw)
	}
	(<-done).wantSuccess(t)
}

// TestWorkAboveTheSyncBudgetIsRefusedBeforeItStarts sets a budget no analysis fits, so every
// product without a background form refuses with WORK_LIMIT_EXCEEDED naming the input that
// drives the cost; the refusal is a validation 400, never stored under the Idempotency-Key.
func TestWorkAboveTheSyncBudgetIsRefusedBeforeItStarts(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Bounds.SyncBudget = time.Microsecond }, nil)
	market, _ := convergence.Generate(convergence.ScenarioCartel, 5, convergence.GenParams{})
	agent, _ := drift.Generate(drift.ScenarioShadow, 3, drift.GenParams{Events: 500})
	cases := []struct{ path, body, field string }{
		{"/v1/convergence/analyze-market", string(mustJSON(t, market)), "observations"},
		{"/v1/drift/analyze", string(mustJSON(t, agent)), "events"},
	}
	for _, c := range cases {
		for range 2 {
			r := b.do(http.MethodPost, c.path, strings.NewReader(c.body), map[string]string{
				"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json", "Idempotency-Key": "budget-" + c.field})
			r.wantError(t, http.StatusBadRequest, "validation_error", "WORK_LIMIT_EXCEEDED")
			if r.field("error.details.field") != c.field || r.header.Get("Idempotent-Replayed") != "" ||
				!strings.Contains(r.field("error.details.expected").(string), "0.000s") ||
				!strings.Contains(r.field("error.details.received").(string), "estimated") {
				t.Fatalf("%s: %s", c.path, r.raw)
			}
		}
	}
	if list := b.get("/v1/convergence/analyses", b.testKey); len(list.field("data").([]any)) != 0 {
		t.Fatalf("a refused analysis was stored: %s", list.raw)
	}
}

// TestCascadeAboveTheSyncBudgetRunsInTheBackground: Cascade has a background form, so a
// simulation estimated above the sync budget is answered 202 and queued however small its
// work by the contract's measure; one above the background budget is refused.
func TestCascadeAboveTheSyncBudgetRunsInTheBackground(t *testing.T) {
	t.Parallel()
	network, _ := cascade.Generate(cascade.ScenarioRobustNetwork, 2, cascade.GenParams{Nodes: 60, Simulations: 200})
	if work, err := cascade.Work(network); err != nil || work > cascade.AsyncWorkThreshold {
		t.Fatalf("work %d (%v): the case must be small by the contract's measure", work, err)
	}
	b := setup(t, func(c *Config) { c.Bounds.SyncBudget = time.Microsecond }, nil)
	r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, string(mustJSON(t, network)))
	if r.status != http.StatusAccepted || r.field("data.status") != "queued" {
		t.Fatalf("above the sync budget: %d %s", r.status, r.raw)
	}
	b = setup(t, func(c *Config) { c.Bounds.SyncBudget, c.Bounds.BackgroundBudget = time.Microsecond, time.Microsecond }, nil)
	r = b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, string(mustJSON(t, network)))
	r.wantError(t, http.StatusBadRequest, "validation_error", "WORK_LIMIT_EXCEEDED")
}

// sendChunked posts body without a Content-Length (chunked), as a streaming client does.
func (b *bundle) sendChunked(path, key, body string) response {
	b.t.Helper()
	return b.do(http.MethodPost, path, io.MultiReader(strings.NewReader(body)), map[string]string{
		"Authorization": "Bearer " + key, "Content-Type": "application/json"})
}

// TestChunkedBodiesReserveAsTheyArrive: a body of unknown length reserves memory step by
// step as it is read, not for the largest allowed body up front: a small chunked request is
// served on a small budget, and one that outgrows the budget is refused as a 400 naming the
// body, never stored under its Idempotency-Key.
func TestChunkedBodiesReserveAsTheyArrive(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Bounds.MemoryLimit = 64 << 20 }, nil)
	b.sendChunked("/v1/meridian/quality-check", b.testKey, `{"source_id": "s", "data": {"records": [{"a": 1}]}}`).wantSuccess(t)
	big := `{"source_id": "s", "data": {"csv": "a\n` + strings.Repeat("x\\n", 1<<20) + `"}}`
	r := b.sendChunked("/v1/meridian/quality-check", b.testKey, big)
	r.wantError(t, http.StatusBadRequest, "validation_error", "WORK_LIMIT_EXCEEDED")
	if r.field("error.details.field") != "body" {
		t.Fatalf("refused for %v: %s", r.field("error.details.field"), r.raw)
	}
	// The memory it held is back: the small request is served again.
	b.sendChunked("/v1/meridian/quality-check", b.testKey, `{"source_id": "s", "data": {"records": [{"a": 1}]}}`).wantSuccess(t)
}

// TestBodyAndWorkThatCouldNeverFitAreRefusedBeforeTheKey: a market whose body and work each
// fit the memory budget but not together is refused before the work, and the refusal is not
// stored under the Idempotency-Key (it once failed inside the work and was replayed).
func TestBodyAndWorkThatCouldNeverFitAreRefusedBeforeTheKey(t *testing.T) {
	t.Parallel()
	market, _ := convergence.Generate(convergence.ScenarioCartel, 5, convergence.GenParams{})
	body := string(mustJSON(t, market))
	var req analyzeMarketRequest
	if e := decodeJSON([]byte(body), &req); e != nil {
		t.Fatal(e)
	}
	cost, _, err := req.estimate(0)
	if err != nil {
		t.Fatal(err)
	}
	work, bodyMemory := workMemory(cost), product.Convergence.BodyMemory(int64(len(body)))
	limit := max(work, bodyMemory) + 1
	b := setup(t, func(c *Config) { c.Bounds.MemoryLimit = limit }, nil)
	for range 2 {
		r := b.do(http.MethodPost, "/v1/convergence/analyze-market", strings.NewReader(body), map[string]string{
			"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json", "Idempotency-Key": "never-fits"})
		r.wantError(t, http.StatusBadRequest, "validation_error", "WORK_LIMIT_EXCEEDED")
		if r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("the refusal was stored and replayed: %s", r.raw)
		}
	}
}
