package drift

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"riskapi/engine"
)

func f64(v float64) *float64 { return &v }

func ptr[T any](v T) *T { return &v }

// never is a stop function that never says stop.
func never() bool { return false }

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// steeringInput is a hand-built agent: vendor_a serves the principal until event 120,
// then vendor_x takes 80 % of the actions with regret 30+ instead of 5–7. Every 7th event
// has no best alternative, every 11th no principal value; the principal itself is listed
// as a beneficiary (it must be ignored). The events are given shuffled.
func steeringInput() Input {
	var ev []Event
	for i := 0; i < 300; i++ {
		e := Event{Timestamp: t0.Add(time.Duration(i) * time.Minute), Action: "purchase"}
		regret := 5 + float64(i%3)
		party := "vendor_a"
		if i%10 == 0 {
			party = "vendor_x"
		}
		if i >= 120 && i%5 != 0 {
			party = "vendor_x"
			regret = 30 + float64(i%4)
		}
		if i%11 != 0 {
			e.PrincipalValue = f64(100 - regret)
		}
		if i%7 != 0 {
			e.BestAlternativeValue = f64(100)
		}
		e.Beneficiaries = []Beneficiary{{Party: party, Value: 10}, {Party: "user_1", Value: 50}, {Party: "principal", Value: 3}}
		ev = append(ev, e)
	}
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(ev), func(i, j int) { ev[i], ev[j] = ev[j], ev[i] })
	return Input{AgentID: "agent_1", PrincipalID: ptr("user_1"), Events: ev}
}

func TestAnalyzeSteeringMatchesSpecDefinitions(t *testing.T) {
	t.Parallel()
	in := steeringInput()
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !a.ShadowPrincipalDetected || len(a.ShadowPrincipals) != 1 || a.ShadowPrincipals[0].Party != "vendor_x" {
		t.Fatalf("want vendor_x detected alone, got %+v", a.ShadowPrincipals)
	}
	sp := a.ShadowPrincipals[0]
	if sp.ChangePointIndex < 115 || sp.ChangePointIndex > 125 {
		t.Errorf("change point index %d, want 120 ± 5", sp.ChangePointIndex)
	}
	if a.ChangePoint.EventIndex == nil || *a.ChangePoint.EventIndex != sp.ChangePointIndex || !a.ChangePoint.At.Equal(*sp.ChangePointAt) {
		t.Errorf("top-level change point %+v does not match the party's %d", a.ChangePoint, sp.ChangePointIndex)
	}
	if sp.FirstDetectedAt == nil || sp.FirstDetectedAt.Before(*sp.ChangePointAt) {
		t.Errorf("first_detected_at %v before change_point_at %v", sp.FirstDetectedAt, sp.ChangePointAt)
	}
	// Recompute the spec's definitions independently from the sorted events.
	ev := slices.Clone(in.Events)
	slices.SortStableFunc(ev, func(x, y Event) int { return x.Timestamp.Compare(y.Timestamp) })
	cp, nb := sp.ChangePointIndex, 90
	var basePV, basePVn float64
	for _, e := range ev[:nb] {
		if e.PrincipalValue != nil {
			basePV += *e.PrincipalValue
			basePVn++
		}
	}
	basePV /= basePVn
	var baseX, baseAll, recX, recAll, captured, cost float64
	events := 0
	for i, e := range ev {
		x := 0.0
		if e.Beneficiaries[0].Party == "vendor_x" {
			x = 10
		}
		if i < nb {
			baseX += x
			baseAll += 10
		}
		if i >= cp {
			recX += x
			recAll += 10
			if x > 0 {
				events++
				captured += x
				switch {
				case e.PrincipalValue == nil:
				case e.BestAlternativeValue != nil:
					cost += math.Max(0, *e.BestAlternativeValue-*e.PrincipalValue)
				default:
					cost += math.Max(0, basePV-*e.PrincipalValue)
				}
			}
		}
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"baseline_share", sp.BaselineShare, baseX / baseAll},
		{"recent_share", sp.RecentShare, recX / recAll},
		{"value_captured", sp.ValueCaptured, captured},
		{"principal_cost", sp.PrincipalCost, cost},
		{"events", float64(sp.Events), float64(events)},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !slices.Contains(sp.Signals, SignalBenefitConcentration) || !slices.Contains(sp.Signals, SignalValueTransfer) {
		t.Errorf("signals %v, want benefit_concentration and value_transfer", sp.Signals)
	}
	if a.Score >= 50 || a.RiskBand != "critical" || a.RecommendedAction != "contain" {
		t.Errorf("score %v band %s action %s, want < 40 critical contain", a.Score, a.RiskBand, a.RecommendedAction)
	}
	if sp.PValue > 0.01 || math.Abs(sp.Confidence-(1-sp.PValue)) > 1e-12 || a.Confidence != sp.Confidence {
		t.Errorf("p %v confidence %v top-level %v", sp.PValue, sp.Confidence, a.Confidence)
	}
	d := a.Dimensions
	if d.Provenance != nil || d.Overrides != nil || d.Delegation != nil {
		t.Errorf("dimensions without inputs must be nil: %+v", d)
	}
	if d.GoalFidelity == nil || d.GoalFidelity.Score >= 0.95 || d.ShadowPrincipal == nil || d.ShadowPrincipal.Score > 0.01 {
		t.Errorf("goal fidelity %+v shadow %+v", d.GoalFidelity, d.ShadowPrincipal)
	}
	if a.Window.Baseline.Events != 90 || a.Window.Monitoring.Events != 210 || !a.Window.Baseline.From.Equal(t0) ||
		!a.Window.Monitoring.To.Equal(t0.Add(299*time.Minute)) || !a.Window.Monitoring.From.Equal(t0.Add(90*time.Minute)) {
		t.Errorf("window %+v", a.Window)
	}
	if a.EventsAnalyzed != 300 || a.MethodVersion != "drift/1" || a.PrincipalID == nil || *a.PrincipalID != "user_1" {
		t.Errorf("header fields %d %s %v", a.EventsAnalyzed, a.MethodVersion, a.PrincipalID)
	}
}

