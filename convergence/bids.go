package convergence

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"
)

// rdLevels are the upper-tail levels of rdQuantiles.
var rdLevels = [...]float64{0.5, 0.25, 0.1, 0.05, 0.025, 0.01, 0.005, 0.001}

// rdQuantiles[n−3][l] is the upper rdLevels[l] quantile of the relative distance
// RD = (b₂ − b₁)/sd(b₂, …, b_n) of n independent, identically normally distributed bids
// (the competitive null of the screen; RD does not depend on the normal's mean and
// variance). Monte Carlo with 10⁶ tenders per n (PCG seed 20260101); TestRDQuantileTable
// re-derives it. For n > 30 the n = 30 row is used, which is conservative: the quantiles
// fall with n.
var rdQuantiles = [...][len(rdLevels)]float64{
	{1.416, 3.859, 10.96, 22.68, 45.59, 115, 233.7, 1199},      // n = 3
	{0.914, 2.013, 4.024, 6.247, 9.329, 15.38, 22.27, 49.92},   // n = 4
	{0.74, 1.536, 2.794, 3.966, 5.41, 7.855, 10.31, 18.8},      // n = 5
	{0.6507, 1.317, 2.285, 3.13, 4.103, 5.649, 7.073, 11.42},   // n = 6
	{0.5935, 1.18, 2.005, 2.681, 3.435, 4.563, 5.544, 8.388},   // n = 7
	{0.5511, 1.091, 1.822, 2.41, 3.039, 3.946, 4.714, 6.813},   // n = 8
	{0.5205, 1.023, 1.695, 2.224, 2.771, 3.557, 4.199, 5.973},  // n = 9
	{0.4968, 0.9731, 1.596, 2.078, 2.583, 3.278, 3.849, 5.325}, // n = 10
	{0.4771, 0.9307, 1.52, 1.968, 2.43, 3.066, 3.579, 4.903},   // n = 11
	{0.4592, 0.8954, 1.455, 1.882, 2.315, 2.906, 3.362, 4.523}, // n = 12
	{0.447, 0.8688, 1.408, 1.815, 2.228, 2.778, 3.206, 4.292},  // n = 13
	{0.4349, 0.8423, 1.364, 1.753, 2.144, 2.659, 3.067, 4.076}, // n = 14
	{0.4245, 0.8214, 1.325, 1.699, 2.073, 2.572, 2.962, 3.878}, // n = 15
	{0.415, 0.8036, 1.293, 1.656, 2.016, 2.492, 2.862, 3.735},  // n = 16
	{0.4068, 0.787, 1.268, 1.62, 1.971, 2.43, 2.783, 3.62},     // n = 17
	{0.3992, 0.7721, 1.243, 1.581, 1.923, 2.371, 2.709, 3.509}, // n = 18
	{0.3938, 0.7605, 1.22, 1.555, 1.884, 2.32, 2.65, 3.404},    // n = 19
	{0.3876, 0.7487, 1.202, 1.532, 1.857, 2.279, 2.6, 3.346},   // n = 20
	{0.382, 0.7374, 1.183, 1.504, 1.824, 2.238, 2.549, 3.282},  // n = 21
	{0.3765, 0.7284, 1.163, 1.484, 1.798, 2.208, 2.511, 3.213}, // n = 22
	{0.3723, 0.717, 1.15, 1.461, 1.766, 2.163, 2.466, 3.155},   // n = 23
	{0.3672, 0.7101, 1.137, 1.446, 1.746, 2.139, 2.432, 3.094}, // n = 24
	{0.3636, 0.7027, 1.122, 1.426, 1.726, 2.114, 2.4, 3.061},   // n = 25
	{0.3595, 0.6938, 1.109, 1.41, 1.703, 2.08, 2.359, 3},       // n = 26
	{0.356, 0.6869, 1.095, 1.392, 1.676, 2.044, 2.326, 2.943},  // n = 27
	{0.3528, 0.6811, 1.089, 1.383, 1.669, 2.041, 2.312, 2.929}, // n = 28
	{0.3494, 0.6748, 1.079, 1.369, 1.651, 2.016, 2.281, 2.898}, // n = 29
	{0.3466, 0.6696, 1.069, 1.355, 1.631, 1.99, 2.262, 2.874},  // n = 30
}

