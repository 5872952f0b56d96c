package convergence

import (
	"math"
)

// series is one firm's observations aggregated per period, in period order.
type series struct {
	name string
	t    []int     // period indices, strictly increasing
	p    []float64 // price (quantity-weighted over segments when quantities allow)
	c    []float64 // cost; NaN when absent
	q    []float64 // quantity summed over segments; NaN when absent
	pi   []float64 // profit Σ (price − cost)·quantity over segments; NaN when absent
	y    []float64 // cost-adjusted price p − ρ(c − c̄)

	dt    []int     // changes(): period index of each change
	dy    []float64 // changes(): the change
	dDone bool

	rho    float64 // cost pass-through (0 when costs do not vary)
	hasRho bool
	meanY  float64
	sdY    float64
}

// panel is the market's observations organised by firm.
type panel struct {
	T      int // number of distinct periods
	firms  []series
	byName map[string]int
}

// costVariationFloor: a firm's costs count as varying when the mean squared cost change
// exceeds this fraction of its squared mean price.
const costVariationFloor = 1e-10

// minPassThroughT: a pass-through estimate is used when it is at least this many standard
// errors from 0.
const minPassThroughT = 3.0

func identified(rho, se float64) bool {
	return se == 0 && rho != 0 || se > 0 && math.Abs(rho)/se >= minPassThroughT
}

// buildPanel returns nil when stop ends the work first.
func buildPanel(v *input, stop *stopper) *panel {
	T := len(v.keys)
	idx := make(map[int64]int, T)
	for i, k := range v.keys {
		idx[k] = i
	}
	pn := &panel{T: T, firms: make([]series, len(v.firms)), byName: make(map[string]int, len(v.firms))}
	// Each firm's series are windows of six arrays shared by all firms (one allocation
	// each, not six per firm: 250,000 firms would otherwise make 1.5 million small
	// allocations, and the collector's work on them delays the analysis's looks at ctx).
	periods := make([]int, len(v.firms)+1)
	for f, rows := range v.byFirm {
		n := 0
		for lo := 0; lo < len(rows); n++ {
			hi := lo + 1
			for hi < len(rows) && rows[hi].key == rows[lo].key {
				hi++
			}
			lo = hi
		}
		periods[f+1] = periods[f] + n
	}
	all := periods[len(v.firms)]
	ts := make([]int, all)
	ps, cs, qs, pis, ys := make([]float64, all), make([]float64, all), make([]float64, all), make([]float64, all), make([]float64, all)
	for f, name := range v.firms {
		pn.firms[f].name = name
		pn.byName[name] = f
	}
	stop.each(len(v.firms), 0, func(f int, st *stopper) {
		rows := v.byFirm[f]
		if st.tick(len(rows)) {
			return
		}
		s := &pn.firms[f]
		lo, hi := periods[f], periods[f+1]
		s.t, s.p, s.c, s.q, s.pi, s.y = ts[lo:lo:hi], ps[lo:lo:hi], cs[lo:lo:hi], qs[lo:lo:hi], pis[lo:lo:hi], ys[lo:hi:hi]
		for lo := 0; lo < len(rows); {
			hi := lo + 1
			for hi < len(rows) && rows[hi].key == rows[lo].key {
				hi++
			}
			p, c, q, pi := aggregate(rows[lo:hi])
			s.t = append(s.t, idx[rows[lo].key])
			s.p = append(s.p, p)
			s.c = append(s.c, c)
			s.q = append(s.q, q)
			s.pi = append(s.pi, pi)
			lo = hi
		}
	})
	if stop.check() {
		return nil
	}
	if pn.passThrough(stop); stop.check() {
		return nil
	}
	return pn
}

// aggregate combines one firm's rows of one period (one per segment).
func aggregate(rs []obsRow) (p, c, q, pi float64) {
	if len(rs) == 1 {
		r := rs[0]
		return r.price, r.cost, r.qty, (r.price - r.cost) * r.qty
	}
	var sq, spq, scq, sp, sc, spi float64
	allQ, allC := true, true
	for _, r := range rs {
		if math.IsNaN(r.qty) {
			allQ = false
		}
		if math.IsNaN(r.cost) {
			allC = false
		}
		sq += r.qty
		spq += r.price * r.qty
		scq += r.cost * r.qty
		sp += r.price
		sc += r.cost
		spi += (r.price - r.cost) * r.qty
	}
	n := float64(len(rs))
	p, c, q, pi = sp/n, math.NaN(), math.NaN(), math.NaN()
	if allC {
		c = sc / n
	}
	if allQ {
		q = sq
		if sq > 0 {
			p = spq / sq
			if allC {
				c = scq / sq
			}
		}
		if allC {
			pi = spi
		}
	}
	return p, c, q, pi
}

