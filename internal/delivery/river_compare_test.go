package delivery

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"riskapi/internal/store"
	"riskapi/webhook"
)

// These tests hold the River-based delivery (river_delivery_test.go) to what the dispatcher
// guarantees, so that BenchmarkDispatchRiver measures a peer that does the same work: a signed
// attempt retried on the schedule, the per-endpoint cap across processes, each delivery sent
// once when nothing fails.

// forEachRiverStore runs test against SQLite and, when RISKAPI_TEST_POSTGRES_URL is set,
// PostgreSQL, with the store's location for River's pools.
func forEachRiverStore(t *testing.T, test func(t *testing.T, st riverStore, s store.Store, where string)) {
	for _, st := range riverStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			s, where := st.open(t)
			test(t, st, s, where)
		})
	}
}

// startRiver runs a River-based delivery process on a pool of its own until the test ends.
// cfg.Dispatcher is made from dcfg by the harness (loopback client, the harness's store).
func (h *harness) startRiver(rdb riverDB, dcfg DispatcherConfig, cfg riverDeliveryConfig) *river.Client[*sql.Tx] {
	h.t.Helper()
	cfg.Dispatcher = h.newDispatcher(dcfg)
	client := newRiverDelivery(h.t, rdb, cfg)
	if err := client.Start(context.Background()); err != nil {
		h.t.Fatalf("start River client: %v", err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.Stop(ctx); err != nil {
			h.t.Errorf("stop River client: %v", err)
		}
	})
	return client
}

// deliverInTwoProcesses creates n deliveries to e, delivers them with two River processes of
// 16 workers each (pools of their own, perEndpoint their cap) and returns them once ended.
func (h *harness) deliverInTwoProcesses(st riverStore, where string, e store.WebhookEndpoint, n, perEndpoint int) []store.Delivery {
	h.t.Helper()
	deliveries := make([]store.Delivery, n)
	for i := range deliveries {
		_, deliveries[i] = h.eventTo(e)
	}
	var client *river.Client[*sql.Tx]
	for range 2 {
		client = h.startRiver(st.pool(h.t, where), DispatcherConfig{}, riverDeliveryConfig{Workers: 16, PerEndpoint: perEndpoint})
	}
	enqueueDeliveries(h.t, client, deliveries)
	for i, d := range deliveries {
		deliveries[i] = h.waitEnded(e.ID, d.ID, 30*time.Second)
	}
	return deliveries
}

func TestRiverDeliveryRetriesSignedAttemptOnSchedule(t *testing.T) {
	t.Parallel()
	forEachRiverStore(t, func(t *testing.T, st riverStore, s store.Store, where string) {
		h := newHarness(t, s)
		rc := failingReceiver(t, 1, http.StatusInternalServerError)
		e := h.endpoint(rc.URL)
		ev, d := h.eventTo(e)
		rdb := st.pool(t, where)
		client := h.startRiver(rdb, DispatcherConfig{Schedule: mustSchedule(t, "200ms")}, riverDeliveryConfig{Workers: 4, PerEndpoint: MaxPerEndpoint})
		enqueueDeliveries(t, client, []store.Delivery{d})

		got := h.waitEnded(e.ID, d.ID, 20*time.Second)
		if got.Status != store.DeliverySucceeded || got.Attempts != 2 || got.LastStatusCode != http.StatusOK {
			t.Fatalf("delivery = %+v, want succeeded at the second attempt", got)
		}
		requests := rc.received()
		if len(requests) != 2 {
			t.Fatalf("receiver saw %d requests, want 2", len(requests))
		}
		for i, r := range requests {
			if err := webhook.Verify(r.body, r.header, e.Secret); err != nil || string(r.body) != string(ev.Payload) {
				t.Errorf("request %d: signature %v, body sent verbatim %t", i+1, err, string(r.body) == string(ev.Payload))
			}
		}
		if gap := requests[1].at.Sub(requests[0].at); gap < 200*time.Millisecond {
			t.Errorf("retry %s after the failed attempt; the schedule says 200ms", gap)
		}
	})
}

// TestRiverDeliveryCapAcrossProcesses runs two River processes of 16 workers each on one
// endpoint's 40 deliveries: the counted lease holds them to 8 requests at once together, and
// every delivery is sent exactly once.
func TestRiverDeliveryCapAcrossProcesses(t *testing.T) {
	t.Parallel()
	forEachRiverStore(t, func(t *testing.T, st riverStore, s store.Store, where string) {
		h := newHarness(t, s)
		rc := slowReceiver(t, 30*time.Millisecond)
		for _, got := range h.deliverInTwoProcesses(st, where, h.endpoint(rc.URL), 40, MaxPerEndpoint) {
			if got.Status != store.DeliverySucceeded || got.Attempts != 1 {
				t.Fatalf("delivery %s = %+v, want succeeded at the first attempt", got.ID, got)
			}
		}
		seen := make(map[string]int)
		for _, r := range rc.received() {
			seen[r.header.Get(webhook.HeaderEventID)]++
		}
		if n := rc.count.Load(); n != 40 || len(seen) != 40 {
			t.Errorf("receiver saw %d requests for %d distinct events, want 40 of 40", n, len(seen))
		}
		if most := rc.maxCurrent.Load(); most > MaxPerEndpoint {
			t.Errorf("%d requests at once to one endpoint; the cap is %d", most, MaxPerEndpoint)
		}
	})
}

// TestRiverAloneExceedsTheCap shows why the River worker counts leases: River's open-source
// queue limits workers per process and queue only, so two processes of 16 workers send an
// endpoint more than 8 requests at once. The receiver holds every request until a ninth
// arrives together with eight others (or 10 s pass).
func TestRiverAloneExceedsTheCap(t *testing.T) {
	t.Parallel()
	forEachRiverStore(t, func(t *testing.T, st riverStore, s store.Store, where string) {
		h := newHarness(t, s)
		over := make(chan struct{})
		var rc *receiver
		rc = newReceiver(t, func(ctx context.Context, _ int64, w http.ResponseWriter, _ *http.Request) {
			if rc.current.Load() > MaxPerEndpoint {
				select {
				case <-over:
				default:
					close(over)
				}
			}
			select {
			case <-over:
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
			}
			w.WriteHeader(http.StatusOK)
		})
		h.deliverInTwoProcesses(st, where, h.endpoint(rc.URL), 20, 0)
		if most := rc.maxCurrent.Load(); most <= MaxPerEndpoint {
			t.Errorf("at most %d requests at once without the counted lease; want more than %d", most, MaxPerEndpoint)
		}
	})
}
