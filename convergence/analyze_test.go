package convergence

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"riskapi/engine"
)

var t0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// cartelInput is a hand-built market: five firms over 200 daily periods with costs that
// move; A, B and C raise their cost-adjusted price by 20 % and keep it calm from period 80 to
// 139; D and E keep competing. Prices are given shuffled.
func cartelInput() Input {
	r := rand.New(rand.NewPCG(1, 2))
	in := Input{MarketID: "cement:south"}
	cost := 50.0
	for t := 0; t < 200; t++ {
		cost += r.NormFloat64() * 0.5
		for _, f := range []string{"A", "B", "C", "D", "E"} {
			noise := 1.5 * r.NormFloat64()
			p := 1.3*cost + noise
			if t >= 80 && t < 140 && f <= "C" {
				p = 1.3*cost*1.2 + 0.1*noise
			}
			in.Observations = append(in.Observations, Observation{Firm: f, Period: DatePeriod(t0.AddDate(0, 0, t)),
				Price: f64(p), Cost: f64(cost), Quantity: f64(100 + r.Float64())})
		}
	}
	r.Shuffle(len(in.Observations), func(i, j int) { in.Observations[i], in.Observations[j] = in.Observations[j], in.Observations[i] })
	return in
}

func TestAnalyzeFindsCartelPeriodAndMembersNotBystanders(t *testing.T) {
	t.Parallel()
	a, err := Analyze(context.Background(), cartelInput())
	if err != nil {
		t.Fatal(err)
	}
	if !a.CollusionDetected || a.Score >= 50 || a.RecommendedAction != "investigate" {
		t.Fatalf("detected %v score %v action %s", a.CollusionDetected, a.Score, a.RecommendedAction)
	}
	g := a.SuspectedGroups[0]
	if !slices.Equal(g.Firms, []string{"A", "B", "C"}) {
		t.Fatalf("group %v, want A B C", g.Firms)
	}
	from, _ := time.Parse(time.DateOnly, g.From.String())
	to, _ := time.Parse(time.DateOnly, g.To.String())
	if d := from.Sub(t0.AddDate(0, 0, 80)); d < -48*time.Hour || d > 48*time.Hour {
		t.Errorf("from %s, want about %s", g.From, t0.AddDate(0, 0, 80).Format(time.DateOnly))
	}
	if d := to.Sub(t0.AddDate(0, 0, 139)); d < -48*time.Hour || d > 48*time.Hour {
		t.Errorf("to %s, want about %s", g.To, t0.AddDate(0, 0, 139).Format(time.DateOnly))
	}
	if !slices.Contains(g.Signals, SignalLowPriceVariance) || !slices.Contains(g.Signals, SignalSupraCompetitiveMargin) {
		t.Errorf("signals %v", g.Signals)
	}
	if len(a.FlaggedPeriods) != 1 || a.FlaggedPeriods[0].Reason != ReasonCollusiveRegime || *a.FlaggedPeriods[0].From != *g.From {
		t.Errorf("flagged periods %+v", a.FlaggedPeriods)
	}
	if ev := g.Evidence; ev.PriceChange == nil || math.Abs(*ev.PriceChange-0.2) > 0.03 || ev.VarianceRatio == nil || *ev.VarianceRatio > 0.1 {
		t.Errorf("evidence %+v", ev)
	}
	pc := a.Dimensions.PriceConvergence
	if pc == nil || pc.Score >= 0.5 || a.Dimensions.ConsumerWelfare == nil || a.Dimensions.ConsumerWelfare.CostPassThrough == nil {
		t.Fatalf("dimensions %+v", a.Dimensions)
	}
	if pt := *a.Dimensions.ConsumerWelfare.CostPassThrough; math.Abs(pt-1.3) > 0.2 {
		t.Errorf("cost pass-through %v, want about 1.3", pt)
	}
	if a.FirmsAnalyzed != 5 || a.ObservationsAnalyzed != 1000 || a.MethodVersion != MethodVersion {
		t.Errorf("counts %d %d %s", a.FirmsAnalyzed, a.ObservationsAnalyzed, a.MethodVersion)
	}
}

