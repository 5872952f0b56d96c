package convergence

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"riskapi/engine"
)

// The bid-ring evaluation: rings as the literature describes them beyond the generator's
// original ring (rings of three, members that do not all cover, outsiders bidding from
// their own costs, random rotation; 20–60 tenders among 5–8 firms) and the two hard
// negatives that must stay quiet (competitive tenders with 6–12 % cost dispersion, and
// capacity-constrained firms that take turns). docs/methods/convergence.md §10 reports it.
//
// The default run screens bidEvalQuick markets per row (a few seconds) and holds the
// regression floor below; CONVERGENCE_BID_EVAL=full runs bidEvalFull markets per row (about
// 20 s on 2 cores) and gates the targets; CONVERGENCE_BID_SETS (comma-separated set names)
// runs only the named sets. The targets are not all met yet (detection in the second
// held-out run's partial-cover and combined classes, its thin rings: 93.3 and 94.0 %
// against 95 %, the table in docs/methods/convergence.md §10), so the full run fails until
// they are.

const (
	bidEvalQuick = 40
	bidEvalFull  = 300
)

// bidTargets are the rates a run must reach on every row: rings detected and named exactly
// (of all markets of the row), and the false-alarm rate of each negative row.
type bidTargets struct{ detected, exact, falseAlarms float64 }

var (
	// bidTarget is the goal, gated by the full run.
	bidTarget = bidTargets{detected: 0.95, exact: 0.90, falseAlarms: 0.03}
	// bidFloor is what the method reaches today on the quick run's markets, less a margin:
	// a change that falls below it is a regression.
	bidFloor = bidTargets{detected: 0.90, exact: 0.85, falseAlarms: 0.03}
	// bidShortFloor is the floor of the 20-market run (-short, race detector): 20 markets
	// cannot resolve a 3 % false-alarm rate (one false alarm is 5 %; at the full runs'
	// 0.3–1.7 %, two of 20 happen in a few per cent of rows), so it allows two per row, and
	// three misses of 20.
	bidShortFloor = bidTargets{detected: 0.85, exact: 0.80, falseAlarms: 0.10}
)

type bidEvalRow struct {
	label    string
	scenario string
	params   func(r *rand.Rand) GenParams
}

type bidEvalSet struct {
	name     string
	seedBase int64
	rows     []bidEvalRow
	// floor, when set, lowers the quick and short runs' floor for this set (the lower of the
	// two rates, the higher false-alarm rate).
	floor *bidTargets
	// fullOnly keeps the set out of the quick and short runs (a held-out set that is run
	// only to report: the full run, or CONVERGENCE_BID_SETS naming it).
	fullOnly bool
}

type bidRowTally struct {
	n, detected, exact, subset, unusable int
	tp, fp, fn                           int
	notes                                []string
}

func ringBase(r *rand.Rand) GenParams {
	return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(41), RingSize: 3 + r.IntN(3),
		CoverShare: 1, RiggedShare: inU(r, 0.6, 1)}
}

// bidTuned are the parameter ranges the ring search was developed on.
var bidTuned = bidEvalSet{name: "tuned", seedBase: 90_000_000, rows: []bidEvalRow{
	{"ring of 3", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := ringBase(r)
		p.RingSize = 3
		return p
	}},
	{"partial covers 60–95 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := ringBase(r)
		p.CoverShare = inU(r, 0.6, 0.95)
		return p
	}},
	{"outsiders 10–45 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := ringBase(r)
		p.OutsiderRate = 0.45
		return p
	}},
	{"random rotation", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := ringBase(r)
		p.RandomRotation = true
		return p
	}},
	{"all combined", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := ringBase(r)
		p.CoverShare = inU(r, 0.6, 0.95)
		p.OutsiderRate = 0.45
		p.RandomRotation = true
		return p
	}},
	{"competitive 6–12 % (negative)", ScenarioCompetitiveTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(41), CostSpread: inU(r, 0.06, 0.12), TenderNoise: inU(r, 0.06, 0.12)}
	}},
	{"capacity-constrained (negative)", ScenarioCapacityTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(41)}
	}},
}}

