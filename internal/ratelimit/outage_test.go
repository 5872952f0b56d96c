package ratelimit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"testing"
	"time"

	"riskapi/internal/testclock"
)

// seed forwards to the target, so a Failover over a countingLimiter copies its outage
// counts back as it would to Redis directly: a call of the primary like the others. A
// target that cannot take counts back (Memory) is not called.
func (c *countingLimiter) seed(ctx context.Context, seeds []seed, done func([]seed)) error {
	if s, ok := c.current().(seeder); ok {
		c.calls.Add(1)
		return s.seed(ctx, seeds, done)
	}
	return nil
}

// redisServer is a redis-server this test starts and kills: no persistence, so a restart
// comes back empty, as a Redis run without appendonly does.
type redisServer struct {
	t    *testing.T
	port int
	cmd  *exec.Cmd
}

func startRedisServer(t *testing.T) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed: skipping the Redis restart test")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &redisServer{t: t, port: port}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

func (s *redisServer) start() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", "--port", fmt.Sprint(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 100*time.Millisecond)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on port %d did not start: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *redisServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// outageFleet is three Failovers standing for three server processes behind one load
// balancer, sharing one Redis key space and one fake clock for their retries.
type outageFleet struct {
	procs    []*Failover
	primary  []*countingLimiter
	clock    *testclock.Clock
	next     int
	admitted int
}

func newOutageFleet(t *testing.T, processes int, primary func() Limiter) *outageFleet {
	t.Helper()
	fl := &outageFleet{clock: testclock.New(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))}
	for range 3 {
		p := &countingLimiter{}
		p.use(primary())
		f := NewFailover(p, NewMemory(), slog.New(slog.NewTextHandler(io.Discard, nil)), testRetryAfter)
		f.clock = fl.clock.Now
		f.SetProcesses(processes)
		fl.procs = append(fl.procs, f)
		fl.primary = append(fl.primary, p)
	}
	return fl
}

// send makes n requests, round robin over the processes, and returns how many were
// admitted. Every request must be answered: an outage never fails one.
func (fl *outageFleet) send(t *testing.T, now time.Time, b Bucket, n int) int {
	t.Helper()
	admitted := 0
	for range n {
		f := fl.procs[fl.next%len(fl.procs)]
		fl.next++
		states, err := f.Take(context.Background(), now, b)
		if err != nil {
			t.Fatalf("request %d: %v (an outage must not fail requests)", fl.next, err)
		}
		if states[0].Allowed() {
			admitted++
		}
	}
	fl.admitted += admitted
	return admitted
}

