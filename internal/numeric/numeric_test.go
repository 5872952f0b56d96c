package numeric

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSelectKthMatchesSorting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + r.IntN(200)
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(r.IntN(10)) // many ties
			if trial%3 == 0 {
				x[i] = r.NormFloat64()
			}
		}
		sorted := slices.Sorted(slices.Values(x))
		k := r.IntN(n)
		if got := SelectKth(slices.Clone(x), k); got != sorted[k] {
			t.Fatalf("trial %d: SelectKth(k=%d) = %v, want %v", trial, k, got, sorted[k])
		}
	}
	// An adversarial input (sorted, all equal) still terminates and is right.
	eq := make([]float64, 10000)
	if SelectKth(eq, 5000) != 0 {
		t.Fatal("all equal")
	}
}

func TestMoments(t *testing.T) {
	var m Moments
	for _, x := range []float64{1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16} {
		m.Add(x)
	}
	// Mean 1e9+10, deviations −6, −3, 3, 6: variance 90/3 = 30, exact despite the offset.
	if m.N != 4 || m.Mean != 1e9+10 || math.Abs(m.Variance()-30) > 1e-9 {
		t.Fatalf("moments = %+v, variance %v", m, m.Variance())
	}
	if (Moments{N: 1}).Variance() != 0 {
		t.Fatal("variance of one value")
	}
}
