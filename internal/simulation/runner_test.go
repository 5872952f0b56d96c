package simulation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"riskapi/cascade"
	"riskapi/internal/admission"
	"riskapi/internal/simulation/simulationtest"
	"riskapi/internal/store"
)

// A simulation whose first chunk was started MaxAttempts times by processes that died is
// failed with the reason by the next start, not retried forever; a canceled one is never
// started.
func TestSimulationInterruptedTooOftenFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	doomed := b.queue(chain(5, 50, 3))
	for range MaxAttempts {
		// A process starts it and dies before storing anything.
		if _, err := b.store.StartSimulation(ctx, doomed, 2, Window, []byte(`{"status":"running"}`), b.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	b.runner("runner-2")
	failed := b.await(doomed, "failed")
	if reason, _ := failed.object["failure_reason"].(string); !strings.Contains(reason, "interrupted") {
		t.Fatalf("failure_reason = %q", reason)
	}
	if n := b.completionEvents(); n != 1 {
		t.Fatalf("%v events, want 1 (a failed simulation finishes too)", n)
	}
}

// A process stopped mid-simulation (shutdown) puts its running chunks back in the queue at
// once; the next process completes the simulation, with one event.
func TestShutdownHandsSimulationBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one := 1
	id := b.queue(chain(400, 100000, 9, cascade.ScenarioSpec{Type: "random_node", Count: &one}))
	stop := b.runner("runner-a")
	b.await(id, "running")
	stop()
	if sim := b.simulation(id); sim.Status != store.SimulationRunning {
		t.Fatalf("after shutdown: %s; want still running (its chunks queued)", sim.Status)
	}
	b.runner("runner-b")
	b.await(id, "completed")
	if n := b.completionEvents(); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
}

// large is a simulation of 10,000 banks in a chain with 100,000 runs of one random failure,
// each following the chain to its end: about 12 s on two cores, far longer than any bound
// below, so it is still running when they are checked. small is one of about 10 ms (13 ms
// best of 7 alone on two cores), most of it the blast-radius sweep of the 300 banks.
func large() cascade.Input {
	one := 1
	return chain(10000, 100000, 9, cascade.ScenarioSpec{Type: "random_node", Count: &one})
}

func small() cascade.Input { return chain(300, 1000, 1) }

// A small simulation of one account starts beside another account's long one instead of
// behind it: its job passes the long one's queued chunks, so it completes within 5 s (the
// contract's bound on two cores) while the long one still runs. Before runs were shared
// between accounts it waited for the whole long run (11.9 s).
func TestSmallSimulationDoesNotWaitBehindAnotherAccountsLargeOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := b.queue(large())
	b.startRunner(RunnerConfig{Store: b.store, Owner: "runner-1"}, 0)
	b.await(big, "running")
	start := time.Now()
	quick := b.queueFor(b.newAccount(), small())
	b.store.WaitFor(t, 5*time.Second, "the other account's small simulation completed", func() bool {
		return b.simulation(quick).object["status"] == "completed"
	})
	t.Logf("small simulation completed %v after it was queued, beside the large one", time.Since(start))
	if s := b.simulation(big); s.object["status"] != "running" {
		t.Fatalf("the large simulation is %v, not running: too short to show that the small one did not wait for it", s.object["status"])
	}
}

// A canceled simulation stops and sends no cascade.simulation_completed: a queued one is never
// run; a running one's chunk stops at once when the workers are woken (the cancel was taken in
// their process) and within checkEvery when they are not (taken in another process); the
// engine returns within 100 ms of its context ending. Measured from the cancel until no chunk
// of the simulation runs any more.
func TestCanceledSimulationsStop(t *testing.T) {
	t.Parallel()
	for _, woken := range []bool{true, false} {
		t.Run(fmt.Sprintf("woken=%v", woken), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			big := b.queue(large())
			r, _ := b.startRunner(RunnerConfig{Store: b.store, Owner: "runner-1"}, 1)
			b.store.WaitFor(t, 20*time.Second, "a chunk of runs of the large simulation running", func() bool {
				return r.runningChunks(big) > 0 && b.simulation(big).object["status"] == "running"
			})
			never := b.queue(small()) // behind the account's dispatched simulation: queued
			b.cancel(never)
			other := b.newAccount()
			next := b.queueFor(other, chain(3, 10, 1)) // well under a millisecond

			b.cancel(big)
			start := time.Now() // the cancel is stored: from here the workers may see it
			if woken {
				r.Wake()
			}
			for r.runningChunks(big) > 0 {
				if time.Since(start) > 3*time.Second {
					t.Fatal("the canceled simulation's chunk still runs 3 s after the cancel")
				}
				time.Sleep(2 * time.Millisecond)
			}
			t.Logf("woken=%v: the canceled simulation's chunk stopped %v after the cancel", woken, time.Since(start))
			b.await(next, "completed")
			for _, id := range []string{big, never} {
				if s := b.simulation(id); s.Status != store.SimulationCanceled || s.object["status"] != "canceled" || s.object["score"] != nil {
					t.Fatalf("%s: %s %s", id, s.Status, s.Payload)
				}
			}
			if s := b.simulation(never); s.Attempts != 0 {
				t.Fatalf("the simulation canceled while queued ran %d times", s.Attempts)
			}
			if n, m := b.completionEvents(), b.completionEventsOf(other); n != 0 || m != 1 {
				t.Fatalf("%d events for the canceled simulations, %d for the other account's; want 0 and 1 (the completed one)", n, m)
			}
		})
	}
}

