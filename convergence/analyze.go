package convergence

import (
	"cmp"
	"context"
	"math"
	"slices"

	"riskapi/engine"
)

// Paths of evidence, in the order their firm sets are preferred when groups merge (the most
// specific first).
const (
	pathRegime = iota
	pathComm
	pathBids
	pathDivision
	pathWelfare
)

// minParallel is the smallest mean co-movement of a group's cost-adjusted price changes
// that earns the parallel_pricing signal.
const minParallel = 0.2

// candidate is a group of firms one path of evidence points to.
type candidate struct {
	path     int
	firms    []string // sorted
	panelIdx []int    // panel firm indices (observation paths)
	p        float64  // family-wise adjusted p-value (or 1 − descriptive confidence)
	from, to int      // period indices (observation paths); −1 when none
	dFrom    *Period  // tender dates (bid path)
	dTo      *Period
	signals  []string
	tenders  int
	preceded int
	members  []MemberEvidence // bid path
}

// Analyze screens a market for collusion (method: docs/methods/convergence.md). It returns
// an *engine.InputError when the input cannot be analysed (checked once: by Validate, when
// called first, else here), and ctx's error when ctx ends first: ctx is checked between the
// stages of the analysis and inside the per-firm and per-pair loops.
func Analyze(ctx context.Context, in Input) (Analysis, error) {
	v, err := in.validated()
	if err != nil {
		return Analysis{}, err
	}
	res := Analysis{
		MarketID:        in.MarketID,
		SuspectedGroups: []SuspectedGroup{},
		FlaggedPeriods:  []FlaggedPeriod{},
		FirmsAnalyzed:   v.firmsTotal,
		BidsAnalyzed:    v.bidsUsed,
		MethodVersion:   MethodVersion,
	}
	a := &analysis{v: v, stop: stopper{ctx: ctx, crew: newCrew(in.Run)}}
	if a.stop.check() {
		return Analysis{}, a.stop.err
	}
	if v.obsUsable {
		if a.pn = buildPanel(v, &a.stop); a.stop.check() {
			return Analysis{}, a.stop.err
		}
		res.ObservationsAnalyzed = len(v.rows)
	}
	// Number of tested paths, for the Bonferroni split of the sensitivity.
	hasBasis := v.obsUsable && ((v.allCost && v.allQty && v.bench.CompetitiveProfit != nil && v.bench.MonopolyProfit != nil) ||
		(v.bench.CompetitivePrice != nil && v.bench.MonopolyPrice != nil))
	hasComm := v.obsUsable && len(v.msgs) > 0
	hasBids := len(v.tenders) >= minTenders
	k := 0
	for _, b := range []bool{v.obsUsable, hasBasis, hasBids, hasComm} {
		if b {
			k++
		}
	}
	a.k = float64(k)
	a.alphaPath = v.alpha / a.k
	a.bestP = 1

	// The screens are independent of each other: each reads the validated input and the
	// panel and writes its own member of a, so they run as units of one parallel loop (and
	// their long loops as units of their own); the groups are then formed from their
	// results in the order of the paths, as on one goroutine.
	var screens []func(st *stopper)
	if hasComm {
		screens = append(screens, func(st *stopper) { a.comm = analyseCommunication(v, a.pn, st) })
	}
	if v.obsUsable {
		screens = append(screens,
			func(st *stopper) { a.prices = analysePrices(a.pn, v.alpha, st) },
			func(st *stopper) { a.fits = fitRegimes(a.pn, st) })
		if hasBasis || v.anyCost {
			screens = append(screens, func(st *stopper) { a.welfare = analyseWelfare(v, a.pn, a.alphaPath, st) })
		}
		if v.anySeg {
			screens = append(screens, func(st *stopper) {
				idx := make(map[int64]int, len(v.keys))
				for i, key := range v.keys {
					idx[key] = i
				}
				a.division = analyseDivision(v, idx, st)
			})
		}
	}
	if hasBids {
		screens = append(screens, func(st *stopper) { a.bids = analyseBids(v, a.alphaPath, st) })
	}
	if a.stop.each(len(screens), 1, func(i int, st *stopper) { screens[i](st) }); a.stop.check() {
		return Analysis{}, a.stop.err
	}
	if v.obsUsable {
		if a.regimes(); a.stop.check() {
			return Analysis{}, a.stop.err
		}
		if hasBasis || v.anyCost {
			a.welfareGroup()
		}
		if v.anySeg {
			a.divisionGroup()
		}
		if hasComm {
			a.commGroup()
		}
	}
	if hasBids {
		a.bidGroup()
	}
	a.dimensions(&res)
	a.groups(&res)
	a.score(&res)
	return res, nil
}