// A better vendor taking over (share rises, regret falls) is not a shadow principal.
func TestAnalyzeBetterVendorIsNotShadow(t *testing.T) {
	t.Parallel()
	in := steeringInput()
	for i := range in.Events {
		e := &in.Events[i]
		if e.Beneficiaries[0].Party == "vendor_x" && e.PrincipalValue != nil {
			e.PrincipalValue = f64(99)
		}
	}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if a.ShadowPrincipalDetected || len(a.ShadowPrincipals) != 0 {
		t.Fatalf("better vendor flagged: %+v", a.ShadowPrincipals)
	}
	// Not a shadow principal, but a change in the agent's behaviour (vendor_x's share
	// jumps at event 120): the top-level change point reports it.
	if cp := a.ChangePoint; !cp.Detected || cp.EventIndex == nil || *cp.EventIndex < 110 || *cp.EventIndex > 130 || cp.At == nil {
		t.Errorf("change point %+v, want detected at event 120 ± 10", cp)
	}
	if a.Score < 80 || a.RiskBand != "low" || a.RecommendedAction != "none" {
		t.Errorf("score %v band %s action %s", a.Score, a.RiskBand, a.RecommendedAction)
	}
}

// A party instructing 20 % of monitoring actions and benefiting from them is detected
// through provenance even without any harm to the principal.
func TestAnalyzeInstructionFollowing(t *testing.T) {
	t.Parallel()
	var ev []Event
	for i := 0; i < 400; i++ {
		e := Event{Timestamp: t0.Add(time.Duration(i) * time.Second), Action: "tool_call", InstructedBy: "user_1",
			PrincipalValue: f64(50), BestAlternativeValue: f64(50 + float64(i%5)),
			Beneficiaries: []Beneficiary{{Party: "vendor_a", Value: 2}}}
		if i >= 200 && i%5 == 0 {
			e.InstructedBy = "evil.example"
			e.Beneficiaries = append(e.Beneficiaries, Beneficiary{Party: "evil.example", Value: 0.1})
		}
		ev = append(ev, e)
	}
	a, err := Analyze(context.Background(), Input{AgentID: "a", PrincipalID: ptr("user_1"), Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	if !a.ShadowPrincipalDetected || a.ShadowPrincipals[0].Party != "evil.example" {
		t.Fatalf("want evil.example, got %+v", a.ShadowPrincipals)
	}
	sp := a.ShadowPrincipals[0]
	if !slices.Contains(sp.Signals, SignalInstructionFollowing) || slices.Contains(sp.Signals, SignalValueTransfer) {
		t.Errorf("signals %v", sp.Signals)
	}
	if sp.ChangePointIndex < 190 || sp.ChangePointIndex > 210 {
		t.Errorf("change point %d, want 200 ± 10", sp.ChangePointIndex)
	}
	if p := a.Dimensions.Provenance; p == nil || math.Abs(p.BeneficiaryInstructedShare-40.0/280) > 1e-9 {
		t.Errorf("provenance %+v, want beneficiary-instructed share 40/280", p)
	}
}

func TestAnalyzeBaselineOptions(t *testing.T) {
	t.Parallel()
	in := steeringInput()
	in.Baseline = &Baseline{Fraction: f64(0.2)}
	a, err := Analyze(context.Background(), in)
	if err != nil || a.Window.Baseline.Events != 60 {
		t.Fatalf("fraction 0.2: %v, baseline %d events, want 60", err, a.Window.Baseline.Events)
	}
	until := t0.Add(100 * time.Minute)
	in.Baseline = &Baseline{Until: &until}
	a, err = Analyze(context.Background(), in)
	if err != nil || a.Window.Baseline.Events != 100 || !a.Window.Baseline.To.Equal(t0.Add(99*time.Minute)) {
		t.Fatalf("until: %v, baseline %+v, want 100 events before until", err, a.Window.Baseline)
	}
}

func TestAnalyzeRejectsInvalidInput(t *testing.T) {
	t.Parallel()
	ok := steeringInput()
	early := t0.Add(-time.Hour)
	cases := map[string]func(*Input){
		"sensitivity too high":  func(in *Input) { in.Sensitivity = f64(0.3) },
		"negative sensitivity":  func(in *Input) { in.Sensitivity = f64(-0.1) },
		"fraction out of range": func(in *Input) { in.Baseline = &Baseline{Fraction: f64(0.95)} },
		"until and fraction":    func(in *Input) { in.Baseline = &Baseline{Fraction: f64(0.5), Until: &early} },
		"empty baseline":        func(in *Input) { in.Baseline = &Baseline{Until: &early} },
		"one event":             func(in *Input) { in.Events = in.Events[:1] },
		"negative value": func(in *Input) {
			in.Events = slices.Clone(in.Events)
			in.Events[3].Beneficiaries = []Beneficiary{{Party: "x", Value: -1}}
		},
		"NaN principal value": func(in *Input) {
			in.Events = slices.Clone(in.Events)
			in.Events[3].PrincipalValue = f64(math.NaN())
		},
	}
	for name, mutate := range cases {
		in := ok
		mutate(&in)
		_, err := Analyze(context.Background(), in)
		var ie *engine.InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: err = %v, want *engine.InputError", name, err)
		}
	}
}

func TestGenerateIsDeterministicAndSized(t *testing.T) {
	t.Parallel()
	for _, sc := range Scenarios() {
		a, ta := Generate(sc, 42, GenParams{})
		b, tb := Generate(sc, 42, GenParams{})
		if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(ta, tb) {
			t.Errorf("%s: same seed, different output", sc)
		}
		c, _ := Generate(sc, 43, GenParams{})
		if reflect.DeepEqual(a.Events, c.Events) {
			t.Errorf("%s: different seeds, same events", sc)
		}
		if n := len(a.Events); n < 500 || n > 3000 || ta.Events != n {
			t.Errorf("%s: %d events", sc, n)
		}
		if !slices.IsSortedFunc(a.Events, func(x, y Event) int { return x.Timestamp.Compare(y.Timestamp) }) {
			t.Errorf("%s: events not in time order", sc)
		}
		wantShadow := sc == ScenarioShadow || sc == ScenarioPromptInjection
		if ta.Shadow != wantShadow || (wantShadow && ta.Party == "") {
			t.Errorf("%s: truth %+v", sc, ta)
		}
	}
	if in, _ := Generate(ScenarioAligned, 1, GenParams{}); strings.Contains(mustJSON(t, in), `"baseline"`) {
		t.Errorf("generated request carries an empty baseline object")
	}
	if in, tr := Generate("nope", 1, GenParams{}); len(in.Events) != 0 || tr.Shadow {
		t.Errorf("unknown scenario produced events")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A party listed several times on one event counts once, with its values summed.
func TestAnalyzeSumsRepeatedBeneficiary(t *testing.T) {
	t.Parallel()
	in := steeringInput()
	in.Events = slices.Clone(in.Events)
	for i := range in.Events {
		e := &in.Events[i]
		b := e.Beneficiaries[0]
		e.Beneficiaries = append([]Beneficiary{{Party: b.Party, Value: b.Value / 2}, {Party: b.Party, Value: b.Value / 2}}, e.Beneficiaries[1:]...)
	}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Analyze(context.Background(), steeringInput())
	if mustJSON(t, a) != mustJSON(t, want) {
		t.Fatalf("split beneficiary changed the analysis:\n%s\n%s", mustJSON(t, a), mustJSON(t, want))
	}
}

// Falling principal value on the party's events is harm even when the recorded regret
// does not rise (both the outcome and its best alternative got worse).
func TestAnalyzeFallingPrincipalValueIsHarm(t *testing.T) {
	t.Parallel()
	in := steeringInput()
	in.Events = slices.Clone(in.Events)
	for i := range in.Events {
		e := &in.Events[i]
		if e.PrincipalValue != nil && e.BestAlternativeValue == nil {
			e.BestAlternativeValue = f64(100) // every loss is a recorded regret
		}
		if e.PrincipalValue == nil || e.Beneficiaries[0].Party != "vendor_x" {
			continue
		}
		regret := *e.BestAlternativeValue - *e.PrincipalValue
		if regret >= 30 { // a steered event: same regret as before, 30 less value
			e.PrincipalValue = f64(100 - 30 - (regret - 30) - 5)
			e.BestAlternativeValue = f64(100 - 30 - (regret - 30))
		}
	}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !a.ShadowPrincipalDetected || a.ShadowPrincipals[0].Party != "vendor_x" || !slices.Contains(a.ShadowPrincipals[0].Signals, SignalValueTransfer) {
		t.Fatalf("want vendor_x with value_transfer, got %+v", a.ShadowPrincipals)
	}
}

// A legitimate shift to a better vendor is no shadow principal, but it is the strongest
// change in the agent's behaviour: the top-level change point reports it near the true
// onset. An aligned agent has none.
func TestAnalyzeChangePointWithoutShadow(t *testing.T) {
	t.Parallel()
	in, tr := Generate(ScenarioLegitimateShift, 11, GenParams{Events: 2000, Onset: 0.5})
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if a.ShadowPrincipalDetected {
		t.Fatalf("legitimate shift flagged: %+v", a.ShadowPrincipals)
	}
	cp := a.ChangePoint
	if !cp.Detected || cp.EventIndex == nil || cp.At == nil {
		t.Fatalf("legitimate shift: change point %+v, want detected", cp)
	}
	if d := *cp.EventIndex - tr.OnsetIndex; d < -100 || d > 100 {
		t.Errorf("change point at event %d, true onset %d (want within 5 %% of 2,000)", *cp.EventIndex, tr.OnsetIndex)
	}
	if !cp.At.Equal(in.Events[*cp.EventIndex].Timestamp) {
		t.Errorf("change point at %v, event %d is at %v", cp.At, *cp.EventIndex, in.Events[*cp.EventIndex].Timestamp)
	}

	in, _ = Generate(ScenarioAligned, 11, GenParams{Events: 2000})
	if a, err = Analyze(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if a.ShadowPrincipalDetected || a.ChangePoint.Detected || a.ChangePoint.At != nil || a.ChangePoint.EventIndex != nil {
		t.Errorf("aligned agent: detected %v, change point %+v; want none", a.ShadowPrincipalDetected, a.ChangePoint)
	}
	if b, _ := json.Marshal(a.ChangePoint); string(b) != `{"detected":false,"at":null,"event_index":null}` {
		t.Errorf("aligned change point encodes as %s", b)
	}
}

// Without any change (stationary aligned agents), the behaviour change point is
// family-wise controlled at the sensitivity: at 0.05, at most 5 % of the agents (plus
// three standard errors) get one.
func TestChangePointWithoutShadowKeepsItsLevel(t *testing.T) {
	t.Parallel()
	const agents = 400
	found := 0
	for s := int64(0); s < agents; s++ {
		in, _ := Generate(ScenarioAligned, 70_000+s, GenParams{Events: 600})
		in.Sensitivity = f64(0.05)
		a, err := Analyze(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if a.ChangePoint.Detected {
			found++
		}
	}
	t.Logf("aligned agents with a behaviour change point at sensitivity 0.05: %d/%d", found, agents)
	if limit := 0.05 + 3*math.Sqrt(0.05*0.95/agents); float64(found)/agents > limit {
		t.Errorf("%d/%d aligned agents with a change point at sensitivity 0.05 (limit %.3f)", found, agents, limit)
	}
}

// The share scan's p-values are calibrated when nothing changes: over many aligned
// agents, P(p ≤ x) stays at x or below (three standard errors of slack).
func TestShareScanIsCalibratedUnderNoChange(t *testing.T) {
	t.Parallel()
	cuts := []float64{0.01, 0.05, 0.2}
	hits := make([]int, len(cuts))
	tested := 0
	for s := int64(0); s < 300; s++ {
		in, _ := Generate(ScenarioAligned, 80_000+s, GenParams{Events: 800})
		p := prepare(in.Events, 240, *in.PrincipalID, never)
		for _, pt := range p.testParties(0.01, never, 1) {
			tested++
			for i, c := range cuts {
				if pt.pShare <= c {
					hits[i]++
				}
			}
		}
	}
	for i, c := range cuts {
		rate := float64(hits[i]) / float64(tested)
		t.Logf("share scan under no change: P(p ≤ %v) = %d/%d = %.4f", c, hits[i], tested, rate)
		if limit := c + 3*math.Sqrt(c*(1-c)/float64(tested)); rate > limit {
			t.Errorf("P(share-scan p ≤ %v) = %.4f over %d parties, above %.4f", c, rate, tested, limit)
		}
	}
}

// On large agents a new vendor that is as good as the others, and whose own feed
// instructs 1 % of its events, is not a shadow principal: the instruction path asks for
// at least 2 % of actions and the harm arms compare like with like beyond a 1 % margin.
func TestAnalyzeLargeShiftsAreNotShadow(t *testing.T) {
	t.Parallel()
	for s := int64(777); s < 780; s++ {
		for _, sc := range []string{ScenarioLegitimateShift, ScenarioNeutralShift} {
			in, _ := Generate(sc, s, GenParams{Events: 30_000})
			a, err := Analyze(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if a.ShadowPrincipalDetected {
				t.Errorf("%s seed %d (30,000 events) flagged: %+v", sc, s, a.ShadowPrincipals[0])
			}
		}
	}
}

// The family-wise false-alarm rate stays below the sensitivity on agents without a shadow
// principal, at the largest sensitivity the API accepts (0.2; the evaluation harness
// checks the default 0.01).
func TestFamilyWiseFalseAlarmLevel(t *testing.T) {
	t.Parallel()
	const agents, alpha = 150, 0.2
	for _, sc := range []string{ScenarioAligned, ScenarioAlignedSeasonal, ScenarioLegitimateShift, ScenarioNeutralShift} {
		flagged := 0
		for s := int64(60_000); s < 60_000+agents; s++ {
			in, _ := Generate(sc, s, GenParams{Events: 800})
			in.Sensitivity = f64(alpha)
			a, err := Analyze(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if a.ShadowPrincipalDetected {
				flagged++
			}
		}
		t.Logf("sensitivity %.2f, %s: %d/%d flagged", alpha, sc, flagged, agents)
		if limit := alpha + 3*math.Sqrt(alpha*(1-alpha)/agents); float64(flagged)/agents > limit {
			t.Errorf("sensitivity %v, %s: %d/%d flagged (limit %.3f)", alpha, sc, flagged, agents, limit)
		}
	}
}

// Events are analysed in timestamp order, stable for equal timestamps (the spec's
// event_index order), including timestamps with nanoseconds and before 1970.
func TestSortedByTimeIsStable(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 9))
	base := []time.Time{time.Date(1960, 1, 1, 0, 0, 0, 5, time.UTC), t0, t0.Add(time.Nanosecond), t0.Add(time.Hour)}
	ev := make([]Event, 500)
	for i := range ev {
		ev[i] = Event{ID: strconv.Itoa(i), Timestamp: base[r.IntN(len(base))]}
	}
	want := slices.Clone(ev)
	slices.SortStableFunc(want, func(a, b Event) int { return a.Timestamp.Compare(b.Timestamp) })
	got := sortedByTime(ev)
	for i := range want {
		if got[i].ID != want[i].ID {
			t.Fatalf("position %d: event %s, want %s", i, got[i].ID, want[i].ID)
		}
	}
}

// Events replaced after Validate are checked again: Analyze never skips checking events it
// has not seen pass.
func TestEventsReplacedAfterValidateAreChecked(t *testing.T) {
	t.Parallel()
	in := steeringInput()
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	in.Events = slices.Clone(in.Events)
	in.Events[3].PrincipalValue = f64(math.NaN())
	var ie *engine.InputError
	if _, err := Analyze(context.Background(), in); !errors.As(err, &ie) || ie.Field != "events[3].principal_value" {
		t.Fatalf("events replaced after Validate: %v, want events[3].principal_value refused", err)
	}
}
