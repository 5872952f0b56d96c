package cascade

import (
	"math"
	"slices"
)

// mean sums in index (run) order, so it does not depend on which worker made which run.
func mean(x []float64) float64 {
	var a neumaier
	for _, v := range x {
		a.add(v)
	}
	return a.mean()
}

// neumaier is Neumaier's compensated sum, in the order of add: the mean of N equal values
// is that value. A merge adds chunks' values in run order, so it gets mean's result.
type neumaier struct {
	s, c float64
	n    int
}

func (a *neumaier) add(v float64) {
	t := a.s + v
	if math.Abs(a.s) >= math.Abs(v) {
		a.c += (a.s - t) + v
	} else {
		a.c += (v - t) + a.s
	}
	a.s = t
	a.n++
}

func (a *neumaier) mean() float64 {
	if a.n == 0 {
		return 0
	}
	return (a.s + a.c) / float64(a.n)
}

// rankCeil is ⌈pct·N/100⌉ for an integer percentage, without floating-point rounding.
func rankCeil(pct, n int) int { return (pct*n + 99) / 100 }

// quantile is the empirical q-quantile of sorted (ascending) values: the ⌈q·N⌉-th smallest.
func quantile(sorted []float64, pct int) float64 {
	k := max(1, rankCeil(pct, len(sorted)))
	return sorted[k-1]
}

// tailMean is the mean of the largest ⌈(1 − q)·N⌉ values of sorted (ascending).
func tailMean(sorted []float64, pct int) float64 {
	k := max(1, rankCeil(100-pct, len(sorted)))
	tail := sorted[len(sorted)-k:]
	// The mean lies between the tail's extremes; rounding must not push it below the
	// value at risk.
	return min(tail[k-1], max(tail[0], mean(tail)))
}

// summarise computes a scenario's statistics from its per-run failed value fractions,
// losses and rounds (indexed by run).
func summarise(name, typ string, frac, loss []float64, rounds []int, threshold float64) ScenarioResult {
	sumR, maxR := int64(0), 0
	for _, r := range rounds {
		sumR += int64(r)
		maxR = max(maxR, r)
	}
	return summariseRuns(name, typ, frac, loss, sumR, maxR, threshold)
}

// summariseRuns is summarise given the sum and the largest of the rounds.
func summariseRuns(name, typ string, frac, loss []float64, sumRounds int64, maxRounds int, threshold float64) ScenarioResult {
	N := len(frac)
	sr := ScenarioResult{Name: name, Type: typ, Runs: N}
	hist := Histogram{Edges: make([]float64, 11), Counts: make([]int, 10)}
	for b := range hist.Edges {
		hist.Edges[b] = float64(b) / 10
	}
	sys := 0
	for _, f := range frac {
		if f >= threshold {
			sys++
		}
		b := int(math.Floor(f * 10))
		hist.Counts[min(9, max(0, b))]++
	}
	sr.Histogram = hist
	sr.CascadeProbability = float64(sys) / float64(N)
	sr.ExpectedFailedFraction = mean(frac)
	fs := slices.Clone(frac)
	slices.Sort(fs)
	sr.FailedFractionQuantiles = Quantiles{P50: quantile(fs, 50), P90: quantile(fs, 90), P99: quantile(fs, 99)}
	sr.ExpectedLoss = mean(loss)
	ls := slices.Clone(loss)
	slices.Sort(ls)
	sr.ValueAtRisk = TailLevels{L95: quantile(ls, 95), L99: quantile(ls, 99)}
	sr.ExpectedShortfall = TailLevels{L95: tailMean(ls, 95), L99: tailMean(ls, 99)}
	sr.MaxRounds = maxRounds
	sr.MeanRounds = float64(sumRounds) / float64(N)
	return sr
}
