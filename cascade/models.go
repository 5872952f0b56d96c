package cascade

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// Numerical constants of the models (documented in docs/methods/cascade.md).
const (
	// debtRankStep: a DebtRank round counts, and propagation continues, only while some h
	// rises by more than this.
	debtRankStep = 1e-12
	// maxDebtRankRounds bounds a DebtRank run whose increments decay too slowly (a nearly
	// critical network); so does a budget of runBudget edge visits per run.
	maxDebtRankRounds = 10_000
	// runBudget: a DebtRank or Eisenberg–Noe run stops propagating after
	// runBudget·(nodes + edges) + 2²² edge visits (a safety bound; see the method document).
	runBudget = 100
	// enDefaultTol: an Eisenberg–Noe node has defaulted when p̄ᵢ − pᵢ > enDefaultTol·p̄ᵢ.
	enDefaultTol = 1e-9
	// enPushTol: payment decreases smaller than enPushTol·max p̄ are not propagated further
	// (they are kept and propagated once they add up).
	enPushTol = 1e-14
)

// cell is the per-run state of a node. seen and failed hold the epoch (run number of the
// runner) in which the node was last initialised and failed, so a run starts without
// clearing any array; v is the accumulated loss (threshold), h (DebtRank) or the assets
// (Eisenberg–Noe).
type cell struct {
	seen, failed uint32
	v            float64
	cap          float64
}

// shockSpec is the initial loss of a shock scenario.
type shockSpec struct {
	nodes []int32
	all   bool
	frac  float64
}

// runOut is what one run reports.
type runOut struct {
	failedValue float64 // Σ value of failed nodes
	loss        float64 // Σ valueᵢ·ℓᵢ
	rounds      int
	recovNum    float64 // Σ value·recovery_hours over failed nodes with hours
	recovDen    float64 // Σ value over the same nodes
	shortfall   float64 // Σ p̄ᵢ − pᵢ (Eisenberg–Noe)
	visits      int64   // out-edges followed: the run's dominant loop (see Estimate)
}

// model holds what every run of a simulation shares (read-only).
type model struct {
	kind     int
	g        *network
	value    []float64
	capital  []float64
	extA     []float64
	hours    []float64
	hasHours []bool
	coef     []float64 // per out-edge: loss (threshold), Λ (DebtRank), Π (Eisenberg–Noe)
	// Eisenberg–Noe: obligations p̄, assets when everyone pays in full, and the nodes short
	// of their obligations even then (the fictitious-default algorithm's first candidates).
	pbar    []float64
	a0      []float64
	under   []int32
	pushTol float64
	// maxPushes is the edge-visit budget of a DebtRank or Eisenberg–Noe run.
	maxPushes int64
	stop      *atomic.Bool // set when the simulation is cancelled
}

func newModel(s *spec, g *network) *model {
	m := &model{kind: s.model, g: g, value: s.value, capital: s.capital, extA: s.extA, hours: s.hours, hasHours: s.hasHours}
	m.coef = make([]float64, len(g.outTo))
	keep := 1 - s.recoveryRate
	for i := 0; i < g.n; i++ {
		for e := g.outStart[i]; e < g.outStart[i+1]; e++ {
			w, t := g.outW[e], g.outTo[e]
			switch s.model {
			case mThreshold:
				m.coef[e] = w * keep
			case mDebtRank:
				switch {
				case w == 0 || keep == 0:
				case s.capital[t] == 0:
					m.coef[e] = math.Inf(1)
				default:
					m.coef[e] = w * keep / s.capital[t]
				}
			case mEisenbergNoe:
				if g.exposure[i] > 0 {
					m.coef[e] = w / g.exposure[i]
				}
			}
		}
	}
	if s.model == mEisenbergNoe {
		m.pbar = g.exposure
		m.a0 = make([]float64, g.n)
		maxP := 0.0
		for i := range m.a0 {
			m.a0[i] = s.extA[i] + g.inW[i]
			if m.a0[i] < m.pbar[i] {
				m.under = append(m.under, int32(i))
			}
			maxP = math.Max(maxP, m.pbar[i])
		}
		m.pushTol = enPushTol * maxP
	}
	m.maxPushes = runBudget*int64(g.n+len(g.outTo)) + 1<<22
	return m
}

