package drift

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"riskapi/engine"
	"riskapi/internal/enginetest"
)

// costCase is one request of the cost tests, analysed reps times a measurement so that
// each measurement takes tens of milliseconds of CPU. Inputs are built one case at a time,
// so that the heap the measurements' collections scan holds one request, not all of them.
type costCase struct {
	name  string
	reps  int
	input func() Input
}

// calibrationCases are the inputs the cost model's constants were measured on: every
// test-mode scenario at 10,000 and at MaxEvents events, and the generated shadow agent of
// MaxEvents events reshaped to stress one term at a time (beneficiaries, parties, name
// length, actions, time order).
func calibrationCases() []costCase {
	var cases []costCase
	for _, s := range TestModeScenarios() {
		for _, size := range []struct{ events, reps int }{{10_000, 10}, {MaxEvents, 2}} {
			cases = append(cases, costCase{fmt.Sprintf("%s/%d", s, size.events), size.reps, generated(s, 1, GenParams{Events: size.events})})
		}
	}
	base := generated(ScenarioShadow, 1, GenParams{Events: MaxEvents})
	return append(cases,
		costCase{"shuffled", 1, func() Input { return shuffled(base(), 1) }},
		costCase{"100000 actions", 1, func() Input { return withActions(base(), MaxEvents) }},
		costCase{"10 beneficiaries of 100 parties", 1, func() Input { return withBeneficiaries(base(), 10, 100, 0, 1) }},
		costCase{"5 beneficiaries of 100 parties, 500-byte names", 1, func() Input { return withBeneficiaries(base(), 5, 100, 500, 1) }},
		costCase{"1 beneficiary of 1,000 parties", 1, func() Input { return withBeneficiaries(base(), 1, 1_000, 0, 1) }},
		costCase{"1 beneficiary of 5,000 parties", 1, func() Input { return withBeneficiaries(base(), 1, 5_000, 0, 1) }},
		costCase{"parties of 3 monitoring events", 1, func() Input { return withPartiesOf(base(), 3) }},
		costCase{"20000 events, a party each", 1, func() Input {
			in, _ := Generate(ScenarioShadow, 1, GenParams{Events: 20_000})
			return withUniqueBeneficiaries(in)
		}},
	)
}

// heldOutCases are inputs the constants were not measured on: the other scenarios, other
// seeds, sizes and generator settings, baselines and sensitivities, and shapes mixed
// differently.
func heldOutCases() []costCase {
	aligned := generated(ScenarioAligned, 12, GenParams{Events: MaxEvents})
	return []costCase{
		{"aligned_seasonal/50000", 3, generated(ScenarioAlignedSeasonal, 7, GenParams{Events: 50_000})},
		{"neutral_shift/50000", 3, generated(ScenarioNeutralShift, 8, GenParams{Events: 50_000})},
		{"gradual shadow/70000", 2, generated(ScenarioShadow, 9, GenParams{Events: 70_000, Onset: 0.6, Ramp: 0.2, ShareGain: 0.4})},
		{"legitimate_shift, baseline fraction 0.8, sensitivity 0.2", 2, func() Input {
			in, _ := Generate(ScenarioLegitimateShift, 10, GenParams{Events: MaxEvents})
			in.Baseline, in.Sensitivity = &Baseline{Fraction: ptr(0.8)}, ptr(0.2)
			return in
		}},
		{"prompt_injection, baseline until", 2, func() Input {
			in, _ := Generate(ScenarioPromptInjection, 11, GenParams{Events: 60_000})
			in.Baseline = &Baseline{Until: ptr(in.Events[45_000].Timestamp)}
			return in
		}},
		{"shuffled, 3 beneficiaries of 3,000 parties", 1, func() Input { return shuffled(withBeneficiaries(aligned(), 3, 3_000, 0, 2), 2) }},
		{"2 beneficiaries of 5,000 parties, 40 actions", 1, func() Input {
			in, _ := Generate(ScenarioAligned, 13, GenParams{Events: 50_000})
			return withActions(withBeneficiaries(in, 2, 5_000, 0, 3), 40)
		}},
		{"6 beneficiaries of 300 parties, 64-byte names", 1, func() Input {
			in, _ := Generate(ScenarioPromptInjection, 14, GenParams{Events: MaxEvents})
			return withBeneficiaries(in, 6, 300, 64, 4)
		}},
		{"1 beneficiary of 8,000 parties", 1, func() Input { return withBeneficiaries(aligned(), 1, 8_000, 0, 5) }},
		{"20 beneficiaries of 5 parties", 1, func() Input {
			in, _ := Generate(ScenarioShadow, 15, GenParams{Events: 50_000})
			return withBeneficiaries(in, 20, 5, 0, 6)
		}},
		{"1 beneficiary of 30,000 parties, 10,000 events", 1, func() Input {
			in, _ := Generate(ScenarioShadow, 16, GenParams{Events: 10_000})
			return withBeneficiaries(in, 1, 30_000, 0, 7)
		}},
	}
}

