package drift

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"

	"riskapi/internal/enginetest"
)

// BenchmarkAnalyze100k analyses 100,000 events of a shadow agent (gradual onset), the
// request size limit of POST /v1/drift/analyze. Generation is outside the timed loop.
func BenchmarkAnalyze100k(b *testing.B) {
	in, _ := Generate(ScenarioShadow, 1, GenParams{Events: 100_000, Onset: 0.5, Ramp: 0.1, ShareGain: 0.2, RegretFrac: 0.1})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyze100kAligned is the same size with nothing to detect: no shadow
// principal, so the behaviour change-point family is tested instead.
func BenchmarkAnalyze100kAligned(b *testing.B) {
	in, _ := Generate(ScenarioAligned, 1, GenParams{Events: 100_000})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyze100kShuffled is BenchmarkAnalyze100k with the events out of time order,
// so Analyze sorts a copy first (in time order it reads them in place).
func BenchmarkAnalyze100kShuffled(b *testing.B) {
	in, _ := Generate(ScenarioShadow, 1, GenParams{Events: 100_000, Onset: 0.5, Ramp: 0.1, ShareGain: 0.2, RegretFrac: 0.1})
	in.Events = slices.Clone(in.Events)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(in.Events), func(i, j int) { in.Events[i], in.Events[j] = in.Events[j], in.Events[i] })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCostModel measures the cost model's CPU constants (drift/cost.go): each
// sub-benchmark analyses two inputs of MaxEvents events (20,000 for ns/party, whose
// parties have one event each) that differ in one term of the
// model and reports the extra CPU per unit of that term, less what the model charges for
// the other terms that differ. The constants were set from
// `go test -run XXX -bench CostModel -benchtime 3x -count 3 ./drift`.
func BenchmarkCostModel(b *testing.B) {
	base, _ := Generate(ScenarioShadow, 1, GenParams{Events: MaxEvents})
	small, _ := Generate(ScenarioShadow, 1, GenParams{Events: 20_000})
	cases := []struct {
		unit     string
		from, to Input
		units    func(workload) float64
		ns       float64
	}{
		{"ns/event", Input{}, base, func(w workload) float64 { return float64(w.events) }, nsPerEvent},
		{"ns/benefit", withBeneficiaries(base, 1, 100, 0, 1), withBeneficiaries(base, 10, 100, 0, 1), func(w workload) float64 { return float64(w.benefits) }, nsPerBenefit},
		{"ns/name-byte", withBeneficiaries(base, 5, 100, 0, 1), withBeneficiaries(base, 5, 100, 500, 1), func(w workload) float64 { return float64(w.nameBytes) }, nsPerNameByte},
		{"ns/party", withBeneficiaries(small, 1, 100, 0, 1), withUniqueBeneficiaries(small), func(w workload) float64 { return w.tested }, nsPerParty},
		{"ns/repeat-party", withBeneficiaries(base, 1, 100, 0, 1), withBeneficiaries(base, 1, 5_000, 0, 1), workload.repeatWeight, nsPerRepeatParty},
		{"ns/action", base, withActions(base, MaxEvents), func(w workload) float64 { return w.actions }, nsPerAction},
		{"ns/sort-step", base, shuffled(base, 1), func(w workload) float64 {
			if w.sorted {
				return 0
			}
			return float64(w.events) * math.Log2(float64(w.events))
		}, nsPerSortStep},
	}
	for _, c := range cases {
		b.Run(c.unit, func(b *testing.B) {
			w0, w1 := measureWorkload(&c.from, never), measureWorkload(&c.to, never)
			if len(c.from.Events) == 0 {
				w0 = workload{sorted: true}
			}
			du := c.units(w1) - c.units(w0)
			others := float64(w1.cost().CPU-w0.cost().CPU) - c.ns*du
			var sum float64
			for b.Loop() {
				cpu := float64(enginetest.MeasureCPU(b, func() { analyzeOrFail(b, c.to) }))
				if len(c.from.Events) > 0 {
					cpu -= float64(enginetest.MeasureCPU(b, func() { analyzeOrFail(b, c.from) }))
				}
				sum += (cpu - others) / du
			}
			b.ReportMetric(sum/float64(b.N), c.unit)
		})
	}
	// The tests' cost of a party by its number of monitoring events (nsPerParty,
	// nsPerRepeatParty and repeatRamp): the extra CPU over 100 parties, per party.
	reference := withBeneficiaries(base, 1, 100, 0, 1)
	for _, m := range []int{1, 2, 3, 5, 10, 20, 50} {
		b.Run(fmt.Sprintf("party-of-%d-events", m), func(b *testing.B) {
			in := withPartiesOf(base, m)
			w := measureWorkload(&in, never)
			var sum float64
			for b.Loop() {
				cpu := enginetest.MeasureCPU(b, func() { analyzeOrFail(b, in) }) - enginetest.MeasureCPU(b, func() { analyzeOrFail(b, reference) })
				sum += float64(cpu) / w.tested
			}
			b.ReportMetric(sum/float64(b.N), "ns/party")
		})
	}
	b.Run("ns/described-event", func(b *testing.B) {
		in := withDetectedParties(MaxEvents, 150, 80)
		a := analyzeOrFail(b, in)
		cost, _ := Estimate(in)
		var sum float64
		for b.Loop() {
			cpu := enginetest.MeasureCPU(b, func() { analyzeOrFail(b, in) })
			sum += float64(cpu-cost.CPU) / float64((len(a.ShadowPrincipals)-1)*MaxEvents)
		}
		b.ReportMetric(sum/float64(b.N), "ns/described-event")
	})
}

func analyzeOrFail(b *testing.B, in Input) Analysis {
	a, err := Analyze(context.Background(), in)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkDecodeInput100k decodes the body of BenchmarkAnalyze100k's input (about 27 MB)
// with the bulk decoder on GOMAXPROCS workers (-cpu sets them), beside json.Unmarshal of
// the same body (the decoder the bulk one stands in for).
func BenchmarkDecodeInput100k(b *testing.B) {
	in, _ := Generate(ScenarioShadow, 1, GenParams{Events: 100_000, Onset: 0.5, Ramp: 0.1, ShareGain: 0.2, RegretFrac: 0.1})
	body, err := json.Marshal(in)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bulk", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var got Input
			if !DecodeInput(context.Background(), body, &got, 0) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var got Input
			if err := json.Unmarshal(body, &got, json.RejectUnknownMembers(true)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
