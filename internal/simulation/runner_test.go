package simulation

import (
	"context"
	"strings"
	"testing"
	"time"

	"riskapi/cascade"
	"riskapi/internal/store"
)

// A simulation left running by a process that died is resumed once its lease expires; one
// interrupted too often is failed with the reason, not left running.
func TestInterruptedSimulations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	queue := func() string { return b.queue(chain(5, 50, 3)) }
	resumed := queue()
	// A process claims it and dies (never renews): the lease keeps others off until it expires.
	if _, err := b.store.ClaimSimulation(ctx, "dead-process", lease, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	stop := b.runner("runner-2")
	b.store.WaitFor(t, 5*time.Second, "runner-2 looking for work", func() bool { return b.store.EmptyClaimsBy("runner-2") > 0 })
	// runner-2 has looked for work and left the leased row alone: one attempt (the dead
	// process's), and the object still says queued, since the dead process never wrote
	// "running" to the payload.
	if s := b.simulation(resumed); s.Attempts != 1 || s.object["status"] != "queued" {
		t.Fatalf("while the dead process's lease holds: %d attempts, status %v; want 1, queued: runner-2 must not claim it", s.Attempts, s.object["status"])
	}
	b.clock.Advance(lease + time.Second)
	done := b.await(resumed, "completed")
	if done.Attempts != 2 || done.object["failure_reason"] != nil {
		t.Fatalf("resumed simulation: attempts %d, %s", done.Attempts, done.Payload)
	}

	stop()
	doomed := queue()
	for range maxAttempts {
		b.clock.Advance(lease + time.Second)
		for {
			sim, err := b.store.ClaimSimulation(ctx, "crashing-process", lease, b.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if sim.ID == doomed {
				break
			}
		}
	}
	b.clock.Advance(lease + time.Second)
	b.runner("runner-3")
	failed := b.await(doomed, "failed")
	if reason, _ := failed.object["failure_reason"].(string); !strings.Contains(reason, "interrupted") {
		t.Fatalf("failure_reason = %q", reason)
	}
	if n := b.completionEvents(); n != 2 {
		t.Fatalf("%v events, want 2 (the failed one finishes too)", n)
	}
}

// A runner stopped mid-simulation (shutdown) hands it back to the queue at once, without
// counting the attempt; the next runner completes it.
func TestShutdownHandsSimulationBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one := 1
	id := b.queue(chain(400, 100000, 9, cascade.ScenarioSpec{Type: "random_node", Count: &one}))
	stop := b.runner("runner-a")
	b.await(id, "running")
	stop()
	sim := b.simulation(id)
	if sim.Status != store.SimulationQueued || sim.Attempts != 0 {
		t.Fatalf("after shutdown: %+v; want queued with 0 attempts", sim.Status)
	}
	b.runner("runner-b")
	b.await(id, "completed")
}
