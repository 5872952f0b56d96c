package drift

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
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
