package delivery

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
)

// BenchmarkDispatchRiver is BenchmarkDispatch's peer: the same b.N events and deliveries on
// the same stores, the same loopback receiver, 32 workers, delivered by River instead of the
// dispatcher (riverDeliveryWorker; one job per delivery, inserted before the timer starts).
// The timer runs from the client's Start until River has completed every job, each after its
// outcome was recorded. cap=8 enforces the per-endpoint cap across processes as River would
// have to, by a counted lease and a snooze; cap=none leaves it out, which breaks the
// contract at endpoints=1 and shows what the cap costs.
//
//	go test -run '^$' -bench Dispatch -benchtime 5000x ./internal/delivery/
func BenchmarkDispatchRiver(b *testing.B) {
	for _, st := range riverStores {
		for _, endpoints := range []int{1, 8} {
			for _, perEndpoint := range []int{MaxPerEndpoint, 0} {
				capName := "none"
				if perEndpoint > 0 {
					capName = fmt.Sprint(perEndpoint)
				}
				b.Run(fmt.Sprintf("store=%s/endpoints=%d/workers=32/cap=%s", st.name, endpoints, capName), func(b *testing.B) {
					s, where := st.open(b)
					benchmarkDispatchRiver(b, newDispatchRun(b, s, endpoints), st.pool(b, where), perEndpoint)
				})
			}
		}
	}
}

func benchmarkDispatchRiver(b *testing.B, run *dispatchRun, rdb riverDB, perEndpoint int) {
	d, err := NewDispatcher(DispatcherConfig{Store: run.watched, Client: Targets{AllowPrivate: true}.Client(10 * time.Second)})
	if err != nil {
		b.Fatal(err)
	}
	client := newRiverDelivery(b, rdb, riverDeliveryConfig{Dispatcher: d, Workers: defaultWorkers, PerEndpoint: perEndpoint})
	enqueueDeliveries(b, client, run.deliveries)
	// Completion events are sent once River has stored the completion; the channel holds
	// them all, since River drops the events a full channel cannot take.
	completed, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: b.N, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer unsubscribe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	b.ResetTimer()
	started := time.Now()
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	deadline := time.NewTimer(10 * time.Minute)
	defer deadline.Stop()
	for n := 0; n < b.N; n++ {
		select {
		case <-completed:
		case <-deadline.C:
			b.Fatalf("River completed %d of %d jobs within 10 minutes", n, b.N)
		}
	}
	elapsed := time.Since(started)
	b.StopTimer()
	if err := client.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	run.finish(b, elapsed)
}
