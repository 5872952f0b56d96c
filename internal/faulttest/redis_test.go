package faulttest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"riskapi/internal/store/postgres/pgtest"
)

// redisServer is a redis-server of the harness's own on a free loopback port, so that the
// scenario can kill it without touching the Redis other tests use.
type redisServer struct {
	t    *testing.T
	port int
	cmd  *exec.Cmd
}

func startRedis(t *testing.T, port int) *redisServer {
	t.Helper()
	if port == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v (the fault scenarios need it installed)", err)
	}
	r := &redisServer{t: t, port: port, cmd: cmd}
	t.Cleanup(r.kill)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", r.addr())
		if err == nil {
			c.Close()
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not listen", r.addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func (r *redisServer) kill() {
	if r.cmd != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// TestRedisOutage runs two processes on one PostgreSQL database and a Redis of the harness's
// own, kills that Redis with SIGKILL for 15 s and starts it again empty, twice, under
// idempotent Drift load. Requests go on being served during the outage (rate limits fall back
// to each process), no 5xx, every request answered in the end, one analysis per key.
func TestRedisOutage(t *testing.T) {
	duration := enabled(t)
	t.Parallel() // the scenarios strike separate processes and stores
	rds := startRedis(t, 0)
	env := []string{"RISKAPI_DATABASE_URL=" + pgtest.NewDatabase(t), "RISKAPI_REDIS_URL=redis://" + rds.addr() + "/0"}
	cli(t, env, "migrate")
	key := liveKey(t, env)
	servers := []*server{newServer(t, env), newServer(t, env)}
	i := 0
	pick := func() string { i++; return servers[i%2].URL() }

	h := &history{}
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		load{url: pick, key: key, path: "/v1/drift/analyze", body: driftBody, workers: 4, settle: time.Minute, pause: 20 * time.Millisecond}.run(ctx, t, h)
	}()
	outage := min(15*time.Second, duration/4)
	for range 2 {
		time.Sleep(outage / 2)
		rds.kill()
		time.Sleep(outage)
		rds = startRedis(t, rds.port)
	}
	<-done
	ids := h.check(t)
	if total := totalCount(t, servers[0].URL(), key, "/v1/drift/analyses"); total != len(ids) {
		t.Errorf("%d analyses stored for %d keys", total, len(ids))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.answers {
		if a.Status >= 500 {
			t.Errorf("key %s: %d %s during a Redis outage", a.Key, a.Status, a.Code)
			break
		}
	}
}
