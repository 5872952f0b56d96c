package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

func newEndpoint(accountID string, mode store.Mode, events ...string) store.WebhookEndpoint {
	return store.WebhookEndpoint{
		ID:        ident.New("we"),
		AccountID: accountID,
		Mode:      mode,
		URL:       "https://hooks.lovelace.example/riskapi/" + ident.Random(8),
		Events:    events,
		Secret:    "whsec_" + ident.Random(32),
		Status:    store.EndpointEnabled,
		CreatedAt: t0,
		UpdatedAt: t0,
	}
}

// mustCreateEndpoint creates e under the service's limit and returns it.
func mustCreateEndpoint(t *testing.T, s store.Store, e store.WebhookEndpoint) store.WebhookEndpoint {
	t.Helper()
	if err := s.CreateWebhookEndpoint(context.Background(), e, store.MaxEndpointsPerMode, nil); err != nil {
		t.Fatalf("CreateWebhookEndpoint(%s): %v", e.ID, err)
	}
	return e
}

func mustEndpoint(t *testing.T, s store.Store, e store.WebhookEndpoint) store.WebhookEndpoint {
	t.Helper()
	got, err := s.WebhookEndpoint(context.Background(), e.AccountID, e.Mode, e.ID)
	if err != nil {
		t.Fatalf("WebhookEndpoint(%s): %v", e.ID, err)
	}
	return got
}

func checkEndpoint(t *testing.T, got, want store.WebhookEndpoint) {
	t.Helper()
	var diffs fieldDiffs
	diffs.field("ID", got.ID, want.ID)
	diffs.field("AccountID", got.AccountID, want.AccountID)
	diffs.field("Mode", got.Mode, want.Mode)
	diffs.field("URL", got.URL, want.URL)
	if !slices.Equal(got.Events, want.Events) {
		diffs = append(diffs, fmt.Sprintf("Events = %#v, want %#v", got.Events, want.Events))
	}
	diffs.field("Secret", got.Secret, want.Secret)
	diffs.field("Description", got.Description, want.Description)
	diffs.field("Status", got.Status, want.Status)
	diffs.field("DisabledReason", got.DisabledReason, want.DisabledReason)
	if d := sameTime(got.CreatedAt, want.CreatedAt); d != "" {
		diffs = append(diffs, "CreatedAt = "+d)
	}
	if d := sameTime(got.UpdatedAt, want.UpdatedAt); d != "" {
		diffs = append(diffs, "UpdatedAt = "+d)
	}
	if d := sameOptionalTime(got.LastSuccessAt, want.LastSuccessAt); d != "" {
		diffs = append(diffs, "LastSuccessAt = "+d)
	}
	if len(diffs) > 0 {
		t.Errorf("webhook endpoint %s:\n\t%s", want.ID, strings.Join(diffs, "\n\t"))
	}
}

func checkDelivery(t *testing.T, got, want store.Delivery) {
	t.Helper()
	var diffs fieldDiffs
	diffs.field("ID", got.ID, want.ID)
	diffs.field("EndpointID", got.EndpointID, want.EndpointID)
	diffs.field("EventID", got.EventID, want.EventID)
	diffs.field("EventType", got.EventType, want.EventType)
	diffs.field("AccountID", got.AccountID, want.AccountID)
	diffs.field("Mode", got.Mode, want.Mode)
	diffs.field("Status", got.Status, want.Status)
	diffs.field("Attempts", got.Attempts, want.Attempts)
	diffs.field("LastStatusCode", got.LastStatusCode, want.LastStatusCode)
	diffs.field("LastError", got.LastError, want.LastError)
	diffs.field("ManualRetry", got.ManualRetry, want.ManualRetry)
	if d := sameOptionalTime(got.NextAttemptAt, want.NextAttemptAt); d != "" {
		diffs = append(diffs, "NextAttemptAt = "+d)
	}
	if d := sameTime(got.CreatedAt, want.CreatedAt); d != "" {
		diffs = append(diffs, "CreatedAt = "+d)
	}
	if d := sameOptionalTime(got.CompletedAt, want.CompletedAt); d != "" {
		diffs = append(diffs, "CompletedAt = "+d)
	}
	if len(diffs) > 0 {
		t.Errorf("delivery %s:\n\t%s", want.ID, strings.Join(diffs, "\n\t"))
	}
}

