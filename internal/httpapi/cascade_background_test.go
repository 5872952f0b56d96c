package httpapi

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/enginetest"
	"riskapi/internal/simulation"
	"riskapi/internal/store"
)

// asyncBody is an async simulation of a small chain; seed tells requests apart.
func asyncBody(seed int) string {
	return `{"network": ` + chainNetwork(20) + `, "simulations": 200, "async": true, "seed": ` + strconv.Itoa(seed) + `}`
}

// largeBody is a simulation of 10,000 banks in a chain with 100,000 runs of one random
// failure, each following the chain to its end: about 12 s on two cores, still running when
// the tests below cancel it.
func largeBody() string {
	return `{"network": ` + chainNetwork(10000) + `, "simulations": 100000, "seed": 9, "scenarios": [{"type": "random_node", "count": 1}]}`
}

// An account has at most 5 background simulations queued or running per mode: the 6th gets
// 429 RATE_LIMITED with Retry-After, in the envelope of every 429, and is not stored under its
// Idempotency-Key (the same key is accepted once the account has room). Another account, the
// other mode and simulations answered in the request are not held back.
func TestCascadeBackgroundLimitPerAccountAndMode(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	var queued []string
	for i := range maxBackgroundSimulations {
		r := b.send(http.MethodPost, "/v1/cascade/simulate", b.liveKey, asyncBody(i+1))
		if r.status != http.StatusAccepted {
			t.Fatalf("simulation %d: %d %s", i+1, r.status, r.raw)
		}
		queued = append(queued, r.field("data.id").(string))
	}
	retry := map[string]string{"Authorization": "Bearer " + b.liveKey, "Content-Type": "application/json", "Idempotency-Key": "sixth"}
	sixth := b.do(http.MethodPost, "/v1/cascade/simulate", strings.NewReader(asyncBody(6)), retry)
	sixth.wantError(t, http.StatusTooManyRequests, "rate_limit_error", "RATE_LIMITED")
	if sixth.header.Get("Retry-After") != "5" || sixth.field("error.details.limit") != 5.0 || sixth.header.Get("X-RateLimit-Limit") == "" {
		t.Fatalf("429 headers %v, details %v", sixth.header, sixth.field("error.details"))
	}

	other, otherKey := b.newAccount(store.PlanStarter, nil)
	if r := b.send(http.MethodPost, "/v1/cascade/simulate", otherKey, asyncBody(6)); r.status != http.StatusAccepted {
		t.Fatalf("another account (%s) was held back: %d %s", other.ID, r.status, r.raw)
	}
	if r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, asyncBody(6)); r.status != http.StatusAccepted {
		t.Fatalf("the other mode was held back: %d %s", r.status, r.raw)
	}
	if r := b.send(http.MethodPost, "/v1/cascade/simulate", b.liveKey, `{"network": `+chainNetwork(5)+`}`); r.status != http.StatusOK {
		t.Fatalf("a simulation answered in the request was held back: %d %s", r.status, r.raw)
	}

	b.send(http.MethodPost, "/v1/cascade/simulations/"+queued[0]+"/cancel", b.liveKey, "").wantSuccess(t)
	again := b.do(http.MethodPost, "/v1/cascade/simulate", strings.NewReader(asyncBody(6)), retry)
	if again.status != http.StatusAccepted || again.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the key refused with 429, once the account had room: %d (replayed %q) %s", again.status, again.header.Get("Idempotent-Replayed"), again.raw)
	}
}

// backgroundBundle is a server whose WakeSimulations wakes a runner started later by
// startRunner, as the service wires them in one process.
func backgroundBundle(t *testing.T) (*bundle, func(concurrency int)) {
	var runner atomic.Pointer[simulation.Runner]
	b := setup(t, func(c *Config) {
		c.WakeSimulations = func() {
			if r := runner.Load(); r != nil {
				r.Wake()
			}
		}
	}, nil)
	return b, func(concurrency int) {
		r, _ := b.runner("runner-1", concurrency)
		runner.Store(r)
	}
}

