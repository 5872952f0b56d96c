package drift

import (
	"bytes"
	"context"
	"fmt"
	"slices"
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

// Validation on several goroutines reports the first failing event, as one goroutine does,
// wherever the failures fall in the ranges.
func TestWorkersValidateLikeOne(t *testing.T) {
	t.Parallel()
	in, _ := Generate(ScenarioShadow, 2, GenParams{Events: 40_000})
	for _, bad := range [][]int{{}, {39_999}, {30_000, 5}, {20_000, 20_001}, {12_000, 39_000}} {
		events := slices.Clone(in.Events)
		for k, i := range bad {
			if k%2 == 0 {
				events[i].Action = ""
			} else {
				events[i].Beneficiaries = append(events[i].Beneficiaries, Beneficiary{Party: "x", Value: -1})
			}
		}
		want := fmt.Sprint(validateEventsOn(events, nil, 1))
		for _, w := range []int{2, 3, 5, 8} {
			if got := fmt.Sprint(validateEventsOn(events, nil, w)); got != want {
				t.Fatalf("failures at %v, %d workers: %s; one goroutine: %s", bad, w, got, want)
			}
		}
	}
}

// The workload the estimate is made of is the same measured on any number of goroutines:
// events in order and shuffled, with a baseline by fraction and by time.
func TestWorkersMeasureTheSameWorkload(t *testing.T) {
	t.Parallel()
	in, _ := Generate(ScenarioShadow, 3, GenParams{Events: 50_000})
	until := in.Events[20_000].Timestamp
	fraction := 0.4
	for _, c := range []Input{in, shuffled(in, 2), {Events: in.Events, Baseline: &Baseline{Until: &until}}, {Events: in.Events, Baseline: &Baseline{Fraction: &fraction}}} {
		c.Workers = 1
		want := measureWorkload(&c, never)
		for _, w := range []int{2, 3, 6} {
			c.Workers = w
			if got := measureWorkload(&c, never); got != want {
				t.Fatalf("%d workers measured %+v; one goroutine %+v", w, got, want)
			}
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
