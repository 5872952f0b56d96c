package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"riskapi/internal/ident"
	"riskapi/internal/jobs"
	"riskapi/internal/store"
)

func newMonitor(accountID string, mode store.Mode, agentID string) store.DriftMonitor {
	return store.DriftMonitor{
		ID: ident.New("drm"), AccountID: accountID, Mode: mode, AgentID: agentID,
		Sensitivity: 0.01, MinEvents: 200, Status: store.MonitorActive,
		CreatedAt: t0, UpdatedAt: t0,
	}
}

// A monitor reads back as stored, under its id, its agent and its account's list; a second
// monitor of the agent in the same mode is ErrConflict, in the other mode it is not; another
// account sees none of them.
func testDriftMonitorRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	m := newMonitor(acct, store.ModeLive, "agent_7")
	m.PrincipalID, m.Baseline, m.Description = "user_42", []byte(`{"fraction":0.2}`), "checkout agent"
	if err := s.CreateDriftMonitor(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	want := m
	want.Alerts, want.Detected = []store.DriftMonitorAlert{}, []string{}
	for name, get := range map[string]func() (store.DriftMonitor, error){
		"by id":      func() (store.DriftMonitor, error) { return s.DriftMonitor(ctx, acct, store.ModeLive, m.ID) },
		"background": func() (store.DriftMonitor, error) { return s.BackgroundDriftMonitor(ctx, m.ID) },
		"of agent":   func() (store.DriftMonitor, error) { return s.DriftMonitorOfAgent(ctx, acct, store.ModeLive, "agent_7") },
	} {
		got, err := get()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %+v, %v; want %+v", name, got, err, want)
		}
	}
	second := newMonitor(acct, store.ModeLive, "agent_7")
	if err := s.CreateDriftMonitor(ctx, second, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second monitor of the agent: %v, want ErrConflict", err)
	}
	testMode := newMonitor(acct, store.ModeTest, "agent_7")
	testMode.CreatedAt = t0.Add(time.Second)
	if err := s.CreateDriftMonitor(ctx, testMode, nil); err != nil {
		t.Fatalf("the agent's monitor in the other mode: %v", err)
	}
	other := newMonitor(acct, store.ModeLive, "agent_8")
	other.CreatedAt = t0.Add(2 * time.Second)
	if err := s.CreateDriftMonitor(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListDriftMonitors(ctx, acct, store.ModeLive, "", store.PageQuery{Limit: 10})
	if err != nil || len(page.Items) != 2 || page.Items[0].ID != other.ID || page.Items[1].ID != m.ID {
		t.Fatalf("list: %+v, %v", page.Items, err)
	}
	page, err = s.ListDriftMonitors(ctx, acct, store.ModeLive, "agent_7", store.PageQuery{Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != m.ID {
		t.Fatalf("list of agent_7: %+v, %v", page.Items, err)
	}
	if _, err := s.DriftMonitor(ctx, ident.New("acct"), store.ModeLive, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another account read the monitor: %v", err)
	}
	if _, err := s.DriftMonitor(ctx, acct, store.ModeTest, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the other mode read the monitor: %v", err)
	}

	// Update changes the configuration only; delete removes it, once.
	changed := want
	changed.Sensitivity, changed.Description, changed.Status = 0.05, "", store.MonitorPaused
	changed.UpdatedAt = t0.Add(time.Minute)
	changed.Looks = 99 // state: not written by an update
	if err := s.UpdateDriftMonitor(ctx, changed); err != nil {
		t.Fatal(err)
	}
	changed.Looks = 0
	if got, err := s.DriftMonitor(ctx, acct, store.ModeLive, m.ID); err != nil || !reflect.DeepEqual(got, changed) {
		t.Fatalf("after update: %+v, %v; want %+v", got, err, changed)
	}
	if err := s.DeleteDriftMonitor(ctx, acct, store.ModeLive, m.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDriftMonitor(ctx, acct, store.ModeLive, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := s.UpdateDriftMonitor(ctx, changed); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of a deleted monitor: %v", err)
	}
	if err := s.CreateDriftMonitor(ctx, second, nil); err != nil {
		t.Fatalf("a new monitor once the first is deleted: %v", err)
	}
}

// A look's state, analysis and event are stored together; of concurrent looks from the same
// state exactly one is recorded, and the others store neither analysis nor event.
func testDriftMonitorLook(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	m := newMonitor(acct, store.ModeLive, "agent_look")
	if err := s.CreateDriftMonitor(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	cp := t0.Add(-time.Hour)
	const looks = 4
	var wg sync.WaitGroup
	errs := make([]error, looks)
	ids := make([]string, looks)
	for i := range looks {
		next := m
		next.EventsSeen, next.Looks, next.Spent = int64(250+i), 1, 0.3
		at := t0.Add(time.Minute)
		next.LastEvaluatedAt = &at
		ids[i] = ident.New("dra")
		next.Alerts = []store.DriftMonitorAlert{{Party: "vendor_x", AnalysisID: ids[i], EventID: ident.New("evt"), RaisedAt: at, ChangePointAt: &cp}}
		next.Detected = []string{"vendor_x"}
		a := store.Analysis{ID: ids[i], AccountID: acct, Mode: store.ModeLive, Product: "drift", Subject: "agent_look", Payload: []byte(`{}`), CreatedAt: at}
		ev := store.Event{ID: next.Alerts[0].EventID, AccountID: acct, Mode: store.ModeLive, Type: kindDrift, Payload: []byte(`{}`), CreatedAt: at}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.RecordDriftMonitorLook(ctx, next, 0, a, &ev)
		}()
	}
	wg.Wait()
	recorded := -1
	for i, err := range errs {
		switch {
		case err == nil && recorded < 0:
			recorded = i
		case err == nil:
			t.Fatalf("looks %d and %d were both recorded", recorded, i)
		case !errors.Is(err, store.ErrConflict):
			t.Fatalf("look %d: %v, want ErrConflict", i, err)
		}
	}
	if recorded < 0 {
		t.Fatal("no look was recorded")
	}
	got, err := s.DriftMonitor(ctx, acct, store.ModeLive, m.ID)
	if err != nil || got.Looks != 1 || got.EventsSeen != int64(250+recorded) || got.Spent != 0.3 || len(got.Alerts) != 1 ||
		got.Alerts[0].AnalysisID != ids[recorded] || !got.Alerts[0].ChangePointAt.Equal(cp) || !reflect.DeepEqual(got.Detected, []string{"vendor_x"}) {
		t.Fatalf("after the look: %+v, %v", got, err)
	}
	for i, id := range ids {
		_, err := s.Analysis(ctx, acct, store.ModeLive, "drift", id)
		if (i == recorded) != (err == nil) {
			t.Fatalf("analysis of look %d (recorded %d): %v", i, recorded, err)
		}
	}
	evs, err := s.ListEvents(ctx, acct, store.ModeLive, kindDrift, store.PageQuery{Limit: 10})
	if err != nil || len(evs.Items) != 1 {
		t.Fatalf("events: %+v, %v", evs.Items, err)
	}
	if err := s.DeleteDriftMonitor(ctx, acct, store.ModeLive, m.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordDriftMonitorLook(ctx, got, 1, store.Analysis{ID: ident.New("dra"), AccountID: acct, Mode: store.ModeLive, Product: "drift", CreatedAt: t0}, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("look of a deleted monitor: %v, want ErrNotFound", err)
	}

	// Looks queued for the same monitor, events seen and kind are one job, however many
	// callers (processes) queue them at once; another seen count or kind is another job.
	var wg2 sync.WaitGroup
	schedErrs := make([]error, 4)
	for i := range schedErrs {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			schedErrs[i] = s.ScheduleDriftMonitorLook(ctx, m.ID, 250, true, time.Time{})
		}()
	}
	wg2.Wait()
	for _, err := range schedErrs {
		if err != nil {
			t.Fatalf("schedule: %v", err)
		}
	}
	if err := s.ScheduleDriftMonitorLook(ctx, m.ID, 250, false, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.ScheduleDriftMonitorLook(ctx, m.ID, 300, true, time.Time{}); err != nil {
		t.Fatal(err)
	}
	lister, err := jobs.NewInserter(s.JobDriver())
	if err != nil {
		t.Fatal(err)
	}
	res, err := lister.JobList(ctx, river.NewJobListParams().Kinds(jobs.DriftMonitorLook{}.Kind()).First(100).
		States(rivertype.JobStateAvailable, rivertype.JobStateScheduled))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, j := range res.Jobs {
		var args jobs.DriftMonitorLook
		if err := json.Unmarshal(j.EncodedArgs, &args); err != nil {
			t.Fatal(err)
		}
		if args.MonitorID == m.ID {
			keys = append(keys, fmt.Sprintf("%d/%t", args.Seen, args.Soon))
		}
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"250/false", "250/true", "300/true"}) {
		t.Fatalf("queued looks %v, want one per (seen, kind)", keys)
	}
}
