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

// idempotentWrites are the writes that can complete an Idempotency-Key in their transaction:
// each stores new objects of acct (test mode) and reports how many objects acct has.
var idempotentWrites = []struct {
	name  string
	write func(ctx context.Context, s store.Store, acct string, done *store.IdempotencyCompletion) error
	count func(ctx context.Context, s store.Store, acct string) (int64, error)
}{
	{"CreateAnalysis", func(ctx context.Context, s store.Store, acct string, done *store.IdempotencyCompletion) error {
		ev := newEvent(acct, store.ModeTest, kindDrift, t0)
		return s.CreateAnalysis(ctx, newAnalysis(acct, store.ModeTest, "drift", "agent_1", t0), &ev, done)
	}, func(ctx context.Context, s store.Store, acct string) (int64, error) {
		p, err := s.ListAnalyses(ctx, acct, store.ModeTest, "drift", "", store.PageQuery{Limit: 1})
		return p.TotalCount, err
	}},
	{"CreateSimulation", func(ctx context.Context, s store.Store, acct string, done *store.IdempotencyCompletion) error {
		ev := newEvent(acct, store.ModeTest, kindDrift, t0)
		return s.CreateSimulation(ctx, newSimulation(acct, store.SimulationCompleted, t0), &ev, done)
	}, countSimulations},
	{"QueueSimulation", func(ctx context.Context, s store.Store, acct string, done *store.IdempotencyCompletion) error {
		return s.QueueSimulation(ctx, newSimulation(acct, store.SimulationQueued, t0), 5, done)
	}, countSimulations},
	{"CreateWebhookEndpoint", func(ctx context.Context, s store.Store, acct string, done *store.IdempotencyCompletion) error {
		return s.CreateWebhookEndpoint(ctx, newEndpoint(acct, store.ModeTest, kindDrift), store.MaxEndpointsPerMode, done)
	}, func(ctx context.Context, s store.Store, acct string) (int64, error) {
		p, err := s.ListWebhookEndpoints(ctx, acct, store.ModeTest, store.PageQuery{Limit: 1})
		return p.TotalCount, err
	}},
	// Events without an id are the ones a second execution would store twice.
	{"AddDriftEvents", func(ctx context.Context, s store.Store, acct string, done *store.IdempotencyCompletion) error {
		events := []store.DriftEvent{{Timestamp: t0, Payload: []byte(`{}`)}, {Timestamp: t0.Add(time.Second), Payload: []byte(`{}`)}}
		_, err := s.AddDriftEvents(ctx, acct, store.ModeTest, "agent_1", events, func(store.DriftEventBatch) (*store.IdempotencyCompletion, error) { return done, nil })
		return err
	}, func(ctx context.Context, s store.Store, acct string) (int64, error) {
		return s.CountDriftEvents(ctx, acct, store.ModeTest, "agent_1")
	}},
	// The endpoint is created first, without the key: the write under test is the event and
	// its delivery.
	{"CreateEventFor", func(ctx context.Context, s store.Store, acct string, done *store.IdempotencyCompletion) error {
		e := newEndpoint(acct, store.ModeTest, kindDrift)
		if err := s.CreateWebhookEndpoint(ctx, e, store.MaxEndpointsPerMode, nil); err != nil {
			return err
		}
		_, err := s.CreateEventFor(ctx, newEvent(acct, store.ModeTest, kindDrift, t0), e.ID, func(store.Delivery) (*store.IdempotencyCompletion, error) { return done, nil })
		return err
	}, func(ctx context.Context, s store.Store, acct string) (int64, error) {
		p, err := s.ListEvents(ctx, acct, store.ModeTest, "", store.PageQuery{Limit: 1})
		return p.TotalCount, err
	}},
}

func countSimulations(ctx context.Context, s store.Store, acct string) (int64, error) {
	p, err := s.ListSimulations(ctx, acct, store.ModeTest, store.PageQuery{Limit: 1})
	return p.TotalCount, err
}

