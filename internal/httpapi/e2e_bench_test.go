package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"riskapi/cascade"
	"riskapi/convergence"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// benchServer is a server on the embedded store for end-to-end benchmarks: no access log
// kept, no rate limit in reach, and an enterprise account's live key.
func benchServer(b *testing.B) (*bundle, store.Account, string) {
	bb := setup(b, benchConfig, nil)
	acct, key := bb.newAccount(store.PlanEnterprise, nil)
	return bb, acct, key
}

// benchConfig is the benchmarks' server: logs discarded, and no hourly ceiling behind the
// Enterprise plan's unlimited requests.
func benchConfig(c *Config) {
	c.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	c.UnlimitedCeiling = 1 << 50
}

// benchPost sends one POST of body to path over the loopback socket and checks that it is
// answered with status and a body containing want; idempotencyKey "" sends none.
func benchPost(b *testing.B, bb *bundle, key, path string, body []byte, status int, want, idempotencyKey string) []byte {
	req, err := http.NewRequest(http.MethodPost, bb.http.URL+path, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	res, err := bb.http.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != status || !bytes.Contains(answer, []byte(want)) {
		b.Fatalf("status %d: %.300s", res.StatusCode, answer)
	}
	return answer
}

// postLoop times POSTs of body to path, each checked as benchPost does. With idempotent,
// each request carries a new Idempotency-Key.
func postLoop(b *testing.B, bb *bundle, key, path string, body []byte, status int, want string, idempotent bool) (last []byte) {
	b.SetBytes(int64(len(body)))
	for i := 0; b.Loop(); i++ {
		idempotencyKey := ""
		if idempotent {
			idempotencyKey = "bench-" + strconv.Itoa(i) + "-" + b.Name()
		}
		last = benchPost(b, bb, key, path, body, status, want, idempotencyKey)
	}
	return last
}

// BenchmarkConvergence100x1000 is the Convergence contract's speed target end to end: 100
// firms × 1,000 periods (100,000 observations with costs, quantities and messages; a cartel
// forms and breaks down) posted to /v1/convergence/analyze-market. Target: under 1 s on 2 cores.
func BenchmarkConvergence100x1000(b *testing.B) {
	bb, _, key := benchServer(b)
	in, _ := convergence.Generate(convergence.ScenarioCartel, 1, convergence.GenParams{Firms: 100, Periods: 1000, Messages: 1, PeriodForm: convergence.FormDate})
	postLoop(b, bb, key, "/v1/convergence/analyze-market", mustJSON(b, in), http.StatusOK, `"collusion_detected":true`, false)
}

// BenchmarkCascadeThreshold1k is the Cascade contract's speed target through the API: the
// threshold model on 1,000 nodes and 10,000 edges, 10,000 runs of one random failure (plus
// the blast-radius sweep of every node), posted to /v1/cascade/simulate and answered
// synchronously. Capital 0.02 against interbank assets of 0.2 makes banks with up to 9
// debtors fail after one default, so almost every run cascades through most of the network —
// the expensive case, as in the engine's own benchmark. Target: under 2 s on 2 cores.
func BenchmarkCascadeThreshold1k(b *testing.B) {
	bb, _, key := benchServer(b)
	in, _ := cascade.Generate(cascade.ScenarioFragileNetwork, 1, cascade.GenParams{Nodes: 1000, MeanDegree: 10, Simulations: 10_000})
	in.Scenarios = []cascade.ScenarioSpec{{Name: "one random failure", Type: cascade.TypeRandomNode}}
	for i := range in.Network.Nodes {
		capital := 0.02
		in.Network.Nodes[i].Capital = &capital
	}
	var sim struct {
		Scenarios []struct {
			CascadeProbability float64 `json:"cascade_probability"`
		} `json:"scenarios"`
	}
	answer := postLoop(b, bb, key, "/v1/cascade/simulate", mustJSON(b, in), http.StatusOK, `"status":"completed"`, false)
	if err := json.Unmarshal(rawData(b, answer), &sim); err != nil || len(sim.Scenarios) != 1 {
		b.Fatalf("answer: %v", err)
	}
	b.ReportMetric(sim.Scenarios[0].CascadeProbability, "cascade_prob")
	if sim.Scenarios[0].CascadeProbability < 0.5 {
		b.Fatalf("cascade probability %.2f: the benchmark no longer exercises the expensive case", sim.Scenarios[0].CascadeProbability)
	}
}

// BenchmarkCascadeAsync100kNodes shows a 100,000-node network through the background path:
// POST with async answers 202, a runner completes the simulation, and the
// cascade.simulation_completed event is stored. One op is the whole round, 202 to event.
func BenchmarkCascadeAsync100kNodes(b *testing.B) {
	if testing.Short() {
		b.Skip("-short (CI): the 100,000-node round takes 8–28 s; the background path is tested by TestCascadeAsyncSimulation and the fault scenarios")
	}
	bb, acct, key := benchServer(b)
	in, _ := cascade.Generate(cascade.ScenarioFragileNetwork, 2, cascade.GenParams{Nodes: 100_000, MeanDegree: 3, Simulations: 100})
	in.Async = true
	body := mustJSON(b, in)
	bb.runner("bench-runner", 0)
	var events int
	for b.Loop() {
		answer := benchPost(b, bb, key, "/v1/cascade/simulate", body, http.StatusAccepted, `"status":"queued"`, "")
		id := string(bytes.Split(bytes.Split(answer, []byte(`"id":"`))[1], []byte(`"`))[0])
		bb.sims.WaitFor(b, 5*time.Minute, "simulation "+id+" completed", func() bool {
			sim, err := bb.store.Simulation(context.Background(), acct.ID, store.ModeLive, id)
			if err == nil && sim.Status == store.SimulationFailed {
				b.Fatalf("simulation failed: %s", sim.Payload)
			}
			return err == nil && sim.Status == store.SimulationCompleted
		})
		events++
	}
	page, err := bb.store.ListEvents(context.Background(), acct.ID, store.ModeLive, product.Cascade.Event, store.PageQuery{Limit: 100})
	if err != nil || int(page.TotalCount) != events {
		b.Fatalf("%d cascade.simulation_completed events for %d simulations (%v)", page.TotalCount, events, err)
	}
}