// POST /v1/cascade/simulations/{id}/cancel: 200 with the canceled simulation; a queued one
// never runs; a running one stops at once (the runner has one slot, and the next simulation
// completes in it soon after the cancel); no cascade.simulation_completed for either; a
// finished simulation answers 400 INVALID_STATUS; another mode's or an unknown id, 404; the
// Idempotency-Key replays the answer.
func TestCascadeCancel(t *testing.T) {
	t.Parallel()
	b, startRunner := backgroundBundle(t)
	post := func(body string) string {
		t.Helper()
		r := b.send(http.MethodPost, "/v1/cascade/simulate", b.testKey, body)
		if r.status != http.StatusAccepted {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		return r.field("data.id").(string)
	}
	cancel := func(id string) response {
		t.Helper()
		return b.send(http.MethodPost, "/v1/cascade/simulations/"+id+"/cancel", b.testKey, "")
	}

	queued := post(asyncBody(1))
	c := cancel(queued)
	if c.status != http.StatusOK || c.field("data.status") != "canceled" || c.field("data.completed_at") == nil || c.field("data.score") != nil {
		t.Fatalf("cancel of a queued simulation: %d %s", c.status, c.raw)
	}
	if got := b.get("/v1/cascade/simulations/"+queued, b.testKey); !bytes.Equal(rawData(t, got.raw), rawData(t, c.raw)) {
		t.Fatalf("GET after cancel differs from the cancel's answer: %s", got.raw)
	}
	again := cancel(queued)
	again.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_STATUS")
	if again.field("error.details.field") != "status" || !strings.Contains(again.field("error.message").(string), "already canceled") {
		t.Fatalf("cancel twice: %s", again.raw)
	}
	b.send(http.MethodPost, "/v1/cascade/simulations/csm_unknown/cancel", b.testKey, "").wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
	b.send(http.MethodPost, "/v1/cascade/simulations/"+queued+"/cancel", b.liveKey, "").wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")

	keyed := post(asyncBody(2))
	h := map[string]string{"Authorization": "Bearer " + b.testKey, "Idempotency-Key": "cancel-" + keyed}
	first := b.do(http.MethodPost, "/v1/cascade/simulations/"+keyed+"/cancel", nil, h)
	replay := b.do(http.MethodPost, "/v1/cascade/simulations/"+keyed+"/cancel", nil, h)
	if first.status != http.StatusOK || replay.status != http.StatusOK || replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.raw, replay.raw) {
		t.Fatalf("cancel with an Idempotency-Key: %d, then %d (replayed %q)", first.status, replay.status, replay.header.Get("Idempotent-Replayed"))
	}

	large := post(largeBody())
	startRunner(1)
	b.awaitSimulation(t, large, "running")
	next := post(`{"network": ` + chainNetwork(3) + `, "simulations": 10, "async": true}`)
	start := time.Now()
	if c := cancel(large); c.status != http.StatusOK || c.field("data.status") != "canceled" {
		t.Fatalf("cancel of a running simulation: %d %s", c.status, c.raw)
	}
	// The canceled simulation's queued chunks (up to simulation.Window) are each fetched,
	// found canceled and ended before the next simulation's chunk: 0.5–2.1 s under the race
	// detector on 2 idle cores, and over 3 s with other work beside it.
	slot := 3 * time.Second
	if enginetest.RaceEnabled {
		slot = 10 * time.Second
	}
	b.sims.WaitFor(t, slot, "the next simulation completed in the canceled one's slot", func() bool {
		return b.get("/v1/cascade/simulations/"+next, b.testKey).field("data.status") == "completed"
	})
	t.Logf("the canceled simulation's slot was free and the next one completed %v after the cancel", time.Since(start))
	if s := b.get("/v1/cascade/simulations/"+large, b.testKey); s.field("data.status") != "canceled" || s.field("data.score") != nil {
		t.Fatalf("the canceled simulation after its runner stopped: %s", s.raw)
	}

	done := b.get("/v1/cascade/simulations/"+next, b.testKey)
	cancel(next).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_STATUS")
	if got := b.get("/v1/cascade/simulations/"+next, b.testKey); !bytes.Equal(rawData(t, got.raw), rawData(t, done.raw)) {
		t.Fatal("a refused cancel changed the completed simulation")
	}
	events := b.get("/v1/events?type=cascade.simulation_completed", b.testKey)
	if events.field("pagination.total_count") != 1.0 {
		t.Fatalf("%v cascade.simulation_completed events, want 1 (the completed simulation; none for the 3 canceled)", events.field("pagination.total_count"))
	}
}