// runner is one worker's mutable state, allocated once and reused by every run it makes:
// a run allocates nothing.
//
// Two workers' runners are written at once, run after run: the runner and each of its
// arrays keep a cache line of padding on either side (ownLines), so that no line is shared
// between workers. Shared lines made a DebtRank sweep on 200 nodes take 1.1–1.8 times the
// CPU on two workers, Eisenberg–Noe 1.4 times, and random draws 2–2.6 times.
type runner struct {
	_      [64]byte
	m      *model
	cells  []cell
	epoch  uint32
	tick   uint32 // Eisenberg–Noe phase counter for dirty marks
	failed []int32
	// touched lists the nodes initialised in the run (DebtRank: h > 0; Eisenberg–Noe:
	// nodes whose assets or payment changed).
	touched     []int32
	front, next []int32
	initBuf     []int32
	// DebtRank
	delta  []float64
	acc    []float64
	inCand []bool
	// Eisenberg–Noe
	pay       []float64
	inD       []uint32
	dirtyMark []uint32
	inQ       []bool
	queue     []int32
	// trace, when set, records the decay of a DebtRank run's increments (Estimate's pilot).
	trace *runTrace
	// random draws: pcg is the generator's state, which every draw writes (inside the
	// runner: two states allocated on their own were 16 bytes apart).
	rng   *rand.Rand
	pcg   rand.PCG
	perm  []int32
	swaps []int32
	_     [64]byte
}

// ownLines returns n zero elements (capacity n) with a cache line of padding on either
// side (64 elements: at least 64 bytes whatever the element), so that the array shares no
// cache line with another worker's.
func ownLines[T any](n int) []T {
	const pad = 64
	return make([]T, n+2*pad)[pad : pad+n : pad+n]
}

func newRunner(m *model) *runner {
	n := m.g.n
	r := &runner{m: m, cells: ownLines[cell](n), front: ownLines[int32](n)[:0], next: ownLines[int32](n)[:0],
		failed: ownLines[int32](n)[:0], touched: ownLines[int32](n)[:0], initBuf: ownLines[int32](n)[:0]}
	for i := range r.cells {
		r.cells[i].cap = m.capital[i]
	}
	switch m.kind {
	case mDebtRank:
		r.delta = ownLines[float64](n)
		r.acc = ownLines[float64](n)
		r.inCand = ownLines[bool](n)
	case mEisenbergNoe:
		r.pay = ownLines[float64](n)
		r.inD = ownLines[uint32](n)
		r.dirtyMark = ownLines[uint32](n)
		r.inQ = ownLines[bool](n)
		r.queue = ownLines[int32](n)
	}
	r.rng = rand.New(&r.pcg)
	return r
}

// runTrace is what a DebtRank run records for Estimate's pilot: the largest increment of
// each round and the edges followed in the last one.
type runTrace struct {
	incs      []float64
	lastRound int64
}

// begin starts a run: a new epoch makes every cell stale without touching it.
func (r *runner) begin() {
	r.epoch++
	if r.epoch == math.MaxUint32 {
		for i := range r.cells {
			r.cells[i].seen, r.cells[i].failed = 0, 0
		}
		for i := range r.inD {
			r.inD[i] = 0
		}
		r.epoch = 1
	}
	r.failed = r.failed[:0]
	r.touched = r.touched[:0]
	if r.trace != nil {
		r.trace.incs = r.trace.incs[:0]
		r.trace.lastRound = 0
	}
}

// run simulates one run of the model from the initial failures init and the shock sh
// (either may be empty). The failed nodes are left in r.failed.
func (r *runner) run(init []int32, sh *shockSpec) runOut {
	r.begin()
	var o runOut
	switch r.m.kind {
	case mThreshold, mIndependentCascade:
		o.rounds, o.visits = r.spread(init, sh)
	case mDebtRank:
		o.rounds, o.loss, o.visits = r.debtRank(init, sh)
	case mEisenbergNoe:
		o.rounds, o.shortfall, o.visits = r.eisenbergNoe(init, sh)
	}
	m := r.m
	for _, i := range r.failed {
		v := m.value[i]
		o.failedValue += v
		if m.hasHours[i] {
			o.recovNum += v * m.hours[i]
			o.recovDen += v
		}
	}
	if m.kind != mDebtRank {
		o.loss = o.failedValue
	}
	return o
}

