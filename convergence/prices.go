package convergence

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// Pairwise analysis limits: at most maxPairFirms firms (those with the most valid price
// changes), and no more than maxPairCells firm×period cells in the dense change matrix, so
// 100 firms × 1,000 periods stay in milliseconds and a sparse request cannot blow up.
const (
	maxPairFirms = 200
	maxPairCells = 4_000_000
	maxLag       = 3
	// minPairChanges is the number of common price changes a pair needs.
	minPairChanges = 10
	// materialChange is the relative size (of the firm's mean cost-adjusted price) above
	// which a period-to-period change counts as a price change for synchronisation.
	materialChange = 0.005
	// maxLeaderFollower caps the leader_follower list.
	maxLeaderFollower = 10
	// minLeaderStrength is the smallest lagged correlation listed as leader–follower.
	minLeaderStrength = 0.2
)

// pairStats holds the correlations of one unordered pair (i < j).
type pairStats struct {
	i, j  int // indices into priceStats.firms
	n     int // common changes at lag 0
	c0    float64
	ahead [maxLag + 1]float64 // ahead[l]: corr(Δy_i,t, Δy_j,t+l): i leads
	behnd [maxLag + 1]float64 // behnd[l]: corr(Δy_j,t, Δy_i,t+l): j leads
	nl    [maxLag + 1]int
	nlb   [maxLag + 1]int
}

// comove is the pair's co-movement: the largest of the correlations at lags −1, 0, +1.
func (ps *pairStats) comove() float64 {
	return math.Max(ps.c0, math.Max(ps.ahead[1], ps.behnd[1]))
}

// priceStats is the price-convergence analysis of the panel.
type priceStats struct {
	cv        float64 // mean over firms of sd(y)/mean(y); NaN when none
	meanCorr  float64 // mean lag-0 correlation over pairs; NaN when no pair
	meanCo    float64 // mean co-movement over pairs; NaN when no pair
	syncRate  float64 // NaN when no material change
	leaders   []LeaderFollower
	pairFirms []int // panel firm index of each pair firm
	pairs     []pairStats
	pairOf    map[[2]int]int // (panel i, panel j) with i < j → index into pairs
}

// analysePrices computes the variance screen, pairwise correlations of cost-adjusted price
// changes, leader–follower lags and the synchronised change rate.
func analysePrices(pn *panel, alpha float64, stop *stopper) *priceStats {
	ps := &priceStats{cv: math.NaN(), meanCorr: math.NaN(), meanCo: math.NaN(), syncRate: math.NaN(), pairOf: map[[2]int]int{}}
	// Variance screen: coefficient of variation of each firm's cost-adjusted price.
	var cvs moments
	for i := range pn.firms {
		s := &pn.firms[i]
		if len(s.y) >= 2 && s.meanY > 0 {
			cvs.Add(s.sdY / s.meanY)
		}
	}
	if cvs.N > 0 {
		ps.cv = cvs.Mean
	}
	if ps.syncRate = syncRate(pn, stop); stop.check() {
		return ps
	}
	ps.pairwise(pn, alpha, stop)
	return ps
}

// changes returns a firm's cost-adjusted price changes Δy_t = y_t − y_{t−1} between
// consecutive periods, with the period index t of each (computed once).
func (s *series) changes() (ts []int, d []float64) {
	if s.dDone {
		return s.dt, s.dy
	}
	s.dDone = true
	n := 0
	for k := 1; k < len(s.t); k++ {
		if s.t[k] == s.t[k-1]+1 {
			n++
		}
	}
	s.dt, s.dy = make([]int, 0, n), make([]float64, 0, n)
	for k := 1; k < len(s.t); k++ {
		if s.t[k] == s.t[k-1]+1 {
			s.dt = append(s.dt, s.t[k])
			s.dy = append(s.dy, s.y[k]-s.y[k-1])
		}
	}
	return s.dt, s.dy
}

