package drift

import (
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"riskapi/internal/numeric"
)

// The share and harm tests scan scanWindows nested windows [s_j, n), whose starts are
// equally spaced in u = ½·ln(t/(1 − t)), t = s/n, from the end of the baseline (s_0 = nb)
// to nb + scanLast·(n − nb). Each window is compared with the reference [0, s_j). Under
// no change, a window statistic and the next one have a correlation that depends only on
// their counts (nestedCorr; for the share test exp(−Δu), the same for every pair), and
// the largest statistic of the scan is calibrated with the improved Bonferroni bound of
// scanTail (docs/methods/drift.md §2).
const (
	scanWindows = 13
	scanLast    = 0.75
)

// instrWindows is the number of nested windows of the instruction test (starts nb +
// k·(n − nb)/instrWindows); its exact binomial p-values are Bonferroni-combined.
const instrWindows = 4

// maxStrata caps the action strata of the harm tests; rarer actions share the last one.
const maxStrata = 16

// harmFloor is the relevance margin of the harm arms, as a fraction of |mean principal
// value of the baseline|: the party's events must be worse than reference events of the
// same actions by more than this (a tenth of the 10 % the detection target is stated for),
// so that a vendor as good as the others, measured on very many events, is not harm.
const harmFloor = 0.01

// instrFloor is the relevance floor of the instruction path: the party's instructed-and-
// benefiting events must exceed this share of the window's actions (a fifth of the 10 %
// of actions the detection target is stated for), so that a vendor's own feed at a low
// constant rate per vendor event is not a shadow principal when that vendor gains share.
const instrFloor = 0.02

// winsorTail is the share of the pooled values the harm tests winsorize on the harmful
// side: losses above the pooled (1 − winsorTail) quantile are set to it, principal values
// below the pooled winsorTail quantile likewise. Rare extreme outcomes (refunds) then do
// not swamp the tests; the cut depends on the pooled values only, not on their order, so
// the tests keep their level under no change.
const winsorTail = 0.02

// scanStarts returns the window starts of the share-and-harm scan, increasing and
// distinct, each in [nb, n − 1].
func scanStarts(n, nb int) []int {
	t0 := float64(nb) / float64(n)
	t1 := (float64(nb) + scanLast*float64(n-nb)) / float64(n)
	u := func(t float64) float64 { return 0.5 * math.Log(t/(1-t)) }
	u0, u1 := u(t0), u(t1)
	starts := make([]int, 0, scanWindows)
	for j := 0; j < scanWindows; j++ {
		uj := u0 + (u1-u0)*float64(j)/float64(scanWindows-1)
		t := 1 / (1 + math.Exp(-2*uj))
		s := int(math.Round(t * float64(n)))
		if j == 0 {
			s = nb
		}
		s = max(nb, min(s, n-1))
		if len(starts) > 0 && s <= starts[len(starts)-1] {
			continue
		}
		starts = append(starts, s)
	}
	return starts
}

// instrStarts returns the window starts of the instruction test.
func instrStarts(n, nb int) []int {
	starts := make([]int, 0, instrWindows)
	for k := 0; k < instrWindows; k++ {
		s := nb + k*(n-nb)/instrWindows
		if k > 0 && s == starts[len(starts)-1] {
			continue
		}
		starts = append(starts, s)
	}
	return starts
}

// partyTest is the evidence for one party.
type partyTest struct {
	party    int
	p        float64 // party p-value before Holm (both paths, scans calibrated)
	pShare   float64 // share scan: P(max window statistic ≥ observed) bound
	pHarm    float64 // harm scan (loss and principal-value arms, Bonferroni over the two)
	pConc    float64 // concentration-with-harm path
	pInstr   float64 // instruction path (1 when no instructed_by anywhere)
	viaInstr bool    // the instruction path gave the smaller p-value
	hasInstr bool    // some event carries instructed_by
}

// armScan is one scanned statistic of one party: z-scores per window (−Inf where the
// test cannot be run) and the chain of Owen a-values between consecutive runnable windows.
type armScan struct {
	z []float64
	a []float64
}