func endpointPosition(e store.WebhookEndpoint) store.Position {
	return store.Position{CreatedAt: e.CreatedAt, ID: e.ID}
}

func deliveryPosition(d store.Delivery) store.Position {
	return store.Position{CreatedAt: d.CreatedAt, ID: d.ID}
}

func mustListDeliveries(t *testing.T, s store.Store, accountID string, mode store.Mode, endpointID string) []store.Delivery {
	t.Helper()
	ds, err := store.CollectAll(func(q store.PageQuery) (store.Page[store.Delivery], error) {
		return s.ListDeliveries(context.Background(), accountID, mode, endpointID, q)
	}, deliveryPosition)
	if err != nil {
		t.Fatalf("ListDeliveries(%s): %v", endpointID, err)
	}
	return ds
}

// testEndpointRoundTrip stores, lists, updates and deletes endpoints, each read back field by
// field, and keeps every read and write within its account and mode.
func testEndpointRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	cet := time.FixedZone("CET", 3600)

	all := newEndpoint(acct, store.ModeLive, store.AllEvents)
	all.Description = "Zahlungen – prod"
	all.CreatedAt = time.Date(2025, 3, 14, 16, 9, 26, 535_897_932, cet) // stored as t0
	all.UpdatedAt = all.CreatedAt
	mustCreateEndpoint(t, s, all)
	wantAll := all
	wantAll.CreatedAt, wantAll.UpdatedAt = t0, t0

	several := newEndpoint(acct, store.ModeLive, kindDrift, kindMeridian)
	several.CreatedAt = t0.Add(time.Second)
	several.Status, several.DisabledReason = store.EndpointDisabled, store.DisabledByUser
	several.LastSuccessAt = ptr(t0.Add(time.Minute))
	mustCreateEndpoint(t, s, several)
	testMode := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, kindCascade))

	checkEndpoint(t, mustEndpoint(t, s, all), wantAll)
	checkEndpoint(t, mustEndpoint(t, s, several), several)

	page, err := s.ListWebhookEndpoints(ctx, acct, store.ModeLive, store.PageQuery{Limit: 10})
	if err != nil {
		t.Fatalf("ListWebhookEndpoints: %v", err)
	}
	if page.TotalCount != 2 || len(page.Items) != 2 || page.HasMore {
		t.Fatalf("live list: %d items of %d (more %v), want 2 of 2", len(page.Items), page.TotalCount, page.HasMore)
	}
	checkEndpoint(t, page.Items[0], several) // newest first
	checkEndpoint(t, page.Items[1], wantAll)
	page, err = s.ListWebhookEndpoints(ctx, acct, store.ModeLive, store.PageQuery{Limit: 1, After: ptrPosition(endpointPosition(several))})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != all.ID || page.HasMore {
		t.Fatalf("second page = %v, %v; want the older endpoint only", page.Items, err)
	}
	if page, err := s.ListWebhookEndpoints(ctx, acct, store.ModeTest, store.PageQuery{Limit: 10}); err != nil ||
		len(page.Items) != 1 || page.Items[0].ID != testMode.ID {
		t.Fatalf("test-mode list = %v, %v; want only %s", page.Items, err, testMode.ID)
	}
	if page, err := s.ListWebhookEndpoints(ctx, ident.New("acct"), store.ModeLive, store.PageQuery{Limit: 10}); err != nil ||
		len(page.Items) != 0 || page.TotalCount != 0 {
		t.Fatalf("another account's list = %v (total %d), %v; want empty", page.Items, page.TotalCount, err)
	}

	// Update every mutable field; CreatedAt, LastSuccessAt, account and mode stay.
	upd := several
	upd.URL = "https://hooks.lovelace.example/v2"
	upd.Events = []string{store.AllEvents}
	upd.Secret = "whsec_" + ident.Random(40)
	upd.Description = "rotated"
	upd.Status, upd.DisabledReason = store.EndpointEnabled, ""
	upd.UpdatedAt = t0.Add(time.Hour)
	upd.CreatedAt = t0.Add(99 * time.Hour)
	upd.LastSuccessAt = nil
	if err := s.UpdateWebhookEndpoint(ctx, upd); err != nil {
		t.Fatalf("UpdateWebhookEndpoint: %v", err)
	}
	want := upd
	want.CreatedAt, want.LastSuccessAt = several.CreatedAt, several.LastSuccessAt
	checkEndpoint(t, mustEndpoint(t, s, several), want)

	// Another account or mode cannot see, change or delete it.
	for name, e := range map[string]store.WebhookEndpoint{
		"other account": {ID: several.ID, AccountID: ident.New("acct"), Mode: store.ModeLive},
		"other mode":    {ID: several.ID, AccountID: acct, Mode: store.ModeTest},
		"unknown id":    {ID: ident.New("we"), AccountID: acct, Mode: store.ModeLive},
	} {
		if _, err := s.WebhookEndpoint(ctx, e.AccountID, e.Mode, e.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: WebhookEndpoint error = %v, want ErrNotFound", name, err)
		}
		changed := upd
		changed.AccountID, changed.Mode, changed.ID, changed.URL = e.AccountID, e.Mode, e.ID, "https://evil.example"
		if err := s.UpdateWebhookEndpoint(ctx, changed); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: UpdateWebhookEndpoint error = %v, want ErrNotFound", name, err)
		}
		if err := s.DeleteWebhookEndpoint(ctx, e.AccountID, e.Mode, e.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: DeleteWebhookEndpoint error = %v, want ErrNotFound", name, err)
		}
	}
	checkEndpoint(t, mustEndpoint(t, s, several), want)

	if err := s.CreateWebhookEndpoint(ctx, all, store.MaxEndpointsPerMode, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateWebhookEndpoint(existing id) error = %v, want ErrConflict", err)
	}
	bad := newEndpoint(acct, store.ModeLive, "drift.shadow_detected cascade.simulation_completed")
	if err := s.CreateWebhookEndpoint(ctx, bad, store.MaxEndpointsPerMode, nil); err == nil {
		t.Errorf("CreateWebhookEndpoint with an event kind holding a space succeeded; it would read back as two kinds")
	}

	if err := s.DeleteWebhookEndpoint(ctx, acct, store.ModeLive, all.ID); err != nil {
		t.Fatalf("DeleteWebhookEndpoint: %v", err)
	}
	if _, err := s.WebhookEndpoint(ctx, acct, store.ModeLive, all.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted endpoint: WebhookEndpoint error = %v, want ErrNotFound", err)
	}
	if err := s.DeleteWebhookEndpoint(ctx, acct, store.ModeLive, all.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteWebhookEndpoint error = %v, want ErrNotFound", err)
	}
}