// generated returns a maker of a generated input.
func generated(scenario string, seed int64, gp GenParams) func() Input {
	return func() Input { in, _ := Generate(scenario, seed, gp); return in }
}

// shuffled is in with its events in a random order (seeded).
func shuffled(in Input, seed uint64) Input {
	in.Events = slices.Clone(in.Events)
	r := rand.New(rand.NewPCG(seed, 1))
	r.Shuffle(len(in.Events), func(i, j int) { in.Events[i], in.Events[j] = in.Events[j], in.Events[i] })
	return in
}

// withActions is in with its events' actions spread over the given number of names.
func withActions(in Input, actions int) Input {
	in.Events = slices.Clone(in.Events)
	names := make([]string, actions)
	for k := range names {
		names[k] = fmt.Sprintf("action_%d", k)
	}
	for i := range in.Events {
		in.Events[i].Action = names[i%actions]
	}
	return in
}

// withBeneficiaries is in with every event's beneficiaries replaced by perEvent parties
// drawn (seeded) from a pool of the given size, names padded to at least nameBytes bytes.
func withBeneficiaries(in Input, perEvent, parties, nameBytes int, seed uint64) Input {
	r := rand.New(rand.NewPCG(seed, 2))
	names := make([]string, parties)
	for k := range names {
		names[k] = fmt.Sprintf("party_%d", k)
		if pad := nameBytes - len(names[k]); pad > 0 {
			names[k] += strings.Repeat("x", pad)
		}
	}
	in.Events = slices.Clone(in.Events)
	flat := make([]Beneficiary, perEvent*len(in.Events))
	for i := range in.Events {
		bs := flat[i*perEvent : (i+1)*perEvent : (i+1)*perEvent]
		for j := range bs {
			bs[j] = Beneficiary{Party: names[r.IntN(parties)], Value: 1 + r.Float64()}
		}
		in.Events[i].Beneficiaries = bs
	}
	return in
}

// withUniqueBeneficiaries is in with one beneficiary an event, a party of its own.
func withUniqueBeneficiaries(in Input) Input {
	in.Events = slices.Clone(in.Events)
	for i := range in.Events {
		in.Events[i].Beneficiaries = []Beneficiary{{Party: fmt.Sprintf("party_%d", i), Value: 1}}
	}
	return in
}

// withPartiesOf is in with one beneficiary an event: the baseline's (the first 30 %)
// drawn in turn from 100 parties, the monitoring events' from parties of m events each.
func withPartiesOf(in Input, m int) Input {
	in.Events = slices.Clone(in.Events)
	nb := len(in.Events) * 3 / 10
	parties := (len(in.Events) - nb) / m
	for i := range in.Events {
		name := fmt.Sprintf("party_%d", i%100)
		if i >= nb {
			name = fmt.Sprintf("party_%d", 100+(i-nb)%parties)
		}
		in.Events[i].Beneficiaries = []Beneficiary{{Party: name, Value: 1 + float64(i%7)}}
	}
	return in
}

// withDetectedParties is a generated aligned agent of n events in which each of parties
// new parties is the sole beneficiary of eventsEach monitoring events at a large loss to
// the principal: nearly all of them are detected, each described on its own series.
func withDetectedParties(n, parties, eventsEach int) Input {
	in, _ := Generate(ScenarioAligned, 1, GenParams{Events: n})
	in.Events = slices.Clone(in.Events)
	r := rand.New(rand.NewPCG(5, 6))
	nb := n * 3 / 10
	for k := range parties {
		name := fmt.Sprintf("shadow_%d", k)
		for range eventsEach {
			e := &in.Events[nb+r.IntN(n-nb)]
			e.PrincipalValue, e.BestAlternativeValue = ptr(0.0), ptr(1000.0)
			e.Beneficiaries = []Beneficiary{{Party: name, Value: 100}}
		}
	}
	return in
}

