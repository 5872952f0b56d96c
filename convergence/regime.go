package convergence

import (
	"cmp"
	"math"
	"slices"

	"riskapi/internal/numeric"
)

// Regime test settings.
const (
	// minRegimeObs is the number of observations a firm needs for the regime test, and
	// minRegimeSide the observations needed inside and outside the segment.
	minRegimeObs  = 20
	minRegimeSide = 5
	// minJump is the smallest rise of the mean cost-adjusted price inside the segment over
	// outside it, relative to the outside mean, that counts as material.
	minJump = 0.01
	// maxVarRatio is the largest ratio of the variance of price changes inside the segment
	// to that outside it that counts as a material variance collapse.
	maxVarRatio = 0.5
)

// regimeFit is one firm's best collusive-regime candidate: a segment [s, e) of its
// observations where its cost-adjusted price is higher and its price changes less
// variable than in the rest of the series.
type regimeFit struct {
	firm     int
	s, e     int // observation positions [s, e)
	from, to int // period indices of the first and last observation in the segment
	pMean    float64
	pVar     float64
	p        float64 // intersection–union p-value max(pMean, pVar); 1 when not material
	jump     float64 // (mean inside − mean outside)/mean outside
	varRatio float64 // variance of changes inside / outside
	tested   bool
}

// fitRegime runs the epidemic-change test on a firm's cost-adjusted price:
//
//  1. Mean: the segment maximising the CUSUM increase C_e − C_s, C_k = Σ_{j<k}(y_j − ȳ),
//     is the most likely epidemic (Levin & Kline 1985). Under no change,
//     max_{s<e}(C_e − C_s)/(σ√n) is at most the range of a Brownian bridge, whose law is
//     Kuiper's (1960); σ² is the Newey–West long-run variance of the residuals around the
//     two fitted means.
//  2. Variance: a one-sided Mann–Whitney test that the absolute first differences of y are
//     smaller inside the segment than outside it (a scale test that a few large steps,
//     such as the cartel's coordinated price hikes, do not break), with the null variance
//     inflated because consecutive differences share an observation.
//
// The regime p-value is max(pMean, pVar) (intersection–union test, Berger 1982): a price
// rise without a variance collapse, or a calm spell without a rise, is not a regime.
func fitRegime(s *series, firm int) regimeFit {
	fit := regimeFit{firm: firm, p: 1, pMean: 1, pVar: 1}
	n := len(s.y)
	if n < minRegimeObs {
		return fit
	}
	fit.tested = true
	y := s.y
	rise := epidemicRise(y, s.meanY)
	if !rise.ok {
		return fit
	}
	bs, be := rise.s, rise.e
	fit.pMean = rise.p
	mi, mo := rise.in, rise.out
	// Size of first differences inside and outside (pairs straddling a boundary are left
	// out).
	dIn, dOut := make([]float64, 0, n), make([]float64, 0, n) // no growth: less for the collector
	for k := 1; k < n; k++ {
		d := math.Abs(y[k] - y[k-1])
		inK, inP := k >= bs && k < be, k-1 >= bs && k-1 < be
		switch {
		case inK && inP:
			dIn = append(dIn, d)
		case !inK && !inP:
			dOut = append(dOut, d)
		}
	}
	if len(dIn) < minRegimeSide || len(dOut) < minRegimeSide {
		return fit
	}
	fit.pVar = smallerScaleP(dIn, dOut)
	fit.varRatio = robustVarRatio(dIn, dOut)
	fit.s, fit.e = bs, be
	fit.from, fit.to = s.t[bs], s.t[be-1]
	if mo.Mean > 0 {
		fit.jump = (mi.Mean - mo.Mean) / mo.Mean
	}
	if fit.jump < minJump || fit.varRatio > maxVarRatio {
		return fit
	}
	fit.p = math.Max(fit.pMean, fit.pVar)
	return fit
}

// robustVarRatio is (median a / median b)², the variance ratio of two zero-centred samples
// of absolute values under a scale family (0 when median b is 0 and median a is too; 1
// when only median b is 0).
func robustVarRatio(a, b []float64) float64 {
	ma, mb := median(a), median(b)
	switch {
	case mb > 0:
		return (ma / mb) * (ma / mb)
	case ma > 0:
		return math.Inf(1)
	}
	return 1
}

// diffInflation is the variance inflation of a rank statistic of absolute first
// differences of white noise: consecutive |d_t| are correlated 0.22 (for normal noise,
// corr(|X|, |Y|) at corr(X, Y) = −½), so 1 + 2·0.22 ≈ 1.5.
const diffInflation = 1.5

