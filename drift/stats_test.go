package drift

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"riskapi/internal/numeric"
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
		{3.169, 10, 0.005},
		{1.96, 1e5, 0.025},
	}
	for _, c := range cases {
		if got := numeric.StudentTUpper(c.t, c.df); math.Abs(got-c.want) > 5e-4 {
			t.Errorf("numeric.StudentTUpper(%v, %v) = %v, want %v", c.t, c.df, got, c.want)
		}
	}
	if got := numeric.StudentTUpper(math.NaN(), 10); got != 1 {
		t.Errorf("numeric.StudentTUpper(NaN) = %v, want 1", got)
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
	// Far tails keep their digits: P(X ≥ 30 | 30, 0.1) = 1e-30.
	if got := binomUpper(30, 30, 0.1); math.Abs(got/1e-30-1) > 1e-9 {
		t.Errorf("binomUpper(30, 30, 0.1) = %v, want 1e-30", got)
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

// Owen's T has closed forms at a = 1 and h = 0 (Owen 1956).
func TestOwenTKnownValues(t *testing.T) {
	t.Parallel()
	r := newOwenRule()
	for _, h := range []float64{0, 0.5, 1, 2, 3.5, 5, 8, 12} {
		q := numeric.NormalUpper(h)
		want := 0.5 * q * (1 - q)
		if got := r.owenT(h, 1); math.Abs(got-want) > 1e-9*want+1e-300 {
			t.Errorf("T(%v, 1) = %v, want %v", h, got, want)
		}
	}
	for _, a := range []float64{0.1, 0.5, 0.9} {
		if got, want := r.owenT(0, a), math.Atan(a)/(2*math.Pi); math.Abs(got-want) > 1e-12 {
			t.Errorf("T(0, %v) = %v, want %v", a, got, want)
		}
	}
	if got := r.owenT(3, 0); got != 0 {
		t.Errorf("T(3, 0) = %v, want 0", got)
	}
}

// bridgeChain is the chain of Owen a-values of a Brownian-bridge scan at the given times.
func bridgeChain(ts []float64) (rho, a []float64) {
	for j := 1; j < len(ts); j++ {
		r := math.Sqrt(ts[j-1] * (1 - ts[j]) / (ts[j] * (1 - ts[j-1])))
		rho = append(rho, r)
		a = append(a, chainA(r))
	}
	return rho, a
}

// The scan bound lies between the single-test tail and Bonferroni, is exact for perfectly
// correlated statistics and approaches Bonferroni for independent ones.
func TestScanTailBetweenSingleTestAndBonferroni(t *testing.T) {
	t.Parallel()
	r := newOwenRule()
	_, a := bridgeChain([]float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8})
	for _, b := range []float64{1, 2, 3, 4, 6} {
		q := numeric.NormalUpper(b)
		got := r.scanTail(b, a)
		if got < q || got > float64(len(a)+1)*q {
			t.Errorf("b=%v: scanTail %v outside [%v, %v]", b, got, q, float64(len(a)+1)*q)
		}
		if one := r.scanTail(b, []float64{0, 0, 0}); math.Abs(one-q) > 1e-15 {
			t.Errorf("b=%v: identical statistics give %v, want Q(b) = %v", b, one, q)
		}
		indep := r.scanTail(b, []float64{1, 1, 1})
		if want := q + 3*q*(1-q); math.Abs(indep-want) > 1e-9*want {
			t.Errorf("b=%v: independent statistics give %v, want %v", b, indep, want)
		}
	}
	if r.scanTail(math.Inf(1), a) != 0 || r.scanTail(math.Inf(-1), a) != 1 || r.scanTail(-3, a) != 1 {
		t.Error("scanTail at ±Inf or far below 0 is not 0/1")
	}
}

// Against a simulated Gauss–Markov chain with the correlations of the drift scan, the
// bound is valid (never below the simulated tail beyond Monte Carlo error) and tight
// (within 30 % of it): the calibration the window scan relies on.
func TestScanTailMatchesSimulatedMaximum(t *testing.T) {
	t.Parallel()
	n, nb := 1000, 300
	var ts []float64
	for _, s := range scanStarts(n, nb) {
		ts = append(ts, float64(s)/float64(n))
	}
	if len(ts) != scanWindows {
		t.Fatalf("%d window starts, want %d", len(ts), scanWindows)
	}
	rho, a := bridgeChain(ts)
	rng := rand.New(rand.NewPCG(7, 8))
	const sims = 200_000
	bs := []float64{2.5, 3, 3.5}
	hits := make([]int, len(bs))
	for k := 0; k < sims; k++ {
		z := rng.NormFloat64()
		m := z
		for _, r := range rho {
			z = r*z + math.Sqrt(1-r*r)*rng.NormFloat64()
			m = math.Max(m, z)
		}
		for i, b := range bs {
			if m >= b {
				hits[i]++
			}
		}
	}
	r := newOwenRule()
	for i, b := range bs {
		sim := float64(hits[i]) / sims
		se := math.Sqrt(sim * (1 - sim) / sims)
		bound := r.scanTail(b, a)
		t.Logf("b=%v: simulated P(max ≥ b) = %.5f ± %.5f, bound %.5f, Bonferroni %.5f, single test %.5f", b, sim, se, bound, float64(len(ts))*numeric.NormalUpper(b), numeric.NormalUpper(b))
		if bound < sim-4*se || bound > 1.3*sim {
			t.Errorf("b=%v: bound %.5f, simulated %.5f ± %.5f", b, bound, sim, se)
		}
		if bon := float64(len(ts)) * numeric.NormalUpper(b); !(bound < 0.8*bon) {
			t.Errorf("b=%v: bound %.5f not well below Bonferroni %.5f", b, bound, bon)
		}
	}
}

// When the window observations are all observations of the reference's kind, the
// nested-window correlation is the Brownian-bridge one.
func TestNestedCorrIsBridgeCorrelation(t *testing.T) {
	t.Parallel()
	N := 1000.0
	for _, c := range [][2]float64{{300, 400}, {300, 800}, {500, 510}} {
		r, r2 := c[0], c[1]
		t1, t2 := r/N, r2/N
		want := math.Sqrt(t1 * (1 - t2) / (t2 * (1 - t1)))
		if got := nestedCorr(N-r, r, N-r2, r2); math.Abs(got-want) > 1e-12 {
			t.Errorf("nestedCorr(%v→%v) = %v, want %v", r, r2, got, want)
		}
	}
	// A party's events (a fifth of the window) against all reference events: correlated,
	// less than the bridge.
	if got := nestedCorr(140, 300, 100, 500); !(got > 0 && got < 1) {
		t.Errorf("party-window correlation %v not in (0, 1)", got)
	}
}

func TestQuantileMatchesSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	inputs := [][]float64{{5}, {2, 1}, {3, 3, 3, 3, 3}}
	for _, n := range []int{10, 101, 1000} {
		up, down, dup, rnd := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range up {
			up[i], down[i], dup[i], rnd[i] = float64(i), float64(n-i), float64(i%3), rng.NormFloat64()
		}
		inputs = append(inputs, up, down, dup, rnd)
	}
	for _, x := range inputs {
		for _, q := range []float64{0, 0.02, 0.5, 0.98, 1} {
			sorted := slices.Sorted(slices.Values(x))
			want := sorted[int(q*float64(len(x)-1))]
			if got := quantile(slices.Clone(x), q); got != want {
				t.Errorf("quantile(len %d, %v) = %v, want %v", len(x), q, got, want)
			}
		}
	}
}