// parallelInput: four firms price at 1.3 × a common cost that swings by ±30 %, plus
// independent noise: raw prices move together, cost-adjusted prices do not.
func parallelInput() Input {
	r := rand.New(rand.NewPCG(5, 6))
	in := Input{MarketID: "fuel-north", Benchmarks: &Benchmarks{CompetitivePrice: f64(65), MonopolyPrice: f64(90)}}
	for t := 0; t < 300; t++ {
		cost := 50 * (1 + 0.3*math.Sin(float64(t)/15))
		for _, f := range []string{"A", "B", "C", "D"} {
			in.Observations = append(in.Observations, Observation{Firm: f, Period: IntPeriod(int64(t)),
				Price: f64(1.3*cost + r.NormFloat64()), Cost: f64(cost)})
		}
	}
	return in
}

func TestAnalyzeParallelPricingFromCommonCostsIsNotCollusion(t *testing.T) {
	t.Parallel()
	in := parallelInput()
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if a.CollusionDetected || a.Score < 50 {
		t.Fatalf("detected %v with score %v: %+v", a.CollusionDetected, a.Score, a.SuspectedGroups)
	}
	// Raw price changes are almost perfectly correlated; the reported correlation is of
	// cost-adjusted changes.
	if c := a.Dimensions.PriceConvergence.MeanPairwiseCorrelation; c == nil || math.Abs(*c) > 0.15 {
		t.Errorf("mean pairwise correlation %v, want about 0", c)
	}
	cw := a.Dimensions.ConsumerWelfare
	if cw.ProfitGainBasis == nil || *cw.ProfitGainBasis != "price" || cw.CostPassThrough == nil || math.Abs(*cw.CostPassThrough-1.3) > 0.05 {
		t.Errorf("welfare %+v", cw)
	}
	// The spec's price gain: (p̄ − p_N)/(p_M − p_N) over all observations.
	sum := 0.0
	for _, o := range in.Observations {
		sum += *o.Price
	}
	want := (sum/float64(len(in.Observations)) - 65) / 25
	if math.Abs(*cw.ProfitGain-want) > 1e-5 {
		t.Errorf("profit gain %v, want %v", *cw.ProfitGain, want)
	}
}

func TestAnalyzeProfitGainUsesProfitBasisWhenComplete(t *testing.T) {
	t.Parallel()
	in := smallMarket()
	in.Benchmarks = &Benchmarks{CompetitivePrice: f64(9), MonopolyPrice: f64(15), CompetitiveProfit: f64(300), MonopolyProfit: f64(800)}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var pi, lerner float64
	for _, o := range in.Observations {
		pi += (*o.Price - *o.Cost) * *o.Quantity
		lerner += (*o.Price - *o.Cost) / *o.Price
	}
	n := float64(len(in.Observations))
	cw := a.Dimensions.ConsumerWelfare
	if *cw.ProfitGainBasis != "profit" || math.Abs(*cw.ProfitGain-(pi/n-300)/500) > 1e-5 || math.Abs(*cw.MeanMarkup-lerner/n) > 1e-5 {
		t.Errorf("welfare %+v, want profit gain %v markup %v", cw, (pi/n-300)/500, lerner/n)
	}
	// One observation without a quantity: the price basis.
	in.Observations[0].Quantity = nil
	a, _ = Analyze(context.Background(), in)
	if *a.Dimensions.ConsumerWelfare.ProfitGainBasis != "price" {
		t.Errorf("basis %v, want price", *a.Dimensions.ConsumerWelfare.ProfitGainBasis)
	}
	// No benchmarks: gain and basis null; without costs the dimension is null.
	in.Benchmarks = nil
	a, _ = Analyze(context.Background(), in)
	if cw := a.Dimensions.ConsumerWelfare; cw.ProfitGain != nil || cw.ProfitGainBasis != nil || cw.Score != 1 || cw.MeanMarkup == nil {
		t.Errorf("welfare without benchmarks %+v", cw)
	}
	for i := range in.Observations {
		in.Observations[i].Cost = nil
	}
	a, _ = Analyze(context.Background(), in)
	if a.Dimensions.ConsumerWelfare != nil || a.Dimensions.MarketDivision != nil || a.Dimensions.Communication != nil {
		t.Errorf("dimensions without inputs should be null: %+v", a.Dimensions)
	}
}