// smallerScaleP is the one-sided p-value of the Mann–Whitney U test (normal approximation
// with the tie correction) that the values of a tend to be smaller than those of b, with
// the null variance of U inflated by diffInflation for the serial dependence of
// overlapping differences.
func smallerScaleP(a, b []float64) float64 {
	type v struct {
		x    float64
		from int8
	}
	all := make([]v, 0, len(a)+len(b))
	for _, x := range a {
		all = append(all, v{x, 0})
	}
	for _, x := range b {
		all = append(all, v{x, 1})
	}
	slices.SortFunc(all, func(p, q v) int { return cmp.Compare(p.x, q.x) })
	n1, n2 := float64(len(a)), float64(len(b))
	N := n1 + n2
	ra, ties := 0.0, 0.0
	for lo := 0; lo < len(all); {
		hi := lo + 1
		for hi < len(all) && all[hi].x == all[lo].x {
			hi++
		}
		rank := float64(lo+hi+1) / 2 // mean of ranks lo+1 … hi
		for _, e := range all[lo:hi] {
			if e.from == 0 {
				ra += rank
			}
		}
		t := float64(hi - lo)
		ties += t*t*t - t
		lo = hi
	}
	u := ra - n1*(n1+1)/2
	variance := n1 * n2 / 12 * ((N + 1) - ties/(N*(N-1)))
	if !(variance > 0) {
		return 1
	}
	z := (n1*n2/2 - u) / math.Sqrt(diffInflation*variance)
	return numeric.NormalUpper(z)
}

// windowTest is the regime test of a firm on a given window of period indices [from, to]
// (no search): a one-sided test that the mean cost-adjusted price is higher inside (the
// difference of means over its Newey–West standard error, normal tail) and the same
// scale test of price changes, combined as an intersection–union test with the same
// materiality thresholds. It returns 1 when the window leaves fewer than minRegimeSide
// observations on either side.
func windowTest(s *series, from, to int) (p float64) {
	var mi, mo moments
	for k, t := range s.t {
		if t >= from && t <= to {
			mi.Add(s.y[k])
		} else {
			mo.Add(s.y[k])
		}
	}
	if mi.N < minRegimeSide || mo.N < minRegimeSide || !(mo.Mean > 0) {
		return 1
	}
	res := make([]float64, len(s.y))
	dIn, dOut := make([]float64, 0, len(s.y)), make([]float64, 0, len(s.y))
	for k, t := range s.t {
		inside := t >= from && t <= to
		if inside {
			res[k] = s.y[k] - mi.Mean
		} else {
			res[k] = s.y[k] - mo.Mean
		}
		if k > 0 {
			prevIn := s.t[k-1] >= from && s.t[k-1] <= to
			d := math.Abs(s.y[k] - s.y[k-1])
			switch {
			case inside && prevIn:
				dIn = append(dIn, d)
			case !inside && !prevIn:
				dOut = append(dOut, d)
			}
		}
	}
	if len(dIn) < minRegimeSide || len(dOut) < minRegimeSide {
		return 1
	}
	jump := (mi.Mean - mo.Mean) / mo.Mean
	vr := robustVarRatio(dIn, dOut)
	if jump < minJump || !(vr <= maxVarRatio) {
		return 1
	}
	pMean := 0.0
	if lrv := bartlettLRV(res); lrv > 0 {
		pMean = numeric.NormalUpper((mi.Mean - mo.Mean) / math.Sqrt(lrv*(1/mi.N+1/mo.N)))
	}
	return math.Max(pMean, smallerScaleP(dIn, dOut))
}

// epidemic is the most likely epidemic rise of a series and its Kuiper p-value.
type epidemic struct {
	ok      bool
	s, e    int // the segment [s, e)
	p       float64
	in, out moments
}

// epidemicRise finds the segment maximising C_e − C_s, C_k = Σ_{j<k}(y_j − mean), in O(n)
// (a running minimum of C), and bounds max(C_e − C_s)/(σ̂√n) by the range of a Brownian
// bridge (Kuiper's law), σ̂² the Newey–West long-run variance of the residuals around the
// means inside and outside. ok is false when there is no rise or either side has fewer than
// minRegimeSide values.
func epidemicRise(y []float64, mean float64) epidemic {
	n := len(y)
	c, cmin, imin := 0.0, 0.0, 0
	best, bs, be := 0.0, 0, 0
	for k := 1; k <= n; k++ {
		c += y[k-1] - mean
		if c-cmin > best {
			best, bs, be = c-cmin, imin, k
		}
		if c < cmin {
			cmin, imin = c, k
		}
	}
	if best <= 0 || be-bs < minRegimeSide || n-(be-bs) < minRegimeSide {
		return epidemic{}
	}
	ep := epidemic{ok: true, s: bs, e: be}
	for k, v := range y {
		if k >= bs && k < be {
			ep.in.Add(v)
		} else {
			ep.out.Add(v)
		}
	}
	res := make([]float64, n)
	for k, v := range y {
		if k >= bs && k < be {
			res[k] = v - ep.in.Mean
		} else {
			res[k] = v - ep.out.Mean
		}
	}
	if lrv := bartlettLRV(res); lrv > 0 {
		ep.p = kuiperUpper(best / math.Sqrt(lrv*float64(n)))
	}
	return ep
}
