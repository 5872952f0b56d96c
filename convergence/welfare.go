package convergence

import (
	"math"
	"slices"
)

// Materiality thresholds of the welfare path: a firm is supra-competitive when its mean
// gain is significantly above these (a quarter of the way from the competitive to the
// monopoly profit; on the price basis, the price gain that corresponds to it in the
// Calvano et al. market, where a profit gain of 0.5 is a price gain of about 0.35).
const (
	tauProfit = 0.25
	tauPrice  = 0.175
)

const (
	basisProfit = "profit"
	basisPrice  = "price"
)

// firmGain is one firm's gain series and test.
type firmGain struct {
	g      []float64 // per observed period
	mean   float64
	p      float64 // p-value of H0: mean gain ≤ τ
	lower  float64 // one-sided lower confidence bound at the per-firm level
	tested bool
}

// welfareStats is the consumer-welfare analysis.
type welfareStats struct {
	basis       string // basisProfit, basisPrice or "" (no gain)
	tau         float64
	gain        float64 // market profit gain on basis; NaN without basis
	markup      float64 // mean Lerner index; NaN without costs
	passThrough float64 // median cost pass-through; NaN without cost variation
	firms       []firmGain
	tested      int
	level       float64 // per-firm one-sided level α_W/(N_W − 1)
	lower2      float64 // second-largest per-firm lower bound (−Inf when < 2 tested)
	hasCosts    bool
}

// analyseWelfare computes the profit gain Δ (spec: π̄ over all firm-periods on the profit
// basis, else p̄ on the price basis), the mean markup, the cost pass-through, and the
// per-firm tests of H0: Δ_i ≤ τ by batch means at level alphaW/(N − 1).
// It returns early, with what it holds, when stop ends the work first.
func analyseWelfare(v *input, pn *panel, alphaW float64, stop *stopper) *welfareStats {
	w := &welfareStats{gain: math.NaN(), markup: math.NaN(), passThrough: math.NaN(), lower2: math.Inf(-1), hasCosts: v.anyCost}
	b := v.bench
	switch {
	case v.allCost && v.allQty && b.CompetitiveProfit != nil && b.MonopolyProfit != nil:
		w.basis, w.tau = basisProfit, tauProfit
	case b.CompetitivePrice != nil && b.MonopolyPrice != nil:
		w.basis, w.tau = basisPrice, tauPrice
	}
	var mk moments
	var rhos []float64
	var all moments
	w.firms = make([]firmGain, len(pn.firms))
	for i := range pn.firms {
		s := &pn.firms[i]
		if stop.tick(len(s.p)) {
			return w
		}
		for k := range s.p {
			if !math.IsNaN(s.c[k]) {
				mk.Add((s.p[k] - s.c[k]) / s.p[k])
			}
		}
		if s.hasRho {
			rhos = append(rhos, s.rho)
		}
		if w.basis == "" {
			continue
		}
		g := make([]float64, len(s.p))
		for k := range s.p {
			g[k] = w.gainOf(b, s.p[k], s.pi[k])
			all.Add(g[k])
		}
		w.firms[i].g = g
	}
	if mk.N > 0 {
		w.markup = mk.Mean
	}
	if len(rhos) > 0 {
		w.passThrough = median(rhos)
	}
	if w.basis == "" {
		return w
	}
	w.gain = all.Mean
	for i := range w.firms {
		if len(w.firms[i].g) >= minPeriods {
			w.tested++
		}
	}
	if w.tested < 2 {
		return w
	}
	w.level = alphaW / float64(w.tested-1)
	quantile := map[int]float64{} // by batch count
	var lows []float64
	for i := range w.firms {
		f := &w.firms[i]
		if stop.tick(len(f.g)) {
			return w
		}
		if len(f.g) < minPeriods {
			f.p, f.lower = 1, math.Inf(-1)
			continue
		}
		f.tested = true
		var se float64
		f.mean, se, f.p = batchMeanUpper(f.g, w.tau)
		nb := max(2, min(int(math.Sqrt(float64(len(f.g)))), 30))
		q, ok := quantile[nb]
		if !ok {
			q = tQuantileUpper(w.level, float64(nb-1))
			quantile[nb] = q
		}
		f.lower = f.mean - q*se
		lows = append(lows, f.lower)
	}
	slices.Sort(lows)
	w.lower2 = lows[len(lows)-2]
	return w
}

// gainOf is one firm-period's gain on the basis.
func (w *welfareStats) gainOf(b Benchmarks, price, profit float64) float64 {
	if w.basis == basisProfit {
		return (profit - *b.CompetitiveProfit) / (*b.MonopolyProfit - *b.CompetitiveProfit)
	}
	return (price - *b.CompetitivePrice) / (*b.MonopolyPrice - *b.CompetitivePrice)
}

// score maps the second-largest per-firm lower bound L of the gain onto [0, 1]: 1 at L ≤ 0,
// 0.5 at L = τ, 0 at L ≥ 1, linear in between.
func (w *welfareStats) score() float64 {
	L := w.lower2
	switch {
	case w.basis == "" || !(L > 0):
		return 1
	case L <= w.tau:
		return 1 - 0.5*L/w.tau
	case L >= 1:
		return 0
	}
	return 0.5 * (1 - (L-w.tau)/(1-w.tau))
}

// groupGain is the members' mean gain over the period indices [from, to] (NaN without basis).
func (w *welfareStats) groupGain(pn *panel, members []int, from, to int, inside bool) float64 {
	if w.basis == "" {
		return math.NaN()
	}
	var m moments
	for _, f := range members {
		s := &pn.firms[f]
		for k, t := range s.t {
			if (t >= from && t <= to) == inside {
				m.Add(w.firms[f].g[k])
			}
		}
	}
	if m.N == 0 {
		return math.NaN()
	}
	return m.Mean
}