// stopper carries Analyze's context into the long loops. The loops call check once per pair
// firm or coordinated change, or tick once per firm, cell, tender or message (which looks at
// ctx by the amount of work done); after ctx ends, err is ctx's error, and the loops return
// whatever they hold, which Analyze discards.
type stopper struct {
	ctx  context.Context
	err  error
	work int // units counted by tick since ctx was last looked at
	// crew is the analysis's goroutines (each); nil when it runs on one.
	crew *crew
}

// checkEvery is how many units of work (rows visited, a few to tens of nanoseconds each)
// tick lets pass between two looks at ctx: well under a millisecond of work.
const checkEvery = 1 << 14

// tickOverhead is what one iteration of a loop over firms, cells, tenders or messages counts
// on top of its rows: its own allocations and look-ups cost about as much as 16 rows, so a
// loop over 250,000 firms of two rows each looks at ctx every 900 firms, not every 8,000.
const tickOverhead = 16

// tick counts one iteration of n rows and reports whether the work should stop, looking at
// ctx once per checkEvery units, for loops whose iterations range from one row to a market.
func (s *stopper) tick(n int) bool {
	s.work += n + tickOverhead
	if s.work < checkEvery {
		return s.err != nil
	}
	s.work = 0
	return s.check()
}

// check reports whether the work should stop.
func (s *stopper) check() bool {
	if s.err == nil {
		s.err = s.ctx.Err()
	}
	return s.err != nil
}

// analysis carries the intermediate results of one Analyze call.
type analysis struct {
	v         *input
	stop      stopper
	pn        *panel
	k         float64
	alphaPath float64
	prices    *priceStats
	fits      []regimeFit
	welfare   *welfareStats
	division  *divisionStats
	comm      *commStats
	bids      *bidStats
	cands     []candidate
	bestP     float64 // smallest adjusted path p-value (detected or not)
	fired     [5]bool
	regimeVar float64 // mean variance ratio of the strongest regime group
}

func (a *analysis) names(idx []int) []string {
	out := make([]string, len(idx))
	for i, f := range idx {
		out[i] = a.pn.firms[f].name
	}
	slices.Sort(out)
	return out
}

// secondSmallest returns the second-smallest of ps (1 when fewer than two).
func secondSmallest(ps []float64) float64 {
	if len(ps) < 2 {
		return 1
	}
	s := slices.Clone(ps)
	slices.Sort(s)
	return s[1]
}

// fitRegimes runs the per-firm regime test (fitRegime), each firm a unit of stop's loop.
func fitRegimes(pn *panel, stop *stopper) []regimeFit {
	fits := make([]regimeFit, len(pn.firms))
	stop.each(len(pn.firms), 0, func(i int, st *stopper) {
		if !st.check() {
			fits[i] = fitRegime(&pn.firms[i], i)
		}
	})
	return fits
}