func ptrPosition(p store.Position) *store.Position { return &p }

// testEndpointDeleteCascades: deleting an endpoint deletes its deliveries, pending or ended and
// leased or not, and leaves the events and other endpoints' deliveries alone.
func testEndpointDeleteCascades(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	doomed := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	kept := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	var events []store.Event
	for i := range 3 {
		ev := newEvent(acct, store.ModeLive, kindDrift, t0.Add(time.Duration(i)*time.Millisecond))
		mustCreateEvent(t, s, ev)
		events = append(events, ev)
	}
	// One of the doomed endpoint's deliveries succeeds, one is left under lease.
	claimed := mustClaim(t, s, claimPolicy("dispatcher-1", 100, 0), t0.Add(time.Second))
	var doomedIDs []string
	for _, c := range claimed {
		if c.EndpointID == doomed.ID {
			doomedIDs = append(doomedIDs, c.ID)
		}
	}
	if len(doomedIDs) != 3 {
		t.Fatalf("claimed %d of the endpoint's deliveries, want 3", len(doomedIDs))
	}
	mustRecord(t, s, "dispatcher-1", doomedIDs[0], store.AttemptOutcome{At: t0.Add(time.Second), StatusCode: 200, Succeeded: true})

	if err := s.DeleteWebhookEndpoint(ctx, acct, store.ModeLive, doomed.ID); err != nil {
		t.Fatalf("DeleteWebhookEndpoint: %v", err)
	}
	for _, id := range doomedIDs {
		if _, err := s.Delivery(ctx, acct, store.ModeLive, doomed.ID, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delivery %s of the deleted endpoint: error = %v, want ErrNotFound", id, err)
		}
	}
	if _, err := s.ListDeliveries(ctx, acct, store.ModeLive, doomed.ID, store.PageQuery{Limit: 10}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ListDeliveries of the deleted endpoint: error = %v, want ErrNotFound", err)
	}
	// The dispatcher still holding a lease learns that its delivery is gone.
	_, err := s.RecordAttempt(ctx, "dispatcher-1", doomedIDs[1], store.AttemptOutcome{At: t0.Add(2 * time.Second), Succeeded: true})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RecordAttempt on a deleted delivery: error = %v, want ErrLeaseLost", err)
	}
	if ds := mustListDeliveries(t, s, acct, store.ModeLive, kept.ID); len(ds) != 3 {
		t.Errorf("the other endpoint has %d deliveries, want 3", len(ds))
	}
	for _, ev := range events {
		if _, err := s.Event(ctx, acct, store.ModeLive, ev.ID); err != nil {
			t.Errorf("event %s after deleting an endpoint: %v", ev.ID, err)
		}
	}
	if n, err := s.PendingDeliveries(ctx); err != nil || n != 3 {
		t.Errorf("PendingDeliveries = %d, %v; want the other endpoint's 3", n, err)
	}
}

