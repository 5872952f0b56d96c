package cascade

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

func TestGenerateDeterministic(t *testing.T) {
	t.Parallel()
	for _, sc := range TestModeScenarios() {
		a, ta := Generate(sc, 7, GenParams{})
		b, tb := Generate(sc, 7, GenParams{})
		c, _ := Generate(sc, 8, GenParams{})
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		jc, _ := json.Marshal(c)
		if !bytes.Equal(ja, jb) || !reflect.DeepEqual(ta, tb) {
			t.Errorf("%s: same seed, different output", sc)
		}
		if bytes.Equal(ja, jc) {
			t.Errorf("%s: seeds 7 and 8 give the same network", sc)
		}
		// The request survives the HTTP layer's strict decoder unchanged and is valid.
		var back Input
		if err := jsonv2.Unmarshal(ja, &back, jsonv2.RejectUnknownMembers(true)); err != nil {
			t.Fatalf("%s: %v", sc, err)
		}
		// Compared as JSON: the decoded network also records that it was sent.
		if again, _ := json.Marshal(back); !bytes.Equal(again, ja) {
			t.Errorf("%s: request does not round-trip", sc)
		}
		if err := back.Validate(); err != nil {
			t.Errorf("%s: generated request invalid: %v", sc, err)
		}
		if jt, _ := json.Marshal(ta); !strings.Contains(string(jt), `"systemic_risk_detected":`) {
			t.Errorf("%s: truth %s", sc, jt)
		}
	}
	if in, _ := Generate("meteor", 1, GenParams{}); in.Validate() == nil || IsScenario("meteor") {
		t.Error("an unknown scenario must not produce a valid request")
	}
}

// evalSettings is one run of the evaluation harness: how many networks per scenario and
// the ranges their parameters are drawn from.
type evalSettings struct {
	name     string
	seedBase int64
	perScen  int
	nodes    [2]int
	zFragile [2]float64
	zOther   [2]float64
	share    [2]float64
}

type evalRow struct {
	scenario       string
	n, agree       int
	cpMin, cpMax   float64 // worst scenario's cascade probability
	rnMin, rnMax   float64 // cascade probability of "one random failure"
	concentrationN int     // provider truth matched (top provider, share, HHI)
}

func runEvaluation(t *testing.T, s evalSettings) []evalRow {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(s.seedBase), 3))
	u := func(b [2]float64) float64 { return b[0] + (b[1]-b[0])*r.Float64() }
	var rows []evalRow
	seed := s.seedBase
	for _, sc := range TestModeScenarios() {
		row := evalRow{scenario: sc, cpMin: 1, rnMin: 1}
		for k := 0; k < s.perScen; k++ {
			seed++
			gp := GenParams{}
			if s.nodes[1] > 0 {
				gp.Nodes = s.nodes[0] + r.IntN(s.nodes[1]-s.nodes[0]+1)
			}
			if sc == ScenarioFragileNetwork && s.zFragile[1] > 0 {
				gp.MeanDegree = u(s.zFragile)
			}
			if sc != ScenarioFragileNetwork && s.zOther[1] > 0 {
				gp.MeanDegree = u(s.zOther)
			}
			if s.share[1] > 0 {
				gp.TopShare = u(s.share)
			}
			in, tr := Generate(sc, seed, gp)
			res, err := Analyze(context.Background(), in)
			if err != nil {
				t.Fatalf("%s seed %d: %v", sc, seed, err)
			}
			row.n++
			if res.SystemicRiskDetected == tr.SystemicRiskDetected {
				row.agree++
			} else {
				t.Errorf("%s %s seed %d (%+v): systemic_risk_detected %v, truth %v; scenarios %+v", s.name, sc, seed, gp, res.SystemicRiskDetected, tr.SystemicRiskDetected, res.Scenarios)
			}
			p := res.Dimensions.CascadeProbability.Probability
			row.cpMin, row.cpMax = math.Min(row.cpMin, p), math.Max(row.cpMax, p)
			for _, x := range res.Scenarios {
				if x.Name == "one random failure" {
					row.rnMin, row.rnMax = math.Min(row.rnMin, x.CascadeProbability), math.Max(row.rnMax, x.CascadeProbability)
				}
			}
			if c := res.Dimensions.Concentration; c != nil && tr.TopProvider != nil &&
				c.TopProvider == *tr.TopProvider && c.TopShare == *tr.TopShare && c.HHI == *tr.HHI {
				row.concentrationN++
			} else {
				t.Errorf("%s seed %d: concentration %+v, truth %v %v %v", sc, seed, c, *tr.TopProvider, *tr.TopShare, *tr.HHI)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// TestEvaluation runs the generator's scenarios through Analyze and checks the verdict
// against the planted truth: main settings (the generator's defaults) and held-out settings
// not used to design the generator (larger networks, wider degree and share ranges).
func TestEvaluation(t *testing.T) {
	if testing.Short() {
		t.Skip("long accuracy evaluation; run without -short")
	}
	t.Parallel()
	for _, s := range []evalSettings{
		{name: "main", seedBase: 1000, perScen: evalPerScenario},
		{name: "held-out", seedBase: 9_000_000, perScen: evalPerScenario * 2 / 3, nodes: [2]int{400, 1500},
			zFragile: [2]float64{1.5, 5}, zOther: [2]float64{1, 10}, share: [2]float64{0.15, 0.95}},
	} {
		var b strings.Builder
		for _, row := range runEvaluation(t, s) {
			fmt.Fprintf(&b, "| %s | %s | %d/%d | %.3f–%.3f | %.3f–%.3f | %d/%d |\n", s.name, row.scenario, row.agree, row.n, row.cpMin, row.cpMax, row.rnMin, row.rnMax, row.concentrationN, row.n)
		}
		t.Log("\n| run | scenario | verdict = truth | worst scenario's cascade probability | one random failure's | concentration = truth |\n|---|---|---|---|---|---|\n" + b.String())
	}
}