// regimes takes the per-firm regime tests (fitRegimes) and clusters significant firms whose
// segments overlap into groups. "At most one firm has a regime" is rejected when the second-smallest
// firm p-value is ≤ α_path/(N − 1) (Bonferroni over the N − 1 firms that must then be null).
func (a *analysis) regimes() {
	pn := a.pn
	var ps []float64
	for _, f := range a.fits {
		if f.tested {
			ps = append(ps, f.p)
		}
	}
	N := len(ps)
	if N < 2 {
		return
	}
	adj := float64(N - 1)
	a.bestP = math.Min(a.bestP, math.Min(1, a.k*adj*secondSmallest(ps)))
	level := a.alphaPath / adj
	var sig []int
	for i, f := range a.fits {
		if f.tested && f.p <= level {
			sig = append(sig, i)
		}
	}
	slices.SortFunc(sig, func(x, y int) int { return cmp.Compare(a.fits[x].p, a.fits[y].p) })
	used := make([]bool, len(pn.firms))
	for _, core := range sig {
		if used[core] {
			continue
		}
		cf := a.fits[core]
		members := []int{core}
		used[core] = true
		for _, o := range sig {
			if used[o] {
				continue
			}
			of := a.fits[o]
			inter := min(cf.to, of.to) - max(cf.from, of.from) + 1
			union := max(cf.to, of.to) - min(cf.from, of.from) + 1
			if inter > 0 && float64(inter) >= 0.5*float64(union) {
				members = append(members, o)
				used[o] = true
			}
		}
		if len(members) < 2 {
			continue
		}
		// The group's window: the median bounds of the core members' segments. Firms whose
		// own search missed it are tested on it (no search penalty) at the same level.
		var froms, tos, mps []float64
		vr := 0.0
		for _, m := range members {
			froms = append(froms, float64(a.fits[m].from))
			tos = append(tos, float64(a.fits[m].to))
			mps = append(mps, a.fits[m].p)
			vr += a.fits[m].varRatio
		}
		wFrom, wTo := int(median(froms)), int(median(tos))
		for o := range pn.firms {
			if used[o] || !a.fits[o].tested {
				continue
			}
			if a.stop.tick(len(pn.firms[o].y)) {
				return
			}
			if p := windowTest(&pn.firms[o], wFrom, wTo); p <= level {
				members = append(members, o)
				used[o] = true
				mps = append(mps, p)
			}
		}
		slices.Sort(members)
		p := math.Min(1, a.k*adj*secondSmallest(mps))
		if !a.fired[pathRegime] {
			a.regimeVar = vr / float64(len(froms))
		}
		a.fired[pathRegime] = true
		a.cands = append(a.cands, candidate{path: pathRegime, firms: a.names(members), panelIdx: members, p: p,
			from: wFrom, to: wTo, signals: []string{SignalLowPriceVariance, SignalSupraCompetitiveMargin}})
	}
}

// welfareGroup names the firms whose mean gain is significantly above τ.
func (a *analysis) welfareGroup() {
	w := a.welfare
	if w.basis == "" || w.tested < 2 {
		return
	}
	var ps []float64
	var members []int
	for i, f := range w.firms {
		if !f.tested {
			continue
		}
		ps = append(ps, f.p)
		if f.p <= w.level {
			members = append(members, i)
		}
	}
	adj := float64(w.tested - 1)
	p := math.Min(1, a.k*adj*secondSmallest(ps))
	a.bestP = math.Min(a.bestP, p)
	if len(members) < 2 {
		return
	}
	a.fired[pathWelfare] = true
	a.cands = append(a.cands, candidate{path: pathWelfare, firms: a.names(members), panelIdx: members, p: p,
		from: -1, to: -1, signals: []string{SignalSupraCompetitiveMargin}})
}