// testEndpointLimitConcurrent: 20 concurrent creates against a limit of 16 in one account and
// mode: exactly 16 succeed and the others get ErrLimitReached. The other mode has its own 16.
func testEndpointLimitConcurrent(t *testing.T, s store.Store) {
	EndpointLimitRace(t, 20, s)
}

// EndpointLimitRace has callers create endpoints concurrently in one account and mode against
// the limit of store.MaxEndpointsPerMode, and checks that exactly that many succeed, the
// others get ErrLimitReached, and the list holds exactly the winners. stores are used
// round-robin, so passing two stores opened on one database checks that processes, not only
// goroutines, are serialised.
func EndpointLimitRace(t *testing.T, callers int, stores ...store.Store) {
	t.Helper()
	ctx := context.Background()
	acct := ident.New("acct")
	max := store.MaxEndpointsPerMode
	// Warm up the pools so the creates overlap instead of queueing behind connection set-up.
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { _, _ = stores[i%len(stores)].PendingDeliveries(ctx) })
	}
	wg.Wait()

	endpoints := make([]store.WebhookEndpoint, callers)
	errs := make([]error, callers)
	start := make(chan struct{})
	for i := range callers {
		endpoints[i] = newEndpoint(acct, store.ModeLive, store.AllEvents)
		wg.Go(func() {
			<-start
			errs[i] = stores[i%len(stores)].CreateWebhookEndpoint(ctx, endpoints[i], max, nil)
		})
	}
	close(start)
	wg.Wait()

	var winners []string
	for i, err := range errs {
		switch {
		case err == nil:
			winners = append(winners, endpoints[i].ID)
		case !errors.Is(err, store.ErrLimitReached):
			t.Errorf("create %d: error = %v, want nil or ErrLimitReached", i, err)
		}
	}
	if len(winners) != max {
		t.Errorf("%d of %d concurrent creates succeeded, want exactly %d", len(winners), callers, max)
	}
	listed, err := store.CollectAll(func(q store.PageQuery) (store.Page[store.WebhookEndpoint], error) {
		return stores[0].ListWebhookEndpoints(ctx, acct, store.ModeLive, q)
	}, endpointPosition)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range listed {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(sorted(ids...), sorted(winners...)) {
		t.Errorf("listed endpoints %v, want the %d that were created", ids, len(winners))
	}
	if err := stores[0].CreateWebhookEndpoint(ctx, newEndpoint(acct, store.ModeLive, kindDrift), max, nil); !errors.Is(err, store.ErrLimitReached) {
		t.Errorf("create beyond the limit: error = %v, want ErrLimitReached", err)
	}
	// The limit is per mode (and account): the test mode of the same account starts empty.
	if err := stores[0].CreateWebhookEndpoint(ctx, newEndpoint(acct, store.ModeTest, kindDrift), max, nil); err != nil {
		t.Errorf("first test-mode endpoint of a full live account: %v", err)
	}
	if err := stores[0].CreateWebhookEndpoint(ctx, newEndpoint(ident.New("acct"), store.ModeLive, kindDrift), max, nil); err != nil {
		t.Errorf("first endpoint of another account: %v", err)
	}
}