// syncRate is the share of material price changes matched by a same-direction material
// change of another firm in the same or an adjacent period.
func syncRate(pn *panel, stop *stopper) float64 {
	T := pn.T
	up := make([]int32, T+2)
	down := make([]int32, T+2)
	type ch struct {
		t  int
		up bool
	}
	all := make([][]ch, len(pn.firms))
	for i := range pn.firms {
		s := &pn.firms[i]
		if stop.tick(len(s.t)) {
			return math.NaN()
		}
		ts, d := s.changes()
		thr := materialChange * math.Abs(s.meanY)
		for k, dv := range d {
			if math.Abs(dv) <= thr {
				continue
			}
			c := ch{t: ts[k], up: dv > 0}
			all[i] = append(all[i], c)
			if c.up {
				up[c.t+1]++
			} else {
				down[c.t+1]++
			}
		}
	}
	total, synced := 0, 0
	for _, cs := range all {
		for _, c := range cs {
			total++
			arr := down
			if c.up {
				arr = up
			}
			if arr[c.t]+arr[c.t+1]+arr[c.t+2]-1 >= 1 {
				synced++
			}
		}
	}
	if total == 0 {
		return math.NaN()
	}
	return float64(synced) / float64(total)
}

// pairwise computes lag-0 and lagged correlations of standardised cost-adjusted price
// changes for every pair of the (at most maxPairFirms) firms with the most changes.
func (ps *priceStats) pairwise(pn *panel, alpha float64, stop *stopper) {
	T := pn.T
	type cand struct {
		f  int
		ts []int
		d  []float64
	}
	var cands []cand
	for i := range pn.firms {
		if stop.tick(len(pn.firms[i].t)) {
			return
		}
		ts, d := pn.firms[i].changes()
		if len(d) >= minPairChanges {
			cands = append(cands, cand{i, ts, d})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(len(b.d), len(a.d)) })
	limit := min(maxPairFirms, maxPairCells/max(T, 1))
	if len(cands) > limit {
		cands = cands[:limit]
	}
	if len(cands) < 2 {
		return
	}
	P := len(cands)
	// Room for every pair up front: the pairs and their index are the largest structures
	// of the analysis at 200 pair firms (19,900 pairs), and growing them by doubling would
	// hold both the old and the new arrays at once.
	ps.pairs = make([]pairStats, 0, P*(P-1)/2)
	ps.pairOf = make(map[[2]int]int, P*(P-1))
	z := make([][]float64, P)
	mask := make([][]uint64, P)
	words := (T + 63) / 64
	for k, c := range cands {
		var m moments
		for _, v := range c.d {
			m.Add(v)
		}
		sd := math.Sqrt(m.Variance())
		zk := make([]float64, T)
		mk := make([]uint64, words)
		if sd > 0 {
			for x, t := range c.ts {
				zk[t] = (c.d[x] - m.Mean) / sd
				mk[t>>6] |= 1 << (uint(t) & 63)
			}
		}
		z[k], mask[k] = zk, mk
		ps.pairFirms = append(ps.pairFirms, c.f)
	}
	// common counts the periods t with both i at t and j at t+l valid.
	common := func(a, b []uint64, l int) int {
		n := 0
		if l == 0 {
			for w := range a {
				n += bits.OnesCount64(a[w] & b[w])
			}
			return n
		}
		// b shifted down by l bits: bit t of the result is bit t+l of b.
		for w := range a {
			lo := b[w] >> uint(l)
			if w+1 < len(b) {
				lo |= b[w+1] << uint(64-l)
			}
			n += bits.OnesCount64(a[w] & lo)
		}
		return n
	}
	dot := func(a, b []float64, l int) float64 {
		a = a[:len(a)-l]
		b = b[l:]
		b = b[:len(a)]
		// Four accumulators: independent additions pipeline.
		var s0, s1, s2, s3 float64
		t := 0
		for ; t+4 <= len(a); t += 4 {
			s0 += a[t] * b[t]
			s1 += a[t+1] * b[t+1]
			s2 += a[t+2] * b[t+2]
			s3 += a[t+3] * b[t+3]
		}
		for ; t < len(a); t++ {
			s0 += a[t] * b[t]
		}
		return (s0 + s1) + (s2 + s3)
	}
	// Each row i (the pairs (i, j), j > i) is a unit of stop's loop, written to its own
	// stretch of ps.pairs' array; the pairs with too few common changes are then left out,
	// and the sums taken, in order.
	all := ps.pairs[:P*(P-1)/2]
	if stop.each(P-1, 1, func(i int, st *stopper) {
		if st.check() {
			return
		}
		row := all[i*(2*P-i-1)/2:][:P-1-i]
		for j := i + 1; j < P; j++ {
			st := pairStats{i: i, j: j}
			st.n = common(mask[i], mask[j], 0)
			if st.n >= minPairChanges {
				st.c0 = clampCorr(dot(z[i], z[j], 0) / float64(st.n))
				for l := 1; l <= maxLag && l < T; l++ {
					if n := common(mask[i], mask[j], l); n >= minPairChanges {
						st.ahead[l] = clampCorr(dot(z[i], z[j], l) / float64(n))
						st.nl[l] = n
					}
					if n := common(mask[j], mask[i], l); n >= minPairChanges {
						st.behnd[l] = clampCorr(dot(z[j], z[i], l) / float64(n))
						st.nlb[l] = n
					}
				}
			}
			row[j-i-1] = st
		}
	}); stop.check() {
		return
	}
	var sumC, sumCo float64
	for _, st := range all {
		if st.n < minPairChanges {
			continue
		}
		ps.pairOf[[2]int{cands[st.i].f, cands[st.j].f}] = len(ps.pairs)
		ps.pairOf[[2]int{cands[st.j].f, cands[st.i].f}] = len(ps.pairs)
		ps.pairs = append(ps.pairs, st) // at or before st's own place in all
		sumC += st.c0
		sumCo += st.comove()
	}
	if len(ps.pairs) == 0 {
		return
	}
	ps.meanCorr = sumC / float64(len(ps.pairs))
	ps.meanCo = sumCo / float64(len(ps.pairs))

	// Leader–follower: for each ordered pair the lag 1..maxLag with the largest
	// correlation, listed when it is significant after Bonferroni over all ordered pairs
	// and lags (large-sample null sd of a correlation: 1/√n) and at least minLeaderStrength.
	tests := float64(len(ps.pairs) * 2 * maxLag)
	zc := normalQuantileUpper(alpha / tests)
	for _, st := range ps.pairs {
		for dir := 0; dir < 2; dir++ {
			best, bl, bn := 0.0, 0, 0
			for l := 1; l <= maxLag; l++ {
				c, n := st.ahead[l], st.nl[l]
				if dir == 1 {
					c, n = st.behnd[l], st.nlb[l]
				}
				if n > 0 && c > best {
					best, bl, bn = c, l, n
				}
			}
			if bl == 0 || best < minLeaderStrength || best*math.Sqrt(float64(bn)) < zc {
				continue
			}
			lead, fol := cands[st.i].f, cands[st.j].f
			if dir == 1 {
				lead, fol = fol, lead
			}
			ps.leaders = append(ps.leaders, LeaderFollower{Leader: pn.firms[lead].name, Follower: pn.firms[fol].name, Lag: bl, Strength: round6(best)})
		}
	}
	slices.SortStableFunc(ps.leaders, func(a, b LeaderFollower) int {
		if c := cmp.Compare(b.Strength, a.Strength); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Leader, b.Leader); c != 0 {
			return c
		}
		return cmp.Compare(a.Follower, b.Follower)
	})
	if len(ps.leaders) > maxLeaderFollower {
		ps.leaders = ps.leaders[:maxLeaderFollower]
	}
}

