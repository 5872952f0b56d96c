package meridian

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

var testNow = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // never used when as_of is set

func TestGenerateIsDeterministicPerSeed(t *testing.T) {
	for _, sc := range TestModeScenarios() {
		for _, format := range []string{FormatRecords, FormatCSV} {
			a, ta := Generate(sc, 7, GenParams{Format: format})
			b, tb := Generate(sc, 7, GenParams{Format: format})
			c, _ := Generate(sc, 8, GenParams{Format: format})
			ja, _ := json.Marshal(a, json.Deterministic(true))
			jb, _ := json.Marshal(b, json.Deterministic(true))
			jc, _ := json.Marshal(c, json.Deterministic(true))
			if string(ja) != string(jb) || canonJSON(t, ta) != canonJSON(t, tb) {
				t.Errorf("%s/%s: same seed, different output", sc, format)
			}
			if string(ja) == string(jc) {
				t.Errorf("%s/%s: seeds 7 and 8 gave the same request", sc, format)
			}
		}
	}
	if req, _ := Generate("nope", 1, GenParams{}); req.SourceID != "" || IsScenario("nope") {
		t.Error("an unknown scenario must give an empty request")
	}
}

// TestGeneratedRequestsRoundTrip: the generated request is a valid body of the endpoint
// (strict decoding, as the HTTP layer does) and the truth has the documented JSON keys.
func TestGeneratedRequestsRoundTrip(t *testing.T) {
	req, tr := Generate(ScenarioDirty, 3, GenParams{})
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var back Request
	if err := json.Unmarshal(body, &back, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("generated body does not decode strictly: %v", err)
	}
	r1, err1 := analyzeAt(req, testNow)
	r2, err2 := analyzeAt(back, testNow)
	if err1 != nil || err2 != nil || canonJSON(t, r1) != canonJSON(t, r2) {
		t.Fatalf("decoded request evaluates differently: %v %v", err1, err2)
	}
	tj := canonJSON(t, tr)
	for _, key := range []string{`"passed":false`, `"tier":`, `"gating":`, `"score":`, `"injected":[`, `"unexpected_count":`, `"failing_checks":[`, `"newest_age_seconds":`} {
		if !strings.Contains(tj, key) {
			t.Errorf("truth JSON lacks %s: %s", key, tj)
		}
	}
}

// checkTruth reports every difference between a result and the generator's truth: the
// verdict, the score, the dimensions, the failing checks, the planted counts at the planted
// rows, and no unexpected value where none was planted. It returns whether all agree.
func checkTruth(t *testing.T, name string, res Result, tr Truth) bool {
	t.Helper()
	bad := 0
	errorf := func(format string, args ...any) {
		bad++
		t.Errorf(format, args...)
	}
	if res.Passed != tr.Passed || res.Tier != tr.Tier || res.Gating != tr.Gating {
		errorf("%s: passed/tier/gating %v/%s/%s, truth %v/%s/%s", name, res.Passed, res.Tier, res.Gating, tr.Passed, tr.Tier, tr.Gating)
	}
	if res.Score == nil || math.Abs(*res.Score-tr.Score) > 1e-9*tr.Score {
		errorf("%s: score %v, truth %v", name, canonJSON(t, res.Score), tr.Score)
	}
	if canonJSON(t, roundDims(res.Dimensions)) != canonJSON(t, roundDims(tr.Dimensions)) {
		errorf("%s: dimensions %s, truth %s", name, canonJSON(t, res.Dimensions), canonJSON(t, tr.Dimensions))
	}
	var failing []string
	byID := map[string]CheckResult{}
	for _, c := range res.Checks {
		byID[c.ID] = c
		if !c.Success {
			failing = append(failing, c.ID)
		}
	}
	if !slices.Equal(failing, tr.FailingChecks) && !(len(failing) == 0 && len(tr.FailingChecks) == 0) {
		errorf("%s: failing checks %v, truth %v", name, failing, tr.FailingChecks)
	}
	injected := map[string]bool{}
	for _, in := range tr.Injected {
		injected[in.CheckID] = true
		c := byID[in.CheckID]
		if c.UnexpectedCount == nil || *c.UnexpectedCount != in.UnexpectedCount {
			errorf("%s: %s unexpected_count %v, injected %d", name, in.CheckID, canonJSON(t, c.UnexpectedCount), in.UnexpectedCount)
			continue
		}
		if want := in.Rows[:min(20, len(in.Rows))]; !slices.Equal(c.PartialUnexpectedIndexList, want) {
			errorf("%s: %s rows %v, injected %v", name, in.CheckID, c.PartialUnexpectedIndexList, want)
		}
	}
	for _, c := range res.Checks {
		if c.UnexpectedCount != nil && !injected[c.ID] && *c.UnexpectedCount != 0 {
			errorf("%s: %s found %d unexpected values where none were planted: %v", name, c.ID, *c.UnexpectedCount, c.PartialUnexpectedList)
		}
	}
	if age, ok := byID[genCreatedFresh].ObservedValue.(float64); !ok || age != tr.NewestAgeSeconds {
		errorf("%s: freshness age %v, truth %v", name, byID[genCreatedFresh].ObservedValue, tr.NewestAgeSeconds)
	}
	return bad == 0
}

// roundDims rounds to 12 digits: the truth pools counts in another order.
func roundDims(d Dimensions) Dimensions {
	r := func(s *DimensionScore) *DimensionScore {
		if s == nil {
			return nil
		}
		return &DimensionScore{Score: math.Round(s.Score*1e12) / 1e12}
	}
	return Dimensions{r(d.Completeness), r(d.Validity), r(d.Uniqueness), r(d.Consistency), r(d.Timeliness), r(d.Accuracy)}
}

func TestCleanScenarioIsAllowed(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		req, tr := Generate(ScenarioClean, seed, GenParams{})
		res, err := analyzeAt(req, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Passed || res.Gating != GatingAllow || res.Tier != TierPlatinum || !tr.Passed || len(tr.Injected) != 0 {
			t.Errorf("seed %d: clean data got passed=%v gating=%s tier=%s", seed, res.Passed, res.Gating, res.Tier)
		}
	}
}
