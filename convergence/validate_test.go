package convergence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"riskapi/engine"
)

func f64(v float64) *float64 { return &v }
func bptr(v bool) *bool      { return &v }

// smallMarket is a valid 3-firm × 12-period market with integer periods.
func smallMarket() Input {
	in := Input{MarketID: "fuel-north"}
	for t := 0; t < 12; t++ {
		for _, f := range []string{"A", "B", "C"} {
			in.Observations = append(in.Observations, Observation{Firm: f, Period: IntPeriod(int64(t)),
				Price: f64(10 + float64(t%3) + float64(len(f))), Cost: f64(6), Quantity: f64(100)})
		}
	}
	return in
}

// tenders5 returns bids on five tenders of three bids each.
func tenders5() []Bid {
	var bids []Bid
	for j := 0; j < 5; j++ {
		id := string(rune('a' + j))
		for k, f := range []string{"X", "Y", "Z"} {
			bids = append(bids, Bid{Tender: id, Firm: f, Amount: f64(100 + float64(10*k+j)), Won: bptr(k == 0)})
		}
	}
	return bids
}

func TestAnalyzeRejectsBadInputWithSpecCodesAndPaths(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                      string
		edit                      func(in *Input)
		code, field, received     string
		expectedContains, message string
	}{
		{"missing market id", func(in *Input) { in.MarketID = "" }, CodeInvalidMarketID, "market_id", "missing", "A-Za-z0-9", ""},
		{"bad market id", func(in *Input) { in.MarketID = "fuel north" }, CodeInvalidMarketID, "market_id", "string", "1-128", ""},
		{"missing price", func(in *Input) { in.Observations[7].Price = nil }, CodeInvalidObservations, "observations[7].price", "missing", "> 0", "price"},
		{"zero price", func(in *Input) { in.Observations[3].Price = f64(0) }, CodeInvalidObservations, "observations[3].price", "number", "> 0", ""},
		{"negative cost", func(in *Input) { in.Observations[4].Cost = f64(-1) }, CodeInvalidObservations, "observations[4].cost", "number", ">= 0", ""},
		{"negative quantity", func(in *Input) { in.Observations[5].Quantity = f64(-2) }, CodeInvalidObservations, "observations[5].quantity", "number", ">= 0", ""},
		{"missing firm", func(in *Input) { in.Observations[2].Firm = "" }, CodeInvalidObservations, "observations[2].firm", "missing", "string", ""},
		{"missing period", func(in *Input) { in.Observations[1].Period = Period{} }, CodeInvalidObservations, "observations[1].period", "missing", "RFC 3339", ""},
		{"bad period string", func(in *Input) { in.Observations[1].Period = Period{raw: `"yesterday"`} }, CodeInvalidObservations, "observations[1].period", "string", "RFC 3339", ""},
		{"fractional period", func(in *Input) { in.Observations[1].Period = Period{raw: `1.5`} }, CodeInvalidObservations, "observations[1].period", "number", "integer", ""},
		{"boolean period", func(in *Input) { in.Observations[1].Period = Period{raw: `true`} }, CodeInvalidObservations, "observations[1].period", "boolean", "integer", ""},
		{"mixed period forms", func(in *Input) { in.Observations[6].Period = Period{raw: `"2026-01-05"`} }, CodeInvalidObservations, "observations[6].period", "string", "integer", ""},
		{"duplicate observation", func(in *Input) { in.Observations[9] = in.Observations[0] }, CodeInvalidObservations, "observations[9]", "object", "one observation", "repeats"},
		{"duplicate before a bad price", func(in *Input) {
			in.Observations[9] = in.Observations[0]
			in.Observations[20].Price = nil
		}, CodeInvalidObservations, "observations[9]", "object", "one observation", ""},
		{"bad price before a duplicate", func(in *Input) {
			in.Observations[20] = in.Observations[0]
			in.Observations[9].Price = nil
		}, CodeInvalidObservations, "observations[9].price", "missing", "> 0", ""},
		{"bid without won", func(in *Input) { in.Bids = tenders5(); in.Bids[4].Won = nil }, CodeInvalidBids, "bids[4].won", "missing", "boolean", ""},
		{"bid amount zero", func(in *Input) { in.Bids = tenders5(); in.Bids[2].Amount = f64(0) }, CodeInvalidBids, "bids[2].amount", "number", "> 0", ""},
		{"bid without tender", func(in *Input) { in.Bids = tenders5(); in.Bids[3].Tender = "" }, CodeInvalidBids, "bids[3].tender", "missing", "string", ""},
		{"firm bids twice", func(in *Input) { in.Bids = tenders5(); in.Bids[1].Firm = "X" }, CodeInvalidBids, "bids[1].firm", "string", "one bid", ""},
		{"bad bid date", func(in *Input) { in.Bids = tenders5(); in.Bids[0].Date = Period{raw: `"01/02/2026"`} }, CodeInvalidBids, "bids[0].date", "string", "RFC 3339", ""},
		{"message timestamp of another form", func(in *Input) {
			in.Communications = []Communication{{From: "A", To: "B", Timestamp: DatePeriod(t0)}}
		}, CodeInvalidCommunications, "communications[0].timestamp", "string", "integer", ""},
		{"message without sender", func(in *Input) {
			in.Communications = []Communication{{To: "B", Timestamp: IntPeriod(3)}}
		}, CodeInvalidCommunications, "communications[0].from", "missing", "string", ""},
		{"monopoly price below competitive", func(in *Input) {
			in.Benchmarks = &Benchmarks{CompetitivePrice: f64(10), MonopolyPrice: f64(9)}
		}, CodeInvalidBenchmarks, "benchmarks.monopoly_price", "number", "competitive_price", ""},
		{"negative profit benchmark", func(in *Input) { in.Benchmarks = &Benchmarks{CompetitiveProfit: f64(-1)} }, CodeInvalidBenchmarks, "benchmarks.competitive_profit", "number", ">= 0", ""},
		{"sensitivity too high", func(in *Input) { in.Sensitivity = f64(0.3) }, CodeInvalidSensitivity, "sensitivity", "number", "0.2", ""},
		{"sensitivity zero", func(in *Input) { in.Sensitivity = f64(0) }, CodeInvalidSensitivity, "sensitivity", "number", "0.2", ""},
		{"one firm only", func(in *Input) {
			var keep []Observation
			for _, o := range in.Observations {
				if o.Firm == "A" {
					keep = append(keep, o)
				}
			}
			in.Observations = keep
		}, CodeInvalidObservations, "observations", "array", "at least 2 firms", "found 1 firms"},
		{"nine periods", func(in *Input) { in.Observations = in.Observations[:27] }, CodeInvalidObservations, "observations", "array", "10 periods", ""},
		{"nothing at all", func(in *Input) { in.Observations = nil }, CodeInvalidObservations, "observations", "missing", "tenders", ""},
		{"bids only, four tenders", func(in *Input) { in.Observations = nil; in.Bids = tenders5()[:12] }, CodeInvalidBids, "bids", "array", "5 tenders", "found 4"},
		{"bids only, a tender of two bids", func(in *Input) { in.Observations = nil; in.Bids = tenders5()[1:] }, CodeInvalidBids, "bids", "array", "3 bids", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := smallMarket()
			c.edit(&in)
			_, err := Analyze(context.Background(), in)
			var ie *engine.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("want *engine.InputError, got %v", err)
			}
			if ie.Code != c.code || ie.Field != c.field || ie.Received != c.received {
				t.Fatalf("got code %s field %s received %s (%s), want %s %s %s", ie.Code, ie.Field, ie.Received, ie.Message, c.code, c.field, c.received)
			}
			if !strings.Contains(ie.Expected, c.expectedContains) {
				t.Errorf("expected %q lacks %q", ie.Expected, c.expectedContains)
			}
			if ie.Message == "" || !strings.Contains(ie.Message, c.message) || !strings.Contains(err.Error(), c.code) {
				t.Errorf("message %q (error %q) should mention %q", ie.Message, err, c.message)
			}
		})
	}
}