// stressBids widens every range and uses other seeds: rings of 3–6 among 5–12 firms over
// 20–100 tenders, covers by 50–100 % of the members with gaps up to 12 % and spreads of
// 1–4 %, outsiders in 5–60 % of the tenders, tender noise 3–10 %; competitive dispersion
// 5–14 %; capacity penalties 3–30 % with backlogs decaying 0.2–0.9 among 4–12 firms. It was
// run while the method was developed (it showed the outsiders that joined the ring, which
// led to the participation floor).
var stressBids = bidEvalSet{name: "stress", seedBase: 97_000_000, rows: []bidEvalRow{
	{"ring of 3", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := heldRing(r)
		p.RingSize = 3
		p.CoverShare = 1
		p.OutsiderRate = 0
		return p
	}},
	{"partial covers 50–100 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := heldRing(r)
		p.OutsiderRate = 0
		return p
	}},
	{"outsiders 5–60 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := heldRing(r)
		p.CoverShare = 1
		p.RandomRotation = false
		return p
	}},
	{"random rotation", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := heldRing(r)
		p.CoverShare, p.OutsiderRate, p.RandomRotation = 1, 0, true
		return p
	}},
	{"all combined", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := heldRing(r)
		p.RandomRotation = true
		return p
	}},
	{"competitive 5–14 % (negative)", ScenarioCompetitiveTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 4 + r.IntN(9), Tenders: 20 + r.IntN(81), CostSpread: inU(r, 0.05, 0.14), TenderNoise: inU(r, 0.05, 0.14)}
	}},
	{"capacity-constrained (negative)", ScenarioCapacityTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 4 + r.IntN(9), Tenders: 20 + r.IntN(81), CapacityPenalty: inU(r, 0.03, 0.3),
			CapacityDecay: inU(r, 0.2, 0.9), CostSpread: inU(r, 0.02, 0.08)}
	}},
}}

// heldOutBids was fixed after the method was frozen and run once: other seeds, and ranges
// that differ from both runs above: rings of 3–6 among 5–10 firms over 20–80 tenders that
// rig 50–100 % of them, covers by 55–95 % of the members with gaps of 2 % up to 3–11 % and
// spreads of 1–3.5 %, outsiders in 5–50 % of the tenders, tender noise 4–12 %, strict or
// random rotation; competitive dispersion 4–14 % with tender noise 6–14 %
// among 4–10 firms; capacity penalties 3–30 %, backlogs decaying 0.2–0.9, noise 3–10 %.
var heldOutBids = bidEvalSet{name: "held-out", seedBase: 131_000_000, rows: []bidEvalRow{
	{"ring of 3", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := finalRing(r)
		p.RingSize, p.CoverShare, p.OutsiderRate = 3, 1, 0
		return p
	}},
	{"partial covers 55–95 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := finalRing(r)
		p.CoverShare, p.OutsiderRate = inU(r, 0.55, 0.95), 0
		return p
	}},
	{"outsiders 5–50 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := finalRing(r)
		p.CoverShare = 1
		return p
	}},
	{"random rotation", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := finalRing(r)
		p.CoverShare, p.OutsiderRate, p.RandomRotation = 1, 0, true
		return p
	}},
	{"all combined", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := finalRing(r)
		p.CoverShare, p.RandomRotation = inU(r, 0.55, 0.95), true
		return p
	}},
	{"competitive 4–14 % (negative)", ScenarioCompetitiveTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 4 + r.IntN(7), Tenders: 20 + r.IntN(61), CostSpread: inU(r, 0.04, 0.14), TenderNoise: inU(r, 0.06, 0.14)}
	}},
	{"capacity-constrained (negative)", ScenarioCapacityTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 4 + r.IntN(7), Tenders: 20 + r.IntN(61), CapacityPenalty: inU(r, 0.03, 0.3),
			CapacityDecay: inU(r, 0.2, 0.9), TenderNoise: inU(r, 0.03, 0.1)}
	}},
}}

