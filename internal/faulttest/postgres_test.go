package faulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store/postgres/pgtest"
)

// TestKillNineAcrossProcesses runs three `riskapi serve` processes on one fresh PostgreSQL
// database and one Redis (a key prefix of their own), sends idempotent Drift analyses to them
// round-robin and queues background Cascade simulations, and kills a process drawn from the
// seed with SIGKILL every 1–4 s, restarting it on the same address. Once the faults stop: no
// 500, every request answered in the end, one analysis per Idempotency-Key whichever process
// answered, every answered analysis readable, and every simulation completed exactly once
// (one cascade.simulation_completed event each).
func TestKillNineAcrossProcesses(t *testing.T) {
	duration := enabled(t)
	t.Parallel() // the scenarios strike separate processes and stores
	redisURL := os.Getenv("RISKAPI_TEST_REDIS_URL")
	if redisURL == "" {
		t.Fatal("RISKAPI_TEST_REDIS_URL must name the Redis of the fault scenarios")
	}
	rng := rand.New(rand.NewPCG(seed(t), 2))
	env := []string{"RISKAPI_DATABASE_URL=" + pgtest.NewDatabase(t), "RISKAPI_REDIS_URL=" + redisURL,
		"RISKAPI_REDIS_PREFIX=riskapi-faults:" + ident.Random(8) + ":",
		"RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true", "RISKAPI_WEBHOOK_RETRY_SCHEDULE=1s,1s,2s,5s,10s,10s,10s",
		// Chunks of a killed process are taken back after 10 s (plus River's rescue interval).
		"RISKAPI_JOB_RESCUE_AFTER=10s"}
	cli(t, env, "migrate")
	key, testKey := keys(t, env)
	servers := []*server{newServer(t, env), newServer(t, env), newServer(t, env)}
	url := roundRobin(servers)
	// Test mode (loopback http receivers are allowed there) carries the webhook deliveries: a
	// slow load of small synchronous Cascade simulations, each emitting
	// cascade.simulation_completed.
	rcv := newReceiver(t)
	rcv.subscribe(t, url(), testKey)

	var sims []string
	for i := range 5 { // an account may hold at most 5 queued or running
		sims = append(sims, queueSimulation(t, url(), key, i))
	}
	h := &history{}
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	done := load{url: url, key: key, path: "/v1/drift/analyze", body: driftBody, workers: 6, settle: time.Minute, pause: 20 * time.Millisecond}.start(ctx, t, h)
	testHistory := &history{}
	testDone := load{url: url, key: testKey, path: "/v1/cascade/simulate", body: smallSimulation, workers: 1, settle: time.Minute, pause: 2 * time.Second}.start(ctx, t, testHistory)
	kills := 0
	for ctx.Err() == nil {
		time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
		victim := servers[rng.IntN(len(servers))]
		victim.kill(syscall.SIGKILL)
		kills++
		victim.start()
		if err := waitReady(context.Background(), victim.URL(), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	<-testDone
	testHistory.check(t)
	ids := h.check(t)
	t.Logf("%d kills in %v", kills, duration)
	events, missing := rcv.awaitEvents(t, url(), testKey, 90*time.Second)
	t.Logf("%d test-mode events, %d missing at the receiver, %d forged deliveries", events, len(missing), rcv.forged)
	if len(missing) > 0 || rcv.forged > 0 || events == 0 {
		t.Errorf("webhooks: %d of %d events never delivered (%v), %d deliveries failed verification", len(missing), events, missing, rcv.forged)
	}
	checkReadBack(t, url(), key, "/v1/drift/analyses", ids)
	// Background simulations: each completes once, the chunks of killed processes rescued.
	deadline := time.Now().Add(2 * time.Minute)
	for _, id := range sims {
		for status := simulationStatus(t, url(), key, id); status != "completed"; status = simulationStatus(t, url(), key, id) {
			if time.Now().After(deadline) || status == "failed" || status == "canceled" {
				t.Fatalf("simulation %s: %s", id, status)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if n := totalCount(t, url(), key, "/v1/events?type=cascade.simulation_completed"); n != len(sims) {
		t.Errorf("%d completion events for %d simulations", n, len(sims))
	}
}

// chainSimulation is a Cascade request on a chain of n nodes.
func chainSimulation(n, simulations int, seed int64, async bool) []byte {
	var nodes, edges []string
	for i := range n {
		nodes = append(nodes, fmt.Sprintf(`{"id": "n%d", "capital": 1.5}`, i))
		if i > 0 {
			edges = append(edges, fmt.Sprintf(`{"source": "n%d", "target": "n%d", "weight": 1}`, i-1, i))
		}
	}
	return []byte(fmt.Sprintf(`{"network": {"nodes": [%s], "edges": [%s]}, "model": "threshold", "simulations": %d, "seed": %d, "async": %t}`,
		join(nodes), join(edges), simulations, seed, async))
}

// smallSimulation is a synchronous simulation of a few milliseconds.
func smallSimulation(rng *rand.Rand) []byte {
	return chainSimulation(30, 200, rng.Int64N(1<<40), false)
}

// queueSimulation queues a background Cascade simulation of a generated chain network.
func queueSimulation(t *testing.T, url, key string, i int) string {
	t.Helper()
	return submitAsync(t, url, key, chainSimulation(300, 20000, int64(i+1), true))
}

func join(xs []string) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	return b.String()
}

func simulationStatus(t *testing.T, url, key, id string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/cascade/simulations/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "unreachable"
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var env struct{ Data struct{ Status string } }
	_ = json.Unmarshal(raw, &env)
	return env.Data.Status
}
