package convergence

import (
	"math"
	"slices"
)

// Market-division settings.
const (
	// minOwnerPersistence: a segment's owner leads it in at least this share of the
	// segment's periods within the division window.
	minOwnerPersistence = 0.8
	// minOwnerShare: and holds at least this mean share of it.
	minOwnerShare = 0.6
	// maxForeignShare: a divider's mean share in the segments it does not own, within the
	// window, is at most this.
	maxForeignShare = 0.15
	// minForeignBefore: a divider held at least this mean share, before the window, in a
	// segment it does not own (it competed there).
	minForeignBefore = 0.05
	// minHHIRise: the rise of the mean segment HHI that makes a division window.
	minHHIRise = 0.1
	// divisionWindowLevel: level of the Kuiper test on the HHI series for the window.
	divisionWindowLevel = 0.01
)

// divisionStats is the market-division analysis.
type divisionStats struct {
	hhi, stability float64
	score          float64
	dividers       []int // observation-firm indices
	from, to       int   // period indices of the division window
	conf           float64
	fired          bool
}

// analyseDivision measures segment concentration (HHI of quantity shares per segment and
// period) and allocation stability (1 − half the L1 change of shares between a segment's
// consecutive periods), and looks for a division that forms within the series: a
// significant, material epidemic rise of the mean segment HHI (the window), within which
// dividers own a segment (lead it in ≥ 80 % of its periods with ≥ 60 % mean share) and keep
// ≤ 15 % of the segments they do not own, where they held ≥ 5 % before the window (they
// competed there). It returns nil when no observation has both a segment and a quantity.
func analyseDivision(v *input, periodIdx map[int64]int, stop *stopper) *divisionStats {
	// The rows with a segment and a quantity, ordered by segment, period and firm: byFirm
	// is in firm order, and two stable counting sorts (by period, then by segment) keep
	// it within each (segment, period) cell, in time linear in the rows.
	n := 0
	for _, rs := range v.byFirm {
		for _, r := range rs {
			if r.seg >= 0 && !math.IsNaN(r.qty) {
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	type divRow struct {
		firm, seg, t int32
		qty          float64
	}
	byFirm := make([]divRow, 0, n)
	for f, rs := range v.byFirm {
		if stop.tick(len(rs)) {
			return nil
		}
		for _, r := range rs {
			if r.seg >= 0 && !math.IsNaN(r.qty) {
				byFirm = append(byFirm, divRow{firm: int32(f), seg: r.seg, t: int32(periodIdx[r.key]), qty: r.qty})
			}
		}
	}
	byPeriod := countingSort(byFirm, len(v.keys), func(r divRow) int { return int(r.t) })
	rows := countingSort(byPeriod, len(v.segments), func(r divRow) int { return int(r.seg) })
	if stop.tick(2 * n) {
		return nil
	}
	type cell struct {
		seg, t int
		firms  []int32
		shares []float64
		leader int32
		hhi    float64
	}
	ncells := 1
	for k := 1; k < len(rows); k++ {
		if rows[k].seg != rows[k-1].seg || rows[k].t != rows[k-1].t {
			ncells++
		}
	}
	cells := make([]cell, 0, ncells)
	nf := len(v.firms)
	active := make([]bool, nf)
	firms, shares := make([]int32, 0, n), make([]float64, 0, n)
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && rows[hi].seg == rows[lo].seg && rows[hi].t == rows[lo].t {
			hi++
		}
		if stop.tick(hi - lo) {
			return nil
		}
		tot := 0.0
		for _, r := range rows[lo:hi] {
			tot += r.qty
			if r.qty > 0 {
				active[r.firm] = true
			}
		}
		if tot > 0 {
			c := cell{seg: int(rows[lo].seg), t: int(rows[lo].t), leader: -1}
			best := -1.0
			from := len(firms)
			for _, r := range rows[lo:hi] {
				s := r.qty / tot
				firms = append(firms, r.firm)
				shares = append(shares, s)
				c.hhi += s * s
				if s > best {
					best, c.leader = s, r.firm
				}
			}
			c.firms, c.shares = firms[from:], shares[from:]
			cells = append(cells, c)
		}
		lo = hi
	}
	if len(cells) == 0 {
		return nil
	}
	d := &divisionStats{}
	var hm, sm moments
	// Allocation stability compares each cell with the segment's previous cell through
	// dense per-firm share arrays (filled for one cell, cleared after it), so a pair of
	// consecutive cells costs the sum of their firm counts rather than the product: a
	// quadratic lookup made 250,000 firms in one segment take 21 s.
	prevShare, curShare := make([]float64, nf), make([]float64, nf)
	for k := range cells {
		b := &cells[k]
		if stop.tick(len(b.firms)) {
			return nil
		}
		hm.Add(b.hhi)
		for x, f := range b.firms {
			curShare[f] = b.shares[x]
		}
		if k > 0 {
			a := &cells[k-1]
			if a.seg == b.seg {
				l1 := 0.0
				for x, f := range b.firms {
					l1 += math.Abs(b.shares[x] - prevShare[f])
				}
				for x, f := range a.firms {
					if curShare[f] == 0 {
						l1 += a.shares[x]
					}
				}
				sm.Add(1 - l1/2)
			}
			for _, f := range a.firms {
				prevShare[f] = 0
			}
		}
		prevShare, curShare = curShare, prevShare
	}
	for _, f := range cells[len(cells)-1].firms {
		prevShare[f] = 0
	}
	d.hhi = hm.Mean
	d.stability = 1
	if sm.N > 0 {
		d.stability = sm.Mean
	}
	k := 0
	for _, a := range active {
		if a {
			k++
		}
	}
	hstar := 1.0
	if k > 1 {
		hstar = clamp01((d.hhi - 1/float64(k)) / (1 - 1/float64(k)))
	}
	d.score = clamp01(1 - hstar*d.stability)

	// Division window: the epidemic rise of the per-period mean HHI, when significant and
	// material; else the whole series.
	T := len(v.keys)
	hs := make([]float64, T)
	hn := make([]float64, T)
	for _, c := range cells {
		hs[c.t] += c.hhi
		hn[c.t]++
	}
	var ts []int
	var h []float64
	for t := 0; t < T; t++ {
		if hn[t] > 0 {
			ts = append(ts, t)
			h = append(h, hs[t]/hn[t])
		}
	}
	d.from, d.to = ts[0], ts[len(ts)-1]
	hser := &series{t: ts, y: h}
	var hmom moments
	for _, x := range h {
		hmom.Add(x)
	}
	hser.meanY = hmom.Mean
	fit := fitRegimeMean(hser)
	if !(fit.ok && fit.p <= divisionWindowLevel && fit.rise >= minHHIRise && fit.from > ts[0]) {
		// No allocation formed within the series: concentration alone (home markets,
		// regional monopolies) is not evidence of division.
		d.score = math.Max(0.5, d.score)
		return d
	}
	d.from, d.to = fit.from, fit.to

	// Owners within the window, one segment at a time (cells are ordered by segment, then
	// period): per-firm lead counts and share sums in dense arrays, cleared after each
	// segment through the list of firms it touched.
	leads := make([]int32, nf)
	shareSum := prevShare // all zero again after the stability pass
	inSeg := make([]bool, nf)
	var touched []int32
	owner := map[int]int32{}
	cand := map[int32]float64{}
	for lo := 0; lo < len(cells); {
		seg, n := cells[lo].seg, 0
		for ; lo < len(cells) && cells[lo].seg == seg; lo++ {
			c := &cells[lo]
			if c.t < d.from || c.t > d.to {
				continue
			}
			if stop.tick(len(c.firms)) {
				return nil
			}
			n++
			leads[c.leader]++
			for x, f := range c.firms {
				if !inSeg[f] {
					inSeg[f] = true
					touched = append(touched, f)
				}
				shareSum[f] += c.shares[x]
			}
		}
		if n == 0 {
			continue
		}
		var best int32 = -1
		for _, f := range touched {
			if l := leads[f]; l > 0 && (best < 0 || l > leads[best] || l == leads[best] && f < best) {
				best = f
			}
		}
		pers := float64(leads[best]) / float64(n)
		sh := shareSum[best] / float64(n)
		for _, f := range touched {
			leads[f], shareSum[f], inSeg[f] = 0, 0, false
		}
		touched = touched[:0]
		if pers >= minOwnerPersistence && sh >= minOwnerShare {
			owner[seg] = best
			c := pers * sh
			if prev, ok := cand[best]; !ok || c < prev {
				cand[best] = c
			}
		}
	}
	type divider struct {
		f    int32
		conf float64
	}
	candKeys := dividerKeys(cand)
	// Each candidate's mean share in the segments it does not own, within the window
	// (foreign) and before it (before): the sum of its shares in the cells of those
	// segments over their count, in one pass over the cells' firms. A cell where the
	// candidate did not sell counts as a share of 0.
	candOf := make([]int32, nf) // candidate index + 1; 0 for other firms
	for i, f := range candKeys {
		candOf[f] = int32(i + 1)
	}
	type shareMean struct {
		sum   float64
		cells int
	}
	foreign := make([]shareMean, len(candKeys))
	before := make([]shareMean, len(candKeys))
	var windowCells, beforeCells int
	for k := range cells {
		c := &cells[k]
		if c.t > d.to {
			continue
		}
		if stop.tick(len(c.firms)) {
			return nil
		}
		acc, total := foreign, &windowCells
		if c.t < d.from {
			acc, total = before, &beforeCells
		}
		*total++
		ow, owned := owner[c.seg]
		if owned {
			acc[candOf[ow]-1].cells--
		}
		for x, f := range c.firms {
			if i := candOf[f]; i > 0 && !(owned && ow == f) {
				acc[i-1].sum += c.shares[x]
			}
		}
	}
	mean := func(m shareMean, total int) (float64, bool) {
		n := total + m.cells
		return m.sum / float64(n), n > 0
	}
	var divs []divider
	for i, f := range candKeys {
		if m, ok := mean(foreign[i], windowCells); ok && m > maxForeignShare {
			continue
		}
		if m, ok := mean(before[i], beforeCells); ok && m >= minForeignBefore {
			divs = append(divs, divider{f, cand[f]})
		}
	}
	if len(divs) >= 2 {
		d.fired = true
		d.conf = 1.0
		for _, x := range divs {
			d.dividers = append(d.dividers, int(x.f))
			d.conf = math.Min(d.conf, x.conf)
		}
		slices.Sort(d.dividers)
		d.score = math.Min(0.49, d.score)
	} else {
		d.score = math.Max(0.5, d.score)
	}
	return d
}

// countingSort returns rows stably ordered by key (in [0, keys)), in time linear in
// len(rows) + keys.
func countingSort[R any](rows []R, keys int, key func(R) int) []R {
	start := make([]int, keys+1)
	for _, r := range rows {
		start[key(r)+1]++
	}
	for k := 1; k <= keys; k++ {
		start[k] += start[k-1]
	}
	out := make([]R, len(rows))
	for _, r := range rows {
		k := key(r)
		out[start[k]] = r
		start[k]++
	}
	return out
}

func dividerKeys(m map[int32]float64) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// meanFit is the mean part of the regime test on a series.
type meanFit struct {
	ok       bool
	p        float64
	rise     float64 // mean inside − mean outside
	from, to int
}

// fitRegimeMean is step 1 of fitRegime (the CUSUM-range test for an epidemic rise in the
// mean) on its own.
func fitRegimeMean(s *series) meanFit {
	if len(s.y) < minRegimeObs {
		return meanFit{}
	}
	ep := epidemicRise(s.y, s.meanY)
	if !ep.ok {
		return meanFit{}
	}
	return meanFit{ok: true, p: ep.p, rise: ep.in.Mean - ep.out.Mean, from: s.t[ep.s], to: s.t[ep.e-1]}
}
