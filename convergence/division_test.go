package convergence

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// segmentMarket is a market of firms that each sell in one of segments segments (firm f in
// segment f mod segments) in every one of periods integer periods, with prices and
// quantities that vary by firm and period: the shape of a many-firm market-division
// request. Firm names are "f0", "f1", ….
func segmentMarket(firms, periods, segments int) Input {
	in := Input{MarketID: "segments", Observations: make([]Observation, 0, firms*periods)}
	names := make([]string, firms)
	for f := range names {
		names[f] = "f" + strconv.Itoa(f)
	}
	segs := make([]string, segments)
	for s := range segs {
		segs[s] = "s" + strconv.Itoa(s)
	}
	for t := 0; t < periods; t++ {
		for f := 0; f < firms; f++ {
			price := 10 + float64((f*7+t*3)%13)
			qty := float64(1 + (f*5+t)%17)
			in.Observations = append(in.Observations, Observation{Firm: names[f], Period: IntPeriod(int64(t)),
				Price: &price, Quantity: &qty, Segment: segs[f%segments]})
		}
	}
	return in
}

// shortLivedFirmsMarket is firms firms observed in two periods in one segment, beside two
// firms observed over ten periods (so that the market has the ten periods an analysis
// needs): the shape of the request that found the quadratic market division (250,000 firms,
// 34 MB).
func shortLivedFirmsMarket(firms int) Input {
	in := segmentMarket(firms, 2, 1)
	long := segmentMarket(2, 10, 1)
	for _, o := range long.Observations {
		o.Firm = "long_" + o.Firm
		in.Observations = append(in.Observations, o)
	}
	return in
}

// Allocation stability compares a segment's consecutive cells firm by firm. With 50,000
// firms in one segment over 10 periods, looking each firm up in the other cell's list made
// 9 × 50,000² comparisons (6.2 s; 250,000 firms in two periods took 21 s); through dense
// per-firm shares the analysis takes about 0.15 s. The bound leaves a tenfold margin on
// either side.
func TestDivisionOfManyFirmsIsLinear(t *testing.T) {
	if raceEnabled {
		t.Skip("timing is not measurable under the race detector")
	}
	if testing.Short() {
		t.Skip("builds a market of 500,000 observations")
	}
	in := segmentMarket(50_000, 10, 1)
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a, err := Analyze(context.Background(), in)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if a.Dimensions.MarketDivision == nil {
		t.Fatal("no market_division dimension for a market with segments and quantities")
	}
	t.Logf("50,000 firms × 10 periods in one segment: %v", took)
	if bound := 1500 * time.Millisecond; took > bound {
		t.Errorf("analysis of 50,000 firms in one segment took %v, want under %v (a quadratic market division takes about 6 s)", took, bound)
	}
}
