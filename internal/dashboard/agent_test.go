package dashboard

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"riskapi/drift"
	"riskapi/internal/ident"
	"riskapi/internal/monitor"
	"riskapi/internal/store"
)

// An agent's page draws the benefit share of its top parties, the change point of its latest
// analysis and its monitor's alert (from a real look of a planted shadow agent), and lists
// the alert; an agent without events or monitor is a 404, and the Analyses page links to it.
func TestAgentTimeline(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	acct, u := b.newUser(store.PlanStarter)
	in, truth := drift.Generate(drift.ScenarioShadow, 7, drift.GenParams{Events: 1000, Onset: 0.4, ShareGain: 0.35, RegretFrac: 0.3})
	rows := make([]store.DriftEvent, len(in.Events))
	for i, e := range in.Events {
		payload, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = store.DriftEvent{Timestamp: e.Timestamp, Payload: payload}
	}
	if _, err := b.store.AddDriftEvents(ctx, acct.ID, store.ModeTest, "agent_7", rows, nil); err != nil {
		t.Fatal(err)
	}
	now := b.clock.Now()
	m := store.DriftMonitor{ID: ident.New("drm"), AccountID: acct.ID, Mode: store.ModeTest, AgentID: "agent_7", PrincipalID: *in.PrincipalID,
		Sensitivity: 0.01, MinEvents: 200, Status: store.MonitorActive, CreatedAt: now, UpdatedAt: now}
	if err := b.store.CreateDriftMonitor(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	looker := &monitor.Looker{Store: b.store, Now: b.clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := looker.Look(ctx, m.ID); err != nil {
		t.Fatal(err)
	}

	br := b.browser()
	br.signIn(u)
	res := br.get("/dashboard/agents/agent_7")
	wantStatus(t, "agent page", res, http.StatusOK)
	charts := checkSVG(t, res.body)
	if len(charts) != 1 {
		t.Fatalf("%d charts, want the timeline", len(charts))
	}
	chart := charts[0]
	if n := strings.Count(chart, "<polyline"); n != timelineParties {
		t.Errorf("%d lines, want one per top party (%d)", n, timelineParties)
	}
	for _, want := range []string{`class="change-point"`, `class="alert"`, "Alert: " + truth.Party, ">" + truth.Party + "<"} {
		if !strings.Contains(chart, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
	if !strings.Contains(res.body, `<td data-label="Party">`+truth.Party+`</td>`) || !strings.Contains(res.body, m.ID) {
		t.Error("the page does not list the monitor and its alert")
	}
	if strings.Contains(res.body, "style=") {
		t.Error("inline style, which the CSP blocks")
	}
	wantStatus(t, "unknown agent", br.get("/dashboard/agents/agent_none"), http.StatusNotFound)
	if page := br.get("/dashboard/analyses").body; !strings.Contains(page, `href="/dashboard/agents/agent_7"`) {
		t.Error("the Analyses page does not link the agent")
	}
}

// The shares are per run of events and only of non-principal benefit: a party that gets all
// the benefit of the second half rises from 0 to 1.
func TestAgentTimelineShares(t *testing.T) {
	var events []drift.Event
	base := drift.Event{}
	for i := range 80 {
		e := base
		e.Timestamp = e.Timestamp.AddDate(0, 0, i)
		party := "vendor_a"
		if i >= 40 {
			party = "vendor_b"
		}
		e.Beneficiaries = []drift.Beneficiary{{Party: party, Value: 10}, {Party: "user_1", Value: 50}}
		events = append(events, e)
	}
	tl := newAgentTimeline(events, "user_1")
	if len(tl.Series) != 2 || len(tl.Ends) != timelineBuckets {
		t.Fatalf("series %+v, %d buckets", tl.Series, len(tl.Ends))
	}
	for _, s := range tl.Series {
		first, last := s.Values[0], s.Values[len(s.Values)-1]
		if (s.Name == "vendor_b") != (first == 0 && last == 1) || (s.Name == "vendor_a") != (first == 1 && last == 0) {
			t.Errorf("%s: first %v, last %v", s.Name, first, last)
		}
	}
	if i := tl.indexAt(events[40].Timestamp); i != 40 {
		t.Errorf("indexAt the 41st event: %d", i)
	}
}
