package drift

import (
	"bytes"
	"context"
	"testing"

	"github.com/go-json-experiment/json"
)

// The per-party tests give the same analysis, byte for byte, on any number of workers, for
// every scenario (shadows found and not), with parties enough to split.
func TestWorkersTestPartiesGiveTheSameBytes(t *testing.T) {
	t.Parallel()
	most := 0
	for _, scenario := range Scenarios() {
		for seed := int64(1); seed <= 3; seed++ {
			in, _ := Generate(scenario, seed, GenParams{Events: 1500})
			var first []byte
			if a, err := Analyze(context.Background(), in); err == nil && a.Dimensions.ShadowPrincipal != nil {
				most = max(most, a.Dimensions.ShadowPrincipal.PartiesTested)
			}
			for _, w := range []int{1, 2, 3, 8} {
				in.Workers = w
				out := analysisBytes(t, in)
				if first == nil {
					first = out
				} else if !bytes.Equal(out, first) {
					t.Fatalf("%s seed %d: %d workers gave another analysis than one:\n%s\n%s", scenario, seed, w, out, first)
				}
			}
		}
	}
	if most < 3*minPartiesPerWorker {
		t.Fatalf("at most %d parties tested: the cases never split over three workers", most)
	}
}

// A canceled analysis stops on every number of workers.
func TestWorkersTestPartiesStopWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	in, _ := Generate(ScenarioShadow, 1, GenParams{Events: 1500})
	p := prepare(in.Events, 450, *in.PrincipalID, never)
	for _, w := range []int{1, 2, 8} {
		if got := p.testParties(0.01, func() bool { return true }, w); got != nil {
			t.Fatalf("workers=%d: tested %d parties after the stop", w, len(got))
		}
	}
}

// analysisBytes is the JSON of Analyze's result for in.
func analysisBytes(t *testing.T, in Input) []byte {
	t.Helper()
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
