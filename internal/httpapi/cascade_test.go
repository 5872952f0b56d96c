package httpapi

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"riskapi/internal/simulation"
	"riskapi/internal/simulation/simulationtest"
)

// chainNetwork is a line of n banks where each is exposed to the previous one with more than
// its capital: one failure at the head takes the whole chain down.
func chainNetwork(n int) string {
	var nodes, edges []string
	for i := range n {
		nodes = append(nodes, fmt.Sprintf(`{"id": "b%d", "capital": 1, "value": 1, "provider": "p%d", "recovery_hours": 12}`, i, i%2))
		if i > 0 {
			edges = append(edges, fmt.Sprintf(`{"source": "b%d", "target": "b%d", "weight": 2}`, i-1, i))
		}
	}
	return `{"nodes": [` + strings.Join(nodes, ",") + `], "edges": [` + strings.Join(edges, ",") + `]}`
}

// A small simulation runs in the request: 200, completed, stored (GET returns the same
// bytes), and cascade.simulation_completed carries it without the per-node array.
func TestCascadeSyncSimulation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	body := `{"network": ` + chainNetwork(10) + `, "scenarios": [{"name": "head fails", "type": "node_failure", "nodes": ["b0"]}], "simulations": 100, "seed": 42}`
	r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, body)
	if r.status != http.StatusOK || r.field("data.status") != "completed" || r.field("data.seed") != 42.0 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if r.field("data.systemic_risk_detected") != true {
		t.Fatalf("a chain that falls from its head is not systemic: %s", r.raw)
	}
	scen := r.field("data.scenarios").([]any)[0].(map[string]any)
	if scen["expected_failed_fraction"] != 1.0 || scen["max_rounds"] != 9.0 {
		t.Fatalf("head failure: %v", scen)
	}
	id := r.field("data.id").(string)
	got := b.get("/v1/cascade/simulations/"+id, b.testKey)
	if !bytes.Equal(rawData(t, got.raw), rawData(t, r.raw)) {
		t.Fatal("GET differs from POST")
	}
	if n := len(r.field("data.nodes").([]any)); n != 10 {
		t.Fatalf("%d nodes, want 10", n)
	}
	events := b.get("/v1/events?type=cascade.simulation_completed", b.testKey).body["data"].([]any)
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	obj := events[0].(map[string]any)["data"].(map[string]any)["object"].(map[string]any)
	if _, has := obj["nodes"]; has || obj["id"] != id || obj["score"] != r.field("data.score") {
		t.Fatalf("event object: %v", obj)
	}
	// The same seed and input give the same result.
	again := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, body)
	strip := func(r response) string {
		d := r.body["data"].(map[string]any)
		delete(d, "id")
		delete(d, "created_at")
		delete(d, "completed_at")
		return string(mustJSON(t, d))
	}
	if strip(again) != strip(r) {
		t.Fatal("same seed and input gave different results")
	}
	list := b.get("/v1/cascade/simulations?limit=1", b.testKey)
	if list.field("pagination.total_count") != 2.0 || list.field("pagination.has_more") != true {
		t.Fatalf("list: %s", list.raw)
	}
	// List items leave the per-node array out (GET has it).
	if item := list.body["data"].([]any)[0].(map[string]any); item["nodes"] != nil || item["scenarios"] == nil {
		t.Fatalf("list item: %v", item)
	}
	b.get("/v1/cascade/simulations/"+id, b.liveKey).wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
}

func TestCascadeValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	cases := []struct{ body, code, field string }{
		{`{}`, "INVALID_NETWORK", "network"},
		{`{"network": null}`, "INVALID_NETWORK", "network"},
		{`{"network": {}}`, "INVALID_NETWORK", "network.nodes"},
		{`{"network": {"edges": []}}`, "INVALID_NETWORK", "network.nodes"},
		{`{"network": {"nodes": [{"id": "a"}], "edges": [{"source": "a", "target": "zz"}]}}`, "INVALID_NETWORK", "network.edges[0].target"},
		{`{"network": {"nodes": [{"id": "a"}, {"id": "a"}], "edges": []}}`, "INVALID_NETWORK", "network.nodes[1].id"},
		{`{"network": {"nodes": [{"id": "a", "capital": -1}], "edges": []}}`, "INVALID_NETWORK", "network.nodes[0].capital"},
		{`{"network": ` + chainNetwork(3) + `, "model": "contagion"}`, "INVALID_MODEL", "model"},
		{`{"network": ` + chainNetwork(3) + `, "simulations": 0}`, "INVALID_SIMULATIONS", "simulations"},
		{`{"network": ` + chainNetwork(3) + `, "scenarios": [{"type": "random_node", "count": 9}]}`, "INVALID_SCENARIOS", "scenarios[0].count"},
		{`{"network": ` + chainNetwork(3) + `, "scenarios": [{"type": "shock", "loss_fraction": 1.5}]}`, "INVALID_SCENARIOS", "scenarios[0].loss_fraction"},
		{`{"network": ` + chainNetwork(3) + `, "seed": "x"}`, "INVALID_SEED", "seed"},
	}
	for _, c := range cases {
		r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, c.body)
		r.wantError(t, http.StatusBadRequest, "validation_error", c.code)
		if r.field("error.details.field") != c.field {
			t.Errorf("%s: field %v, want %s (%v)", c.body, r.field("error.details.field"), c.field, r.field("error.message"))
		}
	}
}

