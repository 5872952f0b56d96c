package convergence

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// evalCase is one generated market of the evaluation.
type evalCase struct {
	row    int
	seed   int64
	params GenParams
}

// evalRow is one line of a report: markets of one scenario under one parameter draw.
type evalRow struct {
	label    string
	scenario string
	count    int
	// gated rows fail the test when a target is missed; the others are reported only.
	gated  bool
	params func(r *rand.Rand) GenParams
}

// evalSettings describes one run.
type evalSettings struct {
	name     string
	seedBase int64
	rows     []evalRow
	// strict: the group, period and tender targets are 0.90 (else 0.85).
	strict bool
}

// positives are the scenarios with collusion; the others are negatives.
var positives = []string{ScenarioCollusionFound, ScenarioCartel, ScenarioBidRigging, ScenarioMarketDivision}

func (s evalSettings) cases() []evalCase {
	var out []evalCase
	r := rand.New(rand.NewPCG(uint64(s.seedBase), 11))
	seed := s.seedBase
	for i, row := range s.rows {
		n := int(math.Ceil(float64(row.count) * evalScale(row.scenario)))
		for range n {
			seed++
			p := GenParams{}
			if row.params != nil {
				p = row.params(r)
			}
			out = append(out, evalCase{row: i, seed: seed, params: p})
		}
	}
	return out
}

type evalOutcome struct {
	c     evalCase
	in    Input
	truth Truth
	a     Analysis
}

// rowReport is the tally of one row.
type rowReport struct {
	n, eligible, detected int // detected counts eligible markets (positives) or all (negatives)
	exact                 int // detected eligible markets whose top group is exactly the members
	bystander             int // detected eligible markets whose top group names a non-member
	jaccard               []float64
	periodN, periodOK     int       // markets with a known period; both bounds within 5 % of T
	boundErr              []float64 // |estimated − true| / T of both bounds
	tp, fp, fn            int       // flagged tenders vs rigged tenders
	notes                 []string
}

type evalReport struct {
	s       evalSettings
	markets int
	rows    []*rowReport
}

func inU(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

func runEvaluation(t *testing.T, s evalSettings) evalReport {
	t.Helper()
	cases := s.cases()
	out := make([]evalOutcome, len(cases))
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, len(cases))
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := cases[i]
				sc := s.rows[c.row].scenario
				in, tr := Generate(sc, c.seed, c.params)
				a, err := Analyze(context.Background(), in)
				if err != nil {
					errs <- fmt.Errorf("%s seed %d: %w", sc, c.seed, err)
					continue
				}
				out[i] = evalOutcome{c: c, in: in, truth: tr, a: a}
			}
		}()
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep := evalReport{s: s, markets: len(out), rows: make([]*rowReport, len(s.rows))}
	for i := range rep.rows {
		rep.rows[i] = &rowReport{}
	}
	for _, o := range out {
		sc := s.rows[o.c.row].scenario
		sr := rep.rows[o.c.row]
		sr.n++
		a := o.a
		// Invariants every analysis must satisfy, whatever the scenario.
		if a.CollusionDetected != (a.Score < 50) || a.CollusionDetected != (len(a.SuspectedGroups) > 0) {
			t.Errorf("%s seed %d: detected %v with score %v and %d groups", sc, o.c.seed, a.CollusionDetected, a.Score, len(a.SuspectedGroups))
		}
		if !slices.Contains(positives, sc) {
			sr.eligible++
			if a.CollusionDetected {
				sr.detected++
				sr.notes = append(sr.notes, fmt.Sprintf("FA seed %d: %v signals %v", o.c.seed, a.SuspectedGroups[0].Firms, a.SuspectedGroups[0].Signals))
			}
			continue
		}
		if sc == ScenarioCollusionFound && !(o.truth.ProfitGain != nil && *o.truth.ProfitGain >= 0.5) {
			continue // the target is stated for Δ ≥ 0.5
		}
		sr.eligible++
		if !a.CollusionDetected {
			sr.notes = append(sr.notes, fmt.Sprintf("miss seed %d: %s", o.c.seed, describeTruth(o.truth)))
			continue
		}
		sr.detected++
		g := a.SuspectedGroups[0]
		if slices.Equal(g.Firms, o.truth.Members) {
			sr.exact++
		} else {
			sr.notes = append(sr.notes, fmt.Sprintf("group seed %d: %v, truth %v", o.c.seed, g.Firms, o.truth.Members))
		}
		sr.jaccard = append(sr.jaccard, jaccard(g.Firms, o.truth.Members))
		if !subset(g.Firms, o.truth.Members) {
			sr.bystander++
		}
		if o.truth.FromIndex >= 0 && g.From != nil && g.To != nil {
			idx := map[string]int{}
			for _, ob := range o.in.Observations {
				if _, ok := idx[ob.Period.raw]; !ok {
					idx[ob.Period.raw] = len(idx)
				}
			}
			T := float64(o.truth.Periods)
			ef := math.Abs(float64(idx[g.From.raw]-o.truth.FromIndex)) / T
			et := math.Abs(float64(idx[g.To.raw]-o.truth.ToIndex)) / T
			sr.periodN++
			sr.boundErr = append(sr.boundErr, ef, et)
			if ef <= 0.05 && et <= 0.05 {
				sr.periodOK++
			} else {
				sr.notes = append(sr.notes, fmt.Sprintf("period seed %d: [%d, %d], truth [%d, %d]", o.c.seed, idx[g.From.raw], idx[g.To.raw], o.truth.FromIndex, o.truth.ToIndex))
			}
		}
		if sc == ScenarioBidRigging {
			flagged := a.Dimensions.BidPatterns.FlaggedTenderIDs
			for _, id := range flagged {
				if slices.Contains(o.truth.RiggedTenders, id) {
					sr.tp++
				} else {
					sr.fp++
				}
			}
			for _, id := range o.truth.RiggedTenders {
				if !slices.Contains(flagged, id) {
					sr.fn++
				}
			}
		}
	}
	return rep
}