// rdPValue is the p-value of RD for an n-bid tender under the competitive null,
// interpolated in the table: log p is linear in log RD between tabled quantiles; below the
// median p falls linearly from 1 at RD = 0 to 0.5; beyond the 0.001 quantile p stays at
// 0.001 (also for RD = +Inf, when the losing bids are all equal).
func rdPValue(rd float64, n int) float64 {
	if math.IsNaN(rd) || n < 3 || rd <= 0 {
		return 1
	}
	row := rdQuantiles[min(n, 30)-3]
	if rd < row[0] {
		return 1 - 0.5*rd/row[0]
	}
	last := len(row) - 1
	if rd >= row[last] {
		return rdLevels[last]
	}
	for l := 1; l <= last; l++ {
		if rd < row[l] {
			f := (math.Log(rd) - math.Log(row[l-1])) / (math.Log(row[l]) - math.Log(row[l-1]))
			return math.Exp(math.Log(rdLevels[l-1]) + f*(math.Log(rdLevels[l])-math.Log(rdLevels[l-1])))
		}
	}
	return rdLevels[last]
}

// screenLevel: a tender's RD screen fires when its p-value is at most this (the
// dimension's score when no ring is found).
const screenLevel = 0.05

// tenderScreens are the Huber & Imhof (2019) screens of one tender.
type tenderScreens struct {
	n      int
	cv     float64
	diffp  float64
	rd     float64 // NaN when undefined; +Inf when the losing bids are all equal
	skew   float64 // NaN when undefined
	kurt   float64 // NaN when n < 4 or undefined
	p      float64 // RD p-value
	winner int32   // firm index of the winner (won: true; the lowest bid when none is marked); −1 when none
	second int32   // firm index of the lowest bid other than the winner's
}

// screens computes CV, DIFFP, RD, skewness and kurtosis with the small-sample formulas.
func screens(t *tender) tenderScreens {
	n := len(t.bids)
	b := make([]float64, n)
	for i, x := range t.bids {
		b[i] = x.amount
	}
	slices.Sort(b)
	sc := tenderScreens{n: n, rd: math.NaN(), skew: math.NaN(), kurt: math.NaN(), winner: -1}
	secondAmt := 0.0
	var m moments
	for _, v := range b {
		m.Add(v)
	}
	sd := math.Sqrt(m.Variance())
	sc.cv = sd / m.Mean
	sc.diffp = (b[1] - b[0]) / b[0]
	var ml moments
	for _, v := range b[1:] {
		ml.Add(v)
	}
	sdl := math.Sqrt(ml.Variance())
	gap := b[1] - b[0]
	switch {
	case sdl > 0:
		sc.rd = gap / sdl
	case gap > 0:
		sc.rd = math.Inf(1)
	}
	if sd > 0 {
		var s3, s4 float64
		for _, v := range b {
			z := (v - m.Mean) / sd
			s3 += z * z * z
			s4 += z * z * z * z
		}
		fn := float64(n)
		sc.skew = fn / ((fn - 1) * (fn - 2)) * s3
		if n >= 4 {
			sc.kurt = fn*(fn+1)/((fn-1)*(fn-2)*(fn-3))*s4 - 3*(fn-1)*(fn-1)/((fn-2)*(fn-3))
		}
	}
	sc.p = rdPValue(sc.rd, n)
	low := t.bids[0]
	for _, x := range t.bids {
		if x.won {
			sc.winner = x.firm
		}
		if x.amount < low.amount {
			low = x
		}
	}
	if sc.winner < 0 {
		sc.winner = low.firm
	}
	sc.second = -1
	for _, x := range t.bids {
		if x.firm != sc.winner && (sc.second < 0 || x.amount < secondAmt) {
			sc.second, secondAmt = x.firm, x.amount
		}
	}
	return sc
}

// bidStats is the bid-pattern analysis.
type bidStats struct {
	sc        []tenderScreens
	screenHit int // tenders whose RD screen fires
	ring      []int32
	members   []memberScreen // aligned with ring
	pGroup    float64        // family-wise p-value of the ring; 1 when none
	z         float64        // the ring's Stouffer Z
	ringN     int            // tenders with at least three members' bids
	flagged   []int          // tender indices flagged
	ringBid   int            // tenders where at least two members bid
	rotation  float64        // NaN without ring
}

// analyseBids screens every usable tender (Huber & Imhof 2019) and searches for a ring: the
// subset of firms whose own bids, taken apart from everyone else's, show cover bids
// clustered just above a winning member, tender after tender, with every member both
// winning and covering (ringSearch; docs/methods/convergence.md §5).
func analyseBids(v *input, alphaB float64, stop *stopper) *bidStats {
	bs := &bidStats{pGroup: 1, rotation: math.NaN()}
	bs.sc = make([]tenderScreens, len(v.tenders))
	for j := range v.tenders {
		if stop.tick(len(v.tenders[j].bids)) {
			return bs
		}
		bs.sc[j] = screens(&v.tenders[j])
		if bs.sc[j].p <= screenLevel {
			bs.screenHit++
		}
	}
	rs := newRingSearch(v, stop)
	best, p := rs.find(alphaB)
	if stop.err != nil || len(best.firms) < 3 {
		return bs
	}
	bs.pGroup = p
	if p > alphaB {
		return bs
	}
	bs.ring, bs.members, bs.z, bs.ringN = best.firms, best.members, best.z, best.n
	bs.flag(rs)
	return bs
}

