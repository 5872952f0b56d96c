package monitor

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/drift"
	"riskapi/internal/store"
)

// lookStore is one monitor and its agent's events in insertion order, recording the looks.
type lookStore struct {
	m        store.DriftMonitor
	events   []store.DriftEvent
	recorded []store.DriftMonitor
	analyses []store.Analysis
}

func (s *lookStore) BackgroundDriftMonitor(context.Context, string) (store.DriftMonitor, error) {
	return s.m, nil
}

func (s *lookStore) CountDriftEvents(context.Context, string, store.Mode, string) (int64, error) {
	return int64(len(s.events)), nil
}

func (s *lookStore) DriftEvents(_ context.Context, _ string, _ store.Mode, _ string, from, to *time.Time, limit int) ([]store.DriftEvent, error) {
	var out []store.DriftEvent
	for _, ev := range s.events {
		if (from == nil || !ev.Timestamp.Before(*from)) && (to == nil || ev.Timestamp.Before(*to)) && len(out) < limit {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (s *lookStore) LatestDriftEvents(_ context.Context, _ string, _ store.Mode, _ string, limit int) ([]store.DriftEvent, error) {
	return s.events[max(0, len(s.events)-limit):], nil
}

func (s *lookStore) RecordDriftMonitorLook(_ context.Context, m store.DriftMonitor, _ int, a store.Analysis, _ *store.Event) error {
	s.recorded = append(s.recorded, m)
	s.analyses = append(s.analyses, a)
	s.m = m
	return nil
}

// storedEvents are the generated events as the store holds them.
func storedEvents(t *testing.T, events []drift.Event) []store.DriftEvent {
	t.Helper()
	out := make([]store.DriftEvent, len(events))
	for i, ev := range events {
		payload, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = store.DriftEvent{EventID: ev.ID, Timestamp: ev.Timestamp, Payload: payload}
	}
	return out
}

// A monitor on an agent with more events than one analysis takes looks at the newest
// 100,000 (it used to stop looking): a shadow principal that appears late in a 120,000-event
// history alerts, the analysis covers 100,000 events, and the spending counts all 120,000.
func TestLookAtALongHistoryAnalysesTheNewest(t *testing.T) {
	in, truth := drift.Generate(drift.ScenarioShadow, 7, drift.GenParams{Events: 120_000, Onset: 0.9, ShareGain: 0.35, RegretFrac: 0.3})
	st := &lookStore{m: store.DriftMonitor{ID: "drm_1", AgentID: in.AgentID, PrincipalID: *in.PrincipalID, Sensitivity: 0.01,
		MinEvents: 200, Status: store.MonitorActive}, events: storedEvents(t, in.Events)}
	l := &Looker{Store: st, Now: time.Now, Logger: slog.New(slog.DiscardHandler)}
	if _, err := l.Look(context.Background(), "drm_1"); err != nil {
		t.Fatal(err)
	}
	if len(st.recorded) != 1 {
		t.Fatalf("%d looks recorded, want 1", len(st.recorded))
	}
	m := st.recorded[0]
	if m.EventsSeen != 120_000 || len(m.Alerts) != 1 || m.Alerts[0].Party != truth.Party {
		t.Fatalf("after the look: events_seen %d, alerts %+v; want 120000 and one alert for %s", m.EventsSeen, m.Alerts, truth.Party)
	}
	var a struct {
		EventsAnalyzed int `json:"events_analyzed"`
	}
	if err := json.Unmarshal(st.analyses[0].Payload, &a); err != nil {
		t.Fatal(err)
	}
	if a.EventsAnalyzed != drift.MaxEvents {
		t.Fatalf("the look analysed %d events, want the newest %d", a.EventsAnalyzed, drift.MaxEvents)
	}
	if want := 0.01 * drift.MonitorSpendShare(120_000, 200); m.Spent != want {
		t.Fatalf("spent %g, want %g (the level of a look at all 120,000 events)", m.Spent, want)
	}
}

// lookEvents keeps a monitor's baseline when the history is longer than one analysis: with
// baseline.until, the first events before it (up to 30,000) and then the newest from it on;
// without, the newest 100,000; a history that fits is read whole.
func TestLookEventsOfALongHistory(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 150_000
	events := make([]store.DriftEvent, n)
	for i := range events {
		events[i] = store.DriftEvent{EventID: "e" + string(rune('a'+i%26)), Timestamp: t0.Add(time.Duration(i) * time.Second)}
	}
	// One late event from the baseline period among the newest: not analysed twice.
	events[n-10].Timestamp = t0.Add(5 * time.Second)
	st := &lookStore{events: events}
	l := &Looker{Store: st}
	ctx := context.Background()

	got, err := l.lookEvents(ctx, st.m, nil, n)
	if err != nil || len(got) != drift.MaxEvents || !got[0].Timestamp.Equal(events[n-drift.MaxEvents].Timestamp) {
		t.Fatalf("default baseline: %d events from %v (%v), want the newest %d", len(got), got[0].Timestamp, err, drift.MaxEvents)
	}

	until := t0.Add(40_000 * time.Second) // 40,000 events before it: more than the share
	got, err = l.lookEvents(ctx, st.m, &drift.Baseline{Until: &until}, n)
	if err != nil {
		t.Fatal(err)
	}
	var before int
	for i, ev := range got {
		if ev.Timestamp.Before(until) {
			before++
			if i >= baselineShare {
				t.Fatalf("event %d (%v) of the baseline period after the first %d", i, ev.Timestamp, baselineShare)
			}
		}
	}
	if before != baselineShare || len(got) > drift.MaxEvents || len(got) < drift.MaxEvents-1 {
		t.Fatalf("baseline.until: %d events, %d before until; want %d of them first and at most %d in all", len(got), before, baselineShare, drift.MaxEvents)
	}
	if last := got[len(got)-1]; !last.Timestamp.Equal(events[n-1].Timestamp) {
		t.Fatalf("the last event read is %v, want the newest %v", last.Timestamp, events[n-1].Timestamp)
	}

	st.events = events[:5_000]
	if got, err := l.lookEvents(ctx, st.m, &drift.Baseline{Until: &until}, 5_000); err != nil || len(got) != 5_000 {
		t.Fatalf("a history that fits: %d events, %v; want all 5,000", len(got), err)
	}
}
