package meridian

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// evalRun is one row of the evaluation table in docs/methods/meridian.md.
type evalRun struct {
	name      string
	firstSeed int64
	seeds     int
	params    func(r *rand.Rand) GenParams
}

type evalTally struct {
	requests, verdicts, exactRequests        int
	planted, plantedExact, plantedRowsExact  int
	falseAlarms                              int
	clean, cleanAllowed, dirty, dirtyStopped int
	maxScoreErr                              float64
	gating                                   map[string]int
}

// TestEvaluation runs the generator's scenarios through the engine and compares every result
// with the planted truth. main: the default sizes the generator was built with; held-out:
// larger data, error rates and staleness far outside the defaults, never used while building;
// boundary: one planted row per error and a feed stale by seconds. Targets: every verdict,
// every planted count and row, no unexpected value where none was planted. Under the race
// detector a fifth of the seeds run.
func TestEvaluation(t *testing.T) {
	if testing.Short() {
		t.Skip("long accuracy evaluation; run without -short")
	}
	runs := []evalRun{
		{"main", 1001, 40, func(r *rand.Rand) GenParams { return GenParams{} }},
		{"held-out", 9_000_001, 10, func(r *rand.Rand) GenParams {
			return GenParams{Rows: 3000 + r.IntN(5001), ErrorRate: 0.001 + 0.249*r.Float64(), StaleDays: 1.01 + 59*r.Float64()}
		}},
		{"boundary", 5_000_001, 10, func(r *rand.Rand) GenParams {
			return GenParams{Rows: 100 + r.IntN(400), ErrorRate: 1e-9, StaleDays: 1 + 10.0/86400}
		}},
	}
	var table strings.Builder
	table.WriteString("| run | requests | verdict = truth | planted checks exact (count / rows) | false alarms | clean → allow | dirty → review/block | max score error |\n|---|---|---|---|---|---|---|---|\n")
	for _, run := range runs {
		tl := evalTally{gating: map[string]int{}}
		r := rand.New(rand.NewPCG(uint64(run.firstSeed), 3))
		seeds := run.seeds
		if raceEnabled {
			seeds = max(2, seeds/5)
		}
		for i := 0; i < seeds; i++ {
			seed := run.firstSeed + int64(i)
			gp := run.params(r)
			for _, sc := range TestModeScenarios() {
				for _, format := range []string{FormatRecords, FormatCSV} {
					gp.Format = format
					req, tr := Generate(sc, seed, gp)
					res, err := analyzeAt(req, testNow)
					if err != nil {
						t.Fatalf("%s seed %d: %v", run.name, seed, err)
					}
					tl.add(t, fmt.Sprintf("%s/%s/%s/seed %d", run.name, sc, format, seed), res, tr)
				}
			}
		}
		fmt.Fprintf(&table, "| %s | %d | %d/%d | %d/%d / %d/%d | %d | %d/%d | %d/%d (%s) | %.1e |\n", run.name, tl.requests,
			tl.verdicts, tl.requests, tl.plantedExact, tl.planted, tl.plantedRowsExact, tl.planted, tl.falseAlarms,
			tl.cleanAllowed, tl.clean, tl.dirtyStopped, tl.dirty, gatingSummary(tl.gating), tl.maxScoreErr)
		if tl.verdicts != tl.requests || tl.plantedExact != tl.planted || tl.plantedRowsExact != tl.planted || tl.falseAlarms != 0 ||
			tl.cleanAllowed != tl.clean || tl.dirtyStopped != tl.dirty || tl.maxScoreErr > 1e-9 {
			t.Errorf("%s: below target", run.name)
		}
	}
	t.Logf("\n%s", table.String())
}

func gatingSummary(g map[string]int) string {
	return fmt.Sprintf("%d review, %d block", g[GatingReview], g[GatingBlock])
}

func (tl *evalTally) add(t *testing.T, name string, res Result, tr Truth) {
	tl.requests++
	if res.Passed == tr.Passed && res.Tier == tr.Tier && res.Gating == tr.Gating {
		tl.verdicts++
	}
	if checkTruth(t, name, res, tr) {
		tl.exactRequests++
	}
	if res.Score != nil {
		tl.maxScoreErr = math.Max(tl.maxScoreErr, math.Abs(*res.Score-tr.Score))
	}
	byID := map[string]CheckResult{}
	for _, c := range res.Checks {
		byID[c.ID] = c
	}
	planted := map[string]bool{}
	for _, in := range tr.Injected {
		planted[in.CheckID] = true
		tl.planted++
		c := byID[in.CheckID]
		if c.UnexpectedCount != nil && *c.UnexpectedCount == in.UnexpectedCount {
			tl.plantedExact++
			if fmt.Sprint(c.PartialUnexpectedIndexList) == fmt.Sprint(in.Rows[:min(20, len(in.Rows))]) {
				tl.plantedRowsExact++
			}
		}
	}
	for _, c := range res.Checks {
		if !planted[c.ID] && c.UnexpectedCount != nil && *c.UnexpectedCount > 0 {
			tl.falseAlarms++
		}
	}
	if tr.Scenario == ScenarioClean {
		tl.clean++
		if res.Gating == GatingAllow {
			tl.cleanAllowed++
		}
	} else {
		tl.dirty++
		if res.Gating != GatingAllow {
			tl.dirtyStopped++
		}
		tl.gating[res.Gating]++
	}
}