func describeTruth(tr Truth) string {
	pg := "–"
	if tr.ProfitGain != nil {
		pg = fmt.Sprintf("%.2f", *tr.ProfitGain)
	}
	return fmt.Sprintf("members %v periods %d tenders %d Δ %s", tr.Members, tr.Periods, tr.Tenders, pg)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func meanOf(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func pct(a, b int) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%d/%d = %.1f%%", a, b, 100*float64(a)/float64(b))
}

func num(x float64, format string) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf(format, x)
}

// table is the run's report as a Markdown table (pasted into docs/methods/convergence.md).
func (r evalReport) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d markets)\n\n", r.s.name, r.markets)
	fmt.Fprintf(&b, "| row | markets | detected (positives) / false alarms (negatives) | exact group | group names a bystander | mean Jaccard | period bounds within 5 %% of T | median bound error | tender precision | tender recall |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for i, row := range r.s.rows {
		s := r.rows[i]
		label := row.label
		if !row.gated {
			label += " (reported only)"
		}
		kind := "detected "
		if !slices.Contains(positives, row.scenario) {
			kind = "false alarms "
		}
		exact, bystander := pct(s.exact, s.detected), pct(s.bystander, s.detected)
		if kind != "detected " {
			exact, bystander = "—", "—"
		}
		fmt.Fprintf(&b, "| %s | %d | %s%s | %s | %s | %s | %s | %s | %s | %s |\n", label, s.n, kind, pct(s.detected, s.eligible),
			exact, bystander, num(meanOf(s.jaccard), "%.3f"), pct(s.periodOK, s.periodN),
			num(median(s.boundErr), "%.4f"), num(ratio(s.tp, s.tp+s.fp), "%.3f"), num(ratio(s.tp, s.tp+s.fn), "%.3f"))
	}
	for i, row := range r.s.rows {
		for k, n := range r.rows[i].notes {
			if k == 4 {
				fmt.Fprintf(&b, "  … %s: %d more\n", row.label, len(r.rows[i].notes)-k)
				break
			}
			fmt.Fprintf(&b, "  - %s %s\n", row.label, n)
		}
	}
	return b.String()
}

// check fails the test when a target of a gated row is missed: the spec's detection
// ≥ 90 % (of the eligible markets of every collusive row) and false alarms ≤ 5 % (of every
// negative row); and the suspected group named exactly, both period bounds within 5 % of the
// series, and flagged tenders' precision and recall, each ≥ 0.90 (strict runs) or ≥ 0.85.
func (r evalReport) check(t *testing.T) {
	t.Helper()
	bar := 0.85
	if r.s.strict {
		bar = 0.9
	}
	for i, row := range r.s.rows {
		s := r.rows[i]
		if !row.gated || s.eligible == 0 {
			continue
		}
		rate := ratio(s.detected, s.eligible)
		name := r.s.name + ": " + row.label
		if !slices.Contains(positives, row.scenario) {
			if rate > 0.05 {
				t.Errorf("%s: false-alarm rate %.3f > 0.05", name, rate)
			}
			continue
		}
		if !(rate >= 0.9) {
			t.Errorf("%s: detection rate %.3f < 0.90", name, rate)
		}
		if v := ratio(s.exact, s.detected); !(v >= bar) {
			t.Errorf("%s: exact-group rate %.3f < %.2f", name, v, bar)
		}
		if s.periodN > 0 && row.scenario != ScenarioCollusionFound {
			if v := ratio(s.periodOK, s.periodN); !(v >= bar) {
				t.Errorf("%s: period accuracy %.3f < %.2f", name, v, bar)
			}
		}
		if row.scenario == ScenarioBidRigging {
			if p, rc := ratio(s.tp, s.tp+s.fp), ratio(s.tp, s.tp+s.fn); !(p >= bar && rc >= bar) {
				t.Errorf("%s: flagged tenders precision %.3f recall %.3f < %.2f", name, p, rc, bar)
			}
		}
	}
}