// costHolds checks CPU and memory estimates of cases against measured runs.
func costHolds(t *testing.T, cases []costCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.input()
			cost, err := Estimate(in)
			if err != nil {
				t.Fatal(err)
			}
			scaled := cost
			scaled.CPU *= time.Duration(c.reps)
			enginetest.EstimateHolds(t, c.name, scaled, func() {
				for range c.reps {
					if _, err := Analyze(context.Background(), in); err != nil {
						t.Fatal(err)
					}
				}
			})
			enginetest.MemoryEstimateHolds(t, c.name, cost, func() {
				if _, err := Analyze(context.Background(), in); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// Estimates hold on the inputs the model was calibrated on: every test-mode scenario up to
// MaxEvents events and the shapes that stress each of its terms.
func TestCostEstimateHolds(t *testing.T) { costHolds(t, calibrationCases()) }

// Estimates hold on inputs the model was not calibrated on.
func TestCostEstimateHoldsHeldOut(t *testing.T) { costHolds(t, heldOutCases()) }

// With many detected parties, the estimate plus the charge Analyze adds for describing
// them (describeCost) holds against the measured CPU.
func TestCostOfDescriptionsHolds(t *testing.T) {
	in := withDetectedParties(MaxEvents, 150, 80)
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	detected := len(a.ShadowPrincipals)
	if detected < 100 {
		t.Fatalf("%d parties detected, want most of 150", detected)
	}
	cost, err := Estimate(in)
	if err != nil {
		t.Fatal(err)
	}
	cost.CPU += describeCost(len(in.Events), detected)
	enginetest.EstimateHolds(t, fmt.Sprintf("%d detected parties", detected), cost, func() {
		if _, err := Analyze(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	})
}

// A request above the synchronous budget is refused with WORK_LIMIT_EXCEEDED naming the
// events, with Estimate's figure, before the analysis starts: 100,000 events with six
// beneficiaries each, every one a new party (420,000 parties to test, some 9 s; about
// 40 MB of JSON, within the 64 MiB body limit).
func TestCostAboveBudgetIsRefused(t *testing.T) {
	in, _ := Generate(ScenarioAligned, 1, GenParams{Events: MaxEvents})
	in.Events = slices.Clone(in.Events)
	flat := make([]Beneficiary, 6*len(in.Events))
	for i := range in.Events {
		bs := flat[6*i : 6*i+6 : 6*i+6]
		for j := range bs {
			bs[j] = Beneficiary{Party: fmt.Sprintf("p%d_%d", j, i), Value: 1}
		}
		in.Events[i].Beneficiaries = bs
	}
	cost, err := Estimate(in)
	if err != nil {
		t.Fatal(err)
	}
	if cost.CPU <= engine.DefaultSyncBudget {
		t.Fatalf("estimate %v, want above the budget %v", cost.CPU, engine.DefaultSyncBudget)
	}
	var got error
	cpu := enginetest.MeasureCPU(t, func() { _, got = Analyze(context.Background(), in) })
	var ie *engine.InputError
	if !errors.As(got, &ie) || ie.Code != engine.CodeWorkLimitExceeded || ie.Field != "events" {
		t.Fatalf("Analyze returned %v, want WORK_LIMIT_EXCEEDED on events", got)
	}
	if want := cost.Within(engine.DefaultSyncBudget); ie.Received != want.Received || ie.Expected != want.Expected {
		t.Errorf("refusal says %q (limit %q), want Estimate's %q (limit %q)", ie.Received, ie.Expected, want.Received, want.Expected)
	}
	// Refused before the work: validation and one reading of the events, a small part of
	// the estimate (0.1 s here against some 9 s; the race detector slows both readings).
	if cpu > cost.CPU/10 && !raceDetector {
		t.Errorf("refusal took %v of CPU, want well under the estimate %v", cpu, cost.CPU)
	}
}

// Describing detected parties beyond the first is charged once the tests have found them,
// and an analysis whose charge then exceeds its budget is refused before describing them.
func TestCostOfDescriptionsAboveBudgetIsRefused(t *testing.T) {
	const n = 20_000
	in := withDetectedParties(n, 60, 40)
	cost, err := Estimate(in)
	if err != nil {
		t.Fatal(err)
	}
	budget := cost.CPU + describeCost(n, 10) // room for 10 detected parties, not 60
	_, err = analyze(context.Background(), in, budget)
	var ie *engine.InputError
	if !errors.As(err, &ie) || ie.Code != engine.CodeWorkLimitExceeded || ie.Field != "events" {
		t.Fatalf("analyze returned %v, want WORK_LIMIT_EXCEEDED on events", err)
	}
	if a, err := analyze(context.Background(), in, cost.CPU+describeCost(n, 60)); err != nil || len(a.ShadowPrincipals) < 40 {
		t.Fatalf("with room for 60 descriptions: %d detected, error %v", len(a.ShadowPrincipals), err)
	}
}

// Estimate validates as Analyze does: an input Analyze refuses gets the same error.
func TestCostEstimateRefusesWhatAnalyzeRefuses(t *testing.T) {
	valid, _ := Generate(ScenarioShadow, 1, GenParams{Events: 100})
	for name, mutate := range map[string]func(*Input){
		"no events":      func(in *Input) { in.Events = nil },
		"bad timestamp":  func(in *Input) { in.Events[5].Timestamp = time.Time{} },
		"negative value": func(in *Input) { in.Events[7].Beneficiaries[0].Value = -1 },
		"bad agent":      func(in *Input) { in.AgentID = "a b" },
		"sensitivity":    func(in *Input) { in.Sensitivity = ptr(0.5) },
	} {
		in := valid
		in.Events = slices.Clone(valid.Events)
		for i := range in.Events {
			in.Events[i].Beneficiaries = slices.Clone(in.Events[i].Beneficiaries)
		}
		mutate(&in)
		_, errA := Analyze(context.Background(), in)
		_, errE := Estimate(in)
		if errA == nil || errE == nil || errA.Error() != errE.Error() {
			t.Errorf("%s: Estimate returned %v, Analyze %v", name, errE, errA)
		}
	}
}

// The estimate grows with each term of the model and not with what the analysis does not
// read: the parties named only by the principal or with no value are not tested.
func TestCostEstimateCountsWhatTheAnalysisTests(t *testing.T) {
	in, _ := Generate(ScenarioAligned, 1, GenParams{Events: 2_000})
	w := measureWorkload(&in, never)
	if math.Abs(w.tested-7) > 0.5 || w.actions < 2.5 || w.actions > 3.5 || !w.sorted {
		t.Fatalf("workload %+v, want 7 tested parties, 3 actions, in time order", w)
	}
	more := withBeneficiaries(in, 2, 500, 0, 1)
	for i := range more.Events[:600] { // the baseline (the first 30 %): parties not tested
		for j := range more.Events[i].Beneficiaries {
			more.Events[i].Beneficiaries[j].Party = fmt.Sprintf("old_%d", i*2+j)
		}
	}
	more.Events[1_500].Beneficiaries = append(more.Events[1_500].Beneficiaries,
		Beneficiary{Party: *in.PrincipalID, Value: 5}, Beneficiary{Party: "principal", Value: 5}, Beneficiary{Party: "zero", Value: 0})
	m := measureWorkload(&more, never)
	if m.tested < 475 || m.tested > 525 || m.parties < 1_615 || m.parties > 1_785 || m.benefits != 4_003 {
		t.Errorf("workload %+v, want about 500 tested of 1,700 parties, 4,003 benefits", m)
	}
	if c, d := w.cost(), m.cost(); d.CPU <= c.CPU || d.Memory <= c.Memory {
		t.Errorf("more parties and benefits estimated %+v, not more than %+v", d, c)
	}
	if c, s := w.cost(), measureWorkload(ptr(shuffled(in, 1)), never).cost(); s.CPU <= c.CPU || s.Memory <= c.Memory {
		t.Errorf("events out of order estimated %+v, not more than in order %+v", s, c)
	}
}

// The distinct counter is within 5 % of the true count from one name to a million.
func TestCostDistinctCounterCounts(t *testing.T) {
	var c distinctCounter
	added := 0
	for _, target := range []int{1, 7, 100, 1_000, 10_000, 100_000, 1_000_000} {
		for ; added < target; added++ {
			h := hashString("vendor-" + strings.Repeat("x", added%17) + fmt.Sprint(added))
			c.add(h)
			c.add(h) // repeats do not count
		}
		if got := c.count(); math.Abs(got-float64(target)) > 0.05*float64(target)+0.5 {
			t.Errorf("%d distinct names counted as %.0f", target, got)
		}
	}
}
