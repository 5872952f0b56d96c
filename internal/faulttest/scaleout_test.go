package faulttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"riskapi/cascade"
	"riskapi/internal/store/postgres/pgtest"
)

// TestSimulationScaleOut submits one large background simulation — RISKAPI_TEST_SCALE_NODES
// nodes (default 100,000) with two exposures each and 20,000 runs of one random failure, about
// 50 chunks — twice: to one `riskapi serve` on the embedded SQLite store, killed with SIGKILL
// once a fifth of its runs are stored and restarted; and to the first of three processes on
// one PostgreSQL database, one of which (drawn from the seed) is killed the same way and
// restarted. Both complete exactly once (one cascade.simulation_completed event), progress
// only grows, every process of the three stores chunks, and the two results are the same
// bytes (all but the id and the times). Jobs of a killed process are taken back after
// RISKAPI_JOB_RESCUE_AFTER, 30 s here (the structure chunk of 100,000 nodes takes 5–8 s alone
// on two cores, more beside two other processes), plus up to 30 s for River's rescuer to look.
func TestSimulationScaleOut(t *testing.T) {
	enabled(t)
	t.Parallel() // mostly waiting for River's rescuer: it overlaps the other scenarios
	nodes := 100_000
	if v := os.Getenv("RISKAPI_TEST_SCALE_NODES"); v != "" {
		var err error
		if nodes, err = strconv.Atoi(v); err != nil || nodes < 1000 {
			t.Fatalf("RISKAPI_TEST_SCALE_NODES=%q: want an integer of at least 1000", v)
		}
	}
	rng := rand.New(rand.NewPCG(seed(t), 4))
	body := scaleOutBody(t, nodes, 20_000)
	common := []string{"RISKAPI_JOB_RESCUE_AFTER=30s", "RISKAPI_MAX_BODY_BYTES=" + strconv.Itoa(2*len(body))}

	sqliteEnv := append([]string{"RISKAPI_DATA_DIR=" + t.TempDir()}, common...)
	cli(t, sqliteEnv, "migrate")
	key := liveKey(t, sqliteEnv)
	one := []*server{newServer(t, sqliteEnv, "--log-level", "info")}
	single := runScaleOut(t, one, key, body, 0)

	pgEnv := append([]string{"RISKAPI_DATABASE_URL=" + pgtest.NewDatabase(t)}, common...)
	cli(t, pgEnv, "migrate")
	key = liveKey(t, pgEnv)
	three := []*server{newServer(t, pgEnv, "--log-level", "info"), newServer(t, pgEnv, "--log-level", "info"), newServer(t, pgEnv, "--log-level", "info")}
	spread := runScaleOut(t, three, key, body, rng.IntN(len(three)))
	for i, n := range spread.chunksBy {
		if n == 0 {
			t.Errorf("process %d stored no chunk: %v", i+1, spread.chunksBy)
		}
	}
	if !bytes.Equal(single.result, spread.result) {
		t.Errorf("the three processes' result differs from the single process's (%d and %d bytes)", len(spread.result), len(single.result))
	}
}

// scaleOutRun is what runScaleOut saw.
type scaleOutRun struct {
	result   []byte // the completed simulation's data, without its id and times
	chunksBy []int  // chunks stored by each server (every start of it)
}

