package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

func mustHandOff(t *testing.T, s store.Store, owner, id string, o store.AttemptOutcome, h store.HandOff) (store.Delivery, *store.ClaimedDelivery) {
	t.Helper()
	d, next, err := s.RecordAttemptAndHandOff(context.Background(), owner, id, o, h)
	if err != nil {
		t.Fatalf("RecordAttemptAndHandOff(%s, %s): %v", owner, id, err)
	}
	return d, next
}

// testHandOff: recording an outcome with a hand-off records it as RecordAttempt does and
// leases the endpoint's oldest due free delivery to the same owner, with what a claim returns;
// the endpoint's leases stay at the cap, so no claim gets more. Nothing is handed on when the
// endpoint has nothing due, when the attempt disabled it, or when the released lease has
// less than MinLeft to run; a lost lease hands nothing on.
func testHandOff(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, kindDrift))
	other := newEndpoint(acct, store.ModeLive, kindCascade)
	other.CreatedAt = t0.Add(time.Second)
	mustCreateEndpoint(t, s, other)
	ds := fanOut(t, s, ep, 12, t0)
	// The other endpoint's delivery is due before any of ep's that are not yet claimed: the
	// hand-off still stays on ep.
	mustCreateEvent(t, s, newEvent(acct, store.ModeLive, kindCascade, t0.Add(-time.Second)))
	now := t0.Add(time.Second)
	h := store.HandOff{Lease: lease, MinLeft: time.Second}

	first := mustClaim(t, s, claimPolicy("d1", 9, 8), now)
	var mine []store.ClaimedDelivery
	for _, c := range first {
		if c.EndpointID == ep.ID {
			mine = append(mine, c)
		}
	}
	if got, want := claimedIDs(mine), deliveryIDs(ds[:8]); !slices.Equal(got, want) {
		t.Fatalf("claim got %v of the endpoint, want %v", got, want)
	}

	// A success hands the lease on to the ninth, which comes with what a claim gives.
	got, next := mustHandOff(t, s, "d1", ds[0].ID, store.AttemptOutcome{At: now, StatusCode: 200, Succeeded: true}, h)
	if got.Status != store.DeliverySucceeded || got.Attempts != 1 || got.CompletedAt == nil {
		t.Errorf("recorded delivery: status %s, attempts %d, completed %v; want succeeded, 1, set", got.Status, got.Attempts, got.CompletedAt)
	}
	if next == nil || next.ID != ds[8].ID {
		t.Fatalf("handed on %v, want %s", next, ds[8].ID)
	}
	if next.EndpointID != ep.ID || next.URL != ep.URL || next.Secret != ep.Secret || len(next.Payload) == 0 || next.Status != store.DeliveryPending {
		t.Errorf("handed-on delivery %+v lacks what a claim returns (URL %q, the secret, the payload)", next.Delivery, ep.URL)
	}
	if cs := mustClaim(t, s, claimPolicy("d2", 100, 8), now); len(cs) != 0 {
		t.Fatalf("claim after a hand-off got %v; the endpoint still holds 8 leases", claimedIDs(cs))
	}
	// A success recorded by a hand-off is the endpoint's last success, as RecordAttempt's is.
	if e := mustEndpoint(t, s, ep); e.LastSuccessAt == nil || !e.LastSuccessAt.Equal(now) {
		t.Errorf("endpoint's LastSuccessAt after a hand-off's success = %v, want %s", e.LastSuccessAt, now)
	}
	// No such delivery: the lease is lost, the delivery not found.
	if _, _, err := s.RecordAttemptAndHandOff(ctx, "d1", "dlv_missing", store.AttemptOutcome{At: now, Succeeded: true}, h); !errors.Is(err, store.ErrLeaseLost) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("hand-off of a delivery that does not exist: %v, want ErrLeaseLost and ErrNotFound", err)
	}
	// The handed-on lease is d1's: d2 cannot record it.
	if _, _, err := s.RecordAttemptAndHandOff(ctx, "d2", ds[8].ID, store.AttemptOutcome{At: now, Succeeded: true}, h); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("hand-off by an owner that does not hold the lease: error = %v, want ErrLeaseLost", err)
	}

	// A failure with a retry scheduled hands on the next due one, not itself.
	retryAt := now.Add(time.Minute)
	got, next = mustHandOff(t, s, "d1", ds[8].ID, store.AttemptOutcome{At: now, StatusCode: 500, Error: "HTTP 500", NextAttemptAt: &retryAt}, h)
	if got.Status != store.DeliveryPending || got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(retryAt) {
		t.Errorf("failed attempt: status %s, next attempt %v; want pending at %s", got.Status, got.NextAttemptAt, retryAt)
	}
	if next == nil || next.ID != ds[9].ID {
		t.Fatalf("after a failure handed on %v, want %s", next, ds[9].ID)
	}

	// A released lease with less than MinLeft to run is not passed on, and the slot is
	// free for a claim.
	short := store.HandOff{Lease: lease, MinLeft: lease}
	if _, next = mustHandOff(t, s, "d1", ds[9].ID, store.AttemptOutcome{At: now.Add(time.Second), StatusCode: 204, Succeeded: true}, short); next != nil {
		t.Fatalf("handed on %s from a lease with less than MinLeft left", next.ID)
	}
	cs := mustClaim(t, s, claimPolicy("d2", 100, 8), now.Add(time.Second))
	if len(cs) != 1 || cs[0].ID != ds[10].ID {
		t.Fatalf("claim after a lease was released without a hand-off got %v, want %s", claimedIDs(cs), ds[10].ID)
	}

	// The last due one goes; then nothing is left to hand on (ds[8] is due in a minute).
	_, next = mustHandOff(t, s, "d1", ds[1].ID, store.AttemptOutcome{At: now, StatusCode: 200, Succeeded: true}, h)
	if next == nil || next.ID != ds[11].ID {
		t.Fatalf("handed on %v, want the last due %s", next, ds[11].ID)
	}
	if _, next = mustHandOff(t, s, "d1", ds[2].ID, store.AttemptOutcome{At: now, StatusCode: 200, Succeeded: true}, h); next != nil {
		t.Fatalf("handed on %s with nothing due", next.ID)
	}

	// 410 Gone disables the endpoint: its retry, due by then, is not handed on.
	later := retryAt.Add(time.Second)
	if _, next = mustHandOff(t, s, "d1", ds[3].ID, store.AttemptOutcome{At: later, StatusCode: 410, Error: "HTTP 410 Gone", DisableEndpoint: store.DisabledGone}, h); next != nil {
		t.Fatalf("handed on %s of an endpoint the attempt disabled", next.ID)
	}
	if e := mustEndpoint(t, s, ep); e.Status != store.EndpointDisabled {
		t.Fatalf("endpoint status %s after 410, want disabled", e.Status)
	}
	if _, next = mustHandOff(t, s, "d1", ds[4].ID, store.AttemptOutcome{At: later, StatusCode: 200, Succeeded: true}, h); next != nil {
		t.Fatalf("handed on %s of a disabled endpoint", next.ID)
	}

	if _, _, err := s.RecordAttemptAndHandOff(ctx, "d1", ds[5].ID, store.AttemptOutcome{At: later, Succeeded: true}, store.HandOff{}); err == nil {
		t.Error("hand-off with no lease: no error")
	}
}

