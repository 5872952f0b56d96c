package storetest

import (
	"bytes"
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

// Event kinds of the webhooks spec, and one that differs from kindDrift only where a LIKE
// pattern would see a wildcard ("_" matches any character).
const (
	kindDrift       = "drift.shadow_detected"
	kindConvergence = "convergence.collusion_found"
	kindCascade     = "cascade.simulation_completed"
	kindMeridian    = "meridian.quality_check_failed"
	kindTest        = "webhook.test"
	kindDriftLookal = "drift.shadowXdetected"
)

func newEvent(accountID string, mode store.Mode, kind string, at time.Time) store.Event {
	id := ident.New("evt")
	return store.Event{
		ID:        id,
		AccountID: accountID,
		Mode:      mode,
		Type:      kind,
		Payload:   fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"data":{"object":{"note":"é\u2028"}}}`, id, kind),
		CreatedAt: at,
	}
}

func mustCreateEvent(t *testing.T, s store.Store, ev store.Event) []store.Delivery {
	t.Helper()
	ds, err := s.CreateEvent(context.Background(), ev)
	if err != nil {
		t.Fatalf("CreateEvent(%s): %v", ev.ID, err)
	}
	return ds
}

func checkEvent(t *testing.T, got, want store.Event) {
	t.Helper()
	if got.ID != want.ID || got.AccountID != want.AccountID || got.Mode != want.Mode || got.Type != want.Type {
		t.Errorf("event = %s %s %s %s, want %s %s %s %s", got.ID, got.AccountID, got.Mode, got.Type,
			want.ID, want.AccountID, want.Mode, want.Type)
	}
	if !bytes.Equal(got.Payload, want.Payload) {
		t.Errorf("event %s payload = %q, want %q byte for byte", want.ID, got.Payload, want.Payload)
	}
	if d := sameTime(got.CreatedAt, want.CreatedAt.Truncate(time.Millisecond).UTC()); d != "" {
		t.Errorf("event %s CreatedAt = %s", want.ID, d)
	}
}

// endpointIDs returns the endpoint of each delivery, sorted.
func endpointIDs(ds []store.Delivery) []string {
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.EndpointID)
	}
	slices.Sort(ids)
	return ids
}

func sorted(ids ...string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

// testEventFanOut: an event reaches exactly the enabled endpoints of its account and mode that
// subscribe to its kind or to "*", each with one pending delivery due at once.
func testEventFanOut(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct, other := ident.New("acct"), ident.New("acct")
	drift := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, kindDrift))
	all := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	_ = mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, kindCascade))
	several := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, kindMeridian, kindDrift, kindConvergence))
	disabled := newEndpoint(acct, store.ModeLive, store.AllEvents)
	disabled.Status, disabled.DisabledReason = store.EndpointDisabled, store.DisabledByUser
	_ = mustCreateEndpoint(t, s, disabled)
	_ = mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, store.AllEvents, kindDrift))
	_ = mustCreateEndpoint(t, s, newEndpoint(other, store.ModeLive, store.AllEvents))

	at := time.Date(2025, 3, 14, 16, 9, 26, 535_897_932, time.FixedZone("CET", 3600))
	ev := newEvent(acct, store.ModeLive, kindDrift, at)
	ds := mustCreateEvent(t, s, ev)
	if got, want := endpointIDs(ds), sorted(drift.ID, all.ID, several.ID); !slices.Equal(got, want) {
		t.Fatalf("drift event delivered to %v, want %v (same account and mode, enabled, subscribed)", got, want)
	}
	for _, d := range ds {
		want := store.Delivery{ID: d.ID, EndpointID: d.EndpointID, EventID: ev.ID, EventType: kindDrift,
			AccountID: acct, Mode: store.ModeLive, Status: store.DeliveryPending, NextAttemptAt: ptr(t0), CreatedAt: t0}
		checkDelivery(t, d, want)
		stored, err := s.Delivery(ctx, acct, store.ModeLive, d.EndpointID, d.ID)
		if err != nil {
			t.Fatalf("Delivery(%s): %v", d.ID, err)
		}
		checkDelivery(t, stored, want)
	}

	// Only "*" matches a kind that merely looks like a subscribed one.
	lookalike := mustCreateEvent(t, s, newEvent(acct, store.ModeLive, kindDriftLookal, t0))
	if got, want := endpointIDs(lookalike), []string{all.ID}; !slices.Equal(got, want) {
		t.Errorf("event %q delivered to %v, want only the \"*\" endpoint %v", kindDriftLookal, got, want)
	}
	if got, want := endpointIDs(mustCreateEvent(t, s, newEvent(acct, store.ModeLive, kindConvergence, t0))),
		sorted(all.ID, several.ID); !slices.Equal(got, want) {
		t.Errorf("convergence event delivered to %v, want %v", got, want)
	}
	// An account and mode without endpoints: the event is stored, nothing is delivered.
	lonely := newEvent(ident.New("acct"), store.ModeTest, kindDrift, t0)
	if ds := mustCreateEvent(t, s, lonely); len(ds) != 0 {
		t.Errorf("event of an account without endpoints has %d deliveries, want 0", len(ds))
	}
	if _, err := s.Event(ctx, lonely.AccountID, lonely.Mode, lonely.ID); err != nil {
		t.Errorf("Event(without deliveries): %v", err)
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 3+1+2 {
		t.Errorf("PendingDeliveries = %d, %v; want 6", n, err)
	}
}

// testEventOutboxAtomic: an event and its deliveries commit together. A failed CreateEvent
// leaves no delivery behind, and a reader never sees an event whose deliveries are missing.
func testEventOutboxAtomic(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	e1 := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	e2 := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, kindCascade))

	first := newEvent(acct, store.ModeLive, kindCascade, t0)
	mustCreateEvent(t, s, first)
	again := first
	again.Payload = []byte(`{"a":"different payload"}`)
	if _, err := s.CreateEvent(ctx, again); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateEvent(existing id) error = %v, want ErrConflict", err)
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 2 {
		t.Fatalf("after a refused CreateEvent, PendingDeliveries = %d, %v; want the first event's 2", n, err)
	}
	got, err := s.Event(ctx, acct, store.ModeLive, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkEvent(t, got, first)

	// A writer creates events while a reader checks, many times over, that every event it can
	// see already has both deliveries.
	const events = 150
	done := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() {
		defer close(done)
		for i := range events {
			if _, err := s.CreateEvent(ctx, newEvent(acct, store.ModeLive, kindCascade, t0.Add(time.Duration(i+1)*time.Millisecond))); err != nil {
				writeErr = err
				return
			}
		}
	})
	delivered := func(endpointID string) (map[string]bool, error) {
		ds, err := store.CollectAll(func(q store.PageQuery) (store.Page[store.Delivery], error) {
			return s.ListDeliveries(ctx, acct, store.ModeLive, endpointID, q)
		}, deliveryPosition)
		m := map[string]bool{}
		for _, d := range ds {
			m[d.EventID] = true
		}
		return m, err
	}
	checks := 0
	for stop := false; !stop; checks++ {
		select {
		case <-done:
			stop = true // one last check after the writer finished
		default:
		}
		page, err := s.ListEvents(ctx, acct, store.ModeLive, "", store.PageQuery{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{e1.ID, e2.ID} {
			seen, err := delivered(id)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range page.Items {
				if !seen[ev.ID] {
					t.Fatalf("event %s is visible but its delivery to %s is not", ev.ID, id)
				}
			}
		}
	}
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("CreateEvent: %v", writeErr)
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 2*(events+1) {
		t.Fatalf("PendingDeliveries = %d, %v; want %d", n, err, 2*(events+1))
	}
	t.Logf("%d consistency checks while writing", checks)
}

// testCreateEventFor: the test event goes to the one endpoint named, whatever it subscribes to
// and even when disabled; an endpoint of another account or mode is not found, and then no
// event is stored.
func testCreateEventFor(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	target := newEndpoint(acct, store.ModeTest, kindCascade)
	target.Status, target.DisabledReason = store.EndpointDisabled, store.DisabledGone
	mustCreateEndpoint(t, s, target)
	bystander := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, store.AllEvents))

	ev := newEvent(acct, store.ModeTest, kindTest, t0)
	d, err := s.CreateEventFor(ctx, ev, target.ID, nil)
	if err != nil {
		t.Fatalf("CreateEventFor: %v", err)
	}
	want := store.Delivery{ID: d.ID, EndpointID: target.ID, EventID: ev.ID, EventType: kindTest, AccountID: acct,
		Mode: store.ModeTest, Status: store.DeliveryPending, NextAttemptAt: ptr(t0), CreatedAt: t0}
	checkDelivery(t, d, want)
	stored, err := s.Delivery(ctx, acct, store.ModeTest, target.ID, d.ID)
	if err != nil {
		t.Fatalf("Delivery: %v", err)
	}
	checkDelivery(t, stored, want)
	if page := mustListDeliveries(t, s, acct, store.ModeTest, bystander.ID); len(page) != 0 {
		t.Errorf("the \"*\" endpoint got %d deliveries of an event sent to another endpoint, want 0", len(page))
	}
	got, err := s.Event(ctx, acct, store.ModeTest, ev.ID)
	if err != nil {
		t.Fatalf("Event: %v", err)
	}
	checkEvent(t, got, ev)

	for name, tc := range map[string]struct {
		accountID  string
		mode       store.Mode
		endpointID string
	}{
		"unknown endpoint": {acct, store.ModeTest, ident.New("we")},
		"other mode":       {acct, store.ModeLive, target.ID},
		"other account":    {ident.New("acct"), store.ModeTest, target.ID},
	} {
		ev := newEvent(tc.accountID, tc.mode, kindTest, t0)
		if _, err := s.CreateEventFor(ctx, ev, tc.endpointID, nil); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: CreateEventFor error = %v, want ErrNotFound", name, err)
		}
		if _, err := s.Event(ctx, ev.AccountID, ev.Mode, ev.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the event of a refused CreateEventFor was stored (Event error = %v)", name, err)
		}
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 1 {
		t.Errorf("PendingDeliveries = %d, %v; want 1", n, err)
	}
}

func eventPosition(ev store.Event) store.Position {
	return store.Position{CreatedAt: ev.CreatedAt, ID: ev.ID}
}

// testListEvents pages through an account's events, newest first with ties broken by id,
// with and without a type filter, and sees nothing of another account or mode.
func testListEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	var all, cascades []store.Event
	for i := range 25 {
		kind := kindDrift
		if i%3 == 0 {
			kind = kindCascade
		}
		// Several events share a millisecond, so page boundaries fall inside ties.
		ev := newEvent(acct, store.ModeLive, kind, t0.Add(time.Duration(i/4)*time.Millisecond))
		mustCreateEvent(t, s, ev)
		all = append(all, ev)
		if kind == kindCascade {
			cascades = append(cascades, ev)
		}
	}
	foreign := []store.Event{
		newEvent(acct, store.ModeTest, kindDrift, t0),
		newEvent(acct, store.ModeTest, kindCascade, t0),
		newEvent(ident.New("acct"), store.ModeLive, kindDrift, t0),
	}
	for _, ev := range foreign {
		mustCreateEvent(t, s, ev)
	}
	newestFirst := func(evs []store.Event) []string {
		evs = slices.Clone(evs)
		slices.SortFunc(evs, func(a, b store.Event) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return cmpString(b.ID, a.ID)
		})
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		kind string
		want []store.Event
	}{{"", all}, {kindCascade, cascades}, {kindMeridian, nil}} {
		var got []string
		q := store.PageQuery{Limit: 4}
		for pages := 1; ; pages++ {
			page, err := s.ListEvents(ctx, acct, store.ModeLive, tc.kind, q)
			if err != nil {
				t.Fatalf("ListEvents(%q): %v", tc.kind, err)
			}
			if page.TotalCount != int64(len(tc.want)) {
				t.Fatalf("ListEvents(%q) page %d: total %d, want %d", tc.kind, pages, page.TotalCount, len(tc.want))
			}
			for _, ev := range page.Items {
				got = append(got, ev.ID)
			}
			if !page.HasMore {
				break
			}
			after := eventPosition(page.Items[len(page.Items)-1])
			q.After = &after
		}
		if want := newestFirst(tc.want); !slices.Equal(got, want) {
			t.Errorf("ListEvents(%q) = %v, want %v", tc.kind, got, want)
		}
	}
	got, err := s.Event(ctx, acct, store.ModeLive, all[7].ID)
	if err != nil {
		t.Fatalf("Event: %v", err)
	}
	checkEvent(t, got, all[7])

	for _, ev := range foreign {
		got, err := s.Event(ctx, ev.AccountID, ev.Mode, ev.ID)
		if err != nil {
			t.Fatalf("Event(%s) in its own account and mode: %v", ev.ID, err)
		}
		checkEvent(t, got, ev)
		if _, err := s.Event(ctx, acct, store.ModeLive, ev.ID); ev.AccountID != acct || ev.Mode != store.ModeLive {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Event(%s) of another account or mode: error = %v, want ErrNotFound", ev.ID, err)
			}
		}
	}
	if _, err := s.Event(ctx, acct, store.ModeTest, all[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Event of the live mode read in test mode: error = %v, want ErrNotFound", err)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// testPurgeEvents: old events go with their ended deliveries; an old event with a delivery
// still pending, or with a manual retry outstanding, stays until that ends; recent events stay.
func testPurgeEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, kindDrift))
	old := t0.Add(-31 * 24 * time.Hour)
	cutoff := t0.Add(-30 * 24 * time.Hour)

	succeeded := newEvent(acct, store.ModeLive, kindDrift, old)
	pending := newEvent(acct, store.ModeLive, kindDrift, old.Add(time.Second))
	retried := newEvent(acct, store.ModeLive, kindDrift, old.Add(2*time.Second))
	quiet := newEvent(acct, store.ModeLive, kindCascade, old) // no endpoint subscribes
	atCutoff := newEvent(acct, store.ModeLive, kindDrift, cutoff)
	recent := newEvent(acct, store.ModeLive, kindDrift, t0)
	dSucceeded := mustCreateEvent(t, s, succeeded)[0]
	dPending := mustCreateEvent(t, s, pending)[0]
	dRetried := mustCreateEvent(t, s, retried)[0]
	mustCreateEvent(t, s, quiet)
	mustCreateEvent(t, s, atCutoff)
	mustCreateEvent(t, s, recent)

	// End two deliveries: one succeeds, one fails for good and then gets a manual retry.
	now := old.Add(time.Minute)
	for _, c := range mustClaim(t, s, claimPolicy("dispatcher-1", 10, 0), now) {
		o := store.AttemptOutcome{At: now, StatusCode: 500, Error: "HTTP 500"}
		switch c.ID {
		case dSucceeded.ID:
			o = store.AttemptOutcome{At: now, StatusCode: 204, Succeeded: true}
		case dPending.ID:
			o.NextAttemptAt = ptr(t0.Add(time.Hour))
		}
		mustRecord(t, s, "dispatcher-1", c.ID, o)
	}
	if _, err := s.RequestManualRetry(ctx, acct, store.ModeLive, ep.ID, dRetried.ID, now); err != nil {
		t.Fatal(err)
	}

	n, err := s.PurgeEvents(ctx, cutoff)
	if err != nil {
		t.Fatalf("PurgeEvents: %v", err)
	}
	if n != 2 {
		t.Errorf("PurgeEvents = %d, want 2 (the succeeded one's event and the one without deliveries)", n)
	}
	for _, ev := range []store.Event{succeeded, quiet} {
		if _, err := s.Event(ctx, acct, store.ModeLive, ev.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("old event %s survived the purge (error %v)", ev.Type, err)
		}
	}
	if _, err := s.Delivery(ctx, acct, store.ModeLive, ep.ID, dSucceeded.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the purged event's delivery survived (error %v)", err)
	}
	for _, ev := range []store.Event{pending, retried, atCutoff, recent} {
		if _, err := s.Event(ctx, acct, store.ModeLive, ev.ID); err != nil {
			t.Errorf("event %s at %s was purged: %v", ev.ID, ev.CreatedAt, err)
		}
	}
	for _, id := range []string{dPending.ID, dRetried.ID} {
		if _, err := s.Delivery(ctx, acct, store.ModeLive, ep.ID, id); err != nil {
			t.Errorf("a delivery that has not ended was purged: %v", err)
		}
	}

	// Once the manual retry is done (it fails again), its event goes too.
	now = old.Add(2 * time.Minute)
	claimed := mustClaim(t, s, claimPolicy("dispatcher-2", 10, 0), now)
	if len(claimed) != 1 || claimed[0].ID != dRetried.ID {
		t.Fatalf("claimed %v, want only the manual retry %s", claimedIDs(claimed), dRetried.ID)
	}
	mustRecord(t, s, "dispatcher-2", dRetried.ID, store.AttemptOutcome{At: now, StatusCode: 503, Error: "HTTP 503"})
	if n, err := s.PurgeEvents(ctx, cutoff); err != nil || n != 1 {
		t.Errorf("second PurgeEvents = %d, %v; want 1", n, err)
	}
	if _, err := s.Event(ctx, acct, store.ModeLive, retried.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("event whose manual retry ended survived the purge (error %v)", err)
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 3 {
		t.Errorf("PendingDeliveries = %d, %v; want 3 (pending, at cutoff, recent)", n, err)
	}
}
