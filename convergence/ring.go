package convergence

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Ring search settings (docs/methods/convergence.md §5).
const (
	// maxTripleBids: the triples of a tender are drawn from its lowest maxTripleBids bids, so
	// a tender costs at most C(10, 3) = 120 triple screens however many firms bid in it.
	maxTripleBids = 10
	// ringSeeds is the number of best triples the greedy growth starts from.
	ringSeeds = 8
	// maxRingCandidates bounds the firms a growth step tries: those of the best
	// maxRingCandidates/3 triples (all firms in markets of up to that many bidders).
	maxRingCandidates = 48
	// maxRingVisits bounds the greedy search's work: bids visited by the subset screens
	// after the triples (≈ 30 ns each with the screens' sorting, so ≈ 60 ms);
	// when it is spent the best subset found so far is kept. Markets of up to a few
	// thousand bids never reach it.
	maxRingVisits = 2_000_000
	// minRingTenders: a subset needs this many tenders with at least three of its bids.
	minRingTenders = 3
	// minMemberZ: every member must win, as the subset's lowest bidder, tenders whose
	// subset screens sum to at least this z (rotation: an efficient firm's partners win
	// only when it bids badly, and those tenders look competitive).
	minMemberZ = 1.0
	// minOwnZ: Stouffer's Z of the subset screens over the tenders a member bids in must
	// reach this (one-sided p ≈ 0.01), so a firm that only adds a few tenders does not join.
	minOwnZ = 2.33
	// minWinPeak: a member whose wins sum to less than minMemberZ (a member that also wins
	// competitive tenders, which dilute its sum) still qualifies with one win at least this
	// clear (p ≤ 0.2).
	minWinPeak = 0.84
	// minCoverZ: Stouffer's Z over the tenders a member covered must reach this (one-sided
	// p ≈ 0.05): a cover bid sits in the tight cluster above the winner, while an outsider
	// that undercuts the ring now and then bids anywhere when it does not.
	minCoverZ = 1.28
	// minCoverOnlyZ, minCoverOnlyN: a member that does not win with the pattern still
	// belongs when at least two members rotate and its covers' Stouffer Z reaches
	// minCoverOnlyZ (one-sided p ≈ 0.001) over at least minCoverOnlyN covers
	// (memberScreen.coverOnly).
	minCoverOnlyZ = 3.09
	minCoverOnlyN = 5
	// maxMarginRatio: a member of a subset of more than three whose median winning margin
	// exceeds this many times the other members' is dropped when the rest still qualifies
	// (ringSearch.trimUndercutters).
	maxMarginRatio = 2.0
	// minMarginWins: the margin rule judges members with at least this many wins (a median
	// of fewer is noise).
	minMarginWins = 4
	// minParticipation: a member bids in at least this share of the median member's
	// tenders (those with at least three members' bids).
	minParticipation = 0.5
	// minSimZ, maxSimBids, simExceed: a ring whose Bonferroni bound misses the level is
	// calibrated by simulation (nullPValue) when its Z is at least minSimZ and the market has
	// at most maxSimBids bids; the draws stop after simExceed null statistics reach the
	// observed one.
	minSimZ     = 2.0
	maxSimBids  = 1500
	simExceed   = 10
	maxSimDraws = 399
	// maxSimWork bounds the simulation: draws × the observed search's work (bids visited
	// and triple screens, 20–60 ns each) must stay under it, ≈ 0.1–0.2 s at most; beyond it
	// the fewest draws that resolve the level are run (simDraws), and beyond that the
	// Bonferroni bound stands.
	maxSimWork = 4_000_000
	// flagLevel: a tender with at least three members' bids is flagged when the RD p-value
	// of the members' bids is at most this.
	flagLevel = 0.25
	// zClip bounds a tender's z-score: p is floored at 0.001 by the RD table, and a tie
	// (RD = 0, p = 1) must not weigh −∞.
	zClip = 3.1
)

// ringTender is one usable tender prepared for the subset screens: its firms and the logs of
// their bids, in bid order.
type ringTender struct {
	firms []int32
	logs  []float64
}

