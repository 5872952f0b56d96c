package httpapi

import (
	"bytes"
	"net/http"
	"slices"
	"testing"

	"riskapi/convergence"
)

// A cartel that forms mid-series is found with its members and period; the analysis is
// stored and convergence.collusion_found carries it. Parallel pricing from shared cost shocks
// is not collusion and emits nothing.
func TestConvergenceCartelAndHardNegative(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	in, truth := convergence.Generate(convergence.ScenarioCartel, 5, convergence.GenParams{})
	r := b.send(http.MethodPost, "/v1/convergence/analyze-market", b.testKey, string(mustJSON(t, in)))
	if r.status != http.StatusOK || r.field("data.collusion_detected") != true || r.field("data.object") != "convergence.analysis" {
		t.Fatalf("cartel: %d %s", r.status, r.raw)
	}
	group := r.field("data.suspected_groups").([]any)[0].(map[string]any)
	var firms []string
	for _, f := range group["firms"].([]any) {
		firms = append(firms, f.(string))
	}
	slices.Sort(firms)
	want := slices.Clone(truth.Members)
	slices.Sort(want)
	if !slices.Equal(firms, want) {
		t.Fatalf("suspected group %v, planted %v", firms, want)
	}
	if len(r.field("data.flagged_periods").([]any)) == 0 {
		t.Fatalf("no flagged period for a mid-series cartel: %s", r.raw)
	}
	id := r.field("data.id").(string)
	if got := b.get("/v1/convergence/analyses/"+id, b.testKey); !bytes.Equal(rawData(t, got.raw), rawData(t, r.raw)) {
		t.Fatal("GET differs from POST")
	}
	if n := b.get("/v1/events?type=convergence.collusion_found", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("%v events, want 1", n)
	}

	neg, _ := convergence.Generate(convergence.ScenarioParallelCostShock, 6, convergence.GenParams{})
	r = b.send(http.MethodPost, "/v1/convergence/analyze-market", b.testKey, string(mustJSON(t, neg)))
	if r.status != http.StatusOK || r.field("data.collusion_detected") != false {
		t.Fatalf("parallel cost shock: %d %s", r.status, r.raw)
	}
	if n := b.get("/v1/events", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("%v events after a negative, want still 1", n)
	}
	list := b.get("/v1/convergence/analyses?market_id="+in.MarketID, b.testKey)
	if list.field("pagination.total_count") != 1.0 {
		t.Fatalf("market filter: %s", list.raw)
	}
	b.get("/v1/convergence/analyses/"+id, b.liveKey).wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
	b.get("/v1/convergence/analyses?market_id=a%20b", b.testKey).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_MARKET_ID")
}

func TestConvergenceValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	cases := []struct{ body, code, field, received string }{
		{`{"market_id": 7}`, "INVALID_MARKET_ID", "market_id", "number"},
		{`{}`, "INVALID_MARKET_ID", "market_id", "missing"},
		{`{"market_id": "m"}`, "INVALID_OBSERVATIONS", "observations", ""},
		{`{"market_id": "m", "observations": [{"firm": "A", "period": true, "price": 1}]}`, "INVALID_OBSERVATIONS", "observations[0].period", "boolean"},
		{`{"market_id": "m", "observations": [{"firm": "A", "period": 1, "price": -1}]}`, "INVALID_OBSERVATIONS", "observations[0].price", "number"},
		{`{"market_id": "m", "sensitivity": 0.9}`, "INVALID_SENSITIVITY", "sensitivity", "number"},
	}
	for _, c := range cases {
		r := b.send(http.MethodPost, "/v1/convergence/analyze-market", b.testKey, c.body)
		r.wantError(t, http.StatusBadRequest, "validation_error", c.code)
		if r.field("error.details.field") != c.field || (c.received != "" && r.field("error.details.received") != c.received) {
			t.Errorf("%s: details %v, want field %s received %s", c.body, r.field("error.details"), c.field, c.received)
		}
	}
}
