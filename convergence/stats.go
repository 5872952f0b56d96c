package convergence

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"

	"riskapi/internal/numeric"
)

// moments accumulates count, mean and variance (Welford; shared with the other engines).
type moments = numeric.Moments

// normalQuantileUpper is the z with P(Z > z) = p.
func normalQuantileUpper(p float64) float64 { return -mathext.NormalQuantile(p) }

// fUpper is P(F > f) for an F(d1, d2) variable.
func fUpper(f, d1, d2 float64) float64 {
	switch {
	case math.IsNaN(f) || !(d1 > 0) || !(d2 > 0):
		return 1
	case math.IsInf(f, 1):
		return 0
	case f <= 0:
		return 1
	}
	return mathext.RegIncBeta(d2/2, d1/2, d2/(d2+d1*f))
}

// kuiperUpper is P(V > v) for the range V = sup B − inf B of a Brownian bridge B (Kuiper
// 1960): 2 Σ_{k≥1} (4k²v² − 1) exp(−2k²v²). The series is used for v ≥ 0.4, where it
// converges fast; below, the probability exceeds 0.999 and 1 is returned.
func kuiperUpper(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return 1
	case math.IsInf(v, 1):
		return 0
	case v < 0.4:
		return 1
	}
	s := 0.0
	for k := 1; k <= 100; k++ {
		kk := float64(k * k)
		term := (4*kk*v*v - 1) * math.Exp(-2*kk*v*v)
		s += term
		if math.Abs(term) < 1e-18 {
			break
		}
	}
	return math.Min(1, math.Max(0, 2*s))
}

// batchMeanUpper tests H0: mean(x) ≤ mu0 against mean(x) > mu0 for a serially dependent
// series by non-overlapping batch means (Schmeiser 1982): b = clamp(⌊√n⌋, 2, 30) batches
// of equal length (the last n mod b values join the last batch), a one-sided t-test with
// b − 1 degrees of freedom on the batch means. It returns the mean, its standard error and
// the p-value. With fewer than 4 values it returns p = 1.
func batchMeanUpper(x []float64, mu0 float64) (mean, se, p float64) {
	n := len(x)
	if n == 0 {
		return 0, 0, 1
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	if n < 4 {
		return mean, 0, 1
	}
	b := int(math.Sqrt(float64(n)))
	b = max(2, min(b, 30))
	size := n / b
	var bm moments
	for k := 0; k < b; k++ {
		lo, hi := k*size, (k+1)*size
		if k == b-1 {
			hi = n
		}
		s := 0.0
		for _, v := range x[lo:hi] {
			s += v
		}
		bm.Add(s / float64(hi-lo))
	}
	se = math.Sqrt(bm.Variance() / float64(b))
	switch {
	case se > 0:
		p = numeric.StudentTUpper((mean-mu0)/se, float64(b-1))
	case mean > mu0:
		p = 0
	default:
		p = 1
	}
	return mean, se, p
}

// tQuantileUpper is the t with P(T > t) = p for df degrees of freedom (bisection to
// within 1e3·2⁻⁶⁰).
func tQuantileUpper(p, df float64) float64 {
	lo, hi := -1e3, 1e3
	for range 60 {
		mid := (lo + hi) / 2
		if numeric.StudentTUpper(mid, df) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// bartlettLRV is the Newey–West (1987) long-run variance of the mean-zero residuals r with
// Bartlett weights and bandwidth ⌊4(n/100)^(2/9)⌋ (Newey & West 1994).
func bartlettLRV(r []float64) float64 {
	n := len(r)
	if n == 0 {
		return 0
	}
	bw := int(4 * math.Pow(float64(n)/100, 2.0/9))
	bw = min(bw, n-1)
	g := func(l int) float64 {
		s := 0.0
		for i := l; i < n; i++ {
			s += r[i] * r[i-l]
		}
		return s / float64(n)
	}
	v := g(0)
	for l := 1; l <= bw; l++ {
		v += 2 * (1 - float64(l)/float64(bw+1)) * g(l)
	}
	return math.Max(v, 0)
}

// median is the median of x (NaN when empty); x is not modified.
func median(x []float64) float64 {
	n := len(x)
	if n == 0 {
		return math.NaN()
	}
	y := slices.Clone(x)
	hi := numeric.SelectKth(y, n/2)
	if n%2 == 1 {
		return hi
	}
	// The lower middle is the largest of the values left of position n/2.
	lo := y[0]
	for _, v := range y[1 : n/2] {
		lo = math.Max(lo, v)
	}
	return (lo + hi) / 2
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

func ptr[T any](v T) *T { return &v }

// round rounds to 6 significant decimals so outputs are stable and JSON-friendly.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// fptr returns a pointer to x rounded, or nil when x is not finite.
func fptr(x float64) *float64 {
	if !finite(x) {
		return nil
	}
	return ptr(round6(x))
}
