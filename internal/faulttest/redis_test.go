package faulttest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"sync/atomic"
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
// to each process), no 5xx, every request answered in the end, one analysis per key; and a key
// limited to 60 requests an hour, read all along, is admitted at most the limit plus the
// documented allowance of each outage, (N − 1)·⌈limit / N⌉ with N = 2 processes.
func TestRedisOutage(t *testing.T) {
	duration := enabled(t)
	t.Parallel() // the scenarios strike separate processes and stores
	rds := startRedis(t, 0)
	const processes, limit, outages = 2, 60, 2
	env := []string{"RISKAPI_DATABASE_URL=" + pgtest.NewDatabase(t), "RISKAPI_REDIS_URL=redis://" + rds.addr() + "/0",
		fmt.Sprintf("RISKAPI_RATE_LIMIT_PROCESSES=%d", processes)}
	cli(t, env, "migrate")
	key := liveKey(t, env)
	limited := limitedKey(t, env, limit)
	servers := []*server{newServer(t, env), newServer(t, env)}
	pick := roundRobin(servers)

	h := &history{}
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	done := load{url: pick, key: key, path: "/v1/drift/analyze", body: driftBody, workers: 4, settle: time.Minute, pause: 20 * time.Millisecond}.start(ctx, t, h)
	hour := time.Now().Truncate(time.Hour)
	var admitted, reads atomic.Int64
	readsDone := make(chan struct{})
	go func() {
		defer close(readsDone)
		for ctx.Err() == nil {
			status := get(t, pick(), limited, "/v1/usage")
			reads.Add(1)
			if status == http.StatusOK {
				admitted.Add(1)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	outage := min(15*time.Second, duration/4)
	for range outages {
		time.Sleep(outage / 2)
		rds.kill()
		time.Sleep(outage)
		rds = startRedis(t, rds.port)
	}
	<-done
	<-readsDone
	allowance := outages * (processes - 1) * ((limit + processes - 1) / processes)
	t.Logf("limited key: %d of %d reads admitted (limit %d, outage allowance %d)", admitted.Load(), reads.Load(), limit, allowance)
	if time.Now().Truncate(time.Hour).Equal(hour) && admitted.Load() > int64(limit+allowance) {
		t.Errorf("a limit of %d an hour admitted %d across %d Redis outages, above the documented %d", limit, admitted.Load(), outages, limit+allowance)
	}
	checkReadBack(t, servers[0].URL(), key, "/v1/drift/analyses", h.check(t))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.answers {
		if a.Status >= 500 {
			t.Errorf("key %s: %d %s during a Redis outage", a.Key, a.Status, a.Code)
			break
		}
	}
}
