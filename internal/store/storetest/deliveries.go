package storetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// lease is how long the suite's claims last.
const lease = time.Minute

func claimPolicy(owner string, limit, perEndpoint int) store.ClaimPolicy {
	return store.ClaimPolicy{Owner: owner, Lease: lease, Limit: limit, PerEndpoint: perEndpoint}
}

func mustClaim(t *testing.T, s store.Store, p store.ClaimPolicy, now time.Time) []store.ClaimedDelivery {
	t.Helper()
	cs, err := s.ClaimDeliveries(context.Background(), p, now)
	if err != nil {
		t.Fatalf("ClaimDeliveries(%s at %s): %v", p.Owner, now.Format(time.RFC3339Nano), err)
	}
	return cs
}

func mustRecord(t *testing.T, s store.Store, owner, id string, o store.AttemptOutcome) store.Delivery {
	t.Helper()
	d, err := s.RecordAttempt(context.Background(), owner, id, o)
	if err != nil {
		t.Fatalf("RecordAttempt(%s, %s): %v", owner, id, err)
	}
	return d
}

func claimedIDs(cs []store.ClaimedDelivery) []string {
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func deliveryIDs(ds []store.Delivery) []string {
	ids := make([]string, 0, len(ds))
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

// fanOut creates n events of one kind in the endpoint's account and mode, the i-th at
// at + i ms, and returns the deliveries to that endpoint, oldest first.
func fanOut(t *testing.T, s store.Store, e store.WebhookEndpoint, n int, at time.Time) []store.Delivery {
	t.Helper()
	var out []store.Delivery
	for i := range n {
		for _, d := range mustCreateEvent(t, s, newEvent(e.AccountID, e.Mode, kindDrift, at.Add(time.Duration(i)*time.Millisecond))) {
			if d.EndpointID == e.ID {
				out = append(out, d)
			}
		}
	}
	if len(out) != n {
		t.Fatalf("fan-out to %s made %d deliveries, want %d", e.ID, len(out), n)
	}
	return out
}

// testClaimDue: only due deliveries are claimed, oldest due first, with what the dispatcher
// sends; a leased delivery is not claimed again until its lease expires.
func testClaimDue(t *testing.T, s store.Store) {
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	early := newEvent(acct, store.ModeLive, kindDrift, t0)
	middle := newEvent(acct, store.ModeLive, kindCascade, t0.Add(time.Second))
	future := newEvent(acct, store.ModeLive, kindDrift, t0.Add(time.Hour))
	dEarly := mustCreateEvent(t, s, early)[0]
	dMiddle := mustCreateEvent(t, s, middle)[0]
	mustCreateEvent(t, s, future)

	if cs := mustClaim(t, s, claimPolicy("d1", 10, 0), t0.Add(-time.Millisecond)); len(cs) != 0 {
		t.Fatalf("claim before anything is due got %v", claimedIDs(cs))
	}
	now := t0.Add(time.Second) // the middle delivery is due exactly now
	cs := mustClaim(t, s, claimPolicy("d1", 1, 0), now)
	if len(cs) != 1 || cs[0].ID != dEarly.ID {
		t.Fatalf("claim of 1 got %v, want the oldest due %s", claimedIDs(cs), dEarly.ID)
	}
	c := cs[0]
	checkDelivery(t, c.Delivery, dEarly)
	if !bytes.Equal(c.Payload, early.Payload) || c.URL != ep.URL || c.Secret != ep.Secret {
		t.Errorf("claimed delivery carries payload %q, url %q, secret %q; want %q, %q, %q",
			c.Payload, c.URL, c.Secret, early.Payload, ep.URL, ep.Secret)
	}
	cs = mustClaim(t, s, claimPolicy("d2", 10, 0), now)
	if len(cs) != 1 || cs[0].ID != dMiddle.ID {
		t.Fatalf("second claim got %v, want only %s (the first is leased, the third not due)", claimedIDs(cs), dMiddle.ID)
	}
	if !bytes.Equal(cs[0].Payload, middle.Payload) {
		t.Errorf("payload %q, want %q", cs[0].Payload, middle.Payload)
	}
	if cs := mustClaim(t, s, claimPolicy("d3", 10, 0), now.Add(lease-time.Millisecond)); len(cs) != 0 {
		t.Fatalf("claim while both leases run got %v", claimedIDs(cs))
	}
	// Both leases run until now+lease; a lease that has reached its end is free.
	cs = mustClaim(t, s, claimPolicy("d3", 10, 0), now.Add(lease))
	if got, want := claimedIDs(cs), []string{dEarly.ID, dMiddle.ID}; !slices.Equal(got, want) {
		t.Fatalf("claim after the leases expired got %v, want %v, oldest first", got, want)
	}
	if n, err := s.PendingDeliveries(context.Background()); err != nil || n != 3 {
		t.Errorf("PendingDeliveries = %d, %v; want 3 (leased deliveries are pending)", n, err)
	}
}

// testClaimPerEndpointCap: one endpoint never holds more than PerEndpoint unexpired leases,
// counting those of earlier claims; other endpoints are not held back by it.
func testClaimPerEndpointCap(t *testing.T, s store.Store) {
	acct := ident.New("acct")
	slow := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, kindDrift))
	fast := newEndpoint(acct, store.ModeLive, kindCascade)
	fast.CreatedAt = t0.Add(time.Second)
	mustCreateEndpoint(t, s, fast)
	slowDs := fanOut(t, s, slow, 20, t0)
	for i := range 3 {
		mustCreateEvent(t, s, newEvent(acct, store.ModeLive, kindCascade, t0.Add(time.Duration(100+i)*time.Millisecond)))
	}

	now := t0.Add(time.Second)
	count := func(cs []store.ClaimedDelivery) (nSlow, nFast int) {
		for _, c := range cs {
			if c.EndpointID == slow.ID {
				nSlow++
			} else {
				nFast++
			}
		}
		return nSlow, nFast
	}
	first := mustClaim(t, s, claimPolicy("d1", 100, 8), now)
	if nSlow, nFast := count(first); nSlow != 8 || nFast != 3 {
		t.Fatalf("first claim: %d of the slow endpoint, %d of the other; want 8 and 3", nSlow, nFast)
	}
	// The slow endpoint's 8 are the oldest 8.
	var gotSlow []string
	for _, c := range first {
		if c.EndpointID == slow.ID {
			gotSlow = append(gotSlow, c.ID)
		}
	}
	if want := deliveryIDs(slowDs[:8]); !slices.Equal(gotSlow, want) {
		t.Errorf("slow endpoint's claimed deliveries %v, want the oldest 8 %v in order", gotSlow, want)
	}
	if cs := mustClaim(t, s, claimPolicy("d2", 100, 8), now); len(cs) != 0 {
		t.Fatalf("second claim got %d deliveries while the endpoint holds 8 leases, want 0", len(cs))
	}
	mustRecord(t, s, "d1", first[0].ID, store.AttemptOutcome{At: now, StatusCode: 200, Succeeded: true})
	cs := mustClaim(t, s, claimPolicy("d2", 100, 8), now)
	if len(cs) != 1 || cs[0].ID != slowDs[8].ID {
		t.Fatalf("claim after one attempt was recorded got %v, want the next one %s", claimedIDs(cs), slowDs[8].ID)
	}
	// When the leases expire, the next 8 may go.
	cs = mustClaim(t, s, claimPolicy("d3", 100, 8), now.Add(lease))
	if nSlow, _ := count(cs); nSlow != 8 {
		t.Fatalf("claim after the leases expired got %d of the slow endpoint, want 8", nSlow)
	}
	// A cap of 3 with 8 unexpired leases gives nothing, and a limit bounds the claim.
	if cs := mustClaim(t, s, claimPolicy("d4", 100, 3), now.Add(lease)); len(cs) != 0 {
		t.Fatalf("claim with a cap below the leases held got %v", claimedIDs(cs))
	}
	if cs := mustClaim(t, s, claimPolicy("d4", 2, 0), now.Add(2*lease)); len(cs) != 2 {
		t.Fatalf("claim with limit 2 got %d deliveries", len(cs))
	}
}

