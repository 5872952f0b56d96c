package drift

import "testing"

// BenchmarkAnalyze100k analyses 100,000 events of a shadow agent (gradual onset), the
// request size limit of POST /v1/drift/analyze. Generation is outside the timed loop.
func BenchmarkAnalyze100k(b *testing.B) {
	in, _ := Generate(ScenarioShadow, 1, GenParams{Events: 100_000, Onset: 0.5, Ramp: 0.1, ShareGain: 0.2, RegretFrac: 0.1})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyze100kAligned is the same size with nothing to detect (no change-point fits).
func BenchmarkAnalyze100kAligned(b *testing.B) {
	in, _ := Generate(ScenarioAligned, 1, GenParams{Events: 100_000})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(in); err != nil {
			b.Fatal(err)
		}
	}
}
