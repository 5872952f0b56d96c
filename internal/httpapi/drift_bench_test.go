package httpapi

import (
	"net/http"
	"testing"

	"riskapi/drift"
)

// BenchmarkDriftAnalyze100k is the end-to-end target of the Drift contract: POST
// /v1/drift/analyze with 100,000 inline events (about 27 MB of JSON) over a loopback socket to
// a server on the embedded SQLite store — authentication, rate limit, body read, strict
// decoding, validation, the engine, storing the analysis with its event and encoding the
// answer. Target: under 1 s per request on 2 cores. With an Idempotency-Key the body is also
// hashed and the response stored for replay.
func BenchmarkDriftAnalyze100k(b *testing.B) {
	bb, _, key := benchServer(b)
	in, _ := drift.Generate(drift.ScenarioShadow, 1, drift.GenParams{Events: 100_000, Onset: 0.5, Ramp: 0.1, ShareGain: 0.2, RegretFrac: 0.1})
	body := []byte(driftBody(b, "agent_bench", in.Events, ""))
	b.Run("inline", func(b *testing.B) {
		postLoop(b, bb, key, "/v1/drift/analyze", body, http.StatusOK, `"shadow_principal_detected":true`, false)
	})
	b.Run("inline-idempotent", func(b *testing.B) {
		postLoop(b, bb, key, "/v1/drift/analyze", body, http.StatusOK, `"shadow_principal_detected":true`, true)
	})
}