// heldOut2Bids is a second held-out set, fixed before the two-member (pair) evidence of
// §5 was added and run once on the method before it: new seeds, and ranges shifted inside
// the ordinary rings' ranges towards their hard ends: 5–8 firms over 20–50 tenders, rings of
// three (of three or four in the combined class, one market in three), rigging 55–95 % of
// the tenders, covers by 60–85 % of the members, outsiders in 20–45 % of the tenders
// (each outsider's share from [0.2, 0.45]), cover gaps of 2 % up to 4–10 %, spreads 1–3 %,
// tender noise 4–10 %, random rotation in the combined class; competitive dispersion
// 6–12 % among 5–8 firms over 20–60 tenders; capacity penalties 5–25 %, backlogs decaying
// 0.3–0.9, among 5–8 firms over 20–60 tenders.
var heldOut2Bids = bidEvalSet{name: "held-out 2", seedBase: 211_000_000, floor: &bidTargets{detected: 0.80, exact: 0.75, falseAlarms: 0.03}, rows: []bidEvalRow{
	{"ring of 3", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := secondRing(r)
		p.CoverShare, p.OutsiderRate = 1, 0
		return p
	}},
	{"partial covers 60–85 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := secondRing(r)
		p.OutsiderRate = 0
		return p
	}},
	{"outsiders 20–45 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := secondRing(r)
		p.CoverShare = 1
		return p
	}},
	{"random rotation", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := secondRing(r)
		p.CoverShare, p.OutsiderRate, p.RandomRotation = 1, 0, true
		return p
	}},
	{"all combined", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := secondRing(r)
		p.RandomRotation = true
		if r.IntN(3) == 0 {
			p.RingSize = 4
		}
		return p
	}},
	{"competitive 6–12 % (negative)", ScenarioCompetitiveTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(41), CostSpread: inU(r, 0.06, 0.12), TenderNoise: inU(r, 0.06, 0.12)}
	}},
	{"capacity-constrained (negative)", ScenarioCapacityTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(41), CapacityPenalty: inU(r, 0.05, 0.25),
			CapacityDecay: inU(r, 0.3, 0.9), TenderNoise: inU(r, 0.04, 0.1)}
	}},
}}

// heldOut3Bids is a third held-out set, fixed and committed on 2026-11-27 before that day's
// changes of §5 (the contiguity rule, the qualifying growth, the untrimmed statistic) were
// developed, and run only to report (never while developing):
// new seeds, and the literature's ordinary ranges: rings of 3–5 among 5–8 firms over 20–60
// tenders rigging 55–100 % of them, covers by 60–95 % of the members, outsiders in 10–45 %
// of the tenders, cover gaps of 2 % up to 3–10 %, spreads 1–3 %, tender noise 4–10 %,
// strict or random rotation (one market in two); competitive dispersion 6–12 % (efficiency
// and tender noise) among 5–8 firms over 20–60 tenders; capacity penalties 5–25 %, backlogs
// decaying 0.3–0.9, tender noise 4–10 %, 5–8 firms over 20–60 tenders. It runs only in the
// full run or when CONVERGENCE_BID_SETS names it.
var heldOut3Bids = bidEvalSet{name: "held-out 3", seedBase: 307_000_000, fullOnly: true, rows: []bidEvalRow{
	{"ring of 3", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := thirdRing(r)
		p.RingSize, p.CoverShare, p.OutsiderRate = 3, 1, 0
		return p
	}},
	{"partial covers 60–95 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := thirdRing(r)
		p.OutsiderRate = 0
		return p
	}},
	{"outsiders 10–45 %", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := thirdRing(r)
		p.CoverShare = 1
		return p
	}},
	{"random rotation", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := thirdRing(r)
		p.CoverShare, p.OutsiderRate, p.RandomRotation = 1, 0, true
		return p
	}},
	{"all combined", ScenarioBidRigging, func(r *rand.Rand) GenParams {
		p := thirdRing(r)
		p.RandomRotation = true
		return p
	}},
	{"competitive 6–12 % (negative)", ScenarioCompetitiveTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(41), CostSpread: inU(r, 0.06, 0.12), TenderNoise: inU(r, 0.04, 0.1)}
	}},
	{"capacity-constrained (negative)", ScenarioCapacityTenders, func(r *rand.Rand) GenParams {
		return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(41), CapacityPenalty: inU(r, 0.05, 0.25),
			CapacityDecay: inU(r, 0.3, 0.9), TenderNoise: inU(r, 0.04, 0.1)}
	}},
}}

