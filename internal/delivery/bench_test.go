package delivery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/store"
)

// BenchmarkDispatch measures delivery throughput end to end on the embedded SQLite store
// (and on PostgreSQL when RISKAPI_TEST_POSTGRES_URL is set):
// b.N events, created with CreateEvent beforehand (untimed), each with one delivery, are
// claimed, POSTed to a loopback receiver that answers 204, and recorded. The timer runs from
// Run's start until the store has no pending delivery left. endpoints=1 is one busy
// endpoint, held to 8 requests at once by the per-endpoint cap, so every claim takes at
// most 8; endpoints=8 spreads the events over 8 accounts with one endpoint each, so that
// every worker can be busy. workers=32 is the default, compared with larger pools.
//
//	go test -run '^$' -bench Dispatch -benchtime 5000x ./internal/delivery/
func BenchmarkDispatch(b *testing.B) {
	stores := []struct {
		name string
		open func(testing.TB) store.Store
	}{{"sqlite", openSQLite}, {"postgres", openPostgres}}
	for _, st := range stores {
		for _, endpoints := range []int{1, 8} {
			for _, workers := range []int{32, 64, 128} {
				b.Run(fmt.Sprintf("store=%s/endpoints=%d/workers=%d", st.name, endpoints, workers), func(b *testing.B) {
					benchmarkDispatch(b, st.open(b), endpoints, workers)
				})
			}
		}
	}
}

func benchmarkDispatch(b *testing.B, s store.Store, endpoints, workers int) {
	run := newDispatchRun(b, s, endpoints)
	d, err := NewDispatcher(DispatcherConfig{Store: run.watched, Workers: workers, Client: Targets{AllowPrivate: true}.Client(10 * time.Second)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	b.ResetTimer()
	started := time.Now()
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	run.watched.waitFor(b, 10*time.Minute, "every outcome recorded", func() bool {
		_, recorded := run.watched.counts()
		return recorded >= b.N
	})
	elapsed := time.Since(started)
	b.StopTimer()
	cancel()
	<-done
	run.finish(b, elapsed)
}

// dispatchRun is the setting of one dispatch benchmark: a loopback receiver that answers 204,
// and b.N events created beforehand (untimed), each with one delivery, spread over endpoints
// accounts with one endpoint each.
type dispatchRun struct {
	store    store.Store
	watched  *watchedStore // the store, telling when the last outcome is in
	received atomic.Int64
	// deliveries are the deliveries created, in order.
	deliveries []store.Delivery
}

func newDispatchRun(b *testing.B, s store.Store, endpoints int) *dispatchRun {
	run := &dispatchRun{store: s, watched: &watchedStore{Store: s}}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run.received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(server.Close)

	harnesses := make([]*harness, endpoints)
	for i := range harnesses {
		harnesses[i] = newHarness(b, s)
		harnesses[i].endpoint(server.URL)
	}
	for i := range b.N {
		_, deliveries := harnesses[i%endpoints].event("drift.shadow_detected")
		if len(deliveries) != 1 {
			b.Fatalf("CreateEvent made %d deliveries, want 1", len(deliveries))
		}
		run.deliveries = append(run.deliveries, deliveries[0])
	}
	return run
}

// finish fails the benchmark unless the receiver got one request per event and no delivery
// is left pending, and reports the throughput of a run that took elapsed.
func (run *dispatchRun) finish(b *testing.B, elapsed time.Duration) {
	if n := run.received.Load(); n != int64(b.N) {
		b.Fatalf("receiver got %d requests for %d events", n, b.N)
	}
	if pending, err := run.store.PendingDeliveries(context.Background()); err != nil || pending != 0 {
		b.Fatalf("%d deliveries pending after every outcome was recorded (%v)", pending, err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}