// ringSearch holds the state of one search for the subset of firms whose bids show cover
// bidding and rotation.
type ringSearch struct {
	ts         []ringTender
	byFirm     [][]int32 // tenders of each firm
	F          int
	stamp      []int32 // per tender: last evaluation that touched it
	epoch      int32
	counted    map[string]bool // distinct subsets screened (triples included): the Bonferroni count
	stop       *stopper
	scratchX   []float64
	scratchI   []int
	cache      map[string]subsetScreen // screened subsets, so each counts once
	visits     int                     // bids visited by subset screens
	bids       int                     // bids in usable tenders
	tripleWork int                     // triple screens computed
	simWork    int                     // visits and triple screens of the null draws
	pos        []int32                 // per firm: its index in the subset being screened, or −1
}

// spent reports whether the search's work bound is reached (or ctx ended).
func (rs *ringSearch) spent() bool { return rs.visits >= maxRingVisits || rs.stop.err != nil }

// subsetScreen is the evidence of one subset of firms.
type subsetScreen struct {
	firms   []int32 // sorted
	z       float64 // Stouffer's Z over its tenders
	n       int     // tenders with at least three of its bids
	sumZ    float64
	members []memberScreen // aligned with firms
}

// memberScreen is one member's part in its subset's tenders. The z sums that judge
// membership (winZ, sumZ, covZ) run over the contiguous tenders only: those with at least
// three members' bids and no other firm's bid between the members' lowest and highest. A
// ring's covers sit together just above its winner; where a member bids in a competitive
// tender beside other members, outsiders' bids fall between theirs, and those tenders —
// which carry no pattern — diluted the member's sums until a true member failed: of the 46
// rings the tuned and stress runs' partial-cover and combined classes missed before the
// rule, 29 were missed because the true ring did not qualify, 10 of them for a member whose
// wins summed to z 5–20 but whose covers fell short. The subset's own Z, the calibrated
// statistic, still runs over all its tenders.
type memberScreen struct {
	tenders int     // tenders where it and at least one other member bid
	won     int     // of them, those where its bid was the members' lowest
	covered int     // those where another member's bid was lower
	winZ    float64 // Σ z of the contiguous tenders (≥ 3 members' bids) it won
	winN    int     // their number
	winMax  float64 // the largest z among them
	sumZ    float64 // Σ z of the contiguous tenders (≥ 3 members' bids) it bid in
	nZ      int     // their number
	shared  int     // tenders (≥ 3 members' bids) it bid in, contiguous or not (participation)
	covZ    float64 // Σ z of those it covered
	covN    int     // their number
}

// ok reports whether the member meets the membership conditions: its own tenders carry
// the pattern (Stouffer's Z over them ≥ minOwnZ), and it wins with the pattern (Σ z over its
// wins ≥ minMemberZ) and covers (rotation).
func (m *memberScreen) ok() bool {
	return m.wins() && m.covN > 0 && m.covZ/math.Sqrt(float64(m.covN)) >= minCoverZ &&
		m.sumZ/math.Sqrt(float64(m.nZ)) >= minOwnZ
}

// coverOnly reports whether a member that does not win with the pattern covers with it
// strongly: at least minCoverOnlyN covers whose Stouffer Z reaches minCoverOnlyZ, and its
// own tenders carry the pattern (minOwnZ). Random rotation among the bidding members leaves
// some members few or no wins in a thin ring (a member of three that covers in 60 % of the
// tenders is the designated winner of about a third of them), and a firm that only
// covers is a member still. A competitive firm that always loses bids anywhere above the
// winner, which makes the members-only RD small: its cover Z is low, not high.
func (m *memberScreen) coverOnly() bool {
	return m.covN >= minCoverOnlyN && m.covZ/math.Sqrt(float64(m.covN)) >= minCoverOnlyZ &&
		m.sumZ/math.Sqrt(float64(m.nZ)) >= minOwnZ
}

// wins reports whether the member wins with the pattern.
func (m *memberScreen) wins() bool {
	return m.winN > 0 && (m.winZ >= minMemberZ || m.winMax >= minWinPeak)
}

