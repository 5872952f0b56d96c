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

func newAnalysis(accountID string, mode store.Mode, product, subject string, at time.Time) store.Analysis {
	id := ident.New("dra")
	return store.Analysis{
		ID: id, AccountID: accountID, Mode: mode, Product: product, Subject: subject,
		Payload:   []byte(fmt.Sprintf(`{"id":%q,"object":"drift.analysis"}`, id)),
		CreatedAt: at,
	}
}

// testAnalysisRoundTrip: an analysis reads back as written, only in its own account, mode
// and product; its event fans out to the subscribed endpoints in the same call.
func testAnalysisRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	endpoint := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, kindDrift))
	a := newAnalysis(acct, store.ModeTest, "drift", "agent_7", t0)
	ev := newEvent(acct, store.ModeTest, kindDrift, t0)
	if err := s.CreateAnalysis(ctx, a, &ev, nil); err != nil {
		t.Fatalf("CreateAnalysis: %v", err)
	}
	got, err := s.Analysis(ctx, acct, store.ModeTest, "drift", a.ID)
	if err != nil {
		t.Fatalf("Analysis: %v", err)
	}
	var d fieldDiffs
	d.field("ID", got.ID, a.ID)
	d.field("AccountID", got.AccountID, a.AccountID)
	d.field("Mode", got.Mode, a.Mode)
	d.field("Product", got.Product, a.Product)
	d.field("Subject", got.Subject, a.Subject)
	d.field("Payload", string(got.Payload), string(a.Payload))
	d.field("CreatedAt", sameTime(got.CreatedAt, a.CreatedAt), "")
	if len(d) > 0 {
		t.Errorf("analysis %s:\n\t%s", a.ID, strings.Join(d, "\n\t"))
	}

	for _, other := range []struct {
		name          string
		acct, product string
		mode          store.Mode
	}{
		{"other account", ident.New("acct"), "drift", store.ModeTest},
		{"other mode", acct, "drift", store.ModeLive},
		{"other product", acct, "meridian", store.ModeTest},
	} {
		if _, err := s.Analysis(ctx, other.acct, other.mode, other.product, a.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Analysis from %s: error = %v, want ErrNotFound", other.name, err)
		}
	}
	if _, err := s.Event(ctx, acct, store.ModeTest, ev.ID); err != nil {
		t.Errorf("the analysis's event: %v", err)
	}
	if ds := mustListDeliveries(t, s, acct, store.ModeTest, endpoint.ID); len(ds) != 1 || ds[0].EventID != ev.ID {
		t.Errorf("deliveries after CreateAnalysis = %v, want one for event %s", deliveryIDs(ds), ev.ID)
	}

	// Without an event nothing is fanned out.
	quiet := newAnalysis(acct, store.ModeTest, "drift", "agent_7", t0.Add(time.Second))
	if err := s.CreateAnalysis(ctx, quiet, nil, nil); err != nil {
		t.Fatalf("CreateAnalysis without event: %v", err)
	}
	if ds := mustListDeliveries(t, s, acct, store.ModeTest, endpoint.ID); len(ds) != 1 {
		t.Errorf("deliveries after an analysis without event = %d, want still 1", len(ds))
	}
}

// testAnalysisOutboxAtomic: when the event cannot be stored, the analysis is not stored either.
func testAnalysisOutboxAtomic(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	ev := newEvent(acct, store.ModeLive, kindDrift, t0)
	mustCreateEvent(t, s, ev)
	a := newAnalysis(acct, store.ModeLive, "drift", "agent_1", t0)
	if err := s.CreateAnalysis(ctx, a, &ev, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateAnalysis with an event id that exists: error = %v, want ErrConflict", err)
	}
	if _, err := s.Analysis(ctx, acct, store.ModeLive, "drift", a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("analysis after its event failed: error = %v, want ErrNotFound (rolled back)", err)
	}
	if err := s.CreateAnalysis(ctx, a, nil, nil); err != nil {
		t.Fatalf("CreateAnalysis: %v", err)
	}
	if err := s.CreateAnalysis(ctx, a, nil, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateAnalysis twice: error = %v, want ErrConflict", err)
	}
}