// ptSums are the sums of a least-squares fit through the origin of price changes on cost
// changes between consecutive observations.
type ptSums struct{ sxy, sxx, syy, n, sp2 float64 }

// ptSums fits the firm's pass-through once, drops the changes whose residual exceeds
// ptTrim robust standard deviations (1.4826 × the median absolute residual) — price jumps
// that costs do not explain, such as a cartel's coordinated hikes — and returns the sums of
// the remaining changes.
func (s *series) ptSums() ptSums {
	var ps ptSums
	dps, dcs := make([]float64, 0, len(s.p)), make([]float64, 0, len(s.p)) // no growth
	for k := range s.p {
		ps.sp2 += s.p[k] * s.p[k]
		if k > 0 && !math.IsNaN(s.c[k]) && !math.IsNaN(s.c[k-1]) {
			dc, dp := s.c[k]-s.c[k-1], s.p[k]-s.p[k-1]
			dps = append(dps, dp)
			dcs = append(dcs, dc)
			ps.sxy += dp * dc
			ps.sxx += dc * dc
		}
	}
	if len(dps) < 3 || !(ps.sxx > 0) {
		ps.n = float64(len(dps))
		return ps
	}
	rho := ps.sxy / ps.sxx
	abs := make([]float64, len(dps))
	for k := range dps {
		abs[k] = math.Abs(dps[k] - rho*dcs[k])
	}
	cut := ptTrim * 1.4826 * median(abs)
	out := ptSums{sp2: ps.sp2}
	for k := range dps {
		if cut > 0 && abs[k] > cut {
			continue
		}
		out.sxy += dps[k] * dcs[k]
		out.sxx += dcs[k] * dcs[k]
		out.syy += dps[k] * dps[k]
		out.n++
	}
	return out
}

// ptTrim is the residual size, in robust standard deviations, beyond which a price change
// is left out of the pass-through fit.
const ptTrim = 4.0

// fit returns the pass-through estimate and its standard error (ok false when costs do not
// vary).
func (ps ptSums) fit() (rho, se float64, ok bool) {
	if ps.n < 3 || !(ps.sxx > costVariationFloor*ps.sp2) {
		return 0, 0, false
	}
	rho = ps.sxy / ps.sxx
	rss := math.Max(0, ps.syy-ps.sxy*ps.sxy/ps.sxx)
	return rho, math.Sqrt(rss / (ps.n - 1) / ps.sxx), true
}

// passThrough estimates each firm's cost pass-through ρ and its cost-adjusted price
// y = p − ρ(c − c̄), c̄ the firm's mean cost (y = p where the cost is absent). Of the firm's
// own estimate (least squares through the origin of price changes on cost changes) and the
// estimate pooled over all firms, the more precise one that is identified (at least
// minPassThroughT standard errors from 0) is used; when neither is, costs do not move
// enough to matter and y = p. Estimates are clamped to [0, 2].
func (pn *panel) passThrough(stop *stopper) {
	var pool ptSums
	sums := make([]ptSums, len(pn.firms))
	if stop.each(len(pn.firms), 0, func(i int, st *stopper) {
		if !st.tick(len(pn.firms[i].p)) {
			sums[i] = pn.firms[i].ptSums()
		}
	}); stop.check() {
		return
	}
	for i := range sums { // in firm order: the pooled sums do not depend on the workers
		pool.sxy += sums[i].sxy
		pool.sxx += sums[i].sxx
		pool.syy += sums[i].syy
		pool.n += sums[i].n
		pool.sp2 += sums[i].sp2
	}
	pr, pse, pok := pool.fit()
	pok = pok && identified(pr, pse)
	stop.each(len(pn.firms), 0, func(i int, st *stopper) {
		s := &pn.firms[i]
		if st.tick(len(s.p)) {
			return
		}
		rho, se, ok := sums[i].fit()
		ok = ok && identified(rho, se)
		if pok && (!ok || pse < se) {
			rho, ok = pr, true
		}
		copy(s.y, s.p) // s.y has s.p's length (buildPanel)
		if ok {
			s.rho, s.hasRho = math.Max(0, math.Min(2, rho)), true
			var cm moments
			for _, c := range s.c {
				if !math.IsNaN(c) {
					cm.Add(c)
				}
			}
			for k := range s.y {
				if !math.IsNaN(s.c[k]) {
					s.y[k] = s.p[k] - s.rho*(s.c[k]-cm.Mean)
				}
			}
		}
		var m moments
		for _, y := range s.y {
			m.Add(y)
		}
		s.meanY, s.sdY = m.Mean, math.Sqrt(m.Variance())
		// The changes are made here, once, so that the screens that run at once only read
		// the series.
		s.changes()
	})
}