func newRingSearch(v *input, stop *stopper) *ringSearch {
	rs := &ringSearch{F: len(v.bidFirms), stop: stop, cache: map[string]subsetScreen{}, counted: map[string]bool{}}
	rs.ts = make([]ringTender, len(v.tenders))
	rs.byFirm = make([][]int32, rs.F)
	for j := range v.tenders {
		t := &v.tenders[j]
		rt := ringTender{firms: make([]int32, len(t.bids)), logs: make([]float64, len(t.bids))}
		for k, b := range t.bids {
			rt.firms[k] = b.firm
			rt.logs[k] = math.Log(b.amount)
			rs.byFirm[b.firm] = append(rs.byFirm[b.firm], int32(j))
		}
		rs.bids += len(t.bids)
		rs.ts[j] = rt
	}
	rs.pos = make([]int32, rs.F)
	for f := range rs.pos {
		rs.pos[f] = -1
	}
	rs.stamp = make([]int32, len(v.tenders))
	for j := range rs.stamp {
		rs.stamp[j] = -1
	}
	return rs
}

// rdZ is the z-score Φ⁻¹(1 − p) of the RD p-value of the bids xs (sorted in place), clipped
// to ±zClip: under the competitive null of exchangeable normal bids it is standard normal.
func rdZ(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	var ml moments
	for _, v := range xs[1:] {
		ml.Add(v)
	}
	sdl := math.Sqrt(ml.Variance())
	gap := xs[1] - xs[0]
	rd := math.NaN()
	switch {
	case sdl > 0:
		rd = gap / sdl
	case gap > 0:
		rd = math.Inf(1)
	}
	p := rdPValue(rd, n)
	return math.Max(-zClip, math.Min(zClip, normalQuantileUpper(math.Min(p, 0.9990))))
}

// screen evaluates a subset (sorted firm indices): every tender with at least three of its
// bids contributes the z-score of the RD screen of those bids alone (an outsider's bid does
// not dilute it), and each member's wins and covers among the members are counted.
func (rs *ringSearch) screen(set []int32) subsetScreen {
	key := keyOf(set)
	if sc, ok := rs.cache[key]; ok {
		return sc
	}
	sc := rs.screenOnce(set)
	if rs.stop.err == nil {
		rs.cache[key] = sc
	}
	return sc
}

// eachTender calls visit once for every tender that holds a bid of a firm of set, with
// rs.pos giving each firm's index in set meanwhile (-1 for the firms outside it). The tenders
// it reads count as visits; it returns false when the search's work bound stopped it first.
func (rs *ringSearch) eachTender(set []int32, visit func(t *ringTender)) bool {
	rs.epoch++
	for i, f := range set {
		rs.pos[f] = int32(i)
	}
	defer func() {
		for _, f := range set {
			rs.pos[f] = -1
		}
	}()
	for _, f := range set {
		for _, j := range rs.byFirm[f] {
			if rs.stamp[j] == rs.epoch {
				continue
			}
			rs.stamp[j] = rs.epoch
			t := &rs.ts[j]
			rs.visits += len(t.firms)
			if rs.stop.tick(len(t.firms)) {
				return false
			}
			visit(t)
		}
	}
	return true
}

func (rs *ringSearch) screenOnce(set []int32) subsetScreen {
	rs.counted[keyOf(set)] = true
	sc := subsetScreen{firms: slices.Clone(set), members: make([]memberScreen, len(set))}
	if !rs.eachTender(set, func(t *ringTender) {
		xs, idx := rs.scratchX[:0], rs.scratchI[:0]
		low, lowX := -1, math.Inf(1)
		for k, g := range t.firms {
			i := int(rs.pos[g])
			if i < 0 {
				continue
			}
			xs = append(xs, t.logs[k])
			idx = append(idx, i)
			if t.logs[k] < lowX {
				low, lowX = i, t.logs[k]
			}
		}
		rs.scratchX, rs.scratchI = xs, idx
		m := len(idx)
		if m < 2 {
			return
		}
		contiguous := m < 3 || !interleaved(t, func(f int32) bool { return rs.pos[f] >= 0 }, lowX, slices.Max(xs))
		z := math.NaN()
		if m >= 3 {
			z = rdZ(xs)
			sc.sumZ += z
			sc.n++
		}
		for _, i := range idx {
			ms := &sc.members[i]
			ms.tenders++
			if m >= 3 {
				ms.shared++
			}
			if !contiguous {
				if i == low {
					ms.won++
				} else {
					ms.covered++
				}
				continue
			}
			if m >= 3 {
				ms.sumZ += z
				ms.nZ++
			}
			if i == low {
				ms.won++
				if m >= 3 {
					if ms.winN == 0 || z > ms.winMax {
						ms.winMax = z
					}
					ms.winZ += z
					ms.winN++
				}
			} else {
				ms.covered++
				if m >= 3 {
					ms.covZ += z
					ms.covN++
				}
			}
		}
	}) {
		return sc
	}
	if sc.n > 0 {
		sc.z = sc.sumZ / math.Sqrt(float64(sc.n))
	}
	return sc
}