// testListAnalyses: newest first, filtered by product and subject, paged without gaps.
func testListAnalyses(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	var agent7 []string
	for i := range 25 {
		subject := "agent_7"
		if i%5 == 0 {
			subject = "agent_9"
		}
		a := newAnalysis(acct, store.ModeLive, "drift", subject, t0.Add(time.Duration(i)*time.Millisecond))
		if err := s.CreateAnalysis(ctx, a, nil, nil); err != nil {
			t.Fatal(err)
		}
		if subject == "agent_7" {
			agent7 = append(agent7, a.ID)
		}
	}
	// Noise that no list below may show.
	for _, a := range []store.Analysis{
		newAnalysis(acct, store.ModeTest, "drift", "agent_7", t0),
		newAnalysis(acct, store.ModeLive, "meridian", "agent_7", t0),
		newAnalysis(ident.New("acct"), store.ModeLive, "drift", "agent_7", t0),
	} {
		if err := s.CreateAnalysis(ctx, a, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	all, err := store.CollectAll(func(q store.PageQuery) (store.Page[store.Analysis], error) {
		q.Limit = 10
		return s.ListAnalyses(ctx, acct, store.ModeLive, "drift", "", q)
	}, store.AnalysisPosition)
	if err != nil || len(all) != 25 {
		t.Fatalf("ListAnalyses (all) = %d items, %v; want 25", len(all), err)
	}
	page, err := s.ListAnalyses(ctx, acct, store.ModeLive, "drift", "agent_7", store.PageQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range page.Items {
		ids = append(ids, a.ID)
	}
	slices.Reverse(agent7)
	if !slices.Equal(ids, agent7) || page.TotalCount != 20 || page.HasMore {
		t.Errorf("ListAnalyses(agent_7) = %v (total %d, more %v), want %v newest first (total 20)", ids, page.TotalCount, page.HasMore, agent7)
	}
}

func driftEvent(id string, at time.Time) store.DriftEvent {
	return store.DriftEvent{EventID: id, Timestamp: at, Payload: []byte(fmt.Sprintf(`{"id":%q}`, id))}
}

// testDriftEvents: events are appended in order, repeated ids are skipped (within a batch and
// across batches), windows filter on the timestamp with from inclusive and to exclusive, and
// histories of other agents, modes and accounts stay apart.
func testDriftEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	// Timestamps with nanoseconds: windows must compare them exactly.
	at := func(i int) time.Time { return t0.Add(time.Duration(i)*time.Minute + 123_456_789) }
	first := []store.DriftEvent{driftEvent("e1", at(3)), driftEvent("e2", at(1)), driftEvent("", at(2)), driftEvent("e1", at(9)), driftEvent("", at(2))}
	got, err := s.AddDriftEvents(ctx, acct, store.ModeLive, "agent_7", first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.DriftEventBatch{Accepted: 4, Duplicates: 1, Total: 4}); got != want {
		t.Errorf("first batch = %+v, want %+v", got, want)
	}
	second := []store.DriftEvent{driftEvent("e2", at(5)), driftEvent("e3", at(4))}
	got, err = s.AddDriftEvents(ctx, acct, store.ModeLive, "agent_7", second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.DriftEventBatch{Accepted: 1, Duplicates: 1, Total: 5}); got != want {
		t.Errorf("second batch = %+v, want %+v", got, want)
	}
	// The same ids for another agent, mode or account are new.
	for _, o := range []struct {
		acct, agent string
		mode        store.Mode
	}{{acct, "agent_8", store.ModeLive}, {acct, "agent_7", store.ModeTest}, {ident.New("acct"), "agent_7", store.ModeLive}} {
		got, err := s.AddDriftEvents(ctx, o.acct, o.mode, o.agent, second, nil)
		if err != nil || got.Accepted != 2 || got.Total != 2 {
			t.Errorf("AddDriftEvents(%s, %s, %s) = %+v, %v; want 2 accepted of 2", o.acct, o.mode, o.agent, got, err)
		}
	}

	list := func(from, to *time.Time, limit int) []string {
		t.Helper()
		evs, err := s.DriftEvents(ctx, acct, store.ModeLive, "agent_7", from, to, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range evs {
			out = append(out, fmt.Sprintf("%s@%d", ev.EventID, ev.Timestamp.Sub(t0)/time.Minute))
			if want := fmt.Sprintf(`{"id":%q}`, ev.EventID); string(ev.Payload) != want {
				t.Errorf("payload %s, want %s", ev.Payload, want)
			}
			if m := int(ev.Timestamp.Sub(t0) / time.Minute); !ev.Timestamp.Equal(at(m)) {
				t.Errorf("timestamp %v, want %v (to the nanosecond)", ev.Timestamp, at(m))
			}
		}
		return out
	}
	if got, want := list(nil, nil, 100), []string{"e1@3", "e2@1", "@2", "@2", "e3@4"}; !slices.Equal(got, want) {
		t.Errorf("DriftEvents = %v, want %v (insertion order)", got, want)
	}
	if got, want := list(nil, nil, 2), []string{"e1@3", "e2@1"}; !slices.Equal(got, want) {
		t.Errorf("DriftEvents limit 2 = %v, want %v", got, want)
	}
	from, to := at(2), at(4)
	if got, want := list(&from, &to, 100), []string{"e1@3", "@2", "@2"}; !slices.Equal(got, want) {
		t.Errorf("DriftEvents [2, 4) = %v, want %v (from inclusive, to exclusive)", got, want)
	}
	latest := func(limit int) []string {
		t.Helper()
		evs, err := s.LatestDriftEvents(ctx, acct, store.ModeLive, "agent_7", limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range evs {
			out = append(out, fmt.Sprintf("%s@%d", ev.EventID, ev.Timestamp.Sub(t0)/time.Minute))
		}
		return out
	}
	if got, want := latest(3), []string{"@2", "@2", "e3@4"}; !slices.Equal(got, want) {
		t.Errorf("LatestDriftEvents(3) = %v, want %v (the newest, in insertion order)", got, want)
	}
	if got, want := latest(100), []string{"e1@3", "e2@1", "@2", "@2", "e3@4"}; !slices.Equal(got, want) {
		t.Errorf("LatestDriftEvents(100) = %v, want %v", got, want)
	}
	if evs, err := s.LatestDriftEvents(ctx, acct, store.ModeLive, "agent_unknown", 10); err != nil || len(evs) != 0 {
		t.Errorf("LatestDriftEvents(unknown agent) = %v, %v; want none", evs, err)
	}
	if n, err := s.CountDriftEvents(ctx, acct, store.ModeLive, "agent_7"); err != nil || n != 5 {
		t.Errorf("CountDriftEvents = %d, %v; want 5", n, err)
	}
	if n, err := s.CountDriftEvents(ctx, acct, store.ModeLive, "agent_unknown"); err != nil || n != 0 {
		t.Errorf("CountDriftEvents(unknown agent) = %d, %v; want 0", n, err)
	}
}

// testDriftEventsConcurrent: batches with overlapping ids sent at once store each id once, and
// the accepted counts add up to what was stored.
func testDriftEventsConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	const callers, ids = 8, 1200
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
	)
	for c := range callers {
		wg.Go(func() {
			batch := make([]store.DriftEvent, 0, ids)
			for i := range ids {
				// Each caller sends every id, in a different order.
				j := (i*7 + c*131) % ids
				batch = append(batch, driftEvent(fmt.Sprintf("e%d", j), t0.Add(time.Duration(j)*time.Second)))
			}
			got, err := s.AddDriftEvents(ctx, acct, store.ModeLive, "agent_c", batch, nil)
			if err != nil {
				t.Errorf("caller %d: %v", c, err)
				return
			}
			mu.Lock()
			accepted += got.Accepted
			mu.Unlock()
		})
	}
	wg.Wait()
	n, err := s.CountDriftEvents(ctx, acct, store.ModeLive, "agent_c")
	if err != nil || n != ids || accepted != ids {
		t.Errorf("after %d concurrent batches of the same %d ids: stored %d (%v), accepted in all %d; want %d and %d", callers, ids, n, err, accepted, ids, ids)
	}
}

// testDriftEventsLargeBatch: a batch longer than one insert statement (the store splits it)
// keeps its order, and an id repeated in a later part of the batch, or in a later batch, is
// skipped as within one statement.
func testDriftEventsLargeBatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	const n = 1100
	var batch []store.DriftEvent
	var want []string
	for i := range n {
		id := fmt.Sprintf("e%d", i)
		switch {
		case i >= 600 && i%100 == 0:
			j := i - 600 // a repeat of an event some 600 back that has an id
			if j%7 == 0 {
				j++
			}
			id = fmt.Sprintf("e%d", j)
		case i%7 == 0:
			id = "" // no id: never a duplicate
		}
		ev := driftEvent(id, t0.Add(time.Duration(i)*time.Millisecond))
		ev.Payload = fmt.Appendf(nil, `{"i":%d}`, i)
		batch = append(batch, ev)
		if !(i >= 600 && i%100 == 0) {
			want = append(want, string(ev.Payload))
		}
	}
	got, err := s.AddDriftEvents(ctx, acct, store.ModeLive, "agent_l", batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := (store.DriftEventBatch{Accepted: len(want), Duplicates: n - len(want), Total: int64(len(want))}); got != w {
		t.Errorf("AddDriftEvents(%d events) = %+v, want %+v", n, got, w)
	}
	evs, err := s.DriftEvents(ctx, acct, store.ModeLive, "agent_l", nil, nil, 2*n)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, ev := range evs {
		stored = append(stored, string(ev.Payload))
	}
	if !slices.Equal(stored, want) {
		t.Errorf("stored %d events, want %d in the batch's order", len(stored), len(want))
	}
	// The same batch again: only the events without an id are new.
	noID := 0
	for _, ev := range batch {
		if ev.EventID == "" {
			noID++
		}
	}
	got, err = s.AddDriftEvents(ctx, acct, store.ModeLive, "agent_l", batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := (store.DriftEventBatch{Accepted: noID, Duplicates: n - noID, Total: int64(len(want) + noID)}); got != w {
		t.Errorf("AddDriftEvents(the same batch again) = %+v, want %+v", got, w)
	}
}