// tail is the scan p-value of an observed window statistic z.
func (s *armScan) tail(r *owenRule, z float64) float64 { return r.scanTail(z, s.a) }

// best is the scan p-value of the largest window statistic.
func (s *armScan) best(r *owenRule) float64 {
	m := math.Inf(-1)
	for _, z := range s.z {
		m = math.Max(m, z)
	}
	return s.tail(r, m)
}

// chain fills a from the per-window (window count, reference count) pairs of the
// runnable windows (both counts ≥ 2).
func (s *armScan) chain(mw, rw []float64) {
	s.a = s.a[:0]
	prev := -1
	for j := range mw {
		if mw[j] < 2 || rw[j] < 2 {
			continue
		}
		if prev >= 0 {
			s.a = append(s.a, chainA(nestedCorr(mw[prev], rw[prev], mw[j], rw[j])))
		}
		prev = j
	}
}

// strata assigns every event to an action stratum: the maxStrata − 1 most frequent
// actions have a stratum each (ties by name), every other action shares the last one.
func strata(ev []Event) (of []int, count int) {
	id := map[string]int{}
	var names []string
	var freq []int
	of = make([]int, len(ev))
	for i := range ev {
		k, ok := id[ev[i].Action]
		if !ok {
			k = len(names)
			id[ev[i].Action] = k
			names = append(names, ev[i].Action)
			freq = append(freq, 0)
		}
		freq[k]++
		of[i] = k
	}
	rank := make([]int, len(names))
	for k := range rank {
		rank[k] = k
	}
	slices.SortFunc(rank, func(a, b int) int {
		if freq[a] != freq[b] {
			return freq[b] - freq[a]
		}
		return strings.Compare(names[a], names[b])
	})
	stratum := make([]int, len(names))
	for r, k := range rank {
		stratum[k] = min(r, maxStrata-1)
	}
	for i := range of {
		of[i] = stratum[of[i]]
	}
	return of, min(len(names), maxStrata)
}

// stratifiedZ is the z-score of the one-sided test of H1: sign·(mean(win) − R) > margin,
// where R is the reference mean directly standardised to the window's action mix:
// R = Σ_a w_a·mean(ref_a), w_a = m_a/M the share of the window's observations in stratum
// a. Strata whose reference has fewer than 2 observations are left out (with their
// window observations). Var = s²_win/M + Σ_a w_a²·s²_a/r_a; Student t with
// Welch–Satterthwaite degrees of freedom, then the skewness correction of skewCorrect
// with the null skewness of the difference computed from each stratum's pooled moments.
// It also returns the counts M and Σ r_a used.
func stratifiedZ(win, ref []sums, sign, margin float64) (z, m, r float64) {
	var w sums
	for a := range win {
		if win[a].n > 0 && ref[a].n >= 2 {
			w.plus(win[a])
			r += ref[a].n
		}
	}
	if w.n < 2 {
		return math.Inf(-1), w.n, r
	}
	wm := w.moments()
	vw := wm.Variance() / w.n
	refMean, vr, dfDen := 0.0, 0.0, vw*vw/(w.n-1)
	var v0, k3 float64 // null variance and third cumulant of the difference
	for a := range win {
		if win[a].n == 0 || ref[a].n < 2 {
			continue
		}
		rm := ref[a].moments()
		wa := win[a].n / w.n
		refMean += wa * rm.Mean
		v := wa * wa * rm.Variance() / rm.N
		vr += v
		dfDen += v * v / (rm.N - 1)
		pool := ref[a]
		pool.plus(win[a])
		pm := pool.moments()
		v0 += pm.Variance() * (win[a].n/(w.n*w.n) + wa*wa/rm.N)
		k3 += pool.m3() * (win[a].n/(w.n*w.n*w.n) - wa*wa*wa/(rm.N*rm.N))
	}
	d := sign*(wm.Mean-refMean) - margin
	se2 := vw + vr
	if se2 <= 0 {
		if d > 0 {
			return math.Inf(1), w.n, r
		}
		return math.Inf(-1), w.n, r
	}
	p := numeric.StudentTUpper(d/math.Sqrt(se2), se2*se2/dfDen)
	gamma := 0.0
	if v0 > 0 {
		gamma = sign * k3 / math.Pow(v0, 1.5)
	}
	return skewCorrect(p, gamma), w.n, r
}

