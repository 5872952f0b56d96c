package drift

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"riskapi/engine"
)

// randomInput builds a valid but messy input: equal timestamps, missing fields, the
// principal among beneficiaries, parties that only instruct, zero values, no beneficiaries.
func randomInput(r *rand.Rand) Input {
	n := 20 + r.IntN(400)
	parties := []string{"p1", "p2", "p3", "principal", "user_9", "x"}
	ev := make([]Event, n)
	for i := range ev {
		e := Event{Timestamp: t0.Add(time.Duration(r.IntN(n/2+1)) * time.Hour), Action: "a"}
		if r.IntN(3) > 0 {
			e.PrincipalValue = f64(r.NormFloat64() * 50)
		}
		if r.IntN(2) == 0 {
			e.BestAlternativeValue = f64(r.NormFloat64() * 50)
		}
		for k := r.IntN(4); k > 0; k-- {
			e.Beneficiaries = append(e.Beneficiaries, Beneficiary{Party: parties[r.IntN(len(parties))], Value: float64(r.IntN(5))})
		}
		if r.IntN(2) == 0 {
			e.InstructedBy = parties[r.IntN(len(parties))]
		}
		if r.IntN(3) == 0 {
			d := r.IntN(4)
			e.DelegationDepth = &d
		}
		if r.IntN(3) == 0 {
			o := r.IntN(5) == 0
			e.Overridden = &o
		}
		ev[i] = e
	}
	in := Input{AgentID: "a", Events: ev, Sensitivity: f64(0.2)}
	if r.IntN(2) == 0 {
		in.PrincipalID = ptr("user_9")
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
			t.Fatalf("case %d: %v", k, err)
		}
		if _, err := json.Marshal(a); err != nil {
			t.Fatalf("case %d: analysis does not encode (NaN or Inf?): %v", k, err)
		}
		if a.Score < 0 || a.Score > 100 || a.Confidence < 0 || a.Confidence > 1 {
			t.Fatalf("case %d: score %v confidence %v", k, a.Score, a.Confidence)
		}
		if a.ShadowPrincipalDetected != (len(a.ShadowPrincipals) > 0) || (a.ShadowPrincipalDetected && a.Score >= 50) {
			t.Fatalf("case %d: detected %v with %d parties, score %v", k, a.ShadowPrincipalDetected, len(a.ShadowPrincipals), a.Score)
		}
		for _, sp := range a.ShadowPrincipals {
			if sp.Party == "principal" || in.PrincipalID != nil && sp.Party == *in.PrincipalID {
				t.Fatalf("case %d: the principal was reported as a shadow principal", k)
			}
			if sp.ValueCaptured < 0 || sp.PrincipalCost < 0 || sp.Events < 0 ||
				(sp.FirstDetectedAt != nil && sp.FirstDetectedAt.Before(*sp.ChangePointAt)) {
				t.Fatalf("case %d: party %+v", k, sp)
			}
		}
		if a.Window.Baseline.Events+a.Window.Monitoring.Events != len(in.Events) || a.EventsAnalyzed != len(in.Events) {
			t.Fatalf("case %d: window %+v", k, a.Window)
		}
	}
}

// Shuffling events that have distinct timestamps does not change the analysis.
func TestAnalyzeIsOrderIndependent(t *testing.T) {
	t.Parallel()
	in, _ := Generate(ScenarioShadow, 5, GenParams{Events: 800})
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	shuffled := in
	shuffled.Events = append([]Event(nil), in.Events...)
	r := rand.New(rand.NewPCG(5, 6))
	r.Shuffle(len(shuffled.Events), func(i, j int) { shuffled.Events[i], shuffled.Events[j] = shuffled.Events[j], shuffled.Events[i] })
	b, err := Analyze(context.Background(), shuffled)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("analysis depends on input order:\n%s\n%s", ja, jb)
	}
	if !a.ShadowPrincipalDetected {
		t.Fatalf("shadow agent not detected: %s", ja)
	}
}

// Values at the contract's limit (±1e15, and the smallest subnormal) never yield NaN or Inf
// in the analysis and never a detection out of arithmetic noise; values beyond the limit,
// whose sums of squares would overflow, are refused.
func TestAnalyzeExtremeValuesStayFinite(t *testing.T) {
	t.Parallel()
	in, _ := Generate(ScenarioAligned, 3, GenParams{Events: 600})
	in.Events = append([]Event(nil), in.Events...)
	for i := range in.Events {
		e := &in.Events[i]
		if i%7 == 0 {
			e.PrincipalValue, e.BestAlternativeValue = f64(MaxMagnitude), f64(-MaxMagnitude)
			e.Beneficiaries = []Beneficiary{{Party: "vendor_a", Value: MaxMagnitude}, {Party: "vendor_b", Value: 5e-324}}
		}
	}
	beyond := in
	beyond.Events = append([]Event(nil), in.Events...)
	beyond.Events[7].PrincipalValue = f64(1e300)
	var ie *engine.InputError
	if _, err := Analyze(context.Background(), beyond); !errors.As(err, &ie) || ie.Field != "events[7].principal_value" {
		t.Errorf("1e300 accepted or misreported: %v", err)
	}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(a); err != nil {
		t.Fatalf("analysis does not encode: %v", err)
	}
	if a.ShadowPrincipalDetected {
		t.Errorf("extreme values on every 7th event flagged: %+v", a.ShadowPrincipals)
	}
}

// The harm tests read winsorized values centred on their medians: adding 10⁶ to every
// principal and best-alternative value leaves them unchanged, so the sums of squares and
// cubes they are built from do not lose their digits to the level of the values.
func TestTestValuesAreCentred(t *testing.T) {
	t.Parallel()
	in, _ := Generate(ScenarioShadow, 21, GenParams{Events: 1500})
	shifted := append([]Event(nil), in.Events...)
	for i := range shifted {
		e := &shifted[i]
		if e.PrincipalValue != nil {
			e.PrincipalValue = f64(*e.PrincipalValue + 1e6)
		}
		if e.BestAlternativeValue != nil {
			e.BestAlternativeValue = f64(*e.BestAlternativeValue + 1e6)
		}
	}
	a, b := prepare(in.Events, 450, principalOf(in), never), prepare(shifted, 450, principalOf(in), never)
	for i := range in.Events {
		if math.Abs(a.wLoss[i]-b.wLoss[i]) > 1e-6 || math.Abs(a.wPV[i]-b.wPV[i]) > 1e-6 {
			t.Fatalf("event %d: centred loss %v / %v, value %v / %v", i, a.wLoss[i], b.wLoss[i], a.wPV[i], b.wPV[i])
		}
	}
	var s sums
	for i := range in.Events {
		if in.Events[i].PrincipalValue != nil {
			s.add(b.wPV[i])
		}
	}
	if m := s.moments(); math.Abs(m.Mean) > 10 || s.m3() == 0 {
		t.Errorf("centred values: mean %v, third moment %v", m.Mean, s.m3())
	}
}

func principalOf(in Input) string {
	if in.PrincipalID == nil {
		return ""
	}
	return *in.PrincipalID
}
