package client_test

import (
	"context"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/cascade"
	"riskapi/client"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/meridian"
)

// generate asks the service for count test items of a product's scenario.
func generate(t *testing.T, c *client.Client, product, scenario string, count int, seed int64) []client.TestItem {
	t.Helper()
	data, err := c.GenerateTestData(t.Context(), client.TestDataParams{Product: product, Scenario: scenario, Count: count, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if data.Product != product || data.Scenario != scenario || data.Seed != seed || len(data.Items) != count {
		t.Fatalf("generated %s/%s seed %d with %d items, want %s/%s seed %d with %d", data.Product, data.Scenario, data.Seed, len(data.Items), product, scenario, seed, count)
	}
	return data.Items
}

// collect drains an iterator, failing the test on its error.
func collect[T any](t *testing.T, seq iter.Seq2[T, error]) []T {
	t.Helper()
	var out []T
	for item, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, item)
	}
	return out
}

// sameJSON fails unless a and b encode to the same JSON (map keys sorted).
func sameJSON(t *testing.T, what string, a, b any) {
	t.Helper()
	ja, err := json.Marshal(a, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	if string(ja) != string(jb) {
		t.Fatalf("%s differ:\n%s\n%s", what, ja, jb)
	}
}

// ids returns the objects' ids, in order.
func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, item := range items {
		out[i] = id(item)
	}
	return out
}

