package faulttest

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store/postgres/pgtest"
)

// TestDatabaseOutage runs two processes whose PostgreSQL connections pass through a proxy,
// and cuts every connection for 20 s (RISKAPI_TEST_FAULT_DURATION caps the whole run) under
// idempotent Drift load, twice. During a cut the answers are the documented 503 in the
// envelope with Retry-After (never a 500); after it a request succeeds again within 10 s with
// no restart; once the faults stop, every request was answered and each key stored one
// analysis.
func TestDatabaseOutage(t *testing.T) {
	duration := enabled(t)
	t.Parallel() // the scenarios strike separate processes and stores
	redisURL := os.Getenv("RISKAPI_TEST_REDIS_URL")
	direct := pgtest.NewDatabase(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	px, err := newProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	viaProxy := *u
	viaProxy.Host = px.Addr()
	cli(t, []string{"RISKAPI_DATABASE_URL=" + direct}, "migrate")
	key := liveKey(t, []string{"RISKAPI_DATABASE_URL=" + direct})
	env := []string{"RISKAPI_DATABASE_URL=" + viaProxy.String(), "RISKAPI_REDIS_URL=" + redisURL,
		"RISKAPI_REDIS_PREFIX=riskapi-faults:" + ident.Random(8) + ":"}
	servers := []*server{newServer(t, env), newServer(t, env)}
	pick := roundRobin(servers)

	h := &history{}
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	done := load{url: pick, key: key, path: "/v1/drift/analyze", body: driftBody, workers: 4, settle: time.Minute, pause: 20 * time.Millisecond}.start(ctx, t, h)
	outage := min(20*time.Second, duration/4)
	for round := range 2 {
		time.Sleep(outage / 2)
		px.Cut()
		cutAt := time.Now()
		time.Sleep(outage)
		if status := get(t, servers[0].URL(), key, "/readyz"); status != http.StatusServiceUnavailable {
			t.Errorf("cut %d: /readyz %d, want 503", round+1, status)
		}
		px.Restore()
		restored := time.Now()
		for get(t, servers[round%2].URL(), key, "/v1/drift/analyses?limit=1") != http.StatusOK {
			if time.Since(restored) > 10*time.Second {
				t.Fatalf("cut %d: no success within 10 s of the restore", round+1)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("cut %d: %v without the database; first success %v after the restore", round+1, restored.Sub(cutAt).Round(time.Millisecond), time.Since(restored).Round(time.Millisecond))
	}
	<-done
	checkReadBack(t, servers[0].URL(), key, "/v1/drift/analyses", h.check(t))
}