// partyEvent is one event a party benefits from: its index, the party's value and its
// share of the event's non-principal benefit, and whether the party also instructed it.
type partyEvent struct {
	i     int
	value float64
	share float64
	instr bool
}

// indexParties fills byParty, hasInstr and instructs from the events' benefits: every
// party's events in event order, so that the per-party tests and descriptions read only a
// party's own events, never all n events once per party. It returns false, unfinished,
// once stopped reports true.
func (p *prepared) indexParties(stopped func() bool) bool {
	count := make([]int, len(p.names))
	for _, b := range p.ben {
		count[b.party]++
	}
	flat := make([]partyEvent, len(p.ben))
	p.byParty = make([][]partyEvent, len(p.names))
	off := 0
	for k, c := range count {
		p.byParty[k] = flat[off : off : off+c]
		off += c
	}
	p.instructs = make([]bool, len(p.names))
	for i := range p.ev {
		if stopped() {
			return false
		}
		ib := p.ev[i].InstructedBy
		if ib != "" {
			p.hasInstr = true
		}
		for _, b := range p.benefits(i) {
			in := ib != "" && ib == p.names[b.party]
			p.byParty[b.party] = append(p.byParty[b.party], partyEvent{i: i, value: b.value, share: b.value / p.total[i], instr: in})
			if in && i >= p.nb {
				p.instructs[b.party] = true
			}
		}
	}
	return true
}

