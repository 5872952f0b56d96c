package drift

import (
	"math"
	"testing"
)

func TestStudentTUpperKnownValues(t *testing.T) {
	t.Parallel()
	// Reference values from standard t tables.
	cases := []struct{ t, df, want float64 }{
		{2.228, 10, 0.025},
		{1.812, 10, 0.05},
		{2.576, 1e9, 0.005},
		{0, 5, 0.5},
		{-1.812, 10, 0.95},
	}
	for _, c := range cases {
		if got := studentTUpper(c.t, c.df); math.Abs(got-c.want) > 5e-4 {
			t.Errorf("studentTUpper(%v, %v) = %v, want %v", c.t, c.df, got, c.want)
		}
	}
}

func TestBinomUpperMatchesSum(t *testing.T) {
	t.Parallel()
	k, q := 20, 0.3
	for x := 0; x <= k; x++ {
		want := 0.0
		for j := x; j <= k; j++ {
			want += math.Exp(lchoose(k, j) + float64(j)*math.Log(q) + float64(k-j)*math.Log(1-q))
		}
		if got := binomUpper(x, k, q); math.Abs(got-want) > 1e-9 {
			t.Errorf("binomUpper(%d) = %v, want %v", x, got, want)
		}
	}
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

func TestHolm(t *testing.T) {
	t.Parallel()
	got := holm([]float64{0.01, 0.04, 0.03, 0.005})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("holm = %v, want %v", got, want)
		}
	}
}