// runner starts the background simulation workers over the bundle's store for the test (a
// Runner and its River client working concurrency chunks at once; 0: the default) and
// returns the runner and the function that stops both, as a shutdown does.
func (b *bundle) runner(owner string, concurrency int) (*simulation.Runner, func()) {
	r, err := simulation.NewRunner(simulation.RunnerConfig{Store: b.sims, Logger: slog.New(slog.NewJSONHandler(b.logs, nil)),
		Owner: owner, Now: b.clock.Now})
	if err != nil {
		b.t.Fatal(err)
	}
	if concurrency == 0 {
		concurrency = simulation.DefaultConcurrency()
	}
	stopRun := simulationtest.Start(b.t, r.Run)
	stopJobs := simulationtest.StartJobs(b.t, b.sims.JobDriver(), r.Register, r.Periodic(), concurrency, 0)
	return r, func() { stopJobs(); stopRun() }
}

// awaitSimulation reads the simulation through the API now and after each of the runner's
// steps until it has status, and returns that response.
func (b *bundle) awaitSimulation(t *testing.T, id, status string) response {
	t.Helper()
	var r response
	b.sims.WaitFor(t, 20*time.Second, "simulation "+id+" "+status, func() bool {
		r = b.get("/v1/cascade/simulations/"+id, b.testKey)
		return r.field("data.status") == status
	})
	return r
}

// async: 202 queued, the runner is woken, then it completes the simulation and the event is
// emitted. (The runner's leases, resumption and shutdown are tested in internal/simulation.)
func TestCascadeAsyncSimulation(t *testing.T) {
	t.Parallel()
	woken := make(chan struct{}, 10)
	b := setup(t, func(c *Config) { c.WakeSimulations = func() { woken <- struct{}{} } }, nil)
	r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, `{"network": `+chainNetwork(20)+`, "simulations": 200, "seed": 1, "async": true}`)
	if r.status != http.StatusAccepted || r.field("data.status") != "queued" || r.field("data.scenarios") != nil || r.field("data.nodes") != nil {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if len(woken) != 1 {
		t.Fatalf("the runner was woken %d times, want once", len(woken))
	}
	id := r.field("data.id").(string)
	b.runner("runner-1", 0)
	done := b.awaitSimulation(t, id, "completed")
	if done.field("data.progress") != 1.0 || done.field("data.completed_at") == nil || done.field("data.score") == nil {
		t.Fatalf("completed: %s", done.raw)
	}
	if n := b.get("/v1/events?type=cascade.simulation_completed", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("%v events, want 1", n)
	}
}

// An independent-cascade request whose cost is its blast-radius sweep (ICBlastRuns runs per
// node) is measured with it and runs in the background: 2,000 nodes and 30,000 edges with one
// node_failure run measure 6.4 billion, not the 64 million a sweep of one run per node would
// count, which used to keep such a request in the foreground for most of a minute.
func TestCascadeSweepRepetitionsSendWorkToTheBackground(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	var net strings.Builder
	net.WriteString(`{"nodes": [`)
	const n = 2000
	for i := range n {
		if i > 0 {
			net.WriteByte(',')
		}
		fmt.Fprintf(&net, `{"id": "n%d"}`, i)
	}
	net.WriteString(`], "edges": [`)
	for i := range n {
		for k := 1; k <= 15; k++ {
			if i > 0 || k > 1 {
				net.WriteByte(',')
			}
			fmt.Fprintf(&net, `{"source": "n%d", "target": "n%d", "probability": 0.1}`, i, (i*7+k)%n)
		}
	}
	net.WriteString(`]}`)
	r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, `{"model": "independent_cascade", "network": `+net.String()+
		`, "scenarios": [{"type": "node_failure", "nodes": ["n0"]}], "seed": 1}`)
	if r.status != http.StatusAccepted || r.field("data.status") != "queued" {
		t.Fatalf("want 202 queued, got %d %.300s", r.status, r.raw)
	}
}