func clampCorr(c float64) float64 {
	if !finite(c) {
		return 0
	}
	return math.Max(-1, math.Min(1, c))
}

// groupCorrelation is the mean lag-0 correlation and the mean co-movement over the pairs of
// the given panel firms that were analysed (NaN when none).
//
// Only the pair firms (at most maxPairFirms) have pairs, so the members among them are kept,
// in the members' order: the same pairs in the same order as over all the members' pairs,
// in time linear in the members rather than quadratic (a group may hold most of a market's
// firms).
func (ps *priceStats) groupCorrelation(members []int) (c0, co float64) {
	inPairs := make(map[int]bool, len(ps.pairFirms))
	for _, f := range ps.pairFirms {
		inPairs[f] = true
	}
	var pm []int
	for _, f := range members {
		if inPairs[f] {
			pm = append(pm, f)
		}
	}
	var a, b moments
	for x := 0; x < len(pm); x++ {
		for y := x + 1; y < len(pm); y++ {
			k, ok := ps.pairOf[[2]int{pm[x], pm[y]}]
			if !ok {
				continue
			}
			a.Add(ps.pairs[k].c0)
			b.Add(ps.pairs[k].comove())
		}
	}
	if a.N == 0 {
		return math.NaN(), math.NaN()
	}
	return a.Mean, b.Mean
}