// TestOutageAdmitsAtMostTheDocumentedBound is the fault of a Redis restart: three processes,
// a limit of 60 per hour, requests before an outage, during it and after Redis came back
// empty. With N = 3 the hour admits at most Limit + N − 1 = 62 when every process is back
// on Redis before the next request, and at most Limit + (N − 1)·⌈Limit/N⌉ = 100 when the
// first process back counts alone while the others still wait to retry
// (docs/operations.md). Without the fix it admitted 180.
func TestOutageAdmitsAtMostTheDocumentedBound(t *testing.T) {
	const limit, n = 60, 3
	type testCase struct {
		name     string
		before   int  // requests before the outage
		together bool // every process is back on Redis before the next request
	}
	var cases []testCase
	for _, c := range []testCase{
		{name: "outage at the start of the hour", before: 0},
		{name: "outage mid-hour", before: 30},
		{name: "outage after the limit was reached", before: 90},
	} {
		cases = append(cases, c)
		c.name += ", back together"
		c.together = true
		cases = append(cases, c)
	}
	for _, tc := range cases {
		bound := limit + (n-1)*((limit+n-1)/n)
		if tc.together {
			bound = limit + n - 1
		}
		t.Run(tc.name, func(t *testing.T) {
			redis := startRedisServer(t)
			fleet := newOutageFleet(t, n, func() Limiter {
				client, err := OpenRedis(context.Background(), redis.url())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = client.Close() })
				return NewRedis(client, "riskapitest:outage:")
			})
			b := Bucket{Key: "{acct_1}:drift", Limit: limit, Window: Hour}
			now := futureDay().Add(10 * time.Hour)

			before := fleet.send(t, now, b, tc.before)
			if want := min(tc.before, limit); before != want {
				t.Fatalf("before the outage: admitted %d of %d, want %d", before, tc.before, want)
			}
			redis.stop()
			during := fleet.send(t, now, b, 90)
			for i, f := range fleet.procs {
				if !f.UsingFallback() {
					t.Fatalf("process %d is not on its fallback while Redis is down", i)
				}
			}
			redis.start() // empty: no persistence
			fleet.clock.Advance(testRetryAfter + time.Second)
			if tc.together {
				for _, f := range fleet.procs {
					peek(t, f, now, b) // the retry, and the copying back, happen here
				}
			}
			after := fleet.send(t, now, b, 90)
			for i, f := range fleet.procs {
				if f.UsingFallback() {
					t.Fatalf("process %d still on its fallback after Redis came back", i)
				}
			}
			t.Logf("admitted %d before, %d during the outage, %d after the empty restart: %d (bound %d)",
				before, during, after, fleet.admitted, bound)
			if fleet.admitted > bound {
				t.Errorf("the hour admitted %d requests, want at most %d", fleet.admitted, bound)
			}
			// Each process admits at most its share of the rest: ceil(remaining/3) ≤ 20.
			if during > n*((limit+n-1)/n) {
				t.Errorf("the outage admitted %d, more than three shares of %d", during, (limit+n-1)/n)
			}
			// Redis got its count back: the highest count seen plus the outage's requests.
			st := peek(t, fleet.procs[0], now, b)[0]
			if min := int64(max(tc.before-2, 0) + 90 + 90); st.Count < min {
				t.Errorf("Redis counts %d after the restart, want at least %d", st.Count, min)
			}
		})
	}
}

// TestOutageWithRedisKeepingItsData: the processes lose the shared Redis (a network
// partition) while it keeps its counts; after it, Redis holds every request of the hour.
func TestOutageWithRedisKeepingItsData(t *testing.T) {
	t.Parallel()
	const limit, n = 60, 3
	shared := newTestRedis(t)
	fleet := newOutageFleet(t, n, func() Limiter { return shared })
	b := Bucket{Key: "{acct_2}:drift", Limit: limit, Window: Hour}
	now := futureDay().Add(11 * time.Hour)

	fleet.send(t, now, b, 45)
	for _, p := range fleet.primary {
		p.use(newUnreachableRedis(t))
	}
	during := fleet.send(t, now, b, 60)
	for _, p := range fleet.primary {
		p.use(shared)
	}
	fleet.clock.Advance(testRetryAfter + time.Second)
	fleet.send(t, now, b, 30)
	// Seen before the outage: 43, 44, 45, so shares ceil(17/3) = ceil(16/3) = 6 and 5.
	if want := 6 + 6 + 5; during != want {
		t.Errorf("the outage admitted %d, want %d (each process its share of the 15 left)", during, want)
	}
	if fleet.admitted > limit+n-1 {
		t.Errorf("the hour admitted %d, want at most %d", fleet.admitted, limit+n-1)
	}
	if st := peek(t, shared, now, b)[0]; st.Count != 45+60+30 {
		t.Errorf("Redis counts %d, want every request of the hour: %d", st.Count, 45+60+30)
	}
}

// TestOutageShareWithOneProcess: with N = 1 (the default) a process that saw the limit
// reached admits nothing more during an outage, and one that saw none of it admits up to
// the whole limit: the bound is N times the remainder, hence the setting.
func TestOutageShareWithOneProcess(t *testing.T) {
	t.Parallel()
	fx := newFailoverFixture(t)
	b := Bucket{Key: "{acct_3}:drift", Limit: 10, Window: Hour}
	now := futureDay().Add(12 * time.Hour)
	if s := takeOne(t, fx.failover, now, b); s.Count != 1 || s.Remaining() != 9 {
		t.Fatalf("unseen bucket during an outage: count %d remaining %d, want 1 and 9", s.Count, s.Remaining())
	}
	fx.failover.seen.raise(now, []State{{Bucket: b, Count: 10}})
	if s := takeOne(t, fx.failover, now, b); s.Allowed() {
		t.Fatalf("bucket last seen exhausted admitted during an outage: %+v", s)
	}
}
