package drift

import (
	"math"
	"sort"
)

// moments accumulates count, mean and variance (Welford).
type moments struct {
	n    float64
	mean float64
	m2   float64
}

func (m *moments) add(x float64) {
	m.n++
	d := x - m.mean
	m.mean += d / m.n
	m.m2 += d * (x - m.mean)
}

// variance is the unbiased sample variance (0 when n < 2).
func (m moments) variance() float64 {
	if m.n < 2 {
		return 0
	}
	return m.m2 / (m.n - 1)
}

// fromSums builds moments from n, Σx and Σx².
func fromSums(n, sx, sxx float64) moments {
	if n == 0 {
		return moments{}
	}
	mean := sx / n
	m2 := sxx - sx*mean
	if m2 < 0 {
		m2 = 0
	}
	return moments{n: n, mean: mean, m2: m2}
}

// welchUpper is the one-sided p-value of Welch's t-test for H1: mean(b) > mean(a).
// Either sample with fewer than 2 observations gives 1.
func welchUpper(a, b moments) float64 {
	if a.n < 2 || b.n < 2 {
		return 1
	}
	va, vb := a.variance()/a.n, b.variance()/b.n
	se2 := va + vb
	diff := b.mean - a.mean
	if se2 <= 0 {
		if diff > 0 {
			return 0
		}
		return 1
	}
	t := diff / math.Sqrt(se2)
	df := se2 * se2 / (va*va/(a.n-1) + vb*vb/(b.n-1))
	return studentTUpper(t, df)
}

// studentTUpper is P(T > t) for Student's t with df degrees of freedom.
func studentTUpper(t, df float64) float64 {
	if math.IsNaN(t) || math.IsNaN(df) {
		return 1
	}
	if df > 1e6 || math.IsInf(df, 1) {
		return 0.5 * math.Erfc(t/math.Sqrt2)
	}
	x := df / (df + t*t)
	p := 0.5 * regIncBeta(df/2, 0.5, x)
	if t > 0 {
		return p
	}
	return 1 - p
}

// binomUpper is P(X ≥ x) for X ~ Binomial(k, q).
func binomUpper(x, k int, q float64) float64 {
	switch {
	case x <= 0:
		return 1
	case x > k:
		return 0
	case q <= 0:
		return 0
	case q >= 1:
		return 1
	}
	return regIncBeta(float64(x), float64(k-x+1), q)
}

// regIncBeta is the regularised incomplete beta function I_x(a, b)
// (Press et al., Numerical Recipes, 3rd ed., §6.4: continued fraction by modified Lentz).
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	bt := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return bt * betaCF(a, b, x) / a
	}
	return 1 - bt*betaCF(b, a, 1-x)/b
}

// betaCF evaluates the continued fraction of the regularised incomplete beta function by
// the modified Lentz method (Press et al., Numerical Recipes, 3rd ed., §6.4): each iteration
// applies the even and the odd term of the fraction.
func betaCF(a, b, x float64) float64 {
	const (
		maxIter = 300
		eps     = 1e-14
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1/nonZero(1-qab*x/qap)
	h := d
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		even := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		odd := -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		var step float64
		c, d, step = lentzStep(even, c, d)
		h *= step
		c, d, step = lentzStep(odd, c, d)
		h *= step
		if math.Abs(step-1) < eps {
			break
		}
	}
	return h
}

// lentzStep applies one term aa of a continued fraction to Lentz's c and d and returns them
// with the factor the running value is multiplied by.
func lentzStep(aa, c, d float64) (float64, float64, float64) {
	d = 1 / nonZero(1+aa*d)
	c = nonZero(1 + aa/c)
	return c, d, d * c
}

// nonZero keeps Lentz's intermediates away from zero (a tiny value in place of 0), as the
// method prescribes, so no division by zero occurs.
func nonZero(v float64) float64 {
	const fpmin = 1e-300
	if math.Abs(v) < fpmin {
		return fpmin
	}
	return v
}

// holm returns Holm–Bonferroni adjusted p-values (Holm 1979), in the input order.
func holm(p []float64) []float64 {
	m := len(p)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return p[idx[i]] < p[idx[j]] })
	adj := make([]float64, m)
	running := 0.0
	for r, i := range idx {
		v := float64(m-r) * p[i]
		if v > 1 {
			v = 1
		}
		if v > running {
			running = v
		}
		adj[i] = running
	}
	return adj
}

func clamp01(x float64) float64 {
	if x < 0 {
		return 0
	}
	if x > 1 {
		return 1
	}
	return x
}