// Parameter draws shared by the runs.
func noBench(r *rand.Rand) GenParams { return GenParams{Benchmarks: BenchNone} }

// mainSettings is the evaluation the method was developed against: the generator's
// default ranges.
var mainSettings = evalSettings{
	name: "main", seedBase: 1000, strict: true,
	rows: []evalRow{
		{"collusion_found (Q-learning)", ScenarioCollusionFound, 60, true, nil},
		{"collusion_found without benchmarks", ScenarioCollusionFound, 20, false, noBench},
		{"cartel", ScenarioCartel, 80, true, nil},
		{"cartel without variance collapse, messages only", ScenarioCartel, 40, false, func(r *rand.Rand) GenParams {
			return GenParams{Calm: 1, Messages: 1, NoiseSD: 0.005, Benchmarks: BenchNone}
		}},
		{"bid_rigging", ScenarioBidRigging, 80, true, nil},
		{"market_division", ScenarioMarketDivision, 40, true, nil},
		{"competitive", ScenarioCompetitive, 100, true, nil},
		{"parallel_cost_shock", ScenarioParallelCostShock, 100, true, nil},
		{"demand_shock", ScenarioDemandShock, 50, true, nil},
		{"competitive_tenders", ScenarioCompetitiveTenders, 80, true, nil},
		{"regional_monopolies", ScenarioRegionalMonopolies, 40, true, nil},
		{"home_markets", ScenarioHomeMarkets, 40, true, nil},
	},
}

// stressSettings widens every range beyond the main run (other Q-learning parameters from
// the paper's grid, more exploration, price-only benchmarks, short and long series, more
// firms, noisier and more persistent price noise, less calm cartels ending in price wars,
// bid rings with outsiders, wider cover bids and fewer tenders). It was used while the
// method was developed.
var stressSettings = evalSettings{
	name: "stress", seedBase: 7_000_000,
	rows: []evalRow{
		{"collusion_found (Q-learning)", ScenarioCollusionFound, 40, true, func(r *rand.Rand) GenParams {
			p := stressBase(r)
			p.Q = QParams{Alpha: inU(r, 0.05, 0.25), Beta: inU(r, 1e-5, 2e-5), Delta: inU(r, 0.9, 0.97)}
			p.Explore = inU(r, 0.001, 0.05)
			return p
		}},
		{"cartel", ScenarioCartel, 60, true, func(r *rand.Rand) GenParams {
			p := stressBase(r)
			p.Firms = 4 + r.IntN(7)
			p.Calm = inU(r, 0.2, 0.45)
			p.PriceWar = r.IntN(2) == 0
			p.Duration = inU(r, 0.1, 0.5)
			p.CostSpread = 0.03
			return p
		}},
		{"bid_rigging", ScenarioBidRigging, 60, true, func(r *rand.Rand) GenParams {
			return GenParams{Tenders: 25 + r.IntN(56), Outsiders: true, CoverSpread: 0.03, CoverGap: 0.12}
		}},
		{"market_division", ScenarioMarketDivision, 30, true, func(r *rand.Rand) GenParams {
			p := stressBase(r)
			p.Duration = inU(r, 0.3, 0.6)
			return p
		}},
		{"competitive", ScenarioCompetitive, 80, true, stressMarket},
		{"parallel_cost_shock", ScenarioParallelCostShock, 80, true, stressMarket},
		{"demand_shock", ScenarioDemandShock, 40, true, stressMarket},
		{"competitive_tenders", ScenarioCompetitiveTenders, 60, true, func(r *rand.Rand) GenParams {
			return GenParams{Tenders: 25 + r.IntN(100), CostSpread: 0.08}
		}},
		{"regional_monopolies", ScenarioRegionalMonopolies, 30, true, stressBase},
		{"home_markets", ScenarioHomeMarkets, 30, true, stressBase},
	},
}