// testClaimDisabledEndpoint: a disabled endpoint's deliveries wait, but a manual retry of one
// is sent all the same; re-enabling releases the rest.
func testClaimDisabledEndpoint(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, store.AllEvents))
	ds := fanOut(t, s, ep, 3, t0)
	disabled := ep
	disabled.Status, disabled.DisabledReason, disabled.UpdatedAt = store.EndpointDisabled, store.DisabledByUser, t0
	if err := s.UpdateWebhookEndpoint(ctx, disabled); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	if cs := mustClaim(t, s, claimPolicy("d1", 10, 0), now); len(cs) != 0 {
		t.Fatalf("claimed %v of a disabled endpoint", claimedIDs(cs))
	}
	d, err := s.RequestManualRetry(ctx, acct, store.ModeTest, ep.ID, ds[1].ID, now)
	if err != nil {
		t.Fatalf("RequestManualRetry: %v", err)
	}
	want := ds[1]
	want.ManualRetry = true
	checkDelivery(t, d, want)
	cs := mustClaim(t, s, claimPolicy("d1", 10, 0), now)
	if len(cs) != 1 || cs[0].ID != ds[1].ID || !cs[0].ManualRetry || cs[0].URL != ep.URL {
		t.Fatalf("claim after a manual retry got %v, want only %s with ManualRetry and the endpoint's URL", claimedIDs(cs), ds[1].ID)
	}
	enabled := ep
	enabled.UpdatedAt = now
	if err := s.UpdateWebhookEndpoint(ctx, enabled); err != nil {
		t.Fatal(err)
	}
	cs = mustClaim(t, s, claimPolicy("d1", 10, 0), now)
	if got, want := claimedIDs(cs), []string{ds[0].ID, ds[2].ID}; !slices.Equal(got, want) {
		t.Fatalf("claim after re-enabling got %v, want %v", got, want)
	}
}

