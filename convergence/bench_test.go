package convergence

import (
	"context"
	"fmt"
	"testing"

	"riskapi/internal/enginetest"
)

// BenchmarkAnalyze100x1000 analyses a market of 100 firms × 1,000 periods (100,000
// observations with costs and quantities, benchmarks) in which a cartel forms and breaks
// down, with message metadata between all firms: the spec's speed target. Generation is
// outside the timed loop.
func BenchmarkAnalyze100x1000(b *testing.B) {
	in, _ := Generate(ScenarioCartel, 1, GenParams{Firms: 100, Periods: 1000, Messages: 1, PeriodForm: FormDate})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(in.Communications)), "messages")
}

// BenchmarkAnalyze100x1000Competitive is the same size with nothing to find.
func BenchmarkAnalyze100x1000Competitive(b *testing.B) {
	in, _ := Generate(ScenarioCompetitive, 1, GenParams{Firms: 100, Periods: 1000, PeriodForm: FormDate})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeTenders analyses 1,000 tenders of 5–7 bids.
func BenchmarkAnalyzeTenders(b *testing.B) {
	in, _ := Generate(ScenarioBidRigging, 1, GenParams{Tenders: 1000, Firms: 30})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerateCollusionFound is one test-mode collusion_found market: training two
// Q-learning agents to convergence and observing them.
func BenchmarkGenerateCollusionFound(b *testing.B) {
	b.ReportAllocs()
	seed := int64(0)
	for b.Loop() {
		seed++
		Generate(ScenarioCollusionFound, seed, GenParams{})
	}
}

// BenchmarkAnalyze100x1000Workers is BenchmarkAnalyze100x1000 on 1, 2 and 4 workers in one
// process (GOMAXPROCS as -cpu sets it), reporting beside the wall time the process's CPU
// time per analysis (cpu-ns/op, the collector's included): on a machine shared with other
// work the wall time follows the load, while the CPU time shows what the split costs.
func BenchmarkAnalyze100x1000Workers(b *testing.B) {
	in, _ := Generate(ScenarioCartel, 1, GenParams{Firms: 100, Periods: 1000, Messages: 1, PeriodForm: FormDate})
	for _, w := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			in := in
			in.Run = Options{Workers: w}
			b.ReportAllocs()
			start := enginetest.CPUTime()
			for b.Loop() {
				if _, err := Analyze(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(enginetest.CPUTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