func TestAnalyzeSupraCompetitiveDuopolyIsDetected(t *testing.T) {
	t.Parallel()
	in, tr := Generate(ScenarioCollusionFound, 42, GenParams{Periods: 300})
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if *tr.ProfitGain < 0.5 {
		t.Fatalf("seed 42 learned Δ = %v only", *tr.ProfitGain)
	}
	if !a.CollusionDetected || !slices.Equal(a.SuspectedGroups[0].Firms, tr.Members) {
		t.Fatalf("detected %v groups %+v", a.CollusionDetected, a.SuspectedGroups)
	}
	cw := a.Dimensions.ConsumerWelfare
	if math.Abs(*cw.ProfitGain-*tr.ProfitGain) > 0.05 || cw.Score >= 0.5 {
		t.Errorf("profit gain %v (truth %v), score %v", *cw.ProfitGain, *tr.ProfitGain, cw.Score)
	}
	if g := a.SuspectedGroups[0]; *g.From != *tr.From || *g.To != *tr.To || a.FlaggedPeriods[0].Reason != ReasonSupraCompetitive {
		t.Errorf("period %v–%v (truth %v–%v), flagged %+v", g.From, g.To, tr.From, tr.To, a.FlaggedPeriods)
	}
	// The same prices at the competitive benchmark are not collusion.
	for i := range in.Observations {
		in.Observations[i].Price = f64(*in.Benchmarks.CompetitivePrice * (1 + 0.01*math.Sin(float64(i))))
	}
	if a, _ := Analyze(context.Background(), in); a.CollusionDetected {
		t.Errorf("competitive prices flagged: %+v", a.SuspectedGroups)
	}
}

// ringInput: ring R1–R3 rotates wins on 30 tenders with covers 5–6 % above the winner;
// 20 competitive tenders among all six firms.
func ringInput() Input {
	r := rand.New(rand.NewPCG(9, 9))
	var bids []Bid
	ring := []string{"R1", "R2", "R3"}
	all := []string{"R1", "R2", "R3", "O1", "O2", "O3"}
	for j := 0; j < 50; j++ {
		id := "T" + string(rune('A'+j/26)) + string(rune('a'+j%26))
		date := DatePeriod(t0.AddDate(0, 0, 7*j))
		v := 1000 * math.Exp(r.NormFloat64())
		if j%5 < 3 {
			w := ring[j%3]
			bw := v * 1.2
			bids = append(bids, Bid{Tender: id, Firm: w, Amount: f64(bw), Won: bptr(true), Date: date})
			for _, f := range ring {
				if f != w {
					bids = append(bids, Bid{Tender: id, Firm: f, Amount: f64(bw * (1.05 + 0.01*r.Float64())), Won: bptr(false), Date: date})
				}
			}
			continue
		}
		var bs []Bid
		for _, f := range all {
			bs = append(bs, Bid{Tender: id, Firm: f, Amount: f64(v * math.Exp(0.06*r.NormFloat64())), Date: date})
		}
		low := 0
		for k := range bs {
			if *bs[k].Amount < *bs[low].Amount {
				low = k
			}
		}
		for k := range bs {
			bs[k].Won = bptr(k == low)
		}
		bids = append(bids, bs...)
	}
	return Input{MarketID: "roads-2026", Bids: bids}
}