// marginRatios gives, for each member of set (sorted), its median winning margin over the
// median of the other members' (0 when not judged: fewer than minMarginWins wins, or none by
// the others). A winning margin is the second-lowest less the lowest of the members'
// log-bids in a tender with at least three of them. A ring's winner leads its covers by the
// margin the ring settles on; an outsider that undercuts the ring wins by whatever its
// costs give, and the ring's cluster above it makes those wins look like the pattern at its
// strongest (RD is large), which can carry the outsider into the subset. Its margins give it
// away: on the evaluation's tuned and stress runs, 18 of 26 outsiders named in a ring had a
// median margin above twice the members', against 10 of 11,646 members.
func (rs *ringSearch) marginRatios(set []int32) []float64 {
	gaps := make([][]float64, len(set))
	if !rs.eachTender(set, func(t *ringTender) {
		m, low := 0, -1
		lo, second := math.Inf(1), math.Inf(1)
		for k, g := range t.firms {
			i := int(rs.pos[g])
			if i < 0 {
				continue
			}
			m++
			switch x := t.logs[k]; {
			case x < lo:
				second, lo, low = lo, x, i
			case x < second:
				second = x
			}
		}
		if m >= 3 {
			gaps[low] = append(gaps[low], second-lo)
		}
	}) {
		return make([]float64, len(set))
	}
	ratios := make([]float64, len(set))
	var others []float64
	for i := range set {
		if len(gaps[i]) < minMarginWins {
			continue
		}
		others = others[:0]
		for k := range set {
			if k != i {
				others = append(others, gaps[k]...)
			}
		}
		if o := median(others); o > 0 {
			ratios[i] = median(gaps[i]) / o
		}
	}
	return ratios
}

// trimUndercutters drops, while more than three members remain, the member whose winning
// margins exceed maxMarginRatio times the others' by the most, as long as the subset without
// it still qualifies (marginRatios gives the reason). The rule only chooses between
// qualifying subsets: it never turns a ring into none. Its passes count as visits, and it
// stops once the search's work bound is spent.
func (rs *ringSearch) trimUndercutters(cur subsetScreen) subsetScreen {
	for len(cur.firms) > 3 && !rs.spent() {
		ratios := rs.marginRatios(cur.firms)
		if rs.stop.err != nil {
			return cur
		}
		w := -1
		for i, r := range ratios {
			if r > maxMarginRatio && (w < 0 || r > ratios[w]) {
				w = i
			}
		}
		if w < 0 {
			return cur
		}
		next := rs.screen(slices.Delete(slices.Clone(cur.firms), w, w+1))
		if rs.stop.err != nil || !next.qualifies() {
			return cur
		}
		cur = next
	}
	return cur
}

// qualifies reports whether a screened subset can be a ring: at least three members and
// minRingTenders tenders, and every member passes (memberPasses).
func (sc *subsetScreen) qualifies() bool {
	if len(sc.firms) < 3 || sc.n < minRingTenders {
		return false
	}
	floor, full := sc.participationFloor(), sc.rotating()
	for i := range sc.members {
		if !sc.memberPasses(i, floor, full) {
			return false
		}
	}
	return true
}

// rotating counts the members that meet the full membership conditions (win and cover with
// the pattern).
func (sc *subsetScreen) rotating() int {
	n := 0
	for i := range sc.members {
		if sc.members[i].ok() {
			n++
		}
	}
	return n
}

