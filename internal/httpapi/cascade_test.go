package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/store"
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
		{`{}`, "INVALID_NETWORK", "network.nodes"},
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

// runner starts the server's background runner for the test and returns its stop function,
// which waits for the runner to hand back what it holds.
func (b *bundle) runner(owner string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { b.server.RunSimulations(ctx, owner) })
	stop := func() { cancel(); wg.Wait() }
	b.t.Cleanup(stop)
	return stop
}

// awaitSimulation reads the simulation through the API now and after each of the runner's
// steps until it has status, and returns that response.
func (b *bundle) awaitSimulation(t *testing.T, id, status string) response {
	t.Helper()
	var r response
	b.sims.waitFor(t, 20*time.Second, "simulation "+id+" "+status, func() bool {
		r = b.get("/v1/cascade/simulations/"+id, b.testKey)
		return r.field("data.status") == status
	})
	return r
}

// async: 202 queued, then a runner completes it and the event is emitted.
func TestCascadeAsyncSimulation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, `{"network": `+chainNetwork(20)+`, "simulations": 200, "seed": 1, "async": true}`)
	if r.status != http.StatusAccepted || r.field("data.status") != "queued" || r.field("data.scenarios") != nil || r.field("data.nodes") != nil {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	id := r.field("data.id").(string)
	b.runner("runner-1")
	done := b.awaitSimulation(t, id, "completed")
	if done.field("data.progress") != 1.0 || done.field("data.completed_at") == nil || done.field("data.score") == nil {
		t.Fatalf("completed: %s", done.raw)
	}
	if n := b.get("/v1/events?type=cascade.simulation_completed", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("%v events, want 1", n)
	}
}

// A simulation left running by a process that died is resumed once its lease expires; one
// interrupted too often is failed with the reason, not left running.
func TestCascadeInterruptedSimulations(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := context.Background()
	queue := func() string {
		r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, `{"network": `+chainNetwork(5)+`, "simulations": 50, "seed": 3, "async": true}`)
		return r.field("data.id").(string)
	}
	resumed := queue()
	// A process claims it and dies (never renews): the lease keeps others off until it expires.
	if _, err := b.store.ClaimSimulation(ctx, "dead-process", simulationLease, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	stop := b.runner("runner-2")
	b.sims.waitFor(t, 5*time.Second, "runner-2 looking for work", func() bool { return b.sims.emptyClaimsBy("runner-2") > 0 })
	// runner-2 has looked for work and left the leased row alone: one attempt (the dead
	// process's), and the API still shows it queued, since the dead process never wrote
	// "running" to the payload.
	if sim, err := b.store.Simulation(ctx, b.account.ID, store.ModeTest, resumed); err != nil || sim.Attempts != 1 {
		t.Fatalf("while the dead process's lease holds: %d attempts (%v), want 1: runner-2 must not claim it", sim.Attempts, err)
	}
	if s := b.get("/v1/cascade/simulations/"+resumed, b.testKey).field("data.status"); s != "queued" {
		t.Fatalf("status while leased by the dead process: %v, want queued", s)
	}
	b.clock.Advance(simulationLease + time.Second)
	done := b.awaitSimulation(t, resumed, "completed")
	sim, _ := b.store.Simulation(ctx, b.account.ID, store.ModeTest, resumed)
	if sim.Attempts != 2 || done.field("data.failure_reason") != nil {
		t.Fatalf("resumed simulation: attempts %d, %s", sim.Attempts, done.raw)
	}

	stop()
	doomed := queue()
	for range maxSimulationAttempts {
		b.clock.Advance(simulationLease + time.Second)
		for {
			sim, err := b.store.ClaimSimulation(ctx, "crashing-process", simulationLease, b.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if sim.ID == doomed {
				break
			}
		}
	}
	b.clock.Advance(simulationLease + time.Second)
	b.runner("runner-3")
	failed := b.awaitSimulation(t, doomed, "failed")
	if reason, _ := failed.field("data.failure_reason").(string); !strings.Contains(reason, "interrupted") {
		t.Fatalf("failure_reason = %q", reason)
	}
	if n := b.get("/v1/events?type=cascade.simulation_completed", b.testKey).field("pagination.total_count"); n != 2.0 {
		t.Fatalf("%v events, want 2 (the failed one finishes too)", n)
	}
}

// A runner stopped mid-simulation (shutdown) hands it back to the queue at once, without
// counting the attempt; the next runner completes it.
func TestCascadeShutdownHandsSimulationBack(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, `{"network": `+chainNetwork(400)+`, "simulations": 100000, "seed": 9, "async": true,
		"scenarios": [{"type": "random_node", "count": 1}]}`)
	id := r.field("data.id").(string)
	stop := b.runner("runner-a")
	b.awaitSimulation(t, id, "running")
	stop()
	sim, err := b.store.Simulation(context.Background(), b.account.ID, store.ModeTest, id)
	if err != nil || sim.Status != store.SimulationQueued || sim.Attempts != 0 {
		t.Fatalf("after shutdown: %+v, %v; want queued with 0 attempts", sim.Status, err)
	}
	b.runner("runner-b")
	b.awaitSimulation(t, id, "completed")
}