// spread runs the threshold model (a node fails when its losses from failed sources strictly
// exceed its capital) or the independent cascade (each newly failed source has one chance
// to fail each live target, with the edge's probability), round by round.
func (r *runner) spread(init []int32, sh *shockSpec) (int, int64) {
	c, ep, g := r.cells, r.epoch, r.m.g
	front := r.front[:0]
	for _, i := range init {
		if c[i].failed != ep {
			c[i].failed = ep
			r.failed = append(r.failed, i)
			front = append(front, i)
		}
	}
	if sh != nil {
		hit := func(i int32) {
			ci := &c[i]
			if ci.failed == ep {
				return
			}
			if sh.frac >= 1 { // the loss reaches all of the capital
				ci.failed = ep
				r.failed = append(r.failed, i)
				front = append(front, i)
				return
			}
			if ci.seen != ep {
				ci.seen, ci.v = ep, 0
			}
			ci.v += sh.frac * ci.cap
		}
		if sh.all {
			for i := range c {
				hit(int32(i))
			}
		} else {
			for _, i := range sh.nodes {
				hit(i)
			}
		}
	}
	start, to, coef, prob := g.outStart, g.outTo, r.m.coef, g.outP
	ic := r.m.kind == mIndependentCascade
	next := r.next[:0]
	rounds := 0
	// visits counts the out-edges followed (at most the edges: each node fails once);
	// maxPushes never binds a full run and only cuts Estimate's pilot runs short.
	var visits int64
	for len(front) > 0 && visits < r.m.maxPushes {
		next = next[:0]
		for _, s := range front {
			if visits >= r.m.maxPushes {
				break
			}
			lo, hi := start[s], start[s+1]
			visits += int64(hi - lo)
			tos := to[lo:hi]
			if ic {
				ps := prob[lo:hi]
				ps = ps[:len(tos)]
				for k, t := range tos {
					ct := &c[t]
					if ct.failed == ep {
						continue
					}
					if p := ps[k]; p < 1 && (p <= 0 || r.rng.Float64() >= p) {
						continue
					}
					ct.failed = ep
					next = append(next, t)
				}
				continue
			}
			cs := coef[lo:hi]
			cs = cs[:len(tos)]
			for k, t := range tos {
				ct := &c[t]
				if ct.failed == ep {
					continue
				}
				l := cs[k]
				if ct.seen == ep {
					l += ct.v
				} else {
					ct.seen = ep
				}
				ct.v = l
				if l > ct.cap {
					ct.failed = ep
					next = append(next, t)
				}
			}
		}
		if len(next) > 0 {
			rounds++
			r.failed = append(r.failed, next...)
		}
		front, next = next, front
	}
	r.front, r.next = front[:0], next[:0]
	return rounds, visits
}

// debtRank runs linear DebtRank (Bardoscia et al. 2015): hᵢ(t+1) = min(1, hᵢ(t) +
// Σⱼ Λᵢⱼ (hⱼ(t) − hⱼ(t−1))), Λᵢⱼ = (1 − R)·wⱼᵢ / capitalᵢ. It returns the rounds and
// Σ valueᵢ hᵢ.
func (r *runner) debtRank(init []int32, sh *shockSpec) (int, float64, int64) {
	c, ep, g, m := r.cells, r.epoch, r.m.g, r.m
	front := r.front[:0]
	set := func(i int32, h float64) {
		ci := &c[i]
		if ci.seen != ep {
			ci.seen, ci.v = ep, 0
			r.touched = append(r.touched, i)
		}
		if h <= ci.v {
			return
		}
		if ci.v == 0 {
			front = append(front, i)
		}
		r.delta[i] += h - ci.v
		ci.v = h
		if h >= 1 && ci.failed != ep {
			ci.failed = ep
			r.failed = append(r.failed, i)
		}
	}
	// delta of the shocked nodes is their rise from 0; clear it for the nodes set below.
	for _, i := range init {
		r.delta[i] = 0
	}
	if sh != nil {
		if sh.all {
			for i := range c {
				r.delta[i] = 0
			}
		} else {
			for _, i := range sh.nodes {
				r.delta[i] = 0
			}
		}
	}
	for _, i := range init {
		set(i, 1)
	}
	if sh != nil {
		if sh.all {
			for i := range c {
				set(int32(i), sh.frac)
			}
		} else {
			for _, i := range sh.nodes {
				set(i, sh.frac)
			}
		}
	}
	start, to, coef := g.outStart, g.outTo, m.coef
	cand := r.next[:0]
	rounds := 0
	var visits int64
	nextCheck := int64(1 << 20)
	for len(front) > 0 && rounds < maxDebtRankRounds && visits < m.maxPushes {
		roundStart := visits
		cand = cand[:0]
		for _, j := range front {
			d := r.delta[j]
			visits += int64(start[j+1] - start[j])
			for e := start[j]; e < start[j+1]; e++ {
				t := to[e]
				if c[t].seen == ep && c[t].v >= 1 {
					continue
				}
				if !r.inCand[t] {
					r.inCand[t] = true
					r.acc[t] = 0
					cand = append(cand, t)
				}
				r.acc[t] += coef[e] * d
			}
		}
		k, maxInc := 0, 0.0
		for _, t := range cand {
			r.inCand[t] = false
			ct := &c[t]
			if ct.seen != ep {
				ct.seen, ct.v = ep, 0
				r.touched = append(r.touched, t)
			}
			h := ct.v
			nh := h + r.acc[t]
			if nh > 1 {
				nh = 1
			}
			inc := nh - h
			if !(inc > 0) {
				continue
			}
			ct.v = nh
			r.delta[t] = inc
			cand[k] = t
			k++
			maxInc = math.Max(maxInc, inc)
			if nh >= 1 && ct.failed != ep {
				ct.failed = ep
				r.failed = append(r.failed, t)
			}
		}
		if r.trace != nil {
			r.trace.incs = append(r.trace.incs, maxInc)
			r.trace.lastRound = visits - roundStart
		}
		if maxInc <= debtRankStep {
			break
		}
		rounds++
		front, cand = cand[:k], front
		// A round follows up to every edge (≈ 5 ms at 1,000,000 edges): look for a cancel
		// every 2²⁰ edges, not every so many rounds.
		if visits >= nextCheck {
			nextCheck = visits + 1<<20
			if m.stop != nil && m.stop.Load() {
				break
			}
		}
	}
	r.front, r.next = front[:0], cand[:0]
	loss := 0.0
	for _, i := range r.touched {
		loss += m.value[i] * c[i].v
	}
	return rounds, loss, visits
}