func stressBase(r *rand.Rand) GenParams {
	p := GenParams{Periods: 100 + r.IntN(1100), NoiseSD: inU(r, 0.01, 0.05), NoiseAR: inU(r, 0.01, 0.8)}
	if r.IntN(3) == 0 {
		p.Benchmarks = BenchPrice
	}
	return p
}

func stressMarket(r *rand.Rand) GenParams {
	p := stressBase(r)
	p.Firms = 2 + r.IntN(9)
	p.CostSpread = 0.03
	return p
}

// heldOutSettings was fixed before its first run, after the method was frozen, with seeds
// and settings not used in development: Q-learning with a coarser price grid and other ξ,
// longer discounting, cartels of up to 9 firms with message metadata always present and
// higher price levels, bid rings of up to 6 with outsiders in half of the markets, more
// tenders, a division that may end before the series does.
var heldOutSettings = evalSettings{
	name: "held-out", seedBase: 53_000_000,
	rows: []evalRow{
		{"collusion_found (Q-learning)", ScenarioCollusionFound, 40, true, func(r *rand.Rand) GenParams {
			p := heldBase(r)
			p.Q = QParams{Alpha: inU(r, 0.1, 0.2), Beta: inU(r, 1.5e-5, 3e-5), Delta: inU(r, 0.93, 0.99),
				Grid: []int{10, 15}[r.IntN(2)], Xi: inU(r, 0.05, 0.15)}
			p.Explore = inU(r, 0.0005, 0.03)
			return p
		}},
		{"cartel", ScenarioCartel, 60, true, func(r *rand.Rand) GenParams {
			p := heldBase(r)
			p.Firms = 5 + r.IntN(5)
			p.Calm = inU(r, 0.15, 0.4)
			p.Gamma = inU(r, 0.5, 1)
			p.PriceWar = r.IntN(2) == 0
			p.Duration = inU(r, 0.15, 0.35)
			p.Messages = 1
			p.CostSpread = inU(r, 0.01, 0.03)
			return p
		}},
		{"bid_rigging", ScenarioBidRigging, 60, true, func(r *rand.Rand) GenParams {
			return GenParams{Tenders: 30 + r.IntN(121), Firms: 8 + r.IntN(6), RingSize: 3 + r.IntN(4), Outsiders: r.IntN(2) == 0,
				CoverSpread: inU(r, 0.015, 0.03), CoverGap: inU(r, 0.06, 0.1)}
		}},
		{"market_division", ScenarioMarketDivision, 30, true, func(r *rand.Rand) GenParams {
			p := heldBase(r)
			p.Firms = 3 + r.IntN(4)
			p.Onset = inU(r, 0.3, 0.6)
			if r.IntN(2) == 0 {
				p.Duration = inU(r, 0.3, 0.4)
			}
			return p
		}},
		{"competitive", ScenarioCompetitive, 80, true, heldMarket},
		{"parallel_cost_shock", ScenarioParallelCostShock, 80, true, heldMarket},
		{"demand_shock", ScenarioDemandShock, 40, true, heldMarket},
		{"competitive_tenders", ScenarioCompetitiveTenders, 60, true, func(r *rand.Rand) GenParams {
			return GenParams{Tenders: 30 + r.IntN(121), Firms: 6 + r.IntN(10), CostSpread: inU(r, 0.03, 0.1)}
		}},
		{"regional_monopolies", ScenarioRegionalMonopolies, 30, true, heldBase},
		{"home_markets", ScenarioHomeMarkets, 30, true, heldBase},
	},
}

func heldBase(r *rand.Rand) GenParams {
	p := GenParams{Periods: 150 + r.IntN(851), NoiseSD: inU(r, 0.005, 0.04), NoiseAR: inU(r, 0.01, 0.7)}
	if r.IntN(2) == 0 {
		p.Benchmarks = BenchPrice
	}
	return p
}

func heldMarket(r *rand.Rand) GenParams {
	p := heldBase(r)
	p.Firms = 2 + r.IntN(7)
	p.CostSpread = inU(r, 0.01, 0.04)
	return p
}

// TestEvaluation runs the main, stress and held-out evaluations; every gated target gates.
func TestEvaluation(t *testing.T) {
	if testing.Short() {
		t.Skip("long accuracy evaluation; run without -short")
	}
	t.Parallel()
	for _, s := range []evalSettings{mainSettings, stressSettings, heldOutSettings} {
		rep := runEvaluation(t, s)
		t.Log("\n" + rep.table())
		rep.check(t)
	}
}
