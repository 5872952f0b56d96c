package storetest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

var policy = store.IdempotencyPolicy{ReclaimAfter: 5 * time.Minute, ExpireAfter: 24 * time.Hour}

func newIdempotencyKey() store.IdempotencyKey {
	return store.IdempotencyKey{AccountID: ident.New("acct"), Mode: store.ModeLive, Key: ident.Random(20), Fingerprint: "POST /v1/x " + ident.Random(8)}
}

func begin(t *testing.T, s store.Store, k store.IdempotencyKey, now time.Time) (store.IdempotencyState, string, store.StoredResponse) {
	t.Helper()
	state, token, resp, err := s.BeginIdempotent(context.Background(), k, policy, now)
	if err != nil {
		t.Fatalf("BeginIdempotent: %v", err)
	}
	return state, token, resp
}

func testIdempotencyLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	k := newIdempotencyKey()
	state, token, _ := begin(t, s, k, t0)
	if state != store.IdempotencyStarted || token == "" {
		t.Fatalf("first Begin = %v, token %q; want Started with a token", state, token)
	}
	if state, _, _ := begin(t, s, k, t0.Add(time.Second)); state != store.IdempotencyInFlight {
		t.Fatalf("Begin while in flight = %v, want InFlight", state)
	}
	other := k
	other.Fingerprint += "-different-body"
	if state, _, _ := begin(t, s, other, t0.Add(time.Second)); state != store.IdempotencyMismatch {
		t.Fatalf("Begin with another fingerprint while in flight = %v, want Mismatch", state)
	}
	body := []byte(`{"success":true,"data":{"x":1},"metadata":{"request_id":"req_1"}}` + "\x00\xff")
	if err := s.CompleteIdempotent(ctx, k, token, store.StoredResponse{Status: 201, Body: body}, t0.Add(2*time.Second)); err != nil {
		t.Fatalf("CompleteIdempotent: %v", err)
	}
	state, _, resp := begin(t, s, k, t0.Add(time.Hour))
	if state != store.IdempotencyCompleted || resp.Status != 201 || !bytes.Equal(resp.Body, body) {
		t.Fatalf("Begin after completion = %v %d %q; want Completed 201 with the stored body byte for byte", state, resp.Status, resp.Body)
	}
	if state, _, _ := begin(t, s, other, t0.Add(time.Hour)); state != store.IdempotencyMismatch {
		t.Fatalf("Begin with another fingerprint after completion = %v, want Mismatch", state)
	}
	// Completing again with the same token is refused: the record is no longer in flight.
	if err := s.CompleteIdempotent(ctx, k, token, store.StoredResponse{Status: 500}, t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second Complete error = %v, want ErrNotFound", err)
	}

	// Release after a failure: the next attempt starts afresh.
	r := newIdempotencyKey()
	_, rtoken, _ := begin(t, s, r, t0)
	if err := s.ReleaseIdempotent(ctx, r, "not-the-token"); err != nil {
		t.Fatal(err)
	}
	if state, _, _ := begin(t, s, r, t0); state != store.IdempotencyInFlight {
		t.Fatalf("release with a wrong token freed the key: %v", state)
	}
	if err := s.ReleaseIdempotent(ctx, r, rtoken); err != nil {
		t.Fatal(err)
	}
	if state, _, _ := begin(t, s, r, t0.Add(time.Second)); state != store.IdempotencyStarted {
		t.Fatalf("Begin after release = %v, want Started", state)
	}
}

// Keys are scoped to account and mode: the same key elsewhere is a different record.
func testIdempotencyScope(t *testing.T, s store.Store) {
	k := newIdempotencyKey()
	begin(t, s, k, t0)
	otherMode := k
	otherMode.Mode = store.ModeTest
	otherAccount := k
	otherAccount.AccountID = ident.New("acct")
	for _, o := range []store.IdempotencyKey{otherMode, otherAccount} {
		if state, _, _ := begin(t, s, o, t0); state != store.IdempotencyStarted {
			t.Fatalf("same key in %s/%s = %v, want Started", o.AccountID, o.Mode, state)
		}
	}
}

func testIdempotencyReclaimAndExpiry(t *testing.T, s store.Store) {
	ctx := context.Background()
	k := newIdempotencyKey()
	_, dead, _ := begin(t, s, k, t0)
	// Within five minutes the record is still in flight.
	if state, _, _ := begin(t, s, k, t0.Add(4*time.Minute)); state != store.IdempotencyInFlight {
		t.Fatalf("after 4 min: %v, want InFlight", state)
	}
	// A different request cannot reclaim it: that is a mismatch, not a takeover.
	other := k
	other.Fingerprint += "x"
	if state, _, _ := begin(t, s, other, t0.Add(6*time.Minute)); state != store.IdempotencyMismatch {
		t.Fatalf("other request after 6 min: %v, want Mismatch", state)
	}
	state, live, _ := begin(t, s, k, t0.Add(6*time.Minute))
	if state != store.IdempotencyStarted || live == dead {
		t.Fatalf("same request after 6 min: %v (token reused: %v), want Started with a new token", state, live == dead)
	}
	// The dead execution's late completion must not overwrite the reclaimer's.
	if err := s.CompleteIdempotent(ctx, k, dead, store.StoredResponse{Status: 200, Body: []byte("stale")}, t0.Add(7*time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("late Complete of the reclaimed execution: %v, want ErrNotFound", err)
	}
	if err := s.CompleteIdempotent(ctx, k, live, store.StoredResponse{Status: 200, Body: []byte("fresh")}, t0.Add(7*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, resp := begin(t, s, k, t0.Add(8*time.Minute)); string(resp.Body) != "fresh" {
		t.Fatalf("replayed %q, want fresh", resp.Body)
	}
	// After 24 hours the key is forgotten, even for another request.
	if state, _, _ := begin(t, s, other, t0.Add(6*time.Minute+24*time.Hour+time.Second)); state != store.IdempotencyStarted {
		t.Fatalf("after expiry: %v, want Started", state)
	}
}

// testIdempotencyConcurrentBegin: of many concurrent identical requests exactly one starts.
func testIdempotencyConcurrentBegin(t *testing.T, s store.Store) {
	k := newIdempotencyKey()
	const callers = 20
	states := make([]store.IdempotencyState, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			states[i], _, _, errs[i] = s.BeginIdempotent(context.Background(), k, policy, t0)
		})
	}
	wg.Wait()
	started := 0
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		switch states[i] {
		case store.IdempotencyStarted:
			started++
		case store.IdempotencyInFlight:
		default:
			t.Fatalf("caller %d: state %v", i, states[i])
		}
	}
	if started != 1 {
		t.Fatalf("%d of %d concurrent callers started, want exactly 1", started, callers)
	}
}

func testIdempotencyPurge(t *testing.T, s store.Store) {
	ctx := context.Background()
	old, fresh := newIdempotencyKey(), newIdempotencyKey()
	begin(t, s, old, t0)
	begin(t, s, fresh, t0.Add(25*time.Hour))
	n, err := s.PurgeIdempotency(ctx, t0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("PurgeIdempotency = %d, %v; want 1 record", n, err)
	}
	if state, _, _ := begin(t, s, fresh, t0.Add(25*time.Hour)); state != store.IdempotencyInFlight {
		t.Fatalf("purge removed a fresh record: %v", state)
	}
	if state, _, _ := begin(t, s, old, t0.Add(time.Minute)); state != store.IdempotencyStarted {
		t.Fatalf("purged record still there: %v", state)
	}
}