// eisenbergNoe computes the greatest clearing payment vector (Eisenberg & Noe 2001) with
// the initial failures paying nothing and the shock reducing external assets, by the
// fictitious-default algorithm: phase k fixes the default set D, solves the payments of D
// (pᵢ = min(p̄ᵢ, max(0, eᵢ + Σⱼ Πⱼᵢ pⱼ))) by propagating payment decreases from node to
// node, then adds every node whose assets fell below its obligations. It returns the phases
// that added a node with a shortfall above enDefaultTol·p̄ (the rounds) and Σ p̄ᵢ − pᵢ.
// Every defaulted node is appended to r.failed; r.pay holds the payments of r.touched.
func (r *runner) eisenbergNoe(init []int32, sh *shockSpec) (int, float64, int64) {
	c, ep, g, m := r.cells, r.epoch, r.m.g, r.m
	pbar := m.pbar
	touch := func(i int32) {
		if c[i].seen != ep {
			c[i].seen, c[i].v = ep, m.a0[i]
			r.pay[i] = pbar[i]
			r.touched = append(r.touched, i)
		}
	}
	clamp := func(a, hi float64) float64 {
		if a < 0 {
			return 0
		}
		if a > hi {
			return hi
		}
		return a
	}
	r.tick++
	if r.tick == math.MaxUint32 {
		for i := range r.dirtyMark {
			r.dirtyMark[i] = 0
		}
		r.tick = 1
	}
	dirty := r.next[:0]
	queue := r.queue
	qh, qn := 0, 0 // ring buffer head and length
	var pushes int64
	nextCheck := int64(1 << 20)
	stopped := false
	start, to, coef := g.outStart, g.outTo, m.coef
	release := func(i int32, d float64) {
		for e := start[i]; e < start[i+1]; e++ {
			t := to[e]
			touch(t)
			ct := &c[t]
			ct.v -= coef[e] * d
			if ct.failed == ep {
				continue
			}
			if r.inD[t] == ep {
				if !r.inQ[t] && r.pay[t]-clamp(ct.v, pbar[t]) > m.pushTol {
					r.inQ[t] = true
					queue[(qh+qn)%len(queue)] = t
					qn++
				}
			} else if ct.v < pbar[t] && r.dirtyMark[t] != r.tick {
				r.dirtyMark[t] = r.tick
				dirty = append(dirty, t)
			}
		}
		pushes += int64(start[i+1] - start[i])
	}
	for _, f := range init {
		touch(f)
		if c[f].failed == ep {
			continue
		}
		c[f].failed = ep
		r.failed = append(r.failed, f)
		d := r.pay[f]
		r.pay[f] = 0
		if d > 0 {
			release(f, d)
		}
	}
	if sh != nil {
		hit := func(i int32) {
			if c[i].failed == ep || m.extA[i] == 0 {
				return
			}
			touch(i)
			c[i].v -= sh.frac * m.extA[i]
			if c[i].v < pbar[i] && r.dirtyMark[i] != r.tick {
				r.dirtyMark[i] = r.tick
				dirty = append(dirty, i)
			}
		}
		if sh.all {
			for i := range c {
				hit(int32(i))
			}
		} else {
			for _, i := range sh.nodes {
				hit(i)
			}
		}
	}
	cands := r.front[:0]
	rounds := 0
	for phase := 0; ; phase++ {
		cands = append(cands[:0], dirty...)
		if phase == 0 {
			cands = append(cands, m.under...)
		}
		r.tick++
		dirty = dirty[:0]
		added, grew := 0, false
		for _, i := range cands {
			if c[i].failed == ep || r.inD[i] == ep {
				continue
			}
			touch(i)
			if a := c[i].v; a < pbar[i] {
				r.inD[i] = ep
				r.inQ[i] = true
				queue[(qh+qn)%len(queue)] = i
				qn++
				added++
				if pbar[i]-math.Max(0, a) > enDefaultTol*pbar[i] {
					grew = true
				}
			}
		}
		if added == 0 {
			break
		}
		if grew {
			rounds++
		}
		for qn > 0 && pushes < m.maxPushes {
			i := queue[qh]
			qh = (qh + 1) % len(queue)
			qn--
			r.inQ[i] = false
			target := clamp(c[i].v, pbar[i])
			d := r.pay[i] - target
			if !(d > 0) {
				continue
			}
			r.pay[i] = target
			release(i, d)
			if pushes >= nextCheck {
				nextCheck = pushes + 1<<20
				if m.stop != nil && m.stop.Load() {
					stopped = true
					break
				}
			}
		}
		for qn > 0 { // only after a cancellation or the safety bound: drop the rest
			r.inQ[queue[qh]] = false
			qh = (qh + 1) % len(queue)
			qn--
		}
		if stopped { // the next phases would push again before looking at the flag
			break
		}
	}
	short := 0.0
	for _, i := range r.touched {
		if r.inD[i] == ep {
			r.pay[i] = clamp(c[i].v, pbar[i])
		}
		s := pbar[i] - r.pay[i]
		short += s
		if c[i].failed != ep && s > enDefaultTol*pbar[i] {
			c[i].failed = ep
			r.failed = append(r.failed, i)
		}
	}
	r.front, r.next = cands[:0], dirty[:0]
	return rounds, short, pushes
}

