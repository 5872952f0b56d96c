package convergence

import (
	"cmp"
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
	var rows []obsRow
	for _, r := range v.rows {
		if r.seg >= 0 && !math.IsNaN(r.qty) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	slices.SortFunc(rows, func(a, b obsRow) int {
		if c := cmp.Compare(a.seg, b.seg); c != 0 {
			return c
		}
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.firm, b.firm)
	})
	type cell struct {
		seg, t int
		firms  []int32
		shares []float64
		leader int32
		hhi    float64
	}
	var cells []cell
	nf := len(v.firms)
	active := make([]bool, nf)
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && rows[hi].seg == rows[lo].seg && rows[hi].key == rows[lo].key {
			hi++
		}
		tot := 0.0
		for _, r := range rows[lo:hi] {
			tot += r.qty
			if r.qty > 0 {
				active[r.firm] = true
			}
		}
		if tot > 0 {
			c := cell{seg: int(rows[lo].seg), t: periodIdx[rows[lo].key], leader: -1}
			best := -1.0
			for _, r := range rows[lo:hi] {
				s := r.qty / tot
				c.firms = append(c.firms, r.firm)
				c.shares = append(c.shares, s)
				c.hhi += s * s
				if s > best {
					best, c.leader = s, r.firm
				}
			}
			cells = append(cells, c)
		}
		lo = hi
	}
	if len(cells) == 0 {
		return nil
	}
	d := &divisionStats{}
	var hm, sm moments
	shareOf := func(c *cell, f int32) float64 {
		for k, g := range c.firms {
			if g == f {
				return c.shares[k]
			}
		}
		return 0
	}
	for k := range cells {
		if k%64 == 0 && stop.check() {
			return nil
		}
		hm.Add(cells[k].hhi)
		if k > 0 && cells[k-1].seg == cells[k].seg {
			a, b := &cells[k-1], &cells[k]
			l1 := 0.0
			for x, f := range b.firms {
				l1 += math.Abs(b.shares[x] - shareOf(a, f))
			}
			for x, f := range a.firms {
				if shareOf(b, f) == 0 {
					l1 += a.shares[x]
				}
			}
			sm.Add(1 - l1/2)
		}
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

	// Owners within the window.
	type own struct {
		leads map[int32]int
		n     int
		share map[int32]float64
	}
	segs := map[int]*own{}
	foreign := map[int32]*moments{}
	for k := range cells {
		c := &cells[k]
		if c.t < d.from || c.t > d.to {
			continue
		}
		o := segs[c.seg]
		if o == nil {
			o = &own{leads: map[int32]int{}, share: map[int32]float64{}}
			segs[c.seg] = o
		}
		o.n++
		o.leads[c.leader]++
		for x, f := range c.firms {
			o.share[f] += c.shares[x]
		}
	}
	owner := map[int]int32{}
	var segIDs []int
	for s := range segs {
		segIDs = append(segIDs, s)
	}
	slices.Sort(segIDs)
	type divider struct {
		f    int32
		conf float64
	}
	cand := map[int32]float64{}
	for _, s := range segIDs {
		o := segs[s]
		var best int32 = -1
		for f, n := range o.leads {
			if best < 0 || n > o.leads[best] || n == o.leads[best] && f < best {
				best = f
			}
		}
		pers := float64(o.leads[best]) / float64(o.n)
		sh := o.share[best] / float64(o.n)

		if pers >= minOwnerPersistence && sh >= minOwnerShare {
			owner[s] = best
			c := pers * sh
			if prev, ok := cand[best]; !ok || c < prev {
				cand[best] = c
			}
		}
	}
	candKeys := dividerKeys(cand)
	for k := range cells {
		c := &cells[k]
		if c.t < d.from || c.t > d.to {
			continue
		}
		for _, f := range candKeys {
			if ow, ok := owner[c.seg]; ok && ow == f {
				continue
			}
			m := foreign[f]
			if m == nil {
				m = &moments{}
				foreign[f] = m
			}
			m.Add(shareOf(c, f))
		}
	}
	// Each candidate's mean share before the window in the segments it does not own.
	before := map[int32]*moments{}
	for k := range cells {
		c := &cells[k]
		if c.t >= d.from {
			continue
		}
		for _, f := range candKeys {
			if ow, ok := owner[c.seg]; ok && ow == f {
				continue
			}
			m := before[f]
			if m == nil {
				m = &moments{}
				before[f] = m
			}
			m.Add(shareOf(c, f))
		}
	}
	var divs []divider
	for _, f := range candKeys {
		if m := foreign[f]; m != nil && m.Mean > maxForeignShare {
			continue
		}
		if m := before[f]; m != nil && m.Mean >= minForeignBefore {
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
