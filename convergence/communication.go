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
	// Window indices of the messages of each unordered pair of panel firms, sorted.
	pairOf := map[[2]int]int{}
	var wins [][]int32
	for _, m := range v.msgs {
		if stop.tick(1) {
			return cs
		}
		a, ok1 := pn.byName[m.from]
		b, ok2 := pn.byName[m.to]
		if !ok1 || !ok2 || a == b {
			continue
		}
		w := v.periodIndex(m.key)
		if w >= T {
			continue
		}
		k := [2]int{min(a, b), max(a, b)}
		x, ok := pairOf[k]
		if !ok {
			x = len(wins)
			pairOf[k] = x
			wins = append(wins, nil)
		}
		wins[x] = append(wins[x], int32(w))
	}
	for _, w := range wins {
		slices.Sort(w)
	}
	// count is the number of a pair's messages with window index in [lo, hi].
	count := func(w []int32, lo, hi int) int {
		i, _ := slices.BinarySearch(w, int32(lo))
		j, _ := slices.BinarySearch(w, int32(hi+1))
		return j - i
	}
	// Material changes per period.
	type change struct {
		t    int
		up   bool
		firm int
	}
	var changes []change
	for i := range pn.firms {
		s := &pn.firms[i]
		if stop.tick(len(s.t)) {
			return cs
		}
		ts, d := s.changes()
		if len(d) < 2 {
			continue
		}
		abs := make([]float64, len(d))
		med := median(d)
		for k, x := range d {
			abs[k] = math.Abs(x - med)
		}
		thr := math.Max(changeSDs*1.4826*median(abs), materialChange*math.Abs(s.meanY))
		for k, x := range d {
			if math.Abs(x) > thr {
				changes = append(changes, change{ts[k], x > 0, i})
			}
		}
	}
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
	involved := map[int]bool{}
	first, last := -1, -1
	// shifted[s] is the statistic with the message timeline rotated by s periods: the number
	// of messages between two changing firms whose window index w satisfies
	// w − s ∈ {t − 1, t} (mod T) for their coordinated change at t.
	shifted := make([]int, T)
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
		firms := make([]int, 0, len(group))
		for _, c := range group {
			firms = append(firms, c.firm)
		}
		if len(firms) > maxChangers {
			firms = firms[:maxChangers]
		}
		preceded := false
		for x := 0; x < len(firms); x++ {
			for y := x + 1; y < len(firms); y++ {
				k, ok := pairOf[[2]int{min(firms[x], firms[y]), max(firms[x], firms[y])}]
				if !ok {
					continue
				}
				work += len(wins[k])
				if stop.tick(len(wins[k])) {
					return cs
				}
				for _, w := range wins[k] {
					for _, base := range [2]int{t - 1, t} {
						shifted[((int(w)-base)%T+T)%T]++
					}
				}
				if n := count(wins[k], t-1, t); n > 0 {
					preceded = true
					cs.messages += n
					involved[firms[x]], involved[firms[y]] = true, true
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