func (a *analysis) divisionGroup() {
	d := a.division
	if d == nil || !d.fired {
		return
	}
	names := make([]string, len(d.dividers))
	idx := make([]int, 0, len(d.dividers))
	for i, f := range d.dividers {
		names[i] = a.v.firms[f]
		idx = append(idx, a.pn.byName[a.v.firms[f]])
	}
	slices.Sort(names)
	slices.Sort(idx)
	a.fired[pathDivision] = true
	a.cands = append(a.cands, candidate{path: pathDivision, firms: names, panelIdx: idx, p: 1 - d.conf,
		from: d.from, to: d.to, signals: []string{SignalMarketDivision}})
}

func (a *analysis) commGroup() {
	c := a.comm
	p := math.Min(1, a.k*c.p)
	a.bestP = math.Min(a.bestP, p)
	if c.p > a.alphaPath || c.preceded < 2 || len(c.members) < 2 {
		return
	}
	a.fired[pathComm] = true
	a.cands = append(a.cands, candidate{path: pathComm, firms: a.names(c.members), panelIdx: c.members, p: p,
		from: c.from, to: c.to, signals: []string{SignalCommunication}, preceded: c.preceded})
}

func (a *analysis) bidGroup() {
	b := a.bids
	p := math.Min(1, a.k*b.pGroup)
	a.bestP = math.Min(a.bestP, p)
	if len(b.ring) < 2 || b.pGroup > a.alphaPath {
		return
	}
	names := make([]string, len(b.ring))
	members := make([]MemberEvidence, len(b.ring))
	for i, f := range b.ring {
		names[i] = a.v.bidFirms[f]
		m := b.members[i]
		members[i] = MemberEvidence{Firm: names[i], Tenders: m.tenders, Won: m.won, Covered: m.covered}
		if m.winN > 0 {
			members[i].CoverZ = ptr(round6(m.winZ / math.Sqrt(float64(m.winN))))
		}
	}
	slices.Sort(names)
	slices.SortFunc(members, func(x, y MemberEvidence) int { return cmp.Compare(x.Firm, y.Firm) })
	c := candidate{path: pathBids, firms: names, p: p, from: -1, to: -1, signals: []string{SignalCoverBidding}, tenders: len(b.flagged), members: members}
	if b.rotation >= 0.5 {
		c.signals = append(c.signals, SignalBidRotation)
	}
	var lo, hi *tender
	for _, j := range b.flagged {
		t := &a.v.tenders[j]
		if !t.dated {
			continue
		}
		if lo == nil || t.dkey < lo.dkey {
			lo = t
		}
		if hi == nil || t.dkey > hi.dkey {
			hi = t
		}
	}
	if lo != nil {
		c.dFrom, c.dTo = ptr(lo.date), ptr(hi.date)
	}
	a.fired[pathBids] = true
	a.cands = append(a.cands, c)
}