// flag marks the ring's tenders among those where the members' bids are contiguous in the
// tender's order (no other firm's bid between them): those with at least three members'
// bids whose RD screen on the members' bids has p ≤ flagLevel, and those with two members'
// bids whose gap lies within the range of the cover gaps of the flagged ones. rotation_index is the normalised
// entropy of the members' wins over the flagged tenders.
func (bs *bidStats) flag(rs *ringSearch) {
	inRing := make([]bool, rs.F)
	for _, f := range bs.ring {
		inRing[f] = true
	}
	type pairTender struct {
		j   int
		gap float64
		w   int32
	}
	var pairs []pairTender
	maxGap, minGap := 0.0, math.Inf(1)
	wins := map[int32]int{}
	var xs []float64
	for j := range rs.ts {
		t := &rs.ts[j]
		xs = xs[:0]
		w, wx := int32(-1), math.Inf(1)
		for k, f := range t.firms {
			if inRing[f] {
				xs = append(xs, t.logs[k])
				if t.logs[k] < wx {
					w, wx = f, t.logs[k]
				}
			}
		}
		if len(xs) < 2 {
			continue
		}
		bs.ringBid++
		// Covers sit together just above the winner: no outsider's bid between the
		// members' lowest and highest.
		lo, hi := slices.Min(xs), slices.Max(xs)
		if interleaved(t, func(f int32) bool { return inRing[f] }, lo, hi) {
			continue
		}
		if len(xs) == 2 {
			pairs = append(pairs, pairTender{j, hi - lo, w})
			continue
		}
		if normalUpper(rdZ(xs)) <= flagLevel {
			bs.flagged = append(bs.flagged, j)
			wins[w]++
			maxGap = math.Max(maxGap, xs[1]-xs[0])
			minGap = math.Min(minGap, xs[1]-xs[0])
		}
	}
	for _, pt := range pairs {
		if pt.gap <= maxGap && pt.gap >= minGap {
			bs.flagged = append(bs.flagged, pt.j)
			wins[pt.w]++
		}
	}
	slices.Sort(bs.flagged)
	if len(bs.flagged) > 0 {
		h := 0.0
		for _, c := range wins {
			s := float64(c) / float64(len(bs.flagged))
			h -= s * math.Log(s)
		}
		bs.rotation = h / math.Log(float64(len(bs.ring)))
	}
}

// chiSquareUpper is P(X > x) for a χ² variable with k degrees of freedom (the regularised
// upper incomplete gamma function Q(k/2, x/2)).
func chiSquareUpper(x, k float64) float64 {
	if !(x > 0) {
		return 1
	}
	return mathext.GammaIncRegComp(k/2, x/2)
}

// dimension builds the bid_patterns dimension (screens as medians over usable tenders).
func (bs *bidStats) dimension(v *input, fired bool) *BidPatterns {
	d := &BidPatterns{Tenders: len(v.tenders), FlaggedTenderIDs: []string{}}
	var cv, rd, dp, ku, sk []float64
	for _, s := range bs.sc {
		cv = append(cv, s.cv)
		dp = append(dp, s.diffp)
		if finite(s.rd) {
			rd = append(rd, s.rd)
		}
		if finite(s.kurt) {
			ku = append(ku, s.kurt)
		}
		if finite(s.skew) {
			sk = append(sk, s.skew)
		}
	}
	d.CoefficientOfVariation = fptr(median(cv))
	d.RelativeDistance = fptr(median(rd))
	d.PercentageDifference = fptr(median(dp))
	d.Kurtosis = fptr(median(ku))
	d.Skewness = fptr(median(sk))
	if fired {
		for _, j := range bs.flagged {
			d.FlaggedTenderIDs = append(d.FlaggedTenderIDs, v.tenders[j].id)
		}
		d.FlaggedTenders = len(d.FlaggedTenderIDs)
		d.RotationIndex = fptr(bs.rotation)
		share := 0.0
		if bs.ringBid > 0 {
			share = float64(len(bs.flagged)) / float64(bs.ringBid)
		}
		d.Score = math.Min(0.49, 0.49*(1-share))
	} else {
		h := float64(bs.screenHit) / float64(len(v.tenders))
		d.Score = math.Max(0.5, 1-h)
	}
	return d
}