// Two processes (each a runner and a River client over its own store on one database) share
// the queue: every simulation completes exactly once (one start, one event), whichever
// process takes its chunks. On SQLite, and on PostgreSQL when RISKAPI_TEST_POSTGRES_URL is set.
func TestTwoRunnersNeverRunASimulationTwice(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]func(*testing.T) *bundle{"sqlite": setup, "postgres": setupPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var ids []string
			accounts := []string{b.account, b.newAccount(), b.newAccount(), b.newAccount()}
			for i := range 12 {
				ids = append(ids, b.queueFor(accounts[i%len(accounts)], chain(30, 300, int64(i))))
			}
			b.startRunner(RunnerConfig{Store: b.store, Owner: "process-1"}, 3)
			b.startRunner(RunnerConfig{Store: &simulationtest.Watch{Store: b.open()}, Owner: "process-2"}, 3)
			for _, id := range ids {
				if s := b.await(id, "completed"); s.Attempts != 1 {
					t.Fatalf("%s ran %d times", id, s.Attempts)
				}
			}
			for _, acct := range accounts {
				if n := b.completionEventsOf(acct); n != 3 {
					t.Fatalf("%s: %d events, want 3 (one per simulation)", acct, n)
				}
			}
		})
	}
}

// A background simulation holds its estimated peak against the process's memory budget, which
// the API shares, while the process holds its plan: while the budget is full it waits, queued
// and running nothing, and it runs once there is room, giving the memory back when it ends.
func TestSimulationsWaitForTheMemoryBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	memory := admission.NewMemory(64<<20, 20*time.Millisecond)
	held, err := memory.Reserve(context.Background(), memory.Limit())
	if err != nil {
		t.Fatal(err)
	}
	_, stop := b.startRunner(RunnerConfig{Store: b.store, Owner: "runner-memory", Memory: memory}, 0)
	defer stop()
	id := b.queue(small())
	time.Sleep(500 * time.Millisecond) // two of River's polls, 25 of the budget's waits
	if s := b.simulation(id); s.object["status"] != "queued" || s.Attempts != 0 {
		t.Fatalf("started while the memory budget was full: %d attempts, %s", s.Attempts, s.Payload)
	}
	held.Release()
	b.await(id, "completed")
	if r, err := memory.Reserve(context.Background(), memory.Limit()); err != nil {
		t.Fatalf("the finished simulation did not give its memory back: %v", err)
	} else {
		r.Release()
	}
}

// A simulation's chunks are shared by every process working the queue, and the merged result
// is byte for byte the one a single run of the engine gives (the object as GET returns it,
// rebuilt from cascade.Analyze with the stored completion time). Three processes over their
// own stores on one database; the log says which process stored each chunk.
func TestChunksAcrossProcessesGiveOneRunsBytes(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]func(*testing.T) *bundle{"sqlite": setup, "postgres": setupPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			in := chain(1000, 100000, 11)
			id := b.queue(in)
			for i := range 3 {
				st := b.store
				if i > 0 {
					st = &simulationtest.Watch{Store: b.open()}
				}
				b.startRunner(RunnerConfig{Store: st, Owner: fmt.Sprintf("process-%d", i+1)}, 1)
			}
			// 100,000 runs over 1,000 nodes took 16.9 s under the race detector alone and
			// more than 20 s beside the package's other tests on a slow machine.
			done := b.awaitWithin(id, "completed", 90*time.Second)
			res, err := cascade.Analyze(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			want := NewObject(done.Simulation, store.SimulationRunning, in)
			completed, err := time.Parse(time.RFC3339Nano, done.object["completed_at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			want.Complete(res, completed)
			payload, _, err := want.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(payload) != string(done.Payload) {
				t.Fatalf("merged result differs from one run of the engine:\n got %.300s\nwant %.300s", done.Payload, payload)
			}
			if n := b.completionEvents(); n != 1 {
				t.Fatalf("%d events, want 1", n)
			}
		})
	}
}

// A plan this process no longer uses gives its memory reservation back: not while it was used
// a moment ago, and once it has been idle for planIdle (its simulation ended elsewhere, or this
// process has no more of its chunks).
func TestIdlePlansGiveTheirMemoryBack(t *testing.T) {
	t.Parallel()
	memory := admission.NewMemory(64<<20, 20*time.Millisecond)
	p := newPlans(memory)
	_, release, err := p.get(context.Background(), "csm_a", small())
	if err != nil {
		t.Fatal(err)
	}
	release()
	whole := func() bool {
		r, err := memory.Reserve(context.Background(), memory.Limit())
		if err != nil {
			return false
		}
		r.Release()
		return true
	}
	p.expire(time.Now())
	if whole() {
		t.Fatal("a plan used a moment ago gave its memory back (or reserved none)")
	}
	p.expire(time.Now().Add(planIdle + time.Second))
	if !whole() {
		t.Fatal("an idle plan still holds its memory")
	}
}
