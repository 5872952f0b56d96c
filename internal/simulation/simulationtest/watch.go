// Package simulationtest lets tests wait for the background simulation runner's steps
// instead of sleeping: Watch wraps the store the runner uses and signals each of its calls.
// Only tests import it.
package simulationtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"riskapi/internal/store"
)

// Watch passes every call on to the store, and tells waiting tests when the
// background simulation runner has claimed, or failed to claim, a simulation or written one,
// so that they wait for its next step rather than polling on a timer.
type Watch struct {
	store.Store
	mu          sync.Mutex
	changed     chan struct{}  // closed, and replaced, after every runner call
	emptyClaims map[string]int // claims that found nothing due, by owner
}

func (w *Watch) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// next returns a channel closed after the runner's next call; take it before checking.
func (w *Watch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

// EmptyClaimsBy returns how many of owner's claims found nothing due.
func (w *Watch) EmptyClaimsBy(owner string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.emptyClaims[owner]
}

// WaitFor checks cond now and after each of the runner's calls until it holds; it fails the
// test with what after timeout.
func (w *Watch) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		next := w.next()
		if cond() {
			return
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

func (w *Watch) ClaimSimulation(ctx context.Context, owner string, lease time.Duration, now time.Time) (store.Simulation, error) {
	sim, err := w.Store.ClaimSimulation(ctx, owner, lease, now)
	if errors.Is(err, store.ErrNotFound) {
		w.mu.Lock()
		if w.emptyClaims == nil {
			w.emptyClaims = map[string]int{}
		}
		w.emptyClaims[owner]++
		w.mu.Unlock()
	}
	w.notify()
	return sim, err
}

func (w *Watch) UpdateSimulation(ctx context.Context, id, owner string, payload []byte, until, now time.Time) error {
	defer w.notify()
	return w.Store.UpdateSimulation(ctx, id, owner, payload, until, now)
}

func (w *Watch) FinishSimulation(ctx context.Context, id, owner, status string, payload, summary []byte, ev *store.Event, now time.Time) error {
	defer w.notify()
	return w.Store.FinishSimulation(ctx, id, owner, status, payload, summary, ev, now)
}

func (w *Watch) ReleaseSimulation(ctx context.Context, id, owner string, payload []byte, now time.Time) error {
	defer w.notify()
	return w.Store.ReleaseSimulation(ctx, id, owner, payload, now)
}

// Start runs run (a Runner's Run) in the background for the test and returns its stop
// function, which cancels run's context and waits for it to return — after the runner has
// handed back what it holds. The test's cleanup stops it too.
func Start(t testing.TB, run func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { run(ctx) })
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}