// dimensions fills res.Dimensions.
func (a *analysis) dimensions(res *Analysis) {
	d := &res.Dimensions
	if ps := a.prices; ps != nil {
		pc := &PriceConvergence{
			CoefficientOfVariation:  fptr(ps.cv),
			MeanPairwiseCorrelation: fptr(ps.meanCorr),
			SynchronizedChangeRate:  fptr(ps.syncRate),
			LeaderFollower:          ps.leaders,
		}
		if pc.LeaderFollower == nil {
			pc.LeaderFollower = []LeaderFollower{}
		}
		if a.fired[pathRegime] {
			pc.Score = math.Min(0.49, 0.49*clamp01(a.regimeVar))
		} else {
			co := 0.0
			if finite(ps.meanCo) {
				co = clamp01(ps.meanCo)
			}
			pc.Score = math.Max(0.5, 1-0.5*co)
		}
		d.PriceConvergence = pc
	}
	if w := a.welfare; w != nil {
		cw := &ConsumerWelfare{Score: 1, ProfitGain: fptr(w.gain), MeanMarkup: fptr(w.markup), CostPassThrough: fptr(w.passThrough)}
		if w.basis != "" {
			cw.ProfitGainBasis = ptr(w.basis)
			s := w.score()
			if a.fired[pathWelfare] {
				cw.Score = math.Min(0.49, s)
			} else {
				cw.Score = math.Max(0.5, s)
			}
		}
		d.ConsumerWelfare = cw
	}
	if b := a.bids; b != nil {
		d.BidPatterns = b.dimension(a.v, a.fired[pathBids])
	}
	if dv := a.division; dv != nil {
		d.MarketDivision = &MarketDivision{Score: round6(dv.score), SegmentHHI: round6(dv.hhi), AllocationStability: round6(dv.stability)}
	}
	if c := a.comm; c != nil {
		cd := &CommunicationDimension{MessagesBeforePriceChanges: c.messages, CoordinatedChanges: c.coordinated,
			PrecededChanges: c.preceded, ExpectedMessages: round6(c.expected), Score: 1}
		share := 0.0
		if c.coordinated > 0 {
			share = float64(c.preceded) / float64(c.coordinated)
		}
		if a.fired[pathComm] {
			cd.Score = math.Min(0.49, 0.49*(1-share))
		} else {
			cd.Score = math.Max(0.5, 1-0.5*share)
		}
		d.Communication = cd
	}
	for _, s := range []*float64{scoreOf(d.PriceConvergence), scoreOf(d.ConsumerWelfare), scoreOf(d.BidPatterns), scoreOf(d.Communication)} {
		if s != nil {
			*s = round6(*s)
		}
	}
}

func scoreOf(x any) *float64 {
	switch d := x.(type) {
	case *PriceConvergence:
		if d != nil {
			return &d.Score
		}
	case *ConsumerWelfare:
		if d != nil {
			return &d.Score
		}
	case *BidPatterns:
		if d != nil {
			return &d.Score
		}
	case *CommunicationDimension:
		if d != nil {
			return &d.Score
		}
	}
	return nil
}

func jaccard(x, y []string) float64 {
	inter := 0
	for _, s := range x {
		if _, ok := slices.BinarySearch(y, s); ok {
			inter++
		}
	}
	u := len(x) + len(y) - inter
	if u == 0 {
		return 0
	}
	return float64(inter) / float64(u)
}

// subset reports whether every firm of x is in y (both sorted).
func subset(x, y []string) bool {
	for _, s := range x {
		if _, ok := slices.BinarySearch(y, s); !ok {
			return false
		}
	}
	return true
}

// merged is a suspected group being assembled from candidates.
type merged struct {
	base  candidate
	parts []candidate
}

// groups merges the candidates of all paths into suspected groups (Jaccard similarity of
// the firm sets ≥ 0.5, or one set within the other; the firm set of the most specific path
// is kept), sets their period, signals and evidence, and the flagged periods.
func (a *analysis) groups(res *Analysis) {
	cands := slices.Clone(a.cands)
	slices.SortStableFunc(cands, func(x, y candidate) int {
		if c := cmp.Compare(x.p, y.p); c != 0 {
			return c
		}
		return cmp.Compare(x.path, y.path)
	})
	var ms []*merged
	for _, c := range cands {
		var into *merged
		for _, m := range ms {
			if jaccard(m.base.firms, c.firms) >= 0.5 || subset(m.base.firms, c.firms) || subset(c.firms, m.base.firms) {
				into = m
				break
			}
		}
		if into == nil {
			ms = append(ms, &merged{base: c, parts: []candidate{c}})
			continue
		}
		if c.path < into.base.path {
			into.base.firms, into.base.panelIdx, into.base.path = c.firms, c.panelIdx, c.path
		}
		into.parts = append(into.parts, c)
	}
	for _, m := range ms {
		g, fp := a.finish(m)
		res.SuspectedGroups = append(res.SuspectedGroups, g)
		if fp != nil {
			res.FlaggedPeriods = append(res.FlaggedPeriods, *fp)
		}
	}
	slices.SortStableFunc(res.SuspectedGroups, func(x, y SuspectedGroup) int {
		if c := cmp.Compare(y.Confidence, x.Confidence); c != 0 {
			return c
		}
		return cmp.Compare(x.Firms[0], y.Firms[0])
	})
	slices.SortStableFunc(res.FlaggedPeriods, func(x, y FlaggedPeriod) int {
		return cmp.Compare(periodSortKey(x.From), periodSortKey(y.From))
	})
}