// thirdRing draws the third held-out set's ring markets (heldOut3Bids).
func thirdRing(r *rand.Rand) GenParams {
	return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(41), RingSize: 3 + r.IntN(3),
		CoverShare: inU(r, 0.6, 0.95), OutsiderRate: 0.45, OutsiderRateMin: 0.1, RiggedShare: inU(r, 0.55, 1),
		CoverGap: inU(r, 0.03, 0.1), CoverSpread: inU(r, 0.01, 0.03), TenderNoise: inU(r, 0.04, 0.1),
		RandomRotation: r.IntN(2) == 0}
}

// secondRing draws the second held-out set's ring markets (heldOut2Bids).
func secondRing(r *rand.Rand) GenParams {
	return GenParams{Firms: 5 + r.IntN(4), Tenders: 20 + r.IntN(31), RingSize: 3,
		CoverShare: inU(r, 0.6, 0.85), OutsiderRate: 0.45, OutsiderRateMin: 0.2, RiggedShare: inU(r, 0.55, 0.95),
		CoverGap: inU(r, 0.04, 0.1), CoverSpread: inU(r, 0.01, 0.03), TenderNoise: inU(r, 0.04, 0.1)}
}

func finalRing(r *rand.Rand) GenParams {
	return GenParams{Firms: 5 + r.IntN(6), Tenders: 20 + r.IntN(61), RingSize: 3 + r.IntN(4),
		OutsiderRate: inU(r, 0.1, 0.5), OutsiderRateMin: 0.05, RiggedShare: inU(r, 0.5, 1),
		CoverGap: inU(r, 0.03, 0.11), CoverSpread: inU(r, 0.01, 0.035), TenderNoise: inU(r, 0.04, 0.12),
		RandomRotation: r.IntN(2) == 0}
}

func heldRing(r *rand.Rand) GenParams {
	return GenParams{Firms: 5 + r.IntN(8), Tenders: 20 + r.IntN(81), RingSize: 3 + r.IntN(4),
		CoverShare: inU(r, 0.5, 1), OutsiderRate: inU(r, 0.05, 0.6), OutsiderRateMin: 0.05,
		RiggedShare: inU(r, 0.5, 1), CoverGap: inU(r, 0.04, 0.12), CoverSpread: inU(r, 0.01, 0.04),
		TenderNoise: inU(r, 0.03, 0.1)}
}

func negativeRow(sc string) bool { return !slices.Contains(positives, sc) }

