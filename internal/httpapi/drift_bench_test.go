package httpapi

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"

	"riskapi/drift"
	"riskapi/internal/store"
)

// BenchmarkDriftAnalyze100k is the end-to-end target of the Drift contract: POST
// /v1/drift/analyze with 100,000 inline events (about 19 MB of JSON) over a loopback socket to
// a server on the embedded SQLite store — authentication, rate limit, body read, strict
// decoding, validation, the engine, storing the analysis and encoding the answer. The
// target is under 1 s per request on 2 cores. With an Idempotency-Key the body is also
// hashed and the response stored for replay.
func BenchmarkDriftAnalyze100k(b *testing.B) {
	bb := setup(b, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		c.UnlimitedCeiling = 1 << 50
	}, nil)
	_, key := bb.newAccount(store.PlanEnterprise, nil)
	in, _ := drift.Generate(drift.ScenarioShadow, 1, drift.GenParams{Events: 100_000, Onset: 0.5, Ramp: 0.1, ShareGain: 0.2, RegretFrac: 0.1})
	body := []byte(driftBody(b, "agent_bench", in.Events, ""))
	for _, idempotent := range []bool{false, true} {
		name := "inline"
		if idempotent {
			name = "inline-idempotent"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for i := 0; b.Loop(); i++ {
				req, err := http.NewRequest(http.MethodPost, bb.http.URL+"/v1/drift/analyze", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				if idempotent {
					req.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i)+"-"+b.Name())
				}
				res, err := bb.http.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"shadow_principal_detected":true`)) {
					b.Fatalf("status %d: %.300s", res.StatusCode, out)
				}
			}
		})
	}
}