// newestFirst returns the objects' ids in the order lists answer: created_at descending,
// then id descending (objects created in the same millisecond are ordered by id).
func newestFirst(objects []client.Resource) []string {
	sorted := slices.Clone(objects)
	slices.SortFunc(sorted, func(a, b client.Resource) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return ids(sorted, func(r client.Resource) string { return r.ID })
}

func TestDriftEndToEnd(t *testing.T) {
	t.Parallel()
	s := startService(t)
	c := s.client(s.testKey)
	ctx := t.Context()

	items := generate(t, c, client.ProductDrift, "shadow_principal_detected", 2, 7)
	var posted []client.Resource
	for _, item := range items {
		var in drift.Input
		if err := item.DecodeRequest(&in); err != nil {
			t.Fatal(err)
		}
		a, err := c.AnalyzeDrift(ctx, &in)
		if err != nil {
			t.Fatal(err)
		}
		if a.Object != "drift.analysis" || a.Livemode || a.AgentID != in.AgentID || a.CreatedAt.IsZero() {
			t.Fatalf("analysis header: %+v", a.Resource)
		}
		if want := item.Expected["shadow_principal_detected"]; a.ShadowPrincipalDetected != want {
			t.Fatalf("agent %s: detected %v, the generator planted %v", in.AgentID, a.ShadowPrincipalDetected, want)
		}
		if len(a.ShadowPrincipals) == 0 || a.ShadowPrincipals[0].Party != item.Expected["shadow_party"] {
			t.Fatalf("agent %s: shadow principals %+v, want %v", in.AgentID, a.ShadowPrincipals, item.Expected["shadow_party"])
		}
		got, err := c.DriftAnalysis(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "POST and GET of "+a.ID, a, got)
		posted = append(posted, a.Resource)
	}

	// The agent's events, sent ahead with IngestDriftEvents under another agent id, are
	// analysed by id alone, to the same verdict.
	var first drift.Input
	if err := items[0].DecodeRequest(&first); err != nil {
		t.Fatal(err)
	}
	batch, err := c.IngestDriftEvents(ctx, &drift.EventBatch{AgentID: "agent_ingested", Events: first.Events[:len(first.Events)/2]})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.IngestDriftEvents(ctx, &drift.EventBatch{AgentID: "agent_ingested", Events: first.Events})
	if err != nil {
		t.Fatal(err)
	}
	if half := len(first.Events) / 2; batch.Accepted != half || again.Accepted != len(first.Events)-half || again.Duplicates != half || again.TotalEvents != int64(len(first.Events)) {
		t.Fatalf("ingest: %+v then %+v for %d events", batch, again, len(first.Events))
	}
	byID, err := c.AnalyzeDrift(ctx, &drift.Input{AgentID: "agent_ingested", PrincipalID: first.PrincipalID})
	if err != nil {
		t.Fatal(err)
	}
	if !byID.ShadowPrincipalDetected || byID.EventsAnalyzed != len(first.Events) {
		t.Fatalf("stored events: detected %v over %d events, want true over %d", byID.ShadowPrincipalDetected, byID.EventsAnalyzed, len(first.Events))
	}
	posted = append(posted, byID.Resource)

	listed := collect(t, c.ListDriftAnalyses(ctx, client.DriftAnalysisListParams{}))
	if got := ids(listed, func(a client.DriftAnalysis) string { return a.ID }); !slices.Equal(got, newestFirst(posted)) {
		t.Fatalf("listed %v, want %v", got, newestFirst(posted))
	}
	one := collect(t, c.ListDriftAnalyses(ctx, client.DriftAnalysisListParams{AgentID: "agent_ingested"}))
	if len(one) != 1 || one[0].ID != byID.ID {
		t.Fatalf("agent filter listed %v, want [%s]", ids(one, func(a client.DriftAnalysis) string { return a.ID }), byID.ID)
	}

	// Each detection emitted drift.shadow_detected, whose object is the analysis.
	events := collect(t, c.ListEvents(ctx, client.EventListParams{Type: client.EventDriftShadowDetected}))
	if len(events) != 3 {
		t.Fatalf("%d drift.shadow_detected events, want 3", len(events))
	}
	ev, err := c.Event(ctx, events[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var reported client.DriftAnalysis
	if err := ev.DecodeObject(&reported); err != nil {
		t.Fatal(err)
	}
	if ev.Type != client.EventDriftShadowDetected || reported.ID != byID.ID {
		t.Fatalf("newest event %s reports %s, want %s", ev.Type, reported.ID, byID.ID)
	}
}

func TestConvergenceEndToEnd(t *testing.T) {
	t.Parallel()
	s := startService(t)
	c := s.client(s.testKey)
	ctx := t.Context()

	var posted []client.Resource
	for _, scenario := range []string{"collusion_found", "competitive"} {
		for _, item := range generate(t, c, client.ProductConvergence, scenario, 1, 11) {
			var in convergence.Input
			if err := item.DecodeRequest(&in); err != nil {
				t.Fatal(err)
			}
			a, err := c.AnalyzeMarket(ctx, &in)
			if err != nil {
				t.Fatal(err)
			}
			if want := item.Expected["collusion_detected"]; a.CollusionDetected != want || a.MarketID != in.MarketID {
				t.Fatalf("%s: market %s collusion %v, the generator planted %v", scenario, a.MarketID, a.CollusionDetected, want)
			}
			got, err := c.ConvergenceAnalysis(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "POST and GET of "+a.ID, a, got)
			posted = append(posted, a.Resource)
		}
	}
	listed := collect(t, c.ListConvergenceAnalyses(ctx, client.ConvergenceAnalysisListParams{}))
	if got := ids(listed, func(a client.ConvergenceAnalysis) string { return a.ID }); !slices.Equal(got, newestFirst(posted)) {
		t.Fatalf("listed %v, want %v", got, newestFirst(posted))
	}
	page, err := c.ConvergenceAnalysesPage(ctx, client.ConvergenceAnalysisListParams{MarketID: listed[0].MarketID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.TotalCount != 1 || page.HasMore || page.Data[0].ID != listed[0].ID {
		t.Fatalf("market filter: %+v", page)
	}
}

func TestCascadeEndToEnd(t *testing.T) {
	t.Parallel()
	s := startService(t)
	c := s.client(s.testKey)
	ctx := t.Context()

	items := generate(t, c, client.ProductCascade, "fragile_network", 1, 3)
	var in cascade.Input
	if err := items[0].DecodeRequest(&in); err != nil {
		t.Fatal(err)
	}
	sim, err := c.SimulateCascade(ctx, &in)
	if err != nil {
		t.Fatal(err)
	}
	if sim.Status != client.SimulationCompleted || !sim.Finished() || sim.SystemicRiskDetected == nil ||
		*sim.SystemicRiskDetected != items[0].Expected["systemic_risk_detected"] || len(sim.Nodes) != len(in.Network.Nodes) {
		t.Fatalf("simulation %s: status %s, systemic %v (planted %v), %d nodes", sim.ID, sim.Status, sim.SystemicRiskDetected, items[0].Expected["systemic_risk_detected"], len(sim.Nodes))
	}
	got, err := c.CascadeSimulation(ctx, sim.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "POST and GET of "+sim.ID, sim, got)

	// Asked for in the background, it is answered queued; no runner runs here, so it stays
	// queued until canceled.
	in.Async = true
	queued, err := c.SimulateCascade(ctx, &in)
	if err != nil {
		t.Fatal(err)
	}
	if queued.Status != client.SimulationQueued || queued.Score != nil || queued.Finished() {
		t.Fatalf("async simulation: status %s, score %v", queued.Status, queued.Score)
	}
	canceled, err := c.CancelCascadeSimulation(ctx, queued.ID)
	if err != nil {
		t.Fatal(err)
	}
	waited, err := c.WaitCascadeSimulation(ctx, queued.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if canceled.Status != client.SimulationCanceled || waited.Status != client.SimulationCanceled {
		t.Fatalf("canceled simulation: %s, then %s", canceled.Status, waited.Status)
	}

	listed := collect(t, c.ListCascadeSimulations(ctx, client.ListParams{Limit: 1}))
	want := newestFirst([]client.Resource{sim.Resource, queued.Resource})
	if got := ids(listed, func(s client.CascadeSimulation) string { return s.ID }); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	page, err := c.CascadeSimulationsPage(ctx, client.ListParams{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !page.HasMore || page.NextCursor == "" || page.TotalCount != 2 {
		t.Fatalf("first page of 1: %+v", page)
	}
}

func TestMeridianEndToEnd(t *testing.T) {
	t.Parallel()
	s := startService(t)
	c := s.client(s.testKey)
	ctx := t.Context()

	var posted []client.Resource
	for _, scenario := range []string{"clean", "dirty"} {
		for _, item := range generate(t, c, client.ProductMeridian, scenario, 1, 5) {
			var req meridian.Request
			if err := item.DecodeRequest(&req); err != nil {
				t.Fatal(err)
			}
			qc, err := c.CheckQuality(ctx, &req)
			if err != nil {
				t.Fatal(err)
			}
			if want := item.Expected["passed"]; qc.Passed != want || qc.SourceID != req.SourceID {
				t.Fatalf("%s: source %s passed %v, the generator planted %v", scenario, qc.SourceID, qc.Passed, want)
			}
			got, err := c.QualityCheck(ctx, qc.ID)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "POST and GET of "+qc.ID, qc, got)
			posted = append(posted, qc.Resource)
		}
	}
	listed := collect(t, c.ListQualityChecks(ctx, client.QualityCheckListParams{}))
	if got := ids(listed, func(q client.QualityCheck) string { return q.ID }); !slices.Equal(got, newestFirst(posted)) {
		t.Fatalf("listed %v, want %v", got, newestFirst(posted))
	}
	page, err := c.QualityChecksPage(ctx, client.QualityCheckListParams{SourceID: listed[1].SourceID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != listed[1].ID {
		t.Fatalf("source filter: %+v", page)
	}
	failed := collect(t, c.ListEvents(ctx, client.EventListParams{Type: client.EventMeridianQualityCheckFailed}))
	if len(failed) != 1 {
		t.Fatalf("%d meridian.quality_check_failed events, want 1 (the dirty source)", len(failed))
	}
}

// The service's own description, health and contract, and the key's account.
func TestServiceAccountAndHealth(t *testing.T) {
	t.Parallel()
	s := startService(t)
	ctx := context.Background()
	anonymous := s.client("")
	info, err := anonymous.Service(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != "v1" || info.Region != client.RegionDefault || info.BaseURLs.EU == nil || *info.BaseURLs.EU != euBaseURL {
		t.Fatalf("service: %+v", info)
	}
	eu, err := anonymous.ForRegion(ctx, client.RegionEU)
	if err != nil {
		t.Fatal(err)
	}
	if eu.BaseURL() != euBaseURL {
		t.Fatalf("EU client calls %s, want %s", eu.BaseURL(), euBaseURL)
	}
	if home, err := anonymous.ForRegion(ctx, client.RegionDefault); err != nil || home.BaseURL() != s.http.URL {
		t.Fatalf("default region: %v %v, want %s", home, err, s.http.URL)
	}
	if _, err := anonymous.ForRegion(ctx, "mars"); err == nil {
		t.Fatal("an unknown region was accepted")
	}
	doc, err := anonymous.OpenAPI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var openapi struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(doc, &openapi); err != nil || openapi.OpenAPI != "3.1.0" {
		t.Fatalf("openapi.json: %v %q", err, openapi.OpenAPI)
	}
	if h, err := anonymous.Health(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("healthz: %+v %v", h, err)
	}
	if h, err := anonymous.Ready(ctx); err != nil || h.Status != "ready" {
		t.Fatalf("readyz: %+v %v", h, err)
	}

	var res client.Response
	acct, err := s.client(s.testKey).Account(ctx, client.CaptureResponse(&res))
	if err != nil {
		t.Fatal(err)
	}
	// A test key counts against the sandbox's 1,000 requests a day.
	if rl := res.RateLimit; rl.Limit != 1000 || rl.Remaining != 999 || !rl.Reset.After(time.Now()) || res.Attempts != 1 || res.Replayed {
		t.Fatalf("response metadata: %+v", res)
	}
	if acct.ID != s.account.ID || acct.Livemode || acct.APIKey.Type != "test" || acct.APIKey.Mode != "test" || len(acct.APIKey.Scopes) == 0 {
		t.Fatalf("account: %+v", acct)
	}
}