// memberPasses reports whether member i belongs: it bids in at least floor of the subset's
// tenders, and either meets the full conditions (ok) or, when at least two members rotate,
// covers with the pattern strongly (coverOnly).
func (sc *subsetScreen) memberPasses(i int, floor float64, rotating int) bool {
	m := &sc.members[i]
	if float64(m.shared) < floor {
		return false
	}
	return m.ok() || (rotating >= 2 && m.coverOnly())
}

// participationFloor is the fewest tenders (with at least three members' bids) a member
// must bid in: minParticipation × the members' median. An outsider that joined a few of
// the ring's tenders and undercut it there looks like a winner with covers in them, but it
// is absent from most of the ring's tenders.
func (sc *subsetScreen) participationFloor() float64 {
	ns := make([]float64, len(sc.members))
	for i, m := range sc.members {
		ns[i] = float64(m.shared)
	}
	return minParticipation * median(ns)
}

// weakest is the member with the smallest evidence among those that do not pass (the first
// to drop), or −1 when every member passes.
func (sc *subsetScreen) weakest() int {
	w := -1
	floor, full := sc.participationFloor(), sc.rotating()
	for i := range sc.members {
		if !sc.memberPasses(i, floor, full) && (w < 0 || sc.members[i].sumZ < sc.members[w].sumZ) {
			w = i
		}
	}
	return w
}

type tripleScore struct {
	key  [3]int32
	sumZ float64
	n    int
}

// triples screens every triple of firms that bid together (within a tender's lowest
// maxTripleBids bids) and returns those with at least minRingTenders common tenders, best
// Stouffer Z first.
func (rs *ringSearch) triples() []tripleScore {
	acc := map[[3]int32]*tripleScore{}
	var xs [3]float64
	type fb struct {
		f int32
		x float64
	}
	var bs []fb
	for j := range rs.ts {
		t := &rs.ts[j]
		if rs.stop.tick(len(t.firms) * 4) {
			return nil
		}
		bs = bs[:0]
		for k, f := range t.firms {
			bs = append(bs, fb{f, t.logs[k]})
		}
		if len(bs) > maxTripleBids {
			slices.SortFunc(bs, func(a, b fb) int { return cmp.Compare(a.x, b.x) })
			bs = bs[:maxTripleBids]
		}
		slices.SortFunc(bs, func(a, b fb) int { return cmp.Compare(a.f, b.f) })
		for a := 0; a < len(bs); a++ {
			for b := a + 1; b < len(bs); b++ {
				for c := b + 1; c < len(bs); c++ {
					rs.tripleWork++
					xs = [3]float64{bs[a].x, bs[b].x, bs[c].x}
					z := rdZ(xs[:])
					key := [3]int32{bs[a].f, bs[b].f, bs[c].f}
					s := acc[key]
					if s == nil {
						s = &tripleScore{key: key}
						acc[key] = s
					}
					s.sumZ += z
					s.n++
				}
			}
		}
	}
	var out []tripleScore
	for _, s := range acc {
		if s.n >= minRingTenders {
			out = append(out, *s)
		}
	}
	for _, t := range out {
		rs.counted[keyOf(t.key[:])] = true
	}
	z := func(s tripleScore) float64 { return s.sumZ / math.Sqrt(float64(s.n)) }
	slices.SortFunc(out, func(a, b tripleScore) int {
		if c := cmp.Compare(z(b), z(a)); c != 0 {
			return c
		}
		return slices.Compare(a.key[:], b.key[:])
	})
	return out
}

// find searches for the ring (search) and returns it with its family-wise p-value:
// Bonferroni over every distinct subset screened, or, when that bound is inconclusive in a
// small market, the Monte Carlo p-value of the search's statistic under the competitive
// null (nullPValue).
func (rs *ringSearch) find(alpha float64) (best subsetScreen, p float64) {
	best, stat, found := rs.search()
	if !found {
		return subsetScreen{}, 1
	}
	p = math.Min(1, float64(len(rs.counted))*normalUpper(stat))
	if p > alpha && stat >= minSimZ && rs.bids <= maxSimBids && rs.stop.err == nil {
		if draws := simDraws(alpha, rs.visits+rs.tripleWork); draws > 0 {
			p = math.Min(p, rs.nullPValue(stat, alpha, draws))
		}
	}
	return best, p
}