func countEvents(t *testing.T, s store.Store, acct string) int64 {
	t.Helper()
	p, err := s.ListEvents(context.Background(), acct, store.ModeTest, "", store.PageQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p.TotalCount
}

// testIdempotencyCompletedInWrite: a write given the key's completion commits the object and
// the key's answer together. A process that dies right after that commit never calls
// CompleteIdempotent: the retry must find the answer, not an in-flight key. A write whose
// token lost the key stores nothing.
func testIdempotencyCompletedInWrite(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, w := range idempotentWrites {
		t.Run(w.name, func(t *testing.T) {
			acct := ident.New("acct")
			k := newIdempotencyKey()
			k.AccountID, k.Mode = acct, store.ModeTest
			_, token, _ := begin(t, s, k, t0)
			body := []byte(`{"success":true,"data":{"id":"x"},"metadata":{"request_id":"req_1"}}`)
			done := &store.IdempotencyCompletion{Key: k, Token: token, Response: store.StoredResponse{Status: 202, Body: body}, At: t0.Add(time.Second)}
			if err := w.write(ctx, s, acct, done); err != nil {
				t.Fatalf("write with its completion: %v", err)
			}
			// No CompleteIdempotent: the process is gone. The retry replays.
			state, _, resp := begin(t, s, k, t0.Add(2*time.Second))
			if state != store.IdempotencyCompleted || resp.Status != 202 || !bytes.Equal(resp.Body, body) {
				t.Fatalf("retry after the write = %v %d %q; want Completed 202 with the stored body", state, resp.Status, resp.Body)
			}
			// The later completion step, had it run, finds the record already complete.
			if err := s.CompleteIdempotent(ctx, k, token, store.StoredResponse{Status: 200, Body: []byte("late")}, t0.Add(3*time.Second)); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Complete after the write's completion = %v, want ErrNotFound", err)
			}
			if _, _, resp := begin(t, s, k, t0.Add(4*time.Second)); !bytes.Equal(resp.Body, body) {
				t.Fatalf("the late Complete replaced the stored answer with %q", resp.Body)
			}

			// A token that no longer holds the key (a wrong token here, a reclaimed one in
			// production): ErrIdempotencyLost, and neither the object nor its event is stored.
			lost := newIdempotencyKey()
			lost.AccountID, lost.Mode = acct, store.ModeTest
			begin(t, s, lost, t0)
			before, err := w.count(ctx, s, acct)
			if err != nil {
				t.Fatal(err)
			}
			events := countEvents(t, s, acct)
			err = w.write(ctx, s, acct, &store.IdempotencyCompletion{Key: lost, Token: "not-the-token", Response: store.StoredResponse{Status: 200, Body: body}, At: t0})
			if !errors.Is(err, store.ErrIdempotencyLost) {
				t.Fatalf("write with a completion of a lost key = %v, want ErrIdempotencyLost", err)
			}
			after, err := w.count(ctx, s, acct)
			if err != nil {
				t.Fatal(err)
			}
			if after != before || countEvents(t, s, acct) != events {
				t.Fatalf("a write whose completion failed stored its object (%d → %d) or event", before, after)
			}
			if state, _, _ := begin(t, s, lost, t0.Add(time.Second)); state != store.IdempotencyInFlight {
				t.Fatalf("the lost key after the refused write = %v, want still InFlight", state)
			}
		})
	}
}

// testIdempotencyLease: an in-flight record is a lease. Renewed, it stays in flight past the
// lease from its start; once its holder stops renewing, the same request takes it over one
// lease after the last renewal, and the old holder's renewals and completions fail.
func testIdempotencyLease(t *testing.T, s store.Store) {
	ctx := context.Background()
	const lease = 15 * time.Second
	p := store.IdempotencyPolicy{ReclaimAfter: lease, ExpireAfter: 24 * time.Hour}
	beginAt := func(k store.IdempotencyKey, at time.Time) (store.IdempotencyState, string) {
		t.Helper()
		state, token, _, err := s.BeginIdempotent(ctx, k, p, at)
		if err != nil {
			t.Fatalf("BeginIdempotent: %v", err)
		}
		return state, token
	}
	k := newIdempotencyKey()
	_, owner := beginAt(k, t0)
	for _, at := range []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second} {
		if err := s.RenewIdempotent(ctx, k, owner, t0.Add(at)); err != nil {
			t.Fatalf("renew at +%v: %v", at, err)
		}
		if state, _ := beginAt(k, t0.Add(at+lease-time.Millisecond)); state != store.IdempotencyInFlight {
			t.Fatalf("retry just within the lease renewed at +%v = %v, want InFlight", at, state)
		}
	}
	if err := s.RenewIdempotent(ctx, k, "not-the-token", t0.Add(21*time.Second)); !errors.Is(err, store.ErrIdempotencyLost) {
		t.Fatalf("renew with another token = %v, want ErrIdempotencyLost", err)
	}
	// The owner stops renewing at +20 s: the key is free at +35 s.
	if state, _ := beginAt(k, t0.Add(20*time.Second+lease-time.Millisecond)); state != store.IdempotencyInFlight {
		t.Fatalf("retry before the lease ran out = %v, want InFlight", state)
	}
	state, retry := beginAt(k, t0.Add(20*time.Second+lease+time.Millisecond))
	if state != store.IdempotencyStarted || retry == owner {
		t.Fatalf("retry after the lease ran out = %v (same token: %v), want Started with a new token", state, retry == owner)
	}
	if err := s.RenewIdempotent(ctx, k, owner, t0.Add(36*time.Second)); !errors.Is(err, store.ErrIdempotencyLost) {
		t.Fatalf("the old owner's renewal after the takeover = %v, want ErrIdempotencyLost", err)
	}
	if err := s.RenewIdempotent(ctx, k, retry, t0.Add(36*time.Second)); err != nil {
		t.Fatalf("the new owner's renewal: %v", err)
	}
	if err := s.CompleteIdempotent(ctx, k, retry, store.StoredResponse{Status: 200, Body: []byte("once")}, t0.Add(37*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A completed record is not in flight: renewing it fails, and it is never reclaimed.
	if err := s.RenewIdempotent(ctx, k, retry, t0.Add(38*time.Second)); !errors.Is(err, store.ErrIdempotencyLost) {
		t.Fatalf("renewing a completed record = %v, want ErrIdempotencyLost", err)
	}
	if state, _ := beginAt(k, t0.Add(time.Hour)); state != store.IdempotencyCompleted {
		t.Fatalf("an hour after completion = %v, want Completed", state)
	}
}