// runBidEval analyses count markets per row of s; an input with fewer than five usable
// tenders (INVALID_BIDS) counts as analysed and not detected.
func runBidEval(t *testing.T, s bidEvalSet, count int) []bidRowTally {
	t.Helper()
	type job struct {
		row  int
		seed int64
		p    GenParams
	}
	var jobs []job
	r := rand.New(rand.NewPCG(uint64(s.seedBase), 5))
	seed := s.seedBase
	for i, row := range s.rows {
		for range count {
			seed++
			jobs = append(jobs, job{i, seed, row.params(r)})
		}
	}
	tallies := make([]bidRowTally, len(s.rows))
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan job)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range next {
				row := s.rows[jb.row]
				in, tr := Generate(row.scenario, jb.seed, jb.p)
				a, err := Analyze(context.Background(), in)
				mu.Lock()
				tl := &tallies[jb.row]
				tl.n++
				var ie *engine.InputError
				switch {
				case errors.As(err, &ie) && ie.Code == CodeInvalidBids:
					tl.unusable++
					if !negativeRow(row.scenario) {
						tl.notes = append(tl.notes, fmt.Sprintf("unusable seed %d", jb.seed))
					}
				case err != nil:
					t.Errorf("%s seed %d: %v", row.label, jb.seed, err)
				case negativeRow(row.scenario):
					if a.CollusionDetected {
						tl.detected++
						tl.notes = append(tl.notes, fmt.Sprintf("FA seed %d: %v z-evidence %+v", jb.seed, a.SuspectedGroups[0].Firms, a.SuspectedGroups[0].Evidence.Members))
					}
				case !a.CollusionDetected:
					tl.notes = append(tl.notes, fmt.Sprintf("miss seed %d: %s %+v", jb.seed, describeTruth(tr), jb.p))
				default:
					tl.detected++
					g := a.SuspectedGroups[0]
					if slices.Equal(g.Firms, tr.Members) {
						tl.exact++
					} else {
						tl.notes = append(tl.notes, fmt.Sprintf("group seed %d: %v, truth %v", jb.seed, g.Firms, tr.Members))
					}
					if subset(g.Firms, tr.Members) {
						tl.subset++
					}
					flagged := a.Dimensions.BidPatterns.FlaggedTenderIDs
					for _, id := range flagged {
						if slices.Contains(tr.RiggedTenders, id) {
							tl.tp++
						} else {
							tl.fp++
						}
					}
					for _, id := range tr.RiggedTenders {
						if !slices.Contains(flagged, id) {
							tl.fn++
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, jb := range jobs {
		next <- jb
	}
	close(next)
	wg.Wait()
	return tallies
}

func bidEvalTable(s bidEvalSet, ts []bidRowTally) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (seeds from %d)\n\n", s.name, s.seedBase+1)
	fmt.Fprintf(&b, "| class | markets | detected / false alarms | named exactly | group within the ring | tender precision | tender recall |\n|---|---|---|---|---|---|---|\n")
	for i, row := range s.rows {
		tl := ts[i]
		if negativeRow(row.scenario) {
			fmt.Fprintf(&b, "| %s | %d | false alarms %s | | | | |\n", row.label, tl.n, pct(tl.detected, tl.n))
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | detected %s | %s | %s | %s | %s |\n", row.label, tl.n, pct(tl.detected, tl.n),
			pct(tl.exact, tl.n), pct(tl.subset, tl.detected), num(ratio(tl.tp, tl.tp+tl.fp), "%.3f"), num(ratio(tl.tp, tl.tp+tl.fn), "%.3f"))
	}
	for i, row := range s.rows {
		for k, n := range ts[i].notes {
			if k == 6 {
				fmt.Fprintf(&b, "  … %s: %d more\n", row.label, len(ts[i].notes)-k)
				break
			}
			fmt.Fprintf(&b, "  - %s %s\n", row.label, n)
		}
	}
	return b.String()
}

// checkBidEval fails the test when a row misses want: rings detected and named exactly (of
// all markets of the row), false alarms on each negative row.
func checkBidEval(t *testing.T, s bidEvalSet, ts []bidRowTally, want bidTargets) {
	t.Helper()
	for i, row := range s.rows {
		tl := ts[i]
		name := s.name + ": " + row.label
		if negativeRow(row.scenario) {
			if v := ratio(tl.detected, tl.n); v > want.falseAlarms {
				t.Errorf("%s: false-alarm rate %.3f > %.2f", name, v, want.falseAlarms)
			}
			continue
		}
		if v := ratio(tl.detected, tl.n); !(v >= want.detected) {
			t.Errorf("%s: detection rate %.3f < %.2f", name, v, want.detected)
		}
		if v := ratio(tl.exact, tl.n); !(v >= want.exact) {
			t.Errorf("%s: exact-ring rate %.3f < %.2f", name, v, want.exact)
		}
	}
}

// TestBidRingEvaluation runs the tuned and held-out bid-ring evaluations: quick by default
// (regression floor), CONVERGENCE_BID_EVAL=full at the reported sizes (targets).
func TestBidRingEvaluation(t *testing.T) {
	t.Parallel()
	count, want := bidEvalQuick, bidFloor
	if testing.Short() || raceEnabled {
		count, want = 20, bidShortFloor // the race detector slows the search about tenfold
	}
	if os.Getenv("CONVERGENCE_BID_EVAL") == "full" {
		count, want = bidEvalFull, bidTarget
	}
	only := os.Getenv("CONVERGENCE_BID_SETS") // comma-separated set names; empty runs all
	for _, s := range []bidEvalSet{bidTuned, stressBids, heldOutBids, heldOut2Bids, heldOut3Bids} {
		named := slices.Contains(strings.Split(only, ","), s.name)
		if only != "" && !named || s.fullOnly && count < bidEvalFull && !named {
			continue
		}
		ts := runBidEval(t, s, count)
		t.Log("\n" + bidEvalTable(s, ts))
		w := want
		if s.floor != nil && count < bidEvalFull {
			w = bidTargets{detected: min(w.detected, s.floor.detected), exact: min(w.exact, s.floor.exact),
				falseAlarms: max(w.falseAlarms, s.floor.falseAlarms)}
		}
		checkBidEval(t, s, ts, w)
	}
}