// testDeliveryScope: deliveries are read, listed and retried only through their own endpoint,
// account and mode; the list is newest first with ties broken by id.
func testDeliveryScope(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ep := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, store.AllEvents))
	sibling := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, store.AllEvents))
	var want []store.Delivery
	for i := range 7 {
		ds := mustCreateEvent(t, s, newEvent(acct, store.ModeTest, kindMeridian, t0.Add(time.Duration(i/2)*time.Millisecond)))
		for _, d := range ds {
			if d.EndpointID == ep.ID {
				want = append(want, d)
			}
		}
	}
	slices.SortFunc(want, func(a, b store.Delivery) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmpString(b.ID, a.ID)
	})
	var got []store.Delivery
	q := store.PageQuery{Limit: 3}
	for {
		page, err := s.ListDeliveries(ctx, acct, store.ModeTest, ep.ID, q)
		if err != nil {
			t.Fatalf("ListDeliveries: %v", err)
		}
		if page.TotalCount != 7 {
			t.Fatalf("ListDeliveries total = %d, want 7", page.TotalCount)
		}
		got = append(got, page.Items...)
		if !page.HasMore {
			break
		}
		q.After = ptrPosition(deliveryPosition(page.Items[len(page.Items)-1]))
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d deliveries, want %d", len(got), len(want))
	}
	for i := range want {
		checkDelivery(t, got[i], want[i])
	}

	d := want[3]
	for name, tc := range map[string]struct {
		accountID  string
		mode       store.Mode
		endpointID string
	}{
		"other account":  {ident.New("acct"), store.ModeTest, ep.ID},
		"other mode":     {acct, store.ModeLive, ep.ID},
		"other endpoint": {acct, store.ModeTest, sibling.ID},
	} {
		if _, err := s.Delivery(ctx, tc.accountID, tc.mode, tc.endpointID, d.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: Delivery error = %v, want ErrNotFound", name, err)
		}
		if _, err := s.RequestManualRetry(ctx, tc.accountID, tc.mode, tc.endpointID, d.ID, t0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: RequestManualRetry error = %v, want ErrNotFound", name, err)
		}
		if tc.endpointID == ep.ID {
			if _, err := s.ListDeliveries(ctx, tc.accountID, tc.mode, tc.endpointID, store.PageQuery{Limit: 10}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: ListDeliveries error = %v, want ErrNotFound", name, err)
			}
		}
	}
	if _, err := s.Delivery(ctx, acct, store.ModeTest, ep.ID, ident.New("dlv")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delivery(unknown id) error = %v, want ErrNotFound", err)
	}
	stored, err := s.Delivery(ctx, acct, store.ModeTest, ep.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkDelivery(t, stored, d) // the refused retries changed nothing
}

// testEndpointStatusOnly: a status change leaves the URL and secret as they are now, even when
// they changed after the caller read the endpoint.
func testEndpointStatusOnly(t *testing.T, s store.Store) {
	ctx := context.Background()
	e := mustCreateEndpoint(t, s, newEndpoint(ident.New("acct"), store.ModeLive, kindDrift))
	rotated := e
	rotated.Secret, rotated.URL = "whsec_rotatedrotatedrotatedrotated", "https://hooks.example/new"
	if err := s.UpdateWebhookEndpoint(ctx, rotated); err != nil {
		t.Fatal(err)
	}
	if err := s.SetWebhookEndpointStatus(ctx, e.AccountID, e.Mode, e.ID, store.EndpointDisabled, store.DisabledByUser, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got := mustEndpoint(t, s, e)
	if got.Status != store.EndpointDisabled || got.DisabledReason != store.DisabledByUser || got.Secret != rotated.Secret || got.URL != rotated.URL {
		t.Fatalf("after a status change: %+v", got)
	}
	if err := s.SetWebhookEndpointStatus(ctx, e.AccountID, store.ModeTest, e.ID, store.EndpointEnabled, "", t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other mode: %v, want ErrNotFound", err)
	}
}