func TestAnalyzeAcceptsEitherUsableInput(t *testing.T) {
	t.Parallel()
	in := smallMarket()
	in.Bids = tenders5()[:12] // too few tenders: ignored, the observations are usable
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if a.Dimensions.BidPatterns != nil || a.BidsAnalyzed != 0 || a.FirmsAnalyzed != 6 || a.ObservationsAnalyzed != 36 {
		t.Errorf("bid dimension %v, bids %d, firms %d, observations %d", a.Dimensions.BidPatterns, a.BidsAnalyzed, a.FirmsAnalyzed, a.ObservationsAnalyzed)
	}
	bids := append(tenders5(), Bid{Tender: "tiny", Firm: "X", Amount: f64(5), Won: bptr(true)})
	b, err := Analyze(context.Background(), Input{MarketID: "m", Bids: bids, Observations: smallMarket().Observations[:3]})
	if err != nil {
		t.Fatal(err)
	}
	if b.Dimensions.BidPatterns == nil || b.Dimensions.BidPatterns.Tenders != 5 || b.BidsAnalyzed != 15 || b.ObservationsAnalyzed != 0 || b.Dimensions.PriceConvergence != nil {
		t.Errorf("bids-only analysis: %+v", b)
	}
	if b.FirmsAnalyzed != 6 { // X, Y, Z and the observations' A, B, C
		t.Errorf("firms analysed %d, want 6", b.FirmsAnalyzed)
	}
}

// An Input changed after Validate is checked again: Analyze never analyses what Validate saw.
func TestChangesAfterValidateAreSeen(t *testing.T) {
	t.Parallel()
	in, _ := Generate(ScenarioCompetitive, 1, GenParams{})
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	in.MarketID = "another"
	in.Observations = append([]Observation(nil), in.Observations...)
	in.Observations[0].Price = nil
	var ie *engine.InputError
	if _, err := Analyze(context.Background(), in); !errors.As(err, &ie) || ie.Field != "observations[0].price" {
		t.Fatalf("observations replaced after Validate: %v, want the missing price reported", err)
	}
}