// The skewness correction only ever makes a p-value larger, more so for larger skewness.
func TestSkewCorrectIsConservative(t *testing.T) {
	t.Parallel()
	for _, p := range []float64{0.3, 0.01, 1e-4, 1e-8} {
		z := zScore(p)
		if got := skewCorrect(p, 0); got != z {
			t.Errorf("p=%v: no skewness changed z %v → %v", p, z, got)
		}
		if got := skewCorrect(p, -0.5); got != z {
			t.Errorf("p=%v: negative skewness changed z %v → %v", p, z, got)
		}
		small, large := skewCorrect(p, 0.1), skewCorrect(p, 0.5)
		if z > 1 && !(large < small && small < z) {
			t.Errorf("p=%v: z %v, corrected %v (γ 0.1), %v (γ 0.5)", p, z, small, large)
		}
	}
}

// Direct standardisation compares the party's events with reference events of the same
// actions: purchases with the loss of the reference purchases are no harm, even when the
// reference also holds many cheap tool calls.
func TestStratifiedZComparesLikeWithLike(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	win := make([]sums, 2) // stratum 0: purchases, 1: tool calls
	ref := make([]sums, 2)
	var pooledWin, pooledRef sums
	for i := 0; i < 20000; i++ {
		l := 5 * rng.ExpFloat64()
		ref[0].add(l)
		pooledRef.add(l)
		tc := 0.5 * rng.ExpFloat64()
		ref[1].add(tc)
		pooledRef.add(tc)
		w := 5 * rng.ExpFloat64()
		win[0].add(w)
		pooledWin.add(w)
	}
	if z, _, _ := stratifiedZ(win, ref, 1, 0); z > 3 {
		t.Errorf("same-action comparison: z = %v, want no evidence of harm", z)
	}
	if z := riseZ(pooledRef, pooledWin); z < 10 {
		t.Fatalf("the unstratified comparison should be fooled (z = %v)", z)
	}
	// A real rise on the party's purchases is found.
	var worse []sums = make([]sums, 2)
	for i := 0; i < 2000; i++ {
		worse[0].add(7 * rng.ExpFloat64())
	}
	if z, m, r := stratifiedZ(worse, ref, 1, 0.5); z < 5 || m != 2000 || r != 20000 {
		t.Errorf("loss 7 vs 5: z = %v (m %v, r %v)", z, m, r)
	}
}

// The 15 most frequent actions get a stratum each (ties by name); rarer ones share one.
func TestStrataLumpsRareActions(t *testing.T) {
	t.Parallel()
	var ev []Event
	for a := 0; a < 20; a++ {
		for k := 0; k < 30-a; k++ {
			ev = append(ev, Event{Action: string(rune('a' + a))})
		}
	}
	ev = append(ev, Event{Action: "zz"}, Event{Action: "b"}) // "b" ties with "a" at 30
	of, count := strata(ev)
	if count != maxStrata {
		t.Fatalf("%d strata, want %d", count, maxStrata)
	}
	byAction := map[string]int{}
	for i, e := range ev {
		byAction[e.Action] = of[i]
	}
	if byAction["a"] != 0 || byAction["b"] != 1 || byAction["o"] != 14 {
		t.Errorf("strata of a, b, o = %d, %d, %d; want 0, 1, 14", byAction["a"], byAction["b"], byAction["o"])
	}
	for _, a := range []string{"p", "t", "zz"} {
		if byAction[a] != maxStrata-1 {
			t.Errorf("rare action %q in stratum %d, want %d", a, byAction[a], maxStrata-1)
		}
	}
}