// runScaleOut submits body to the first server, kills servers[victim] with SIGKILL once a
// fifth of the runs are stored, restarts it, and waits for the simulation to complete.
func runScaleOut(t *testing.T, servers []*server, key string, body []byte, victim int) scaleOutRun {
	t.Helper()
	start := time.Now()
	id := submitAsync(t, servers[0].URL(), key, body)
	var progress []float64
	killed := false
	deadline := time.Now().Add(8 * time.Minute)
	for {
		status, p := simulationProgress(t, servers[0].URL(), key, id)
		if n := len(progress); n > 0 && p < progress[n-1] {
			t.Fatalf("progress went back from %v to %v", progress[n-1], p)
		}
		progress = append(progress, p)
		if status == "completed" {
			break
		}
		if status != "queued" && status != "running" {
			t.Fatalf("simulation %s: %s", id, status)
		}
		if !killed && p >= 0.2 {
			servers[victim].kill(syscall.SIGKILL)
			servers[victim].start()
			killed = true
			t.Logf("killed process %d of %d at progress %.2f, %v after submission", victim+1, len(servers), p, time.Since(start).Round(time.Millisecond))
		}
		if time.Now().After(deadline) {
			t.Fatalf("simulation %s not completed within 8 minutes (progress %v)", id, p)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !killed {
		t.Fatalf("the simulation completed before it could be killed mid-run (progress %v)", progress)
	}
	if n := totalCount(t, servers[0].URL(), key, "/v1/events?type=cascade.simulation_completed"); n != 1 {
		t.Errorf("%d completion events, want 1", n)
	}
	res := scaleOutRun{result: simulationData(t, servers[0].URL(), key, id)}
	stored := regexp.MustCompile(`"msg":"simulation chunk stored","simulation":"` + id + `","chunk":(\d+)`)
	unique := map[string]bool{}
	for _, s := range servers {
		s.kill(syscall.SIGTERM)
		found := stored.FindAllStringSubmatch(s.log(), -1)
		res.chunksBy = append(res.chunksBy, len(found))
		for _, m := range found {
			unique[m[1]] = true
		}
	}
	total := 0
	for _, n := range res.chunksBy {
		total += n
	}
	t.Logf("%d processes: completed in %v; %d chunks stored %d times (by process: %v); %d progress readings, %d distinct, never decreasing",
		len(servers), time.Since(start).Round(time.Millisecond), len(unique), total, res.chunksBy, len(progress), len(distinct(progress)))
	return res
}

// distinct returns the distinct readings.
func distinct(xs []float64) map[float64]bool {
	out := map[float64]bool{}
	for _, x := range xs {
		out[x] = true
	}
	return out
}

// scaleOutBody is an async Cascade request on n nodes, each exposed to two earlier ones with
// little capital, so that failures spread and runs do real work.
func scaleOutBody(t *testing.T, n, runs int) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var in cascade.Input
	for i := range n {
		c := 0.1 + 0.3*rng.Float64()
		in.Network.Nodes = append(in.Network.Nodes, cascade.Node{ID: fmt.Sprintf("n%d", i), Capital: &c})
		for k := 0; i > 0 && k < 2; k++ {
			w := 0.2 + 0.6*rng.Float64()
			in.Network.Edges = append(in.Network.Edges, cascade.Edge{Source: fmt.Sprintf("n%d", rng.IntN(i)), Target: fmt.Sprintf("n%d", i), Weight: &w})
		}
	}
	one, seed := 1, int64(7)
	in.Scenarios = []cascade.ScenarioSpec{{Type: "random_node", Count: &one}}
	in.Seed, in.Simulations, in.Async = &seed, &runs, true
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// submitAsync posts a background simulation and returns its id.
func submitAsync(t *testing.T, url, key string, body []byte) string {
	t.Helper()
	raw, status := call(t, http.MethodPost, url+"/v1/cascade/simulate", key, body)
	var env struct{ Data struct{ ID string } }
	if status != http.StatusAccepted || json.Unmarshal(raw, &env) != nil {
		t.Fatalf("submit simulation: %d %.500s", status, raw)
	}
	return env.Data.ID
}

// simulationProgress reads a simulation's status and progress.
func simulationProgress(t *testing.T, url, key, id string) (string, float64) {
	t.Helper()
	raw, status := call(t, http.MethodGet, url+"/v1/cascade/simulations/"+id, key, nil)
	var env struct {
		Data struct {
			Status   string  `json:"status"`
			Progress float64 `json:"progress"`
		}
	}
	if status != http.StatusOK || json.Unmarshal(raw, &env) != nil {
		t.Fatalf("read simulation: %d %.500s", status, raw)
	}
	return env.Data.Status, env.Data.Progress
}

// simulationData returns a simulation's data member without its id, created_at and
// completed_at, which differ between two runs of the same request.
func simulationData(t *testing.T, url, key, id string) []byte {
	t.Helper()
	raw, status := call(t, http.MethodGet, url+"/v1/cascade/simulations/"+id, key, nil)
	var env struct{ Data json.RawMessage }
	if status != http.StatusOK || json.Unmarshal(raw, &env) != nil {
		t.Fatalf("read simulation: %d %.500s", status, raw)
	}
	data := strings.Replace(string(env.Data), `"id":"`+id+`"`, `"id":""`, 1)
	data = regexp.MustCompile(`"(created_at|completed_at)":"[^"]*"`).ReplaceAllString(data, `"$1":""`)
	return []byte(data)
}

// call sends one request with the key and returns the body and status.
func call(t *testing.T, method, url, key string, body []byte) ([]byte, int) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return raw, res.StatusCode
}
