package convergence

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"riskapi/engine"
)

// The HTTP layer decodes requests with github.com/go-json-experiment/json and
// RejectUnknownMembers; the engine's input type must decode straight from a request body.
func TestInputDecodesFromRequestBodyStrictly(t *testing.T) {
	t.Parallel()
	body := `{"market_id": "fuel-north", "sensitivity": 0.05,
	 "observations": [
	  {"firm": "A", "period": 3, "price": 1.5, "cost": 1, "quantity": 10, "segment": "east"},
	  {"firm": "B", "period": 3, "price": 1.6}],
	 "bids": [{"tender": "t1", "firm": "A", "amount": 100, "won": true, "date": "2026-01-05"},
	          {"tender": "t1", "firm": "B", "amount": 110, "won": false, "date": null}],
	 "communications": [{"from": "A", "to": "B", "timestamp": 2}],
	 "benchmarks": {"competitive_price": 1.47, "monopoly_price": 1.92}}`
	var in Input
	if err := jsonv2.Unmarshal([]byte(body), &in, jsonv2.RejectUnknownMembers(true)); err != nil {
		t.Fatal(err)
	}
	o := in.Observations[0]
	if o.Firm != "A" || o.Period.String() != "3" || *o.Price != 1.5 || *o.Cost != 1 || *o.Quantity != 10 || o.Segment != "east" {
		t.Errorf("observation %+v", o)
	}
	if in.Observations[1].Cost != nil || in.Observations[1].Quantity != nil {
		t.Errorf("absent cost and quantity must stay nil: %+v", in.Observations[1])
	}
	if in.Bids[0].Date.String() != "2026-01-05" || !in.Bids[1].Date.IsZero() || *in.Bids[1].Won {
		t.Errorf("bids %+v", in.Bids)
	}
	if *in.Sensitivity != 0.05 || *in.Benchmarks.MonopolyPrice != 1.92 || in.Benchmarks.CompetitiveProfit != nil {
		t.Errorf("input %+v", in)
	}
	if err := jsonv2.Unmarshal([]byte(`{"market_id": "m", "observation": []}`), &in, jsonv2.RejectUnknownMembers(true)); err == nil {
		t.Error("an unknown member must be rejected")
	}
}

func TestPeriodKeepsItsFormInOutput(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 30, 0, 0, time.FixedZone("", 3600))
	for _, c := range []struct {
		p    Period
		want string
		form periodForm
	}{
		{IntPeriod(42), `42`, formInt},
		{IntPeriod(-7), `-7`, formInt},
		{DatePeriod(at), `"2026-03-01"`, formTime},
		{TimePeriod(at), `"2026-03-01T10:30:00+01:00"`, formTime},
		{Period{raw: `1e3`}, `1e3`, formInt},
		{Period{raw: `"2026-03-01T09:30:00Z"`}, `"2026-03-01T09:30:00Z"`, formTime},
	} {
		b, err := json.Marshal(c.p)
		if err != nil || string(b) != c.want {
			t.Errorf("marshal %v: %s %v, want %s", c.p, b, err, c.want)
		}
		var back Period
		if err := json.Unmarshal(b, &back); err != nil || back != c.p {
			t.Errorf("round trip of %s: %v %v", b, back, err)
		}
		if f, _ := c.p.parse(); f != c.form {
			t.Errorf("%s parses as form %v, want %v", c.want, f, c.form)
		}
	}
	// Date-times in other zones are ordered by instant.
	_, k1 := TimePeriod(at).parse()
	_, k2 := Period{raw: `"2026-03-01T09:30:00Z"`}.parse()
	if k1 != k2 {
		t.Errorf("same instant, keys %d and %d", k1, k2)
	}
	var zero Period
	if b, _ := json.Marshal(zero); string(b) != "null" {
		t.Errorf("absent period marshals as %s", b)
	}
	for _, bad := range []string{`"2026-13-01"`, `"tomorrow"`, `2.5`, `true`, `{}`, `[]`, `9007199254740993`} {
		if f, _ := (Period{raw: bad}).parse(); f != formInvalid {
			t.Errorf("%s should be invalid", bad)
		}
	}
}

func TestGroupPeriodsUseTheInputForm(t *testing.T) {
	t.Parallel()
	in := cartelInput()
	// The same market with integer periods.
	for i := range in.Observations {
		d, _ := time.Parse(time.DateOnly, in.Observations[i].Period.String())
		in.Observations[i].Period = IntPeriod(int64(d.Sub(t0).Hours() / 24))
	}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(a.SuspectedGroups[0])
	var g struct {
		From, To any
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	from, ok1 := g.From.(float64)
	to, ok2 := g.To.(float64)
	if !ok1 || !ok2 || from < 78 || from > 82 || to < 137 || to > 141 {
		t.Errorf("from %v to %v, want numbers near 80 and 139", g.From, g.To)
	}
	var ie *engine.InputError
	in.Observations[3].Period = Period{raw: `"2026-01-05"`}
	if _, err := Analyze(context.Background(), in); !errors.As(err, &ie) || ie.Field != "observations[3].period" {
		t.Errorf("mixed forms: %v", err)
	}
	if !slices.Equal(a.SuspectedGroups[0].Firms, []string{"A", "B", "C"}) {
		t.Errorf("group %v", a.SuspectedGroups[0].Firms)
	}
}
