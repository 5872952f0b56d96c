package cascade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"riskapi/engine"
)

// mixedInput exercises every scenario type and node attribute.
func mixedInput(model string) Input {
	in, _ := Generate(ScenarioFragileNetwork, 11, GenParams{Nodes: detNodes, MeanDegree: 3, Simulations: detSims})
	for i := range in.Network.Nodes {
		in.Network.Nodes[i].FailureProbability = ptr(0.002 * float64(i%5))
		in.Network.Edges[i].Probability = ptr(0.5)
	}
	in.Model = model
	in.Scenarios = []ScenarioSpec{
		{Name: "random failures", Type: TypeRandomFailure},
		{Name: "two random nodes", Type: TypeRandomNode, Count: ptr(2)},
		{Name: "uniform failures", Type: TypeRandomFailure, Probability: ptr(0.01)},
		{Name: "top 3 by degree", Type: TypeTargetedAttack, Count: ptr(3), By: ByDegree},
		{Name: "top 2 by eigenvector", Type: TypeTargetedAttack, Count: ptr(2), By: ByEigenvector},
		{Name: "provider", Type: TypeProviderOutage, Provider: in.Network.Nodes[0].Provider},
		{Name: "named nodes", Type: TypeNodeFailure, Nodes: []string{in.Network.Nodes[5].ID, in.Network.Nodes[9].ID}},
	}
	if model != ModelIndependentCascade {
		in.Scenarios = append(in.Scenarios, ScenarioSpec{Name: "shock", Type: TypeShock, LossFraction: ptr(0.6)})
	}
	return in
}

// TestSameSeedSameBytesAnyWorkers: the marshalled result is byte-identical with 1, 2, 4 and
// 7 workers, for every model; another seed changes it.
func TestSameSeedSameBytesAnyWorkers(t *testing.T) {
	t.Parallel()
	for _, m := range modelNames {
		in := mixedInput(m)
		var ref []byte
		for _, w := range []int{1, 2, 4, 7} {
			res, err := runWith(context.Background(), in, Options{Workers: w})
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = b
				continue
			}
			if !bytes.Equal(ref, b) {
				t.Errorf("%s: workers %d gives different bytes than workers 1", m, w)
			}
		}
		in.Seed = ptr(*in.Seed + 1)
		res, err := runWith(context.Background(), in, Options{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(res); bytes.Equal(ref, b) {
			t.Errorf("%s: seed+1 gives the same bytes", m)
		}
	}
}

// A context cancelled while a long simulation runs (at its first progress report) stops it
// promptly, before its end, with ctx's error; an already cancelled context does no work.
// (TestAnalyzeStopsSoonAfterCancel measures how soon; this checks that the simulation
// stops before its end.)
func TestCancelledContextStopsSimulation(t *testing.T) {
	t.Parallel()
	in := benchInput(2_000, 10, 100_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Progress is called under a lock and Analyze waits for its workers, so these need none.
	var cancelled time.Time
	var last, total int64
	_, err := runWith(ctx, in, Options{Progress: func(done, tot int64) {
		last, total = done, tot
		if cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if cancelled.IsZero() {
		t.Fatal("no progress was reported, so the simulation was never cancelled while it ran")
	}
	if d := time.Since(cancelled); d > 5*time.Second {
		t.Errorf("Analyze returned %v after its context was cancelled", d)
	}
	if last >= total {
		t.Errorf("progress reached %d/%d: the simulation ran to its end after the cancel", last, total)
	}
	// An already cancelled context does no work.
	if _, err := Analyze(ctx, mixedInput(ModelThreshold)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before start: err = %v", err)
	}
}

// Progress reports are increasing, bounded, and end with done == total.
func TestProgressIncreasesToTotal(t *testing.T) {
	t.Parallel()
	in := mixedInput(ModelThreshold)
	var last, total, calls int64
	_, err := runWith(context.Background(), in, Options{Workers: 3, Progress: func(done, tot int64) {
		if done < last || done > tot {
			t.Errorf("progress %d/%d after %d", done, tot, last)
		}
		last, total = done, tot
		calls++
	}})
	if err != nil {
		t.Fatal(err)
	}
	// 8 scenarios: 3 stochastic scenarios of detSims runs + 5 single runs, plus the swept nodes.
	if want := int64(3*detSims + 5 + detNodes); total != want || last != total {
		t.Errorf("progress ended at %d/%d, want %d/%d", last, total, want, want)
	}
	if calls < 10 || calls > 260 {
		t.Errorf("%d progress calls, want between 10 and 260", calls)
	}
}

// runWith is Analyze with run options.
func runWith(ctx context.Context, in Input, opt Options) (Result, error) {
	in.Run = opt
	return Analyze(ctx, in)
}

// Copies of one validated Input analysed at once share the compiled input safely (run it
// with -race) and give the same bytes.
func TestValidatedInputAnalysedConcurrently(t *testing.T) {
	t.Parallel()
	in := mixedInput(ModelThreshold)
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	results := make([][]byte, 4)
	costs := make([]engine.Cost, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			res, err := Analyze(context.Background(), in)
			if err != nil {
				t.Error(err)
				return
			}
			results[i], _ = json.Marshal(res)
		})
	}
	// Estimates meanwhile share the compiled input and its network, and agree.
	for i := range costs {
		wg.Go(func() {
			var err error
			if costs[i], err = Estimate(in); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range results {
		if !bytes.Equal(results[i], results[0]) {
			t.Errorf("concurrent analysis %d differs", i)
		}
	}
	if costs[0] != costs[1] || costs[0].CPU <= 0 {
		t.Errorf("concurrent estimates %+v and %+v", costs[0], costs[1])
	}
}
