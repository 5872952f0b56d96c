package drift

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mathext"

	"riskapi/internal/numeric"
)

// moments accumulates count, mean and variance (Welford; shared with the other engines).
type moments = numeric.Moments

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
	return moments{N: n, Mean: mean, M2: m2}
}

// sums holds a count, Σx, Σx² and Σx³ of one group of observations.
type sums struct{ n, s, ss, s3 float64 }

func (a *sums) add(x float64) {
	a.n++
	a.s += x
	a.ss += x * x
	a.s3 += x * x * x
}

func (a *sums) plus(b sums) {
	a.n += b.n
	a.s += b.s
	a.ss += b.ss
	a.s3 += b.s3
}

func (a *sums) minus(b sums) {
	a.n -= b.n
	a.s -= b.s
	a.ss -= b.ss
	a.s3 -= b.s3
}

func (a sums) moments() moments { return fromSums(a.n, a.s, a.ss) }

// m3 is the third central moment Σ(x − x̄)³/n (0 when n = 0).
func (a sums) m3() float64 {
	if a.n == 0 {
		return 0
	}
	mu := a.s / a.n
	return (a.s3 - 3*mu*a.ss + 3*mu*mu*a.s - a.n*mu*mu*mu) / a.n
}

// riseZ is the z-score of the one-sided two-sample test of H1: mean(win) > mean(ref):
// Welch's t-test (Welch 1947), its p-value corrected for the skewness of the difference of
// means under the null (skewCorrect, with the pooled moments of both groups), and turned
// into a standard-normal score. −Inf when either group has fewer than 2 observations.
func riseZ(ref, win sums) float64 { return meanDiffZ(ref, win, 1) }

// fallZ is riseZ for H1: mean(win) < mean(ref).
func fallZ(ref, win sums) float64 { return meanDiffZ(ref, win, -1) }

func meanDiffZ(ref, win sums, sign float64) float64 {
	if ref.n < 2 || win.n < 2 {
		return math.Inf(-1)
	}
	var p float64
	if sign > 0 {
		p = welchUpper(ref.moments(), win.moments())
	} else {
		p = welchUpper(win.moments(), ref.moments())
	}
	pool := ref
	pool.plus(win)
	v := pool.moments().Variance() * (1/win.n + 1/ref.n)
	gamma := 0.0
	if v > 0 {
		// Third cumulant of mean(win) − mean(ref) under the null: μ₃(1/m² − 1/r²).
		gamma = sign * pool.m3() * (1/(win.n*win.n) - 1/(ref.n*ref.n)) / math.Pow(v, 1.5)
	}
	return skewCorrect(p, gamma)
}

// skewCorrect turns a one-sided p-value p, computed as if its statistic were symmetric,
// into a z-score corrected to first order for the statistic's null skewness γ
// (one-term Edgeworth expansion, Hall 1992 ch. 2):
// P(S > z) ≈ Q(z) + (γ/6)(z² − 1)φ(z). Only a positive γ (a heavier upper tail, which
// makes the uncorrected p-value too small) is applied, and only for z > 1; the
// correction never makes a p-value smaller.
func skewCorrect(p, gamma float64) float64 {
	z := zScore(p)
	if !(gamma > 0) || !(z > 1) || math.IsInf(z, 1) {
		return z
	}
	pc := p + gamma/6*(z*z-1)*math.Exp(-z*z/2)/math.Sqrt(2*math.Pi)
	return zScore(math.Min(1, pc))
}

// welchUpper is the one-sided p-value of Welch's t-test for H1: mean(b) > mean(a).
// Either sample with fewer than 2 observations gives 1.
func welchUpper(a, b moments) float64 {
	if a.N < 2 || b.N < 2 {
		return 1
	}
	va, vb := a.Variance()/a.N, b.Variance()/b.N
	se2 := va + vb
	diff := b.Mean - a.Mean
	if se2 <= 0 {
		if diff > 0 {
			return 0
		}
		return 1
	}
	t := diff / math.Sqrt(se2)
	df := se2 * se2 / (va*va/(a.N-1) + vb*vb/(b.N-1))
	return numeric.StudentTUpper(t, df)
}

// zScore is the standard-normal score of a one-sided p-value: the z with P(Z > z) = p
// (+Inf for p = 0, −Inf for p = 1 and for NaN, which can then never reject).
func zScore(p float64) float64 {
	switch {
	case math.IsNaN(p) || p >= 1:
		return math.Inf(-1)
	case p <= 0:
		return math.Inf(1)
	}
	return -mathext.NormalQuantile(p)
}