// testClaimConcurrent: 8 goroutines claiming from one store get disjoint sets that together
// hold every due delivery.
func testClaimConcurrent(t *testing.T, s store.Store) {
	ClaimRace(t, 8, s)
}

// ClaimRace has claimers claim 200 due deliveries (of 4 endpoints) concurrently, 7 at a time
// until none is left, and checks that no delivery was handed out twice and none was missed;
// then it has them claim once each from an endpoint with 50 due deliveries under a cap of 8,
// and checks that exactly 8 were handed out in all. stores are used round-robin, so passing
// two stores opened on one database checks that processes, not only goroutines, exclude
// each other.
func ClaimRace(t *testing.T, claimers int, stores ...store.Store) {
	t.Helper()
	ctx := context.Background()
	acct := ident.New("acct")
	var all []string
	var endpoints []store.WebhookEndpoint
	for range 4 {
		endpoints = append(endpoints, mustCreateEndpoint(t, stores[0], newEndpoint(acct, store.ModeLive, store.AllEvents)))
	}
	for i := range 50 {
		for _, d := range mustCreateEvent(t, stores[0], newEvent(acct, store.ModeLive, kindDrift, t0.Add(time.Duration(i)*time.Millisecond))) {
			all = append(all, d.ID)
		}
	}
	if len(all) != 200 {
		t.Fatalf("made %d deliveries, want 200", len(all))
	}
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Go(func() { _, _ = stores[i%len(stores)].PendingDeliveries(ctx) })
	}
	wg.Wait()

	now := t0.Add(time.Second)
	got := make([][]string, claimers)
	errs := make([]error, claimers)
	start := make(chan struct{})
	for i := range claimers {
		wg.Go(func() {
			<-start
			owner := "dispatcher-" + string(rune('a'+i))
			for {
				cs, err := stores[i%len(stores)].ClaimDeliveries(ctx, claimPolicy(owner, 7, 0), now)
				if err != nil {
					errs[i] = err
					return
				}
				if len(cs) == 0 {
					return
				}
				got[i] = append(got[i], claimedIDs(cs)...)
			}
		})
	}
	close(start)
	wg.Wait()
	seen := map[string]int{}
	for i := range claimers {
		if errs[i] != nil {
			t.Fatalf("claimer %d: %v", i, errs[i])
		}
		for _, id := range got[i] {
			if j, dup := seen[id]; dup {
				t.Fatalf("delivery %s claimed by claimers %d and %d", id, j, i)
			}
			seen[id] = i
		}
	}
	for _, id := range all {
		if _, ok := seen[id]; !ok {
			t.Errorf("delivery %s was never claimed", id)
		}
	}
	if len(seen) != len(all) {
		t.Errorf("claimed %d deliveries, want %d", len(seen), len(all))
	}

	// The per-endpoint cap holds across concurrent claimers too.
	slow := mustCreateEndpoint(t, stores[0], newEndpoint(ident.New("acct"), store.ModeTest, kindCascade))
	for i := range 50 {
		mustCreateEvent(t, stores[0], newEvent(slow.AccountID, store.ModeTest, kindCascade, t0.Add(time.Duration(i)*time.Millisecond)))
	}
	counts := make([]int, claimers)
	start = make(chan struct{})
	for i := range claimers {
		wg.Go(func() {
			<-start
			cs, err := stores[i%len(stores)].ClaimDeliveries(ctx, claimPolicy("capped-"+string(rune('a'+i)), 50, 8), now)
			counts[i], errs[i] = len(cs), err
		})
	}
	close(start)
	wg.Wait()
	total := 0
	for i := range claimers {
		if errs[i] != nil {
			t.Fatalf("capped claimer %d: %v", i, errs[i])
		}
		total += counts[i]
	}
	if total != 8 {
		t.Errorf("%d concurrent claims with a cap of 8 per endpoint handed out %d deliveries of one endpoint, want 8 (per claimer: %v)", claimers, total, counts)
	}
}