// testParties runs the per-party tests for every non-principal party that benefits from
// an event in the monitoring window.
func (p *prepared) testParties(alpha float64, stopped func() bool, workers int) []partyTest {
	n, nb := p.n, p.nb
	starts := scanStarts(n, nb)
	G := len(starts)
	iStarts := instrStarts(n, nb)
	K := float64(len(iStarts))
	rule := newOwenRule()
	stratum, A := p.stratum, p.strata
	margin := harmFloor * math.Abs(p.basePV)
	entries, hasInstr, instructs := p.byParty, p.hasInstr, p.instructs
	// References of the harm arms: loss and principal value of all events before each
	// window start, per action stratum (refLoss[j*A+a]).
	refLoss := make([]sums, G*A)
	refPV := make([]sums, G*A)
	{
		cumL, cumV := make([]sums, A), make([]sums, A)
		j := 0
		for i := 0; i <= n && j < G; i++ {
			for j < G && starts[j] == i {
				copy(refLoss[j*A:(j+1)*A], cumL)
				copy(refPV[j*A:(j+1)*A], cumV)
				j++
			}
			if i == n {
				break
			}
			if p.hasLoss[i] {
				cumL[stratum[i]].add(p.wLoss[i])
			}
			if v := p.ev[i].PrincipalValue; v != nil {
				cumV[stratum[i]].add(p.wPV[i])
			}
		}
	}
	// The share arm's chain is the same for every party: all events with benefit.
	var shareChain []float64
	{
		var share armScan
		mw, rw := make([]float64, G), make([]float64, G)
		for j, s := range starts {
			rw[j] = float64(p.cntV[s])
			mw[j] = float64(p.cntV[n] - p.cntV[s])
		}
		share.chain(mw, rw)
		shareChain = share.a
	}

	// The parties to test: those with an event in the monitoring part. Each is tested on
	// its own (the shared state above is only read), so the parties are split over the
	// workers, each with scratch of its own, and the results are kept in party order: the
	// output is the same for any number of workers.
	var parties []int
	for k := range p.names {
		if es := entries[k]; len(es) > 0 && es[len(es)-1].i >= nb {
			parties = append(parties, k)
		}
	}
	out := make([]partyTest, len(parties)) // at most one a party, made once
	workers = max(1, min(workers, len(parties)/minPartiesPerWorker))
	var halted atomic.Bool
	parallel(workers, func(w int) {
		// Per-segment sums of a party: segment 0 is [0, s_0), segment j+1 is [s_j,
		// s_{j+1}) (the last one ends at n); the harm arms per action stratum.
		segShare := make([]sums, G+1)
		segLoss := make([]sums, (G+1)*A)
		segPV := make([]sums, (G+1)*A)
		winLoss, winPV := make([]sums, A), make([]sums, A)
		var loss, pv armScan
		loss.z, pv.z = make([]float64, G), make([]float64, G)
		share := armScan{a: shareChain, z: make([]float64, G)}
		lmw, lrw := make([]float64, G), make([]float64, G)
		vmw, vrw := make([]float64, G), make([]float64, G)
		order := make([]int, G)
		lower := make([]float64, G)
		for i := w; i < len(parties); i += workers {
			if halted.Load() || stopped() {
				halted.Store(true)
				return
			}
			k := parties[i]
			es := entries[k]
			t := partyTest{party: k, pShare: 1, pHarm: 1, pConc: 1, pInstr: 1, hasInstr: hasInstr}
			clear(segShare)
			clear(segLoss)
			clear(segPV)
			clear(winLoss)
			clear(winPV)
			g := 0
			var tot sums
			for _, e := range es {
				for g < G && e.i >= starts[g] {
					g++
				}
				segShare[g].add(e.share)
				tot.add(e.share)
				if p.hasLoss[e.i] {
					segLoss[g*A+stratum[e.i]].add(p.wLoss[e.i])
				}
				if v := p.ev[e.i].PrincipalValue; v != nil {
					segPV[g*A+stratum[e.i]].add(p.wPV[e.i])
				}
			}
			// Window j is segments j+1..G: accumulate from the last window backwards.
			var win sums
			for j := G - 1; j >= 0; j-- {
				win.plus(segShare[j+1])
				for a := 0; a < A; a++ {
					winLoss[a].plus(segLoss[(j+1)*A+a])
					winPV[a].plus(segPV[(j+1)*A+a])
				}
				s := starts[j]
				// Share: the party's mean per-event benefit share (events with any
				// non-principal benefit; 0 where the party gets nothing) in the window
				// against the reference.
				refShare := sums{n: float64(p.cntV[s]), s: tot.s - win.s, ss: tot.ss - win.ss, s3: tot.s3 - win.s3}
				winShare := sums{n: float64(p.cntV[n] - p.cntV[s]), s: win.s, ss: win.ss, s3: win.s3}
				share.z[j] = riseZ(refShare, winShare)
				// Harm: the loss on the party's window events exceeds the loss on reference
				// events of the same actions by more than the margin (loss arm), or their
				// principal value falls short of it by more than the margin (value arm).
				loss.z[j], lmw[j], lrw[j] = stratifiedZ(winLoss, refLoss[j*A:(j+1)*A], 1, margin)
				pv.z[j], vmw[j], vrw[j] = stratifiedZ(winPV, refPV[j*A:(j+1)*A], -1, margin)
			}
			loss.chain(lmw, lrw)
			pv.chain(vmw, vrw)
			t.pShare = share.best(rule)
			t.pHarm = math.Min(1, 2*math.Min(loss.best(rule), pv.best(rule)))
			// Concentration with harm in the same window: min over windows of the larger of the
			// two scan p-values. Windows are visited in order of a lower bound of that value
			// (the single-window tails), so most scan tails are never evaluated.
			t.pConc = math.Max(t.pShare, t.pHarm)
			if t.pConc < 1 {
				for j := range order {
					order[j] = j
					lower[j] = math.Max(numeric.NormalUpper(share.z[j]), math.Min(1, 2*math.Min(numeric.NormalUpper(loss.z[j]), numeric.NormalUpper(pv.z[j]))))
				}
				slices.SortFunc(order, func(a, b int) int {
					switch {
					case lower[a] < lower[b]:
						return -1
					case lower[a] > lower[b]:
						return 1
					}
					return a - b
				})
				best := 1.0
				for _, j := range order {
					if lower[j] >= best {
						break
					}
					ph := math.Min(1, 2*math.Min(loss.tail(rule, loss.z[j]), pv.tail(rule, pv.z[j])))
					if ph >= best {
						continue
					}
					best = math.Min(best, math.Max(share.tail(rule, share.z[j]), ph))
				}
				t.pConc = best
			}

			// Instruction following: conditional exact test on instrWindows nested windows,
			// Bonferroni-combined.
			cTot := 0
			for _, e := range es {
				if e.instr {
					cTot++
				}
			}
			if instructs[k] {
				bestInstr := 1.0
				for _, s := range iStarts {
					rInstr, wInstr := 0, 0
					for _, e := range es {
						if !e.instr {
							continue
						}
						if e.i < s {
							rInstr++
						} else {
							wInstr++
						}
					}
					// Rise: given the party's instructed-and-benefiting events, under a constant
					// rate the window's count is Binomial(total, (n − s)/n) (the binomial form
					// of Fisher's exact test). Relevance: the window's count exceeds what a
					// rate of instrFloor of the window's actions gives, Binomial(n − s,
					// instrFloor). Both must hold (intersection–union).
					q := float64(n-s) / float64(n)
					rise := binomUpper(wInstr, wInstr+rInstr, q)
					level := binomUpper(wInstr, n-s, instrFloor)
					bestInstr = math.Min(bestInstr, math.Max(rise, level))
				}
				t.pInstr = math.Min(1, K*bestInstr)
			}
			// Weighted Bonferroni over the two paths: the instruction path's exact test is very
			// powerful when it applies, so it gets weight instrWeight and the
			// concentration-with-harm path the rest — but only when the instruction test can
			// reach its share of the level at all. Given the party's total count C of
			// instructed-and-benefiting events (the statistic the exact test conditions on),
			// its smallest attainable p-value is K·q_min^C (all C in the last window); when
			// that exceeds instrWeight·alpha the path cannot reject and the whole level goes
			// to concentration-with-harm (Tarone 1990).
			qMin := float64(n-iStarts[len(iStarts)-1]) / float64(n)
			if cTot > 0 && K*math.Pow(qMin, float64(cTot)) <= instrWeight*alpha {
				pc, pi := t.pConc/(1-instrWeight), t.pInstr/instrWeight
				t.p = math.Min(1, math.Min(pc, pi))
				t.viaInstr = pi < pc
			} else {
				t.p = t.pConc
			}
			out[i] = t
		}
	})
	if halted.Load() {
		return nil // Analyze returns the context's error
	}
	return out
}

