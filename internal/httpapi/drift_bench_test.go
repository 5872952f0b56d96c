package httpapi

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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
	// decode is the request's decoding and validation alone, as handleJSON does them (the
	// bulk decoder, its events on GOMAXPROCS workers).
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req analyzeDriftRequest
			if e := decodeJSONContext(context.Background(), body, &req); e != nil {
				b.Fatal(e)
			}
		}
	})
	// The pairs: both sides timed in each iteration, one after the other, so that a machine
	// shared with other work slows both alike; the ratio of their totals is reported
	// (api/floor: the path over the peer; procs-1/procs-2: one core over two, GOMAXPROCS set
	// for each side, the server's included).
	post := func(b *testing.B) {
		benchPost(b, bb, key, "/v1/drift/analyze", body, http.StatusOK, `"shadow_principal_detected":true`, "")
	}
	floor := func(b *testing.B) {
		var req floorRequest
		if err := json.Unmarshal(body, &req); err != nil {
			b.Fatal(err)
		}
	}
	decode := func(b *testing.B) {
		var req analyzeDriftRequest
		if e := decodeJSONContext(context.Background(), body, &req); e != nil {
			b.Fatal(e)
		}
	}
	b.Run("pair-inline-vs-floor", func(b *testing.B) { timePair(b, "api/floor", post, floor, 0, 0) })
	b.Run("pair-inline-procs", func(b *testing.B) { timePair(b, "procs-1/procs-2", post, post, 1, 2) })
	b.Run("pair-decode-procs", func(b *testing.B) { timePair(b, "procs-1/procs-2", decode, decode, 1, 2) })
	// decode-floor is the peer of the path: json.Unmarshal of the same body into plain value
	// structs of the event's shape, with no presence bits, no validation and one goroutine.
	// BenchmarkDriftAnalyze100k/inline over decode-floor is the ratio docs/methods/drift.md
	// reports.
	b.Run("decode-floor", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req floorRequest
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// floorRequest mirrors the body of POST /v1/drift/analyze with plain values: what decoding
// costs at the least, the peer of BenchmarkDriftAnalyze100k.
type floorRequest struct {
	AgentID string `json:"agent_id"`
	Events  []struct {
		ID                   string    `json:"id"`
		Timestamp            time.Time `json:"timestamp"`
		Action               string    `json:"action"`
		PrincipalValue       float64   `json:"principal_value"`
		BestAlternativeValue float64   `json:"best_alternative_value"`
		Beneficiaries        []struct {
			Party string  `json:"party"`
			Value float64 `json:"value"`
		} `json:"beneficiaries"`
		InstructedBy    string         `json:"instructed_by"`
		DelegationDepth int            `json:"delegation_depth"`
		Overridden      bool           `json:"overridden"`
		Attributes      jsontext.Value `json:"attributes"`
	} `json:"events"`
}

// timePair times first and second in each iteration, one after the other (with GOMAXPROCS
// procsFirst and procsSecond when not 0), and reports the ratio of their totals as unit,
// with each side's time an operation.
func timePair(b *testing.B, unit string, first, second func(*testing.B), procsFirst, procsSecond int) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var took [2]time.Duration
	for b.Loop() {
		for k, run := range []func(*testing.B){first, second} {
			if procs := [2]int{procsFirst, procsSecond}[k]; procs > 0 {
				runtime.GOMAXPROCS(procs)
			}
			start := time.Now()
			run(b)
			took[k] += time.Since(start)
		}
	}
	b.ReportMetric(float64(took[0])/float64(took[1]), unit)
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N), "first-ns/op")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N), "second-ns/op")
}