// testHandOffRace: owners that claim under a cap of 8 and record every outcome with a
// hand-off, concurrently, send each of an endpoint's deliveries once and never hold more than
// 8 of its leases at once.
func testHandOffRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	ds := fanOut(t, s, ep, 120, t0)
	now := t0.Add(time.Second)
	h := store.HandOff{Lease: lease, MinLeft: time.Second}

	var (
		mu      sync.Mutex
		held    = map[string]bool{} // leases an owner holds: a subset of the store's
		most    int
		sent    = map[string]int{}
		wg      sync.WaitGroup
		errs    = make([]error, 6)
		takeOne = func(id string) {
			mu.Lock()
			defer mu.Unlock()
			held[id] = true
			sent[id]++
			most = max(most, len(held))
		}
	)
	for i := range errs {
		wg.Go(func() {
			owner := fmt.Sprintf("owner-%d", i)
			for idle := 0; idle < 3; {
				cs, err := s.ClaimDeliveries(ctx, claimPolicy(owner, 2, 8), now)
				if err != nil {
					errs[i] = err
					return
				}
				if len(cs) == 0 {
					idle++
					time.Sleep(time.Millisecond)
					continue
				}
				idle = 0
				for _, c := range cs {
					takeOne(c.ID)
				}
				for _, c := range cs {
					for cur := &c; cur != nil; {
						mu.Lock()
						delete(held, cur.ID)
						mu.Unlock()
						_, next, err := s.RecordAttemptAndHandOff(ctx, owner, cur.ID, store.AttemptOutcome{At: now, StatusCode: 204, Succeeded: true}, h)
						if err != nil {
							errs[i] = err
							return
						}
						if next != nil {
							takeOne(next.ID)
						}
						cur = next
					}
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if most > 8 {
		t.Errorf("owners held %d leases of one endpoint at once, want at most 8", most)
	}
	for _, d := range ds {
		if sent[d.ID] != 1 {
			t.Errorf("delivery %s was handed out %d times, want 1", d.ID, sent[d.ID])
		}
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 0 {
		t.Errorf("%d deliveries pending after the race (%v), want 0", n, err)
	}
}