// winsorize fills wLoss and wPV: the losses with values above the pooled (1 − winsorTail)
// quantile of all losses set to it, and the principal values below the pooled winsorTail
// quantile of all principal values set to it; both then centred on their pooled medians.
// The tests only use differences of means and central moments, which the centring leaves
// unchanged, but the sums of squares and cubes they are computed from stay accurate when
// the values are large relative to their spread (principal values of 10⁶ ± 1).
func (p *prepared) winsorize() {
	p.wLoss = make([]float64, p.n)
	p.wPV = make([]float64, p.n)
	buf := make([]float64, 0, p.n)
	for i := range p.ev {
		if p.hasLoss[i] {
			buf = append(buf, p.loss[i])
		}
	}
	hi, midL := math.Inf(1), 0.0
	if len(buf) > 0 {
		hi = quantile(buf, 1-winsorTail)
		midL = quantile(buf, 0.5)
	}
	buf = buf[:0]
	for i := range p.ev {
		if v := p.ev[i].PrincipalValue; v != nil {
			buf = append(buf, *v)
		}
	}
	lo, midV := math.Inf(-1), 0.0
	if len(buf) > 0 {
		lo = quantile(buf, winsorTail)
		midV = quantile(buf, 0.5)
	}
	for i := range p.ev {
		if p.hasLoss[i] {
			p.wLoss[i] = math.Min(p.loss[i], hi) - midL
		}
		if v := p.ev[i].PrincipalValue; v != nil {
			p.wPV[i] = math.Max(*v, lo) - midV
		}
	}
}

// quantile returns the ⌊q·(len − 1)⌋-th smallest value of x (0 ≤ q ≤ 1), reordering x.
func quantile(x []float64, q float64) float64 {
	return numeric.SelectKth(x, int(q*float64(len(x)-1)))
}