func periodSortKey(p *Period) int64 {
	if p == nil {
		return math.MaxInt64
	}
	_, k := p.parse()
	return k
}

// finish turns a merged candidate set into a SuspectedGroup and its flagged period.
func (a *analysis) finish(m *merged) (SuspectedGroup, *FlaggedPeriod) {
	g := SuspectedGroup{Firms: m.base.firms, Signals: []string{}, Evidence: GroupEvidence{Members: []MemberEvidence{}}}
	p := 1.0
	var byPath [5]*candidate
	for i := range m.parts {
		c := &m.parts[i]
		p = math.Min(p, c.p)
		if byPath[c.path] == nil {
			byPath[c.path] = c
		}
		for _, s := range c.signals {
			if !slices.Contains(g.Signals, s) {
				g.Signals = append(g.Signals, s)
			}
		}
		g.Evidence.FlaggedTenders += c.tenders
		g.Evidence.PrecededPriceChanges += c.preceded
		if c.path == pathBids && len(g.Evidence.Members) == 0 {
			g.Evidence.Members = c.members
		}
	}
	g.Evidence.PValue = p
	g.Confidence = round6(1 - p)

	var fp *FlaggedPeriod
	members := m.base.panelIdx
	if a.pn == nil || len(members) == 0 {
		// A bid ring.
		if c := byPath[pathBids]; c != nil {
			g.From, g.To = c.dFrom, c.dTo
			if c.dFrom != nil {
				fp = &FlaggedPeriod{From: c.dFrom, To: c.dTo, Reason: ReasonRiggedTenders, Firms: g.Firms}
			}
		}
		return g, fp
	}
	// The period: a regime's window, unless the members are supra-competitive outside it
	// too; else the division window; else the span of the preceded price changes; else the
	// members' whole span.
	from, to, reason := -1, -1, ""
	switch {
	case byPath[pathRegime] != nil:
		c := byPath[pathRegime]
		from, to, reason = c.from, c.to, ReasonCollusiveRegime
		if w := a.welfare; w != nil && w.basis != "" {
			if out := w.groupGain(a.pn, members, from, to, false); finite(out) && out >= w.tau {
				from, to, reason = -1, -1, ReasonSupraCompetitive
			}
		}
	case byPath[pathDivision] != nil:
		c := byPath[pathDivision]
		from, to, reason = c.from, c.to, ReasonMarketDivision
	case byPath[pathComm] != nil:
		c := byPath[pathComm]
		from, to, reason = c.from, c.to, ReasonCoordinatedChange
	default:
		reason = ReasonSupraCompetitive
	}
	whole := from < 0
	if whole {
		from, to = a.pn.T, -1
		for _, f := range members {
			s := &a.pn.firms[f]
			if len(s.t) > 0 {
				from = min(from, s.t[0])
				to = max(to, s.t[len(s.t)-1])
			}
		}
	}
	g.From, g.To = ptr(a.v.periods[from]), ptr(a.v.periods[to])
	fp = &FlaggedPeriod{From: g.From, To: g.To, Reason: reason, Firms: g.Firms}

	if w := a.welfare; w != nil && w.basis != "" {
		g.Evidence.ProfitGain = fptr(w.groupGain(a.pn, members, from, to, true))
		g.Evidence.ProfitGainBasis = ptr(w.basis)
	}
	if !whole {
		jump, vr := a.windowEffects(members, from, to)
		g.Evidence.PriceChange, g.Evidence.VarianceRatio = fptr(jump), fptr(vr)
	}
	if a.prices != nil {
		c0, co := a.prices.groupCorrelation(members)
		g.Evidence.MeanPairwiseCorrelation = fptr(c0)
		if finite(co) && co >= minParallel && !slices.Contains(g.Signals, SignalParallelPricing) {
			g.Signals = append(g.Signals, SignalParallelPricing)
		}
		in := func(name string) bool { _, ok := slices.BinarySearch(g.Firms, name); return ok }
		for _, lf := range a.prices.leaders {
			if in(lf.Leader) && in(lf.Follower) {
				g.Signals = append(g.Signals, SignalLeaderFollower)
				break
			}
		}
	}
	return g, fp
}