// testRecordAttemptOutcomes walks deliveries through success, a failure with a retry
// scheduled, and a failure that ends the schedule, and checks each stored result.
func testRecordAttemptOutcomes(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	ds := fanOut(t, s, ep, 3, t0)
	ok, retried, exhausted := ds[0], ds[1], ds[2]
	now := t0.Add(time.Second)
	if cs := mustClaim(t, s, claimPolicy("d1", 10, 0), now); len(cs) != 3 {
		t.Fatalf("claimed %d, want 3", len(cs))
	}

	got := mustRecord(t, s, "d1", ok.ID, store.AttemptOutcome{At: now, StatusCode: 204, Succeeded: true,
		NextAttemptAt: ptr(now.Add(time.Hour))}) // ignored on success
	want := ok
	want.Status, want.Attempts, want.LastStatusCode, want.NextAttemptAt, want.CompletedAt = store.DeliverySucceeded, 1, 204, nil, ptr(now)
	checkDelivery(t, got, want)
	if stored, err := s.Delivery(ctx, acct, store.ModeLive, ep.ID, ok.ID); err != nil {
		t.Fatal(err)
	} else {
		checkDelivery(t, stored, want)
	}
	if e := mustEndpoint(t, s, ep); e.LastSuccessAt == nil || !e.LastSuccessAt.Equal(now) || e.Status != store.EndpointEnabled {
		t.Errorf("endpoint after a success: LastSuccessAt %v, status %s; want %s, enabled", e.LastSuccessAt, e.Status, now)
	}

	next := now.Add(5 * time.Second)
	got = mustRecord(t, s, "d1", retried.ID, store.AttemptOutcome{At: now, StatusCode: 500, Error: "HTTP 500 Internal Server Error", NextAttemptAt: &next})
	want = retried
	want.Attempts, want.LastStatusCode, want.LastError, want.NextAttemptAt = 1, 500, "HTTP 500 Internal Server Error", &next
	checkDelivery(t, got, want)

	got = mustRecord(t, s, "d1", exhausted.ID, store.AttemptOutcome{At: now, Error: "dial tcp: connection refused"})
	want = exhausted
	want.Status, want.Attempts, want.LastError, want.NextAttemptAt, want.CompletedAt = store.DeliveryFailed, 1, "dial tcp: connection refused", nil, ptr(now)
	checkDelivery(t, got, want)

	// Leases are released: the retry is claimable at its time, not before, by anyone; the
	// ended deliveries never again.
	if cs := mustClaim(t, s, claimPolicy("d2", 10, 0), next.Add(-time.Millisecond)); len(cs) != 0 {
		t.Fatalf("claimed %v before the retry was due", claimedIDs(cs))
	}
	cs := mustClaim(t, s, claimPolicy("d2", 10, 0), next)
	if len(cs) != 1 || cs[0].ID != retried.ID || cs[0].Attempts != 1 {
		t.Fatalf("claim at the retry time got %v, want %s with 1 attempt", claimedIDs(cs), retried.ID)
	}
	got = mustRecord(t, s, "d2", retried.ID, store.AttemptOutcome{At: next, StatusCode: 200, Succeeded: true})
	if got.Status != store.DeliverySucceeded || got.Attempts != 2 || got.LastError != "" || got.NextAttemptAt != nil {
		t.Errorf("after the retry succeeded: status %s, attempts %d, last error %q, next %v", got.Status, got.Attempts, got.LastError, got.NextAttemptAt)
	}
	// The last success is kept to within a minute: 5 s later it is not rewritten.
	if e := mustEndpoint(t, s, ep); e.LastSuccessAt == nil || !e.LastSuccessAt.Equal(now) {
		t.Errorf("LastSuccessAt = %v after a success 5 s after the last, want it kept at %s", e.LastSuccessAt, now)
	}
	// A success reported late never moves the last success back.
	if _, err := s.RequestManualRetry(ctx, acct, store.ModeLive, ep.ID, ok.ID, next); err != nil {
		t.Fatal(err)
	}
	if cs := mustClaim(t, s, claimPolicy("d3", 10, 0), next); len(cs) != 1 {
		t.Fatalf("claimed %d, want the manual retry", len(cs))
	}
	mustRecord(t, s, "d3", ok.ID, store.AttemptOutcome{At: now.Add(-time.Second), StatusCode: 200, Succeeded: true})
	if e := mustEndpoint(t, s, ep); e.LastSuccessAt == nil || !e.LastSuccessAt.Equal(now) {
		t.Errorf("LastSuccessAt = %v after an older success, want it kept at %s", e.LastSuccessAt, now)
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 0 {
		t.Errorf("PendingDeliveries = %d, %v; want 0", n, err)
	}
}

// testLastSuccessAt: a success sets the endpoint's LastSuccessAt when it has none or the one
// it has is more than a minute older; a success within that minute, or reported late, leaves
// it alone.
func testLastSuccessAt(t *testing.T, s store.Store) {
	ep := mustCreateEndpoint(t, s, newEndpoint(ident.New("acct"), store.ModeLive, store.AllEvents))
	ds := fanOut(t, s, ep, 5, t0)
	now := t0.Add(time.Second)
	mustClaim(t, s, claimPolicy("d1", 10, 0), now)
	steps := []struct {
		at, want time.Time
	}{
		{now, now}, // none yet
		{now.Add(59 * time.Second), now},
		{now.Add(time.Minute), now}, // exactly a minute: kept
		{now.Add(time.Minute + time.Millisecond), now.Add(time.Minute + time.Millisecond)}, // more: written
		{now.Add(30 * time.Second), now.Add(time.Minute + time.Millisecond)},               // late: never back
	}
	for i, step := range steps {
		mustRecord(t, s, "d1", ds[i].ID, store.AttemptOutcome{At: step.at, StatusCode: 200, Succeeded: true})
		if e := mustEndpoint(t, s, ep); e.LastSuccessAt == nil || !e.LastSuccessAt.Equal(step.want) {
			t.Errorf("after a success at %s: LastSuccessAt = %v, want %s", step.at.Format(time.RFC3339Nano), e.LastSuccessAt, step.want)
		}
	}
}

// testManualRetry: a manual retry adds one attempt to a delivery whatever its status; its
// failure leaves status, schedule and completion as they were; its success ends the delivery.
func testManualRetry(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, store.AllEvents))
	ds := fanOut(t, s, ep, 2, t0)
	failed, pending := ds[0], ds[1]
	now := t0.Add(time.Second)
	mustClaim(t, s, claimPolicy("d1", 10, 0), now)
	failedState := mustRecord(t, s, "d1", failed.ID, store.AttemptOutcome{At: now, StatusCode: 404, Error: "HTTP 404"})
	later := now.Add(time.Hour)
	pendingState := mustRecord(t, s, "d1", pending.ID, store.AttemptOutcome{At: now, StatusCode: 502, Error: "HTTP 502", NextAttemptAt: &later})

	retryAt := now.Add(time.Minute)
	for _, before := range []store.Delivery{failedState, pendingState} {
		d, err := s.RequestManualRetry(ctx, acct, store.ModeTest, ep.ID, before.ID, retryAt)
		if err != nil {
			t.Fatalf("RequestManualRetry: %v", err)
		}
		want := before
		want.ManualRetry = true
		checkDelivery(t, d, want)
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 2 {
		t.Errorf("PendingDeliveries = %d, %v; want 2 (a failed delivery with a manual retry has not ended)", n, err)
	}
	cs := mustClaim(t, s, claimPolicy("d2", 10, 0), retryAt)
	if got, want := claimedIDs(cs), []string{failed.ID, pending.ID}; !slices.Equal(sorted(got...), sorted(want...)) {
		t.Fatalf("claim after manual retries got %v, want %v", got, want)
	}
	for _, before := range []store.Delivery{failedState, pendingState} {
		// NextAttemptAt is ignored for a manual attempt.
		got := mustRecord(t, s, "d2", before.ID, store.AttemptOutcome{At: retryAt, StatusCode: 500, Error: "HTTP 500",
			NextAttemptAt: ptr(retryAt.Add(5 * time.Second))})
		want := before
		want.Attempts, want.LastStatusCode, want.LastError = 2, 500, "HTTP 500"
		checkDelivery(t, got, want)
	}
	if cs := mustClaim(t, s, claimPolicy("d3", 10, 0), later.Add(-time.Millisecond)); len(cs) != 0 {
		t.Fatalf("claimed %v after the manual attempts failed, want nothing before %s", claimedIDs(cs), later)
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 1 {
		t.Errorf("PendingDeliveries = %d, %v; want 1", n, err)
	}

	// A manual success turns a failed delivery into a succeeded one.
	if _, err := s.RequestManualRetry(ctx, acct, store.ModeTest, ep.ID, failed.ID, later); err != nil {
		t.Fatal(err)
	}
	cs = mustClaim(t, s, claimPolicy("d3", 1, 0), later.Add(-time.Second))
	if len(cs) != 1 || cs[0].ID != failed.ID {
		t.Fatalf("claim got %v, want %s", claimedIDs(cs), failed.ID)
	}
	got := mustRecord(t, s, "d3", failed.ID, store.AttemptOutcome{At: later, StatusCode: 200, Succeeded: true})
	want := failedState
	want.Status, want.Attempts, want.LastStatusCode, want.LastError, want.CompletedAt = store.DeliverySucceeded, 3, 200, "", &later
	checkDelivery(t, got, want)
}

// testManualRetryDuringAttempt: a manual retry asked for while an automatic attempt is in
// flight is not used up by that attempt: it is claimed once the attempt is recorded.
func testManualRetryDuringAttempt(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	d := fanOut(t, s, ep, 1, t0)[0]
	now := t0.Add(time.Second)
	mustClaim(t, s, claimPolicy("d1", 10, 0), now)
	if _, err := s.RequestManualRetry(ctx, acct, store.ModeLive, ep.ID, d.ID, now); err != nil {
		t.Fatal(err)
	}
	next := now.Add(time.Hour)
	got := mustRecord(t, s, "d1", d.ID, store.AttemptOutcome{At: now, StatusCode: 500, Error: "HTTP 500", NextAttemptAt: &next})
	if got.Status != store.DeliveryPending || !got.ManualRetry || got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(next) {
		t.Fatalf("after the automatic attempt: status %s, ManualRetry %v, next %v; want pending, true, %s", got.Status, got.ManualRetry, got.NextAttemptAt, next)
	}
	cs := mustClaim(t, s, claimPolicy("d2", 10, 0), now)
	if len(cs) != 1 || cs[0].ID != d.ID {
		t.Fatalf("claim got %v, want the manual retry of %s", claimedIDs(cs), d.ID)
	}
	// Asked again while the manual attempt runs: one more attempt follows.
	if _, err := s.RequestManualRetry(ctx, acct, store.ModeLive, ep.ID, d.ID, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got = mustRecord(t, s, "d2", d.ID, store.AttemptOutcome{At: now.Add(2 * time.Second), StatusCode: 500, Error: "HTTP 500"})
	if !got.ManualRetry || got.Attempts != 2 || got.Status != store.DeliveryPending {
		t.Fatalf("after the first manual attempt: ManualRetry %v, attempts %d, status %s; want true, 2, pending", got.ManualRetry, got.Attempts, got.Status)
	}
	if cs := mustClaim(t, s, claimPolicy("d2", 10, 0), now.Add(3*time.Second)); len(cs) != 1 {
		t.Fatalf("claim got %d deliveries, want the second manual retry", len(cs))
	}
	got = mustRecord(t, s, "d2", d.ID, store.AttemptOutcome{At: now.Add(4 * time.Second), StatusCode: 500, Error: "HTTP 500"})
	if got.ManualRetry || got.Attempts != 3 {
		t.Fatalf("after the second manual attempt: ManualRetry %v, attempts %d; want false, 3", got.ManualRetry, got.Attempts)
	}
}

// testRecordAttemptGone: a 410 disables the endpoint with reason "gone" at once, and its
// remaining deliveries wait.
func testRecordAttemptGone(t *testing.T, s store.Store) {
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	ds := fanOut(t, s, ep, 3, t0)
	now := t0.Add(time.Second)
	mustClaim(t, s, claimPolicy("d1", 1, 0), now)
	got := mustRecord(t, s, "d1", ds[0].ID, store.AttemptOutcome{At: now, StatusCode: 410, Error: "HTTP 410 Gone",
		DisableEndpoint: store.DisabledGone})
	if got.Status != store.DeliveryFailed || got.CompletedAt == nil {
		t.Errorf("delivery answered 410: status %s, completed %v; want failed, completed", got.Status, got.CompletedAt)
	}
	want := ep
	want.Status, want.DisabledReason, want.UpdatedAt = store.EndpointDisabled, store.DisabledGone, now
	checkEndpoint(t, mustEndpoint(t, s, ep), want)
	if cs := mustClaim(t, s, claimPolicy("d1", 10, 0), now.Add(time.Hour)); len(cs) != 0 {
		t.Errorf("claimed %v of an endpoint disabled by a 410", claimedIDs(cs))
	}
}

// testAutoDisable: an endpoint is disabled as failing when a delivery ends failed, it has had
// no success for AutoDisableAfter, and at least AutoDisableFailures deliveries failed since
// its last success; not otherwise.
func testAutoDisable(t *testing.T, s store.Store) {
	const (
		after    = 5 * 24 * time.Hour
		failures = 10
	)
	acct := ident.New("acct")
	// failAll claims every due delivery of e at now and records each as exhausted.
	failAll := func(e store.WebhookEndpoint, n int, now time.Time) store.Delivery {
		t.Helper()
		fanOut(t, s, e, n, now.Add(-time.Minute))
		var last store.Delivery
		for _, c := range mustClaim(t, s, claimPolicy("d1", 100, 0), now) {
			last = mustRecord(t, s, "d1", c.ID, store.AttemptOutcome{At: now, StatusCode: 500, Error: "HTTP 500",
				AutoDisableAfter: after, AutoDisableFailures: failures})
		}
		return last
	}
	status := func(e store.WebhookEndpoint) (string, string) {
		got := mustEndpoint(t, s, e)
		return got.Status, got.DisabledReason
	}

	// Never succeeded, created 6 days ago: 9 failures are not enough, the 10th disables.
	never := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, kindDrift))
	day6 := t0.Add(6 * 24 * time.Hour)
	failAll(never, 9, day6)
	if st, _ := status(never); st != store.EndpointEnabled {
		t.Fatalf("after 9 failures: %s, want enabled", st)
	}
	failAll(never, 1, day6.Add(time.Hour))
	if st, reason := status(never); st != store.EndpointDisabled || reason != store.DisabledFailing {
		t.Fatalf("after 10 failures and no success for 6 days: %s (%q), want disabled (failing)", st, reason)
	}

	// Young endpoint: 12 failures within its first 5 days keep it enabled.
	young := newEndpoint(acct, store.ModeLive, kindCascade)
	young.CreatedAt = day6.Add(-4 * 24 * time.Hour)
	mustCreateEndpoint(t, s, young)
	for i := range 12 {
		mustCreateEvent(t, s, newEvent(acct, store.ModeLive, kindCascade, day6.Add(time.Duration(i)*time.Millisecond)))
	}
	for _, c := range mustClaim(t, s, claimPolicy("d1", 100, 0), day6.Add(time.Second)) {
		mustRecord(t, s, "d1", c.ID, store.AttemptOutcome{At: day6.Add(time.Second), StatusCode: 500, Error: "HTTP 500",
			AutoDisableAfter: after, AutoDisableFailures: failures})
	}
	if st, _ := status(young); st != store.EndpointEnabled {
		t.Fatalf("endpoint 4 days old with 12 failures: %s, want enabled", st)
	}

	// Failures before the last success do not count: 10 failures, then a success, then
	// 6 days later one more failure.
	recovered := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, store.AllEvents))
	failAll(recovered, 10, t0.Add(time.Hour)) // too young to be disabled yet
	fanOut(t, s, recovered, 1, t0.Add(2*time.Hour))
	for _, c := range mustClaim(t, s, claimPolicy("d1", 100, 0), t0.Add(2*time.Hour)) {
		mustRecord(t, s, "d1", c.ID, store.AttemptOutcome{At: t0.Add(2 * time.Hour), StatusCode: 200, Succeeded: true})
	}
	failAll(recovered, 9, day6)
	if st, _ := status(recovered); st != store.EndpointEnabled {
		t.Fatalf("9 failures since the last success (19 in all): %s, want enabled", st)
	}
	// A failure that does not end the delivery (a retry is scheduled) never disables.
	fanOut(t, s, recovered, 1, day6)
	for _, c := range mustClaim(t, s, claimPolicy("d1", 100, 0), day6.Add(time.Second)) {
		mustRecord(t, s, "d1", c.ID, store.AttemptOutcome{At: day6.Add(time.Second), StatusCode: 500, Error: "HTTP 500",
			NextAttemptAt: ptr(day6.Add(time.Hour)), AutoDisableAfter: after, AutoDisableFailures: failures})
	}
	if st, _ := status(recovered); st != store.EndpointEnabled {
		t.Fatalf("after a failure with a retry scheduled: %s, want enabled", st)
	}
	failAll(recovered, 1, day6.Add(2*time.Hour)) // the 10th since the success; the retry is claimed too
	if st, reason := status(recovered); st != store.EndpointDisabled || reason != store.DisabledFailing {
		t.Fatalf("10 failures since a success 6 days ago: %s (%q), want disabled (failing)", st, reason)
	}

	// Zero values turn the rule off; and an endpoint disabled by its user keeps that reason.
	off := mustCreateEndpoint(t, s, newEndpoint(ident.New("acct"), store.ModeLive, kindDrift))
	fanOut(t, s, off, 12, day6)
	for _, c := range mustClaim(t, s, claimPolicy("d1", 100, 0), day6.Add(time.Second)) {
		mustRecord(t, s, "d1", c.ID, store.AttemptOutcome{At: day6.Add(time.Second), StatusCode: 500, Error: "HTTP 500"})
	}
	if st, _ := status(off); st != store.EndpointEnabled {
		t.Fatalf("with the rule off: %s, want enabled", st)
	}
}

