package faulttest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"riskapi/drift"
)

// enabled skips the test unless RISKAPI_TEST_FAULTS=1, and returns how long faults strike:
// RISKAPI_TEST_FAULT_DURATION (default 2m, the CI form).
func enabled(t *testing.T) time.Duration {
	t.Helper()
	if os.Getenv("RISKAPI_TEST_FAULTS") != "1" {
		t.Skip("set RISKAPI_TEST_FAULTS=1 to run the fault scenarios")
	}
	d := 2 * time.Minute
	if v := os.Getenv("RISKAPI_TEST_FAULT_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("RISKAPI_TEST_FAULT_DURATION=%q: %v", v, err)
		}
	}
	return d
}

// seed is the faults' seed: RISKAPI_TEST_FAULT_SEED to replay a run, else drawn and printed.
func seed(t *testing.T) uint64 {
	t.Helper()
	s := rand.Uint64()
	if v := os.Getenv("RISKAPI_TEST_FAULT_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("RISKAPI_TEST_FAULT_SEED=%q: %v", v, err)
		}
	}
	t.Logf("fault seed %d (replay with RISKAPI_TEST_FAULT_SEED=%d)", s, s)
	return s
}

// driftBody is a small Drift analysis of a generated agent: 40 events.
func driftBody(rng *rand.Rand) []byte {
	scenarios := drift.TestModeScenarios()
	in, _ := drift.Generate(scenarios[rng.IntN(len(scenarios))], rng.Int64(), drift.GenParams{Events: 40})
	body, _ := json.Marshal(in)
	return body
}

// TestKillNineOnTheEmbeddedStore kills the one `riskapi serve` on the embedded SQLite store
// with SIGKILL every 1–4 s (drawn from the seed) while four clients send idempotent Drift
// analyses, restarts it on the same address, and checks after every kill that the database
// passes PRAGMA integrity_check; once the faults stop: no 500, every request answered in the
// end, one analysis per Idempotency-Key (the same id on every answer, and as many analyses
// stored as keys), and every answered analysis readable.
func TestKillNineOnTheEmbeddedStore(t *testing.T) {
	duration := enabled(t)
	t.Parallel() // the scenarios strike separate processes and stores
	rng := rand.New(rand.NewPCG(seed(t), 1))
	dir := t.TempDir()
	env := []string{"RISKAPI_DATA_DIR=" + dir}
	cli(t, env, "migrate")
	key := liveKey(t, env)
	srv := newServer(t, env)

	h := &history{}
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	done := load{url: srv.URL, key: key, path: "/v1/drift/analyze", body: driftBody, workers: 4, settle: time.Minute, pause: 20 * time.Millisecond}.start(ctx, t, h)
	kills := 0
	for ctx.Err() == nil {
		time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
		srv.kill(syscall.SIGKILL)
		kills++
		if err := integrityCheck(filepath.Join(dir, "riskapi.db")); err != nil {
			t.Fatalf("after kill %d: %v", kills, err)
		}
		start := time.Now()
		srv.start()
		if err := waitReady(context.Background(), srv.URL(), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if kills == 1 {
			t.Logf("restart to ready: %v", time.Since(start))
		}
	}
	<-done
	ids := h.check(t)
	t.Logf("%d kills in %v", kills, duration)
	checkReadBack(t, srv.URL(), key, "/v1/drift/analyses", ids)
}

// integrityCheck runs PRAGMA integrity_check on the database file of a stopped process.
func integrityCheck(path string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	var verdict string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&verdict); err != nil {
		return err
	}
	if verdict != "ok" {
		return fmt.Errorf("integrity_check: %s", verdict)
	}
	return nil
}

func get(t *testing.T, url, key, path string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func totalCount(t *testing.T, url, key, path string) int {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, _ := http.NewRequest(http.MethodGet, url+path+sep+"limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var env struct {
		Pagination struct {
			TotalCount int `json:"total_count"`
		} `json:"pagination"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return env.Pagination.TotalCount
}