// search grows the best triples greedily (add the firm that raises Z most, while Z rises),
// prunes them (drop a member whose removal raises Z, and members that fail the membership
// conditions), and takes the qualifying subset with the highest Z; that Z is the search's
// statistic (stat), which find calibrates. The subset is then trimmed of undercutters
// (trimUndercutters), which names the ring without a bystander but does not decide whether
// there is one: a trimmed subset has a lower Z, and judging the trimmed Z lost rings whose
// trimmed member carried much of the evidence.
func (rs *ringSearch) search() (best subsetScreen, stat float64, found bool) {
	ts := rs.triples()
	if rs.stop.err != nil || len(ts) == 0 {
		return best, 0, false
	}
	var pool []int32
	for _, t := range ts {
		for _, f := range t.key {
			if !slices.Contains(pool, f) {
				pool = append(pool, f)
			}
		}
		if len(pool) >= maxRingCandidates {
			break
		}
	}
	seen := map[string]bool{}
	for s := 0; s < min(ringSeeds, len(ts)); s++ {
		if rs.stop.check() {
			return best, 0, false
		}
		if rs.visits >= maxRingVisits && found {
			break
		}
		end, onPath, ok := rs.grow(rs.screen(ts[s].key[:]), pool)
		cands := []subsetScreen{rs.prune(end)}
		if ok {
			cands = append(cands, onPath)
		}
		for _, cur := range cands {
			if !cur.qualifies() {
				continue
			}
			k := keyOf(cur.firms)
			if seen[k] {
				continue
			}
			seen[k] = true
			if !found || cur.z > stat {
				best, stat, found = cur, cur.z, true
			}
		}
	}
	if found {
		best = rs.trimUndercutters(best)
	}
	return best, stat, found
}

// nullPValue is the Monte Carlo p-value of the observed Z: the same search run on the same
// tenders and bidders with every bid replaced by an independent standard normal log-bid
// (the competitive null of the RD screen, which is scale-free, so no scale is needed), its
// statistic the highest Z of a qualifying subset (−∞ when none qualifies). At most draws
// draws (simDraws; none when they cannot resolve α), stopping once simExceed draws reach the
// observed Z (Besag & Clifford 1991: p = simExceed/draws then); otherwise p = (1 +
// exceedances)/(draws + 1). The draws come from a fixed seed, so the analysis stays a
// function of its input.
func (rs *ringSearch) nullPValue(z, alpha float64, draws int) float64 {
	if 1/float64(draws+1) > alpha {
		return 1 // the level is beyond what the draws can resolve
	}
	r := rand.New(rand.NewPCG(20261127, uint64(rs.bids)))
	exceed := 0
	for d := 1; d <= draws; d++ {
		if rs.stop.check() {
			return 1
		}
		null := rs.nullDraw(r)
		if _, stat, ok := null.search(); ok && stat >= z {
			exceed++
			if exceed == simExceed {
				return float64(exceed) / float64(d)
			}
		}
		rs.simWork += null.visits + null.tripleWork
		if rs.simWork > 2*maxSimWork {
			return 1 // a null search far costlier than the observed one: inconclusive
		}
	}
	return float64(1+exceed) / float64(draws+1)
}

// simDraws is the number of null draws for level alpha when a draw costs about work units
// (the observed search's bids visited and triple screens): min(⌈2/α⌉ − 1, maxSimDraws) when
// they fit maxSimWork, else the fewest that resolve α, ⌈1/α⌉ − 1 (p = 1/(draws + 1) ≤ α
// only when no draw reaches the observed Z; under the null that happens with probability
// 1/(draws + 1), so the test keeps its level), else none (the Bonferroni bound stands).
// The fallback calibrates markets whose search costs up to twice as much: on the stress run
// (300 markets a class) it found two true rings of 158 and 329 bids (search work 27–30
// thousand units) whose Bonferroni bounds of 0.018 and 0.050 missed α = 0.01 and which no
// null draw of 199 reaches, and added one false alarm on each negative class (0.3 → 0.7 %,
// 0.0 → 0.3 %; docs/methods/convergence.md §10).
func simDraws(alpha float64, work int) int {
	for _, d := range []int{int(math.Ceil(2/alpha)) - 1, int(math.Ceil(1/alpha)) - 1} {
		if d = min(d, maxSimDraws); d*work <= maxSimWork {
			return d
		}
	}
	return 0
}