// testLeaseLost: once another dispatcher has claimed a delivery whose lease expired, the first
// one's outcome is refused and changes nothing; an owner that holds no lease is refused too.
func testLeaseLost(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	ds := fanOut(t, s, ep, 2, t0)
	now := t0.Add(time.Second)
	mustClaim(t, s, claimPolicy("d1", 10, 0), now)

	// Slightly late, but nobody claimed it meanwhile: the outcome counts.
	late := now.Add(lease + time.Second)
	got := mustRecord(t, s, "d1", ds[1].ID, store.AttemptOutcome{At: late, StatusCode: 200, Succeeded: true})
	if got.Status != store.DeliverySucceeded {
		t.Fatalf("late outcome of an unclaimed lease: status %s, want succeeded", got.Status)
	}

	cs := mustClaim(t, s, claimPolicy("d2", 10, 0), late)
	if len(cs) != 1 || cs[0].ID != ds[0].ID {
		t.Fatalf("claim after the lease expired got %v, want %s", claimedIDs(cs), ds[0].ID)
	}
	_, err := s.RecordAttempt(ctx, "d1", ds[0].ID, store.AttemptOutcome{At: late, StatusCode: 200, Succeeded: true})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("RecordAttempt by the previous owner: error = %v, want ErrLeaseLost", err)
	}
	stored, err := s.Delivery(ctx, acct, store.ModeLive, ep.ID, ds[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	checkDelivery(t, stored, ds[0])
	if _, err := s.RecordAttempt(ctx, "stranger", ds[0].ID, store.AttemptOutcome{At: late, Succeeded: true}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RecordAttempt by an owner that never claimed: error = %v, want ErrLeaseLost", err)
	}
	mustRecord(t, s, "d2", ds[0].ID, store.AttemptOutcome{At: late, StatusCode: 500, Error: "HTTP 500", NextAttemptAt: ptr(late.Add(time.Minute))})
	if _, err := s.RecordAttempt(ctx, "d2", ds[0].ID, store.AttemptOutcome{At: late, Succeeded: true}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("second RecordAttempt of one lease: error = %v, want ErrLeaseLost (the lease was released)", err)
	}
	if _, err := s.RecordAttempt(ctx, "d2", ident.New("dlv"), store.AttemptOutcome{At: late, Succeeded: true}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RecordAttempt of an unknown delivery: error = %v, want ErrLeaseLost", err)
	}
}

// testClaimPolicyBounds: a claim with no owner or no lease is refused; a limit of 0 claims
// nothing.
func testClaimPolicyBounds(t *testing.T, s store.Store) {
	ctx := context.Background()
	ep := mustCreateEndpoint(t, s, newEndpoint(ident.New("acct"), store.ModeLive, store.AllEvents))
	fanOut(t, s, ep, 2, t0)
	now := t0.Add(time.Second)
	if _, err := s.ClaimDeliveries(ctx, store.ClaimPolicy{Lease: lease, Limit: 10}, now); err == nil {
		t.Error("ClaimDeliveries without an owner succeeded")
	}
	if _, err := s.ClaimDeliveries(ctx, store.ClaimPolicy{Owner: "d1", Limit: 10}, now); err == nil {
		t.Error("ClaimDeliveries without a lease succeeded")
	}
	if cs := mustClaim(t, s, claimPolicy("d1", 0, 0), now); len(cs) != 0 {
		t.Errorf("limit 0 claimed %d", len(cs))
	}
	if cs := mustClaim(t, s, claimPolicy("d1", 10, 0), now); len(cs) != 2 {
		t.Errorf("claim after refused claims got %d, want 2 (nothing was leased by them)", len(cs))
	}
}