func TestAnalyzeNamesBidRingAndFlagsItsTenders(t *testing.T) {
	t.Parallel()
	in := ringInput()
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !a.CollusionDetected || !slices.Equal(a.SuspectedGroups[0].Firms, []string{"R1", "R2", "R3"}) {
		t.Fatalf("detected %v groups %+v", a.CollusionDetected, a.SuspectedGroups)
	}
	bp := a.Dimensions.BidPatterns
	var rigged []string
	for j := 0; j < 50; j++ {
		if j%5 < 3 {
			rigged = append(rigged, "T"+string(rune('A'+j/26))+string(rune('a'+j%26)))
		}
	}
	// A competitive tender whose two lowest bids happen to be the ring's and whose RD is in
	// the upper quarter of the null is flagged too (about 1 in 20 here); allow two.
	hits, wrong := 0, 0
	for _, id := range bp.FlaggedTenderIDs {
		if slices.Contains(rigged, id) {
			hits++
		} else {
			wrong++
		}
	}
	if wrong > 2 {
		t.Errorf("%d competitive tenders flagged: %v", wrong, bp.FlaggedTenderIDs)
	}
	if hits < 27 || bp.FlaggedTenders != len(bp.FlaggedTenderIDs) || bp.Tenders != 50 {
		t.Errorf("flagged %d of 30 rigged tenders (%d usable)", hits, bp.Tenders)
	}
	if bp.RotationIndex == nil || *bp.RotationIndex < 0.95 {
		t.Errorf("rotation index %v, want about 1 (wins rotate evenly)", bp.RotationIndex)
	}
	g := a.SuspectedGroups[0]
	if g.From == nil || g.From.String() != t0.Format(time.DateOnly) || !slices.Contains(g.Signals, SignalCoverBidding) || !slices.Contains(g.Signals, SignalBidRotation) {
		t.Errorf("group %+v", g)
	}
	if a.Dimensions.PriceConvergence != nil || a.ObservationsAnalyzed != 0 || a.BidsAnalyzed != len(in.Bids) {
		t.Errorf("bids-only analysis has %+v", a.Dimensions)
	}
	// Without dates the group's period is null.
	for i := range in.Bids {
		in.Bids[i].Date = Period{}
	}
	a, _ = Analyze(context.Background(), in)
	if g := a.SuspectedGroups[0]; g.From != nil || g.To != nil || len(a.FlaggedPeriods) != 0 {
		t.Errorf("undated ring: from %v to %v flagged %+v", g.From, g.To, a.FlaggedPeriods)
	}
}

func TestAnalyzeLinksMessagesToCoordinatedPriceChanges(t *testing.T) {
	t.Parallel()
	// Three firms with calm noise raise prices together by 5 % every 25 periods, each time
	// after messages between them; a fourth firm does not; background messages are rare.
	r := rand.New(rand.NewPCG(3, 3))
	in := Input{MarketID: "m"}
	level := 100.0
	for t := 0; t < 400; t++ {
		if t > 0 && t%25 == 0 {
			level *= 1.05
			for _, pair := range [][2]string{{"A", "B"}, {"B", "C"}, {"A", "C"}} {
				in.Communications = append(in.Communications, Communication{From: pair[0], To: pair[1], Timestamp: IntPeriod(int64(t))})
			}
		}
		if r.Float64() < 0.05 {
			in.Communications = append(in.Communications, Communication{From: "A", To: "D", Timestamp: IntPeriod(int64(t))})
		}
		for _, f := range []string{"A", "B", "C", "D"} {
			p := level
			if f == "D" {
				p = 100
			}
			in.Observations = append(in.Observations, Observation{Firm: f, Period: IntPeriod(int64(t)), Price: f64(p * (1 + 0.002*r.NormFloat64()))})
		}
	}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	c := a.Dimensions.Communication
	if c == nil || c.CoordinatedChanges != 15 || c.PrecededChanges != 15 || c.MessagesBeforePriceChanges != 45 || c.Score >= 0.5 {
		t.Fatalf("communication %+v", c)
	}
	if !a.CollusionDetected || !slices.Equal(a.SuspectedGroups[0].Firms, []string{"A", "B", "C"}) || !slices.Contains(a.SuspectedGroups[0].Signals, SignalCommunication) {
		t.Errorf("groups %+v", a.SuspectedGroups)
	}
	if a.SuspectedGroups[0].Evidence.PrecededPriceChanges != 15 {
		t.Errorf("evidence %+v", a.SuspectedGroups[0].Evidence)
	}
}

