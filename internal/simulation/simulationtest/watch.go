// Package simulationtest lets tests wait for the background simulation runner's steps
// instead of sleeping: Watch wraps the store the runner uses and signals each of its calls.
// Only tests import it.
package simulationtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"riskapi/internal/ident"
	"riskapi/internal/jobs"
	"riskapi/internal/store"
)

// Watch passes every call on to the store, and tells waiting tests when the background
// simulation workers have written a simulation (started it, stored a chunk, finished it), so
// that they wait for its next step rather than polling on a timer.
type Watch struct {
	store.Store
	mu      sync.Mutex
	changed chan struct{} // closed, and replaced, after every write of the workers
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

// WaitFor checks cond now, after each of the workers' writes through w, and every 100 ms
// (for writes through another process's store) until it holds; it fails the test with what
// after timeout.
func (w *Watch) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		next := w.next()
		if cond() {
			return
		}
		select {
		case <-next:
		case <-ticker.C:
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

func (w *Watch) StartSimulation(ctx context.Context, id string, chunks, window int, payload []byte, now time.Time) (int, error) {
	defer w.notify()
	return w.Store.StartSimulation(ctx, id, chunks, window, payload, now)
}

func (w *Watch) StoreSimulationChunk(ctx context.Context, id string, c int, body []byte, worker string, progress func(done []int) ([]byte, error), now time.Time) error {
	defer w.notify()
	return w.Store.StoreSimulationChunk(ctx, id, c, body, worker, progress, now)
}

func (w *Watch) FinishSimulation(ctx context.Context, id, status string, payload, summary []byte, ev *store.Event, now time.Time) error {
	defer w.notify()
	return w.Store.FinishSimulation(ctx, id, status, payload, summary, ev, now)
}

// Start runs run in the background for the test and returns its stop function, which cancels
// run's context and waits for it to return. The test's cleanup stops it too.
func Start(t testing.TB, run func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { run(ctx) })
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

// StartJobs starts, for the test, a River client on driver that works the jobs register adds
// (a simulation Runner's Register) with concurrency chunk workers and rescueAfter (0: the
// default), and returns its stop function, which cancels the running jobs and waits for them
// to hand their work back, as a shutdown does. The test's cleanup stops it too.
func StartJobs(t testing.TB, driver jobs.Driver, register func(*river.Workers) error, periodic []*river.PeriodicJob, concurrency int, rescueAfter time.Duration) (stop func()) {
	t.Helper()
	workers := river.NewWorkers()
	if err := register(workers); err != nil {
		t.Fatal(err)
	}
	c, err := jobs.NewWorker(driver, jobs.WorkerConfig{Workers: workers, Periodic: periodic, SimulationWorkers: concurrency,
		RescueAfter: rescueAfter, ID: ident.Random(8)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.StopAndCancel(ctx); err != nil {
				t.Errorf("stop jobs: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