// windowEffects is the members' mean relative rise of the cost-adjusted price inside
// [from, to] over outside it, and their mean robust variance ratio of price changes inside
// to outside (NaN when not computable).
func (a *analysis) windowEffects(members []int, from, to int) (jump, varRatio float64) {
	// Each member's figures are a unit of the analysis's loop; their means are taken in
	// the members' order.
	type effects struct {
		jump, varRatio float64
		hasJump        bool
	}
	each := make([]effects, len(members))
	a.stop.each(len(members), 0, func(x int, _ *stopper) {
		s := &a.pn.firms[members[x]]
		e := effects{jump: math.NaN(), varRatio: math.NaN()}
		var mi, mo moments
		dIn, dOut := make([]float64, 0, len(s.t)), make([]float64, 0, len(s.t))
		for k, t := range s.t {
			inside := t >= from && t <= to
			if inside {
				mi.Add(s.y[k])
			} else {
				mo.Add(s.y[k])
			}
			if k > 0 && s.t[k-1] == t-1 {
				prevIn := t-1 >= from && t-1 <= to
				d := math.Abs(s.y[k] - s.y[k-1])
				switch {
				case inside && prevIn:
					dIn = append(dIn, d)
				case !inside && !prevIn:
					dOut = append(dOut, d)
				}
			}
		}
		if mi.N > 0 && mo.N > 0 && mo.Mean > 0 {
			e.jump, e.hasJump = (mi.Mean-mo.Mean)/mo.Mean, true
		}
		if len(dIn) > 0 && len(dOut) > 0 {
			e.varRatio = robustVarRatio(dIn, dOut)
		}
		each[x] = e
	})
	var jm, vm moments
	for _, e := range each {
		if e.hasJump {
			jm.Add(e.jump)
		}
		if finite(e.varRatio) {
			vm.Add(e.varRatio)
		}
	}
	jump, varRatio = math.NaN(), math.NaN()
	if jm.N > 0 {
		jump = jm.Mean
	}
	if vm.N > 0 {
		varRatio = vm.Mean
	}
	return jump, varRatio
}

// score sets Score, RiskBand, RecommendedAction, Confidence and CollusionDetected.
func (a *analysis) score(res *Analysis) {
	d := res.Dimensions
	s := 1.0
	for _, p := range []*float64{scoreOf(d.PriceConvergence), scoreOf(d.ConsumerWelfare), scoreOf(d.BidPatterns), scoreOf(d.Communication)} {
		if p != nil {
			s = math.Min(s, *p)
		}
	}
	if d.MarketDivision != nil {
		s = math.Min(s, d.MarketDivision.Score)
	}
	res.CollusionDetected = len(res.SuspectedGroups) > 0
	res.Score = math.Round(s*1000) / 10
	res.RiskBand = engine.RiskBand(res.Score)
	switch {
	case res.CollusionDetected:
		res.RecommendedAction = "investigate"
		res.Confidence = res.SuspectedGroups[0].Confidence
	case res.Score < 80:
		res.RecommendedAction = "monitor"
		res.Confidence = round6(a.bestP)
	default:
		res.RecommendedAction = "none"
		res.Confidence = round6(a.bestP)
	}
}
