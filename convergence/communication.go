package convergence

import (
	"math"
	"slices"
)

// Communication settings.
const (
	// changeSDs: a price change is material for the communication test when it exceeds
	// this many robust standard deviations of the firm's changes (and materialChange).
	changeSDs = 3.0
	// maxCoordinated caps the coordinated changes tested (the earliest are kept).
	maxCoordinated = 2000
	// maxChangers caps the firms of one coordinated change whose pairs are searched.
	maxChangers = 40
	// maxCommWork caps the message visits of the rotation test (Σ over coordinated changes
	// of the messages of their firms' pairs); later changes are left out beyond it.
	maxCommWork = 5_000_000
)

// commStats is the communication analysis.
type commStats struct {
	coordinated int
	preceded    int
	expected    float64
	messages    int
	p           float64
	members     []int // panel firm indices involved in preceded changes
	from, to    int   // period indices of the first and last preceded change
}

// analyseCommunication relates messages between firms to coordinated price changes: periods
// t in which at least two firms change their cost-adjusted price materially in the same
// direction. A message precedes the change at t when it is between two of the changing
// firms and its timestamp falls after period t − 2 and at or before period t (window indices
// t − 1 and t). The statistic is the number of such messages over all coordinated changes;
// its null distribution comes from rotating the message timeline circularly against the
// prices by every shift s = 0 … T − 1 (a rotation test, which keeps the messages' own
// clustering): p = #{s : S(s) ≥ S(0)}/T.
func analyseCommunication(v *input, pn *panel, stop *stopper) *commStats {
	T := pn.T
	cs := &commStats{p: 1}
	if T < 2 {
		return cs
	}
	// Window indices of the messages of each unordered pair of panel firms, sorted. The
	// look-ups of the messages' firms and periods are units of stop's loop; the messages
	// are then gathered by pair in document order.
	F := len(pn.firms)
	pairKey := make([]int64, len(v.msgs)) // a·F + b for the pair a < b; −1 when left out
	window := make([]int32, len(v.msgs))
	if stop.each(len(v.msgs), 0, func(i int, st *stopper) {
		pairKey[i] = -1
		if st.tick(1) {
			return
		}
		m := &v.msgs[i]
		a, ok1 := pn.byName[m.from]
		b, ok2 := pn.byName[m.to]
		if !ok1 || !ok2 || a == b {
			return
		}
		w := v.periodIndex(m.key)
		if w >= T {
			return
		}
		pairKey[i], window[i] = int64(min(a, b))*int64(F)+int64(max(a, b)), int32(w)
	}); stop.check() {
		return cs
	}
	pairs := newPairIndex(F)
	var wins [][]int32
	for i, k := range pairKey {
		if k < 0 {
			continue
		}
		if stop.tick(1) {
			return cs
		}
		x, ok := pairs.get(k)
		if !ok {
			x = len(wins)
			pairs.set(k, x)
			wins = append(wins, nil)
		}
		wins[x] = append(wins[x], window[i])
	}
	pairKey, window = nil, nil
	if stop.each(len(wins), 0, func(x int, st *stopper) {
		if !st.tick(len(wins[x])) {
			slices.Sort(wins[x])
		}
	}); stop.check() {
		return cs
	}
	// pairOf is the index in wins of the pair of firms a and b, or −1.
	pairOf := func(a, b int) int {
		if x, ok := pairs.get(int64(min(a, b))*int64(F) + int64(max(a, b))); ok {
			return x
		}
		return -1
	}
	// count is the number of a pair's messages with window index in [lo, hi].
	count := func(w []int32, lo, hi int) int {
		i, _ := slices.BinarySearch(w, int32(lo))
		j, _ := slices.BinarySearch(w, int32(hi+1))
		return j - i
	}
	// Material changes per period: each firm's are a unit of stop's loop, then joined in
	// firm order and sorted.
	type change struct {
		t    int
		up   bool
		firm int
	}
	perFirm := make([][]change, F)
	if stop.each(F, 0, func(i int, st *stopper) {
		s := &pn.firms[i]
		if st.tick(len(s.t)) {
			return
		}
		ts, d := s.changes()
		if len(d) < 2 {
			return
		}
		abs := make([]float64, len(d))
		med := median(d)
		for k, x := range d {
			abs[k] = math.Abs(x - med)
		}
		thr := math.Max(changeSDs*1.4826*median(abs), materialChange*math.Abs(s.meanY))
		for k, x := range d {
			if math.Abs(x) > thr {
				perFirm[i] = append(perFirm[i], change{ts[k], x > 0, i})
			}
		}
	}); stop.check() {
		return cs
	}
	var changes []change
	for _, c := range perFirm {
		changes = append(changes, c...)
	}
	perFirm = nil
	slices.SortFunc(changes, func(a, b change) int {
		if a.t != b.t {
			return a.t - b.t
		}
		if a.up != b.up {
			if a.up {
				return -1
			}
			return 1
		}
		return a.firm - b.firm
	})
	// The coordinated changes tested (the earliest, within maxCoordinated and maxCommWork),
	// each with its firms (at most maxChangers), and whether a message preceded them.
	type coordinated struct {
		t     int
		firms []change
	}
	var tested []coordinated
	involved := map[int]bool{}
	first, last := -1, -1
	work := 0
	for lo := 0; lo < len(changes) && cs.coordinated < maxCoordinated && work < maxCommWork; {
		hi := lo + 1
		for hi < len(changes) && changes[hi].t == changes[lo].t && changes[hi].up == changes[lo].up {
			hi++
		}
		group := changes[lo:hi]
		t := group[0].t
		lo = hi
		if stop.check() {
			return cs
		}
		if len(group) < 2 {
			continue
		}
		cs.coordinated++
		firms := group[:min(len(group), maxChangers)]
		tested = append(tested, coordinated{t, firms})
		preceded := false
		for x := 0; x < len(firms); x++ {
			for y := x + 1; y < len(firms); y++ {
				k := pairOf(firms[x].firm, firms[y].firm)
				if k < 0 {
					continue
				}
				work += len(wins[k])
				if stop.tick(len(wins[k])) {
					return cs
				}
				if n := count(wins[k], t-1, t); n > 0 {
					preceded = true
					cs.messages += n
					involved[firms[x].firm], involved[firms[y].firm] = true, true
				}
			}
		}
		if preceded {
			cs.preceded++
			if first < 0 {
				first = t
			}
			last = t
		}
	}
	if cs.coordinated == 0 || cs.messages == 0 {
		return cs
	}
	// shifted[s] is the statistic with the message timeline rotated by s periods: the number
	// of messages between two changing firms whose window index w satisfies
	// w − s ∈ {t − 1, t} (mod T) for their coordinated change at t. The tested changes are
	// cut into blocks, units of stop's loop, each counting into its own array (at most
	// commBlockBytes in all); the counts are integers, so their sum does not depend on the
	// blocks.
	blocks := 1
	if c := stop.crew; c != nil {
		blocks = max(1, min(len(tested), 4*(cap(c.tokens)+1), commBlockBytes/(8*T)))
	}
	counts := make([]int, blocks*T) // one allocation: none in the workers
	if stop.each(blocks, 1, func(b int, st *stopper) {
		sh := counts[b*T : (b+1)*T]
		for _, c := range tested[b*len(tested)/blocks : (b+1)*len(tested)/blocks] {
			if st.check() {
				return
			}
			for x := 0; x < len(c.firms); x++ {
				for y := x + 1; y < len(c.firms); y++ {
					k := pairOf(c.firms[x].firm, c.firms[y].firm)
					if k < 0 {
						continue
					}
					if st.tick(len(wins[k])) {
						return
					}
					for _, w := range wins[k] {
						for _, base := range [2]int{c.t - 1, c.t} {
							sh[((int(w)-base)%T+T)%T]++
						}
					}
				}
			}
		}
	}); stop.check() {
		return cs
	}
	shifted := counts[:T]
	for b := 1; b < blocks; b++ {
		for s, x := range counts[b*T : (b+1)*T] {
			shifted[s] += x
		}
	}
	// Rotation test: the observed count (shift 0) against all T circular shifts of the
	// message timeline, which keep the bursts and the pair structure of the messages.
	obs, ge, sum := shifted[0], 0, 0
	for _, x := range shifted {
		sum += x
		if x >= obs {
			ge++
		}
	}
	cs.expected = float64(sum) / float64(T)
	cs.p = float64(ge) / float64(T)
	for f := range involved {
		cs.members = append(cs.members, f)
	}
	slices.Sort(cs.members)
	cs.from, cs.to = first, last
	return cs
}

// commBlockBytes bounds the rotation test's per-block counts: with T periods, at most
// commBlockBytes/(8T) blocks (and at least one).
const commBlockBytes = 4 << 20

// pairIndex maps a pair of firms (a·F + b) to its index: an array of F² entries when that is
// at most maxDensePairs, else a map.
type pairIndex struct {
	dense []int32 // index + 1; 0 when absent
	byKey map[int64]int
}

// maxDensePairs is the largest F² held as an array (4 MiB of int32).
const maxDensePairs = 1 << 20

func newPairIndex(F int) *pairIndex {
	if int64(F)*int64(F) <= maxDensePairs {
		return &pairIndex{dense: make([]int32, F*F)}
	}
	return &pairIndex{byKey: map[int64]int{}}
}

func (p *pairIndex) get(k int64) (int, bool) {
	if p.dense != nil {
		x := p.dense[k]
		return int(x) - 1, x > 0
	}
	x, ok := p.byKey[k]
	return x, ok
}

func (p *pairIndex) set(k int64, x int) {
	if p.dense != nil {
		p.dense[k] = int32(x + 1)
		return
	}
	p.byKey[k] = x
}