func TestAnalyzeOutputMatchesSpecFieldsAndIsFinite(t *testing.T) {
	t.Parallel()
	a, err := Analyze(context.Background(), cartelInput())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"market_id", "collusion_detected", "score", "risk_band", "confidence", "recommended_action",
		"suspected_groups", "dimensions", "flagged_periods", "firms_analyzed", "observations_analyzed", "bids_analyzed", "method_version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	dims := m["dimensions"].(map[string]any)
	want := map[string][]string{
		"price_convergence": {"score", "coefficient_of_variation", "mean_pairwise_correlation", "synchronized_change_rate", "leader_follower"},
		"consumer_welfare":  {"score", "profit_gain", "profit_gain_basis", "mean_markup", "cost_pass_through"},
	}
	for d, keys := range want {
		obj := dims[d].(map[string]any)
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				t.Errorf("dimensions.%s lacks %s", d, k)
			}
		}
	}
	for _, d := range []string{"bid_patterns", "market_division", "communication"} {
		if v, ok := dims[d]; !ok || v != nil {
			t.Errorf("dimensions.%s = %v, want null", d, v)
		}
	}
	g := m["suspected_groups"].([]any)[0].(map[string]any)
	for _, k := range []string{"firms", "confidence", "from", "to", "signals"} {
		if _, ok := g[k]; !ok {
			t.Errorf("group lacks %s", k)
		}
	}
	if !strings.Contains(string(b), `"from":"2026-`) {
		t.Errorf("periods should keep the input's date form: %s", b)
	}
}

// randomInput builds a valid but messy market: gaps, repeated prices, zero costs and
// quantities, segments on some rows, bids, messages with all kinds of senders.
func randomInput(r *rand.Rand) Input {
	in := Input{MarketID: "messy"}
	firms := []string{"a", "b", "c", "d", "e"}[:2+r.IntN(4)]
	T := 10 + r.IntN(120)
	segs := []string{"", "north", "south"}
	useSeg := r.IntN(3) == 0
	for t := 0; t < T; t++ {
		for _, f := range firms {
			if r.IntN(6) == 0 && t > 0 {
				continue
			}
			ss := []string{""}
			if useSeg {
				ss = segs[1:]
			}
			for _, s := range ss {
				o := Observation{Firm: f, Period: IntPeriod(int64(t * 2)), Price: f64(float64(1 + r.IntN(3))), Segment: s}
				if r.IntN(2) == 0 {
					o.Cost = f64(float64(r.IntN(2)))
				}
				if r.IntN(2) == 0 {
					o.Quantity = f64(float64(r.IntN(3)))
				}
				in.Observations = append(in.Observations, o)
			}
		}
		if r.IntN(4) == 0 {
			in.Communications = append(in.Communications, Communication{From: firms[r.IntN(len(firms))], To: []string{"a", "zz"}[r.IntN(2)], Timestamp: IntPeriod(int64(r.IntN(3 * T)))})
		}
	}
	if r.IntN(2) == 0 {
		in.Benchmarks = &Benchmarks{CompetitivePrice: f64(1), MonopolyPrice: f64(3), CompetitiveProfit: f64(0), MonopolyProfit: f64(1)}
	}
	if r.IntN(2) == 0 {
		for j := 0; j < 3+r.IntN(10); j++ {
			for k := 0; k < 1+r.IntN(5); k++ {
				in.Bids = append(in.Bids, Bid{Tender: string(rune('A' + j)), Firm: string(rune('p' + k)), Amount: f64(float64(1 + r.IntN(2))), Won: bptr(k == 0)})
			}
		}
	}
	return in
}

func TestAnalyzeMessyInputsKeepInvariants(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for k := 0; k < 300; k++ {
		in := randomInput(r)
		a, err := Analyze(context.Background(), in)
		if err != nil {
			// Gaps can leave fewer than 10 periods only when T is small; nothing else may fail.
			if ie, ok := err.(*engine.InputError); !ok || ie.Code != CodeInvalidObservations {
				t.Fatalf("input %d: %v", k, err)
			}
			continue
		}
		if _, err := json.Marshal(a); err != nil {
			t.Fatalf("input %d: %v", k, err)
		}
		if a.Score < 0 || a.Score > 100 || a.Confidence < 0 || a.Confidence > 1 || a.CollusionDetected != (a.Score < 50) {
			t.Fatalf("input %d: score %v confidence %v detected %v", k, a.Score, a.Confidence, a.CollusionDetected)
		}
		for i := 1; i < len(a.SuspectedGroups); i++ {
			if a.SuspectedGroups[i].Confidence > a.SuspectedGroups[i-1].Confidence {
				t.Fatalf("input %d: groups not sorted by confidence", k)
			}
		}
		b, _ := Analyze(context.Background(), in)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("input %d: Analyze is not deterministic", k)
		}
	}
}
