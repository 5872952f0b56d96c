package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"riskapi/internal/enginetest"
)

// regexBody is the security review's Meridian request: checks regex checks of pattern on one
// value of length characters.
func regexBody(checks int, pattern string, length int) string {
	q, _ := json.Marshal(pattern)
	cs := make([]string, checks)
	for i := range cs {
		cs[i] = fmt.Sprintf(`{"type": "regex", "column": "v", "pattern": %s}`, q)
	}
	return fmt.Sprintf(`{"source_id": "review", "data": {"records": [{"v": %q}]}, "checks": [%s]}`, strings.Repeat("a", length), strings.Join(cs, ","))
}

// TestHeavyRegexIsRefusedBeforeItRuns replays the review's request at its full size: ten
// `[a-z]{1000}x` checks on one 300,000-character value took 21 s of CPU; the estimate now
// refuses it at once, naming the check that drives the cost.
func TestHeavyRegexIsRefusedBeforeItRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	start := time.Now()
	r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, regexBody(10, "[a-z]{1000}x", 300_000))
	took := time.Since(start)
	r.wantError(t, http.StatusBadRequest, "validation_error", "WORK_LIMIT_EXCEEDED")
	if field, _ := r.field("error.details.field").(string); !strings.HasPrefix(field, "checks[") {
		t.Fatalf("field %q, want a check: %s", field, r.raw)
	}
	if took > 2*time.Second && !enginetest.RaceEnabled {
		t.Fatalf("refused after %v, want within 2 s", took)
	}
}

// TestClientGoneStopsTheWork sends a Meridian request that takes seconds of CPU (under the
// budget), leaves at 300 ms, and checks that the process's CPU stops within 100 ms: the
// request's context reaches the engine's loops. It measures the whole process, so it does not
// run in parallel with other tests, and skips under the race detector.
func TestClientGoneStopsTheWork(t *testing.T) {
	if enginetest.RaceEnabled {
		t.Skip("CPU timing is not measurable under the race detector; CI runs this test without it")
	}
	b := setup(t, nil, nil)
	body := regexBody(2, "[a-z]{400}x", 300_000)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.http.URL+"/v1/meridian/quality-check", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.testKey)
	req.Header.Set("Content-Type", "application/json")
	if _, err := b.http.Client().Do(req); err == nil {
		t.Fatal("the request finished within 300 ms: it is too small to show the CPU stopping")
	}
	time.Sleep(100 * time.Millisecond)
	before := enginetest.CPUTime()
	time.Sleep(500 * time.Millisecond)
	if used := enginetest.CPUTime() - before; used > 100*time.Millisecond {
		t.Fatalf("the process used %v of CPU in the half second after the client left", used)
	}
	// The server answered the gone client 503 and logged no internal error.
	b.logs.WaitFor(`"status":503`, 2*time.Second)
	if strings.Contains(b.logs.String(), "internal error") {
		t.Fatalf("an internal error was logged: %s", b.logs.String())
	}
}

// TestResultsThatOutgrowTheMemoryBudgetAreRefused: each failing Meridian check lists up to 20
// unexpected values whole, so 100 checks failing on 20 values of 100,000 characters (a 2 MB
// body) would put 200 MB of values in the result, held once per copy of it; the estimate
// counts the result's size, and the request is refused before the work, not after.
func TestResultsThatOutgrowTheMemoryBudgetAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Bounds.MemoryLimit = 512 << 20 }, nil)
	records := make([]string, 20)
	for i := range records {
		records[i] = fmt.Sprintf(`{"v": %q}`, strings.Repeat(string(rune('a'+i)), 100_000))
	}
	checks := make([]string, 100)
	for i := range checks {
		checks[i] = `{"type": "regex", "column": "v", "pattern": "^x$"}`
	}
	body := fmt.Sprintf(`{"source_id": "long-values", "data": {"records": [%s]}, "checks": [%s]}`, strings.Join(records, ","), strings.Join(checks, ","))
	r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, body)
	r.wantError(t, http.StatusBadRequest, "validation_error", "WORK_LIMIT_EXCEEDED")
	if got, _ := r.field("error.details.received").(string); !strings.HasSuffix(got, "bytes of memory") {
		t.Fatalf("refused for something else than memory: %s", r.raw)
	}
	// Ten such checks fit: the same data is analysed.
	body = fmt.Sprintf(`{"source_id": "long-values", "data": {"records": [%s]}, "checks": [%s]}`, strings.Join(records, ","), strings.Join(checks[:10], ","))
	b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, body).wantSuccess(t)
}