// binomUpper is P(X ≥ x) for X ~ Binomial(k, q), computed as the regularised incomplete
// beta function I_q(x, k − x + 1) (gonum's mathext.RegIncBeta). distuv.Binomial's
// Survival is 1 − CDF, which loses every digit below 1e-16; the direct form keeps them.
func binomUpper(x, k int, q float64) float64 {
	switch {
	case x <= 0:
		return 1
	case x > k:
		return 0
	case !(q > 0):
		return 0
	case q >= 1:
		return 1
	}
	return mathext.RegIncBeta(float64(x), float64(k-x+1), q)
}

// owenNodes is the number of Gauss–Legendre nodes used for Owen's T function.
const owenNodes = 24

// owenRule holds Gauss–Legendre nodes and weights on [0, 1] for Owen's T function.
type owenRule struct {
	x, w [owenNodes]float64
}

func newOwenRule() *owenRule {
	r := &owenRule{}
	quad.Legendre{}.FixedLocations(r.x[:], r.w[:], 0, 1)
	return r
}

// owenT is Owen's T function T(h, a) = (1/2π) ∫₀^a exp(−h²(1+x²)/2)/(1+x²) dx for
// 0 ≤ a ≤ 1 (Owen 1956), by Gauss–Legendre quadrature. The integrand is negligible
// (below e⁻³²) beyond x = 8/|h|, so the range is cut there.
func (r *owenRule) owenT(h, a float64) float64 {
	if a <= 0 || math.IsInf(h, 0) {
		return 0
	}
	top := a
	if ah := math.Abs(h); ah*top > 8 {
		top = 8 / ah
	}
	h2 := h * h / 2
	s := 0.0
	for i := range r.x {
		x := r.x[i] * top
		s += r.w[i] * math.Exp(-h2*(1+x*x)) / (1 + x*x)
	}
	return s * top / (2 * math.Pi)
}

// scanTail bounds the null probability that the largest of a chain of standard-normal
// statistics Z_1, …, Z_J reaches b, where consecutive statistics have correlation ρ_j
// (given through a_j = √((1 − ρ_j)/(1 + ρ_j))). It is Hunter's (1976) / Worsley's (1982)
// improved Bonferroni bound along the chain,
//
//	P(max_j Z_j ≥ b) ≤ P(Z_1 ≥ b) + Σ_{j≥2} P(Z_j ≥ b, Z_{j−1} < b)
//	                = Q(b) + 2 Σ_{j≥2} T(b, a_j),
//
// using P(Z_j ≥ b, Z_{j−1} ≥ b) = Q(b) − 2T(b, a_j) for a bivariate normal pair
// (Owen 1956). It never exceeds the Bonferroni bound J·Q(b), and is capped at 1.
func (r *owenRule) scanTail(b float64, a []float64) float64 {
	switch {
	case math.IsInf(b, 1):
		return 0
	case math.IsInf(b, -1) || math.IsNaN(b):
		return 1
	}
	p := numeric.NormalUpper(b)
	for _, aj := range a {
		p += 2 * r.owenT(b, aj)
	}
	return math.Min(1, p)
}

// nestedCorr is the null correlation of two window statistics (mean of the window's
// observations minus mean of the reference's), for windows [s, n) ⊃ [s', n) with
// references [0, s) ⊂ [0, s'): m, m' observations in the windows, r, r' in the
// references, c = m − m' of the first window's observations lying in the second
// reference (independent observations of equal variance):
//
//	ρ = (1/m + 1/r' − c/(m·r')) / √((1/m + 1/r)(1/m' + 1/r')).
//
// When the window observations are all the reference's kind of observation (c = r' − r),
// this is the Brownian-bridge correlation √(t(1 − t')/(t'(1 − t))).
func nestedCorr(m, r, m2, r2 float64) float64 {
	c := m - m2
	num := 1/m + 1/r2 - c/(m*r2)
	den := math.Sqrt((1/m + 1/r) * (1/m2 + 1/r2))
	rho := num / den
	if !(rho > 0) { // includes NaN: 0 is the conservative value (independent windows)
		return 0
	}
	return math.Min(1, rho)
}

// chainA converts a correlation into Owen's a = √((1 − ρ)/(1 + ρ)).
func chainA(rho float64) float64 { return math.Sqrt((1 - rho) / (1 + rho)) }

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