// seed points the runner's generator at the stream of (seed, stream, run): the draws of a
// run depend on nothing else, so results do not depend on which worker makes the run.
func (r *runner) seed(seed int64, stream, run uint64) {
	a := splitmix(uint64(seed) ^ splitmix(stream))
	r.pcg.Seed(a, splitmix(a^splitmix(run+0x632be59bd9b4e019)))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// randomNodes draws k distinct nodes uniformly (a partial Fisher–Yates shuffle that is undone
// afterwards, so the permutation is the identity at the start of every run).
func (r *runner) randomNodes(k int) []int32 {
	n := len(r.cells)
	if r.perm == nil {
		r.perm = ownLines[int32](n)
		for i := range r.perm {
			r.perm[i] = int32(i)
		}
		r.swaps = ownLines[int32](n)[:0]
	}
	r.swaps = r.swaps[:0]
	for j := 0; j < k; j++ {
		x := j + r.rng.IntN(n-j)
		r.perm[j], r.perm[x] = r.perm[x], r.perm[j]
		r.swaps = append(r.swaps, int32(x))
	}
	r.initBuf = append(r.initBuf[:0], r.perm[:k]...)
	for j := k - 1; j >= 0; j-- {
		x := r.swaps[j]
		r.perm[j], r.perm[x] = r.perm[x], r.perm[j]
	}
	return r.initBuf
}

// randomFailures draws each node's failure independently: with probability p for every
// node (geometric skips, O(failures)), or with the nodes' own probabilities (nodes lists
// the nodes with a positive one, probs their probabilities).
func (r *runner) randomFailures(uniform bool, p float64, nodes []int32, probs []float64) []int32 {
	out := r.initBuf[:0]
	if uniform {
		n := len(r.cells)
		switch {
		case p <= 0:
		case p >= 1:
			for i := 0; i < n; i++ {
				out = append(out, int32(i))
			}
		default:
			lq := math.Log1p(-p)
			for i := -1; ; {
				// gap ~ Geometric(p): the number of nodes skipped before the next failure.
				u := 1 - r.rng.Float64() // (0, 1]
				gap := math.Floor(math.Log(u) / lq)
				if gap >= float64(n-1-i) {
					break
				}
				i += int(gap) + 1
				out = append(out, int32(i))
			}
		}
	} else {
		for k, i := range nodes {
			if q := probs[k]; q >= 1 || r.rng.Float64() < q {
				out = append(out, i)
			}
		}
	}
	r.initBuf = out
	return out
}
