package httpapi

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"riskapi/drift"
	"riskapi/internal/auth"
	"riskapi/internal/store"
)

// Request-level 400s of the analysis endpoints come before the Idempotency-Key is taken:
// the corrected request, retried with the same key, runs (it is not 422).
func TestValidationErrorsAreNotStoredUnderTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	h := map[string]string{"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json", "Idempotency-Key": "fix-1"}
	b.do(http.MethodPost, "/v1/meridian/quality-check", strings.NewReader(`{"source_id": "x"}`), h).
		wantError(t, http.StatusBadRequest, "validation_error", "INVALID_DATA")
	b.do(http.MethodPost, "/v1/meridian/quality-check", strings.NewReader(`{"source_id": "x", "checks": [{"type": "not_null", "column": "a"}], "signals": {"error_rate": 0.1}}`), h).
		wantError(t, http.StatusBadRequest, "validation_error", "INVALID_DATA")
	if r := b.do(http.MethodPost, "/v1/meridian/quality-check", strings.NewReader(`{"source_id": "x", "signals": {"error_rate": 0.1}}`), h); r.status != http.StatusOK {
		t.Fatalf("corrected request with the same key: %d %s", r.status, r.raw)
	}

	in, _ := drift.Generate(drift.ScenarioAligned, 1, drift.GenParams{Events: 60})
	late := in.Events[len(in.Events)-1].Timestamp.AddDate(1, 0, 0).Format("2006-01-02T15:04:05Z07:00")
	h["Idempotency-Key"] = "fix-2"
	r := b.do(http.MethodPost, "/v1/drift/analyze", strings.NewReader(driftBody(t, "a", in.Events, `"baseline": {"until": "`+late+`"}`)), h)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_BASELINE")
	if r.field("error.details.field") != "baseline.until" {
		t.Fatalf("baseline.until: %s", r.raw)
	}
	if r := b.do(http.MethodPost, "/v1/drift/analyze", strings.NewReader(driftBody(t, "a", in.Events, "")), h); r.status != http.StatusOK {
		t.Fatalf("corrected drift request with the same key: %d %s", r.status, r.raw)
	}
}

// Out-of-range numbers and windows are refused, not turned into wrong answers or 500s.
func TestExtremeInputs(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	in, _ := drift.Generate(drift.ScenarioAligned, 2, drift.GenParams{Events: 40})
	huge := 1.7e308
	in.Events[3].PrincipalValue = &huge
	r := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, driftBody(t, "a", in.Events, ""))
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_EVENTS")
	if r.field("error.details.field") != "events[3].principal_value" {
		t.Fatalf("huge principal_value: %s", r.raw)
	}
	for _, window := range []string{`{"to": "9999-12-31T23:59:59Z"}`, `{"from": "1600-01-01T00:00:00Z"}`} {
		b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, `{"agent_id": "a", "window": `+window+`}`).
			wantError(t, http.StatusBadRequest, "validation_error", "INVALID_WINDOW")
	}
	// Meridian data may hold any finite number; a statistic that overflows is null, not a 500.
	r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey,
		`{"source_id": "x", "data": {"records": [{"v": 1.7e308}, {"v": 1.7e308}, {"v": -1.7e308}, {"v": 1}]}, "checks": [{"type": "outliers", "column": "v", "method": "iqr"}]}`)
	if r.status != http.StatusOK {
		t.Fatalf("extreme data: %d %s", r.status, r.raw)
	}
}

// Meridian reports the first failure in document order, whichever side of data it stands.
func TestMeridianErrorsInDocumentOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "bad id!", "data": {"csv": "a\n1,2\n"}}`).
		wantError(t, http.StatusBadRequest, "validation_error", "INVALID_SOURCE_ID")
	b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"data": {"csv": "a\n1,2\n"}, "source_id": "bad id!"}`).
		wantError(t, http.StatusBadRequest, "validation_error", "INVALID_DATA")
	b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"checks": [{"type": "nope"}], "data": {"csv": "a\n1,2\n"}}`).
		wantError(t, http.StatusBadRequest, "validation_error", "INVALID_CHECKS")
}

// /v1/test/generate refuses a live key at the scope step, before the content type; a missing
// product scope is a 403 that is not stored under the Idempotency-Key.
func TestGenerateOrderOfChecks(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	b.do(http.MethodPost, "/v1/test/generate", strings.NewReader("product=drift"),
		map[string]string{"Authorization": "Bearer " + b.liveKey, "Content-Type": "application/x-www-form-urlencoded"}).
		wantError(t, http.StatusForbidden, "permission_error", "FORBIDDEN")
	reader := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"drift:read"}})
	writer := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"drift:write"}})
	body := `{"product": "drift", "scenario": "aligned", "seed": 1}`
	b.do(http.MethodPost, "/v1/test/generate", strings.NewReader(body),
		map[string]string{"Authorization": "Bearer " + reader, "Content-Type": "application/json", "Idempotency-Key": "gen-1"}).
		wantError(t, http.StatusForbidden, "permission_error", "FORBIDDEN")
	r := b.do(http.MethodPost, "/v1/test/generate", strings.NewReader(body),
		map[string]string{"Authorization": "Bearer " + writer, "Content-Type": "application/json", "Idempotency-Key": "gen-1"})
	if r.status != http.StatusOK || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the same key after a 403: %d replayed=%q", r.status, r.header.Get("Idempotent-Replayed"))
	}
}

// A handler that panics answers 500 and releases its Idempotency-Key: the retry executes.
func TestPanicReleasesIdempotencyKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	b := setup(t, nil, func(s *Server) {
		s.mux.Handle("POST /v1/_test/panic", s.protected("drift:write", handleJSON(s, func(r *http.Request, req *probeRequest) (int, any, error) {
			if calls.Add(1) == 1 {
				panic("first call fails")
			}
			return http.StatusOK, probeResult{Value: *req.Value, Execution: calls.Load()}, nil
		})))
	})
	h := map[string]string{"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json", "Idempotency-Key": "panic-1"}
	b.do(http.MethodPost, "/v1/_test/panic", strings.NewReader(`{"value": "v"}`), h).
		wantError(t, http.StatusInternalServerError, "api_error", "INTERNAL_ERROR")
	if r := b.do(http.MethodPost, "/v1/_test/panic", strings.NewReader(`{"value": "v"}`), h); r.status != http.StatusOK {
		t.Fatalf("retry after a panic: %d %s", r.status, r.raw)
	}
}