// nullDraw is a copy of the search over the same tenders and bidders with standard normal
// log-bids. It continues the observed search's epochs, so that the copied tender stamps
// never read as visited.
func (rs *ringSearch) nullDraw(r *rand.Rand) *ringSearch {
	n := &ringSearch{ts: make([]ringTender, len(rs.ts)), byFirm: rs.byFirm, F: rs.F, bids: rs.bids,
		stop: &stopper{ctx: rs.stop.ctx}, cache: map[string]subsetScreen{}, counted: map[string]bool{},
		pos: slices.Clone(rs.pos), stamp: slices.Clone(rs.stamp), epoch: rs.epoch}
	for j, t := range rs.ts {
		logs := make([]float64, len(t.logs))
		for k := range logs {
			logs[k] = r.NormFloat64()
		}
		n.ts[j] = ringTender{firms: t.firms, logs: logs}
	}
	return n
}

func keyOf(set []int32) string {
	b := make([]byte, 0, 4*len(set))
	for _, f := range set {
		b = append(b, byte(f), byte(f>>8), byte(f>>16), byte(f>>24))
	}
	return string(b)
}

// grow adds, while Z rises, the firm of the pool whose addition raises it most, preferring
// an addition after which the subset qualifies: adding the firm that raises Z most can take
// an outsider whose undercutting wins look like the pattern at its strongest, after which
// no addition of the missing member raises Z and pruning cannot find the ring again. It
// returns the subset it ends at and the qualifying subset with the highest Z on its way
// (found false when none qualified).
func (rs *ringSearch) grow(cur subsetScreen, pool []int32) (end, bestQ subsetScreen, found bool) {
	if cur.qualifies() {
		bestQ, found = cur, true
	}
	for len(cur.firms) < len(pool) {
		var next, nextQ subsetScreen
		improved, improvedQ := false, false
		for _, f := range pool {
			if slices.Contains(cur.firms, f) {
				continue
			}
			if rs.spent() {
				break
			}
			set := append(slices.Clone(cur.firms), f)
			slices.Sort(set)
			sc := rs.screen(set)
			if rs.stop.err != nil {
				return cur, bestQ, found
			}
			if sc.n < minRingTenders || sc.z <= cur.z {
				continue
			}
			if !improved || sc.z > next.z {
				next, improved = sc, true
			}
			if (!improvedQ || sc.z > nextQ.z) && sc.qualifies() {
				nextQ, improvedQ = sc, true
			}
		}
		if improvedQ {
			next = nextQ
			if !found || next.z > bestQ.z {
				bestQ, found = next, true
			}
		}
		if !improved {
			return cur, bestQ, found
		}
		if rs.spent() {
			return next, bestQ, found
		}
		cur = next
	}
	return cur, bestQ, found
}

// prune drops members whose removal raises Z, then members that fail the rotation
// conditions (the weakest first), while at least three remain.
func (rs *ringSearch) prune(cur subsetScreen) subsetScreen {
	for len(cur.firms) > 3 {
		var next subsetScreen
		improved := false
		for i := range cur.firms {
			set := slices.Delete(slices.Clone(cur.firms), i, i+1)
			sc := rs.screen(set)
			if rs.stop.err != nil {
				return cur
			}
			if sc.n >= minRingTenders && sc.z > cur.z && (!improved || sc.z > next.z) {
				next, improved = sc, true
			}
		}
		if !improved {
			break
		}
		cur = next
	}
	for len(cur.firms) > 3 {
		w := cur.weakest()
		if w < 0 {
			break
		}
		cur = rs.screen(slices.Delete(slices.Clone(cur.firms), w, w+1))
		if rs.stop.err != nil {
			return cur
		}
	}
	return cur
}

// interleaved reports whether a firm outside the subset (member false) bid strictly between
// lo and hi in tender t: the members' bids are then not contiguous in the tender's order.
func interleaved(t *ringTender, member func(f int32) bool, lo, hi float64) bool {
	for k, f := range t.firms {
		if !member(f) && t.logs[k] > lo && t.logs[k] < hi {
			return true
		}
	}
	return false
}

// normalUpper is P(Z > z) for a standard normal Z.
func normalUpper(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }
