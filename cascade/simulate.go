package cascade

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"riskapi/engine"
)

// Analyze validates the input (unless Validate already did), runs every scenario (Monte
// Carlo over in.Run.Workers goroutines, each run with its own generator derived from (seed,
// scenario, run), so the result is the same whatever the number of workers), sweeps the
// blast radius of the nodes, and scores the network. Bad input returns an
// *engine.InputError; a cancelled ctx stops every worker before its next run (the long
// models also look between rounds) and returns ctx's error.
func Analyze(ctx context.Context, in Input) (Result, error) {
	s, err := in.spec()
	if err != nil {
		return Result{}, err
	}
	return simulate(ctx, s, in.Run)
}

// quantScale is the resolution of per-node Eisenberg–Noe shortfall sums: shortfalls are
// summed as integers in units of p̄ᵢ·2⁻⁴⁰, exact and independent of the order of runs.
const quantScale = 1 << 40

// firstStats are the per-node tallies of the first scenario, per worker.
type firstStats struct {
	fails  []int32
	shortQ []int64
}

// simulation is one Analyze call: the compiled input, the network, the model and one
// runner per worker.
type simulation struct {
	ctx     context.Context
	s       *spec
	g       *network
	m       *model
	workers int
	runners []*runner
	prog    *progress
	stop    atomic.Bool
}

func simulate(ctx context.Context, s *spec, opt Options) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	workers := opt.workers()
	// The compiled input may be shared (Validate keeps it for every copy of the Input, and
	// copies may be analysed at once): what this run resolves goes into its own scenarios.
	// The network is shared too (built once, read-only).
	own := *s
	own.scen = slices.Clone(s.scen)
	s = &own
	g, err := s.network(ctx)
	if err != nil {
		return Result{}, err
	}
	sim := &simulation{ctx: ctx, s: s, g: g, workers: workers}
	defer context.AfterFunc(ctx, func() { sim.stop.Store(true) })()
	sim.m = newModel(s, g)
	sim.m.stop = &sim.stop

	if err := s.resolveAttacks(func(by string) ([]float64, error) { return g.centrality(ctx, by) }); err != nil {
		return Result{}, err
	}
	sweep := topNodes(s.ids, g.exposure, s.swept())
	total := int64(0)
	for _, sc := range s.scen {
		total += int64(sc.runs)
	}
	if s.model == mIndependentCascade {
		total += int64(len(sweep)) * ICBlastRuns
	} else {
		total += int64(len(sweep))
	}
	sim.prog = &progress{fn: opt.Progress, total: total, step: max(1, total/200)}
	sim.runners = make([]*runner, workers)
	for w := range sim.runners {
		sim.runners[w] = newRunner(sim.m)
	}

	res := Result{Model: s.modelName, Seed: s.seed, Simulations: s.sims, MethodVersion: MethodVersion,
		Scenarios: make([]ScenarioResult, len(s.scen))}
	var first []firstStats
	var firstExact []float64 // shortfalls of a one-run first scenario
	recov := make([][]float64, len(s.scen))
	for k := range s.scen {
		sr, rec, fs, exact, err := sim.runScenario(k, k == 0)
		if err != nil {
			return Result{}, err
		}
		res.Scenarios[k] = sr
		recov[k] = rec
		if k == 0 {
			first, firstExact = fs, exact
		}
	}
	blast, dr, err := sim.sweep(sweep)
	if err != nil {
		return Result{}, err
	}
	comps := g.components()
	fr, err := algebraicConnectivity(ctx, g, comps, workers)
	if err != nil {
		return Result{}, err
	}
	sim.prog.finish()

	res.Nodes = sim.nodeResults(first, firstExact, sweep, blast, dr)
	sim.score(&res, fr.value, comps, recov)
	return res, nil
}

// resolveAttacks sets the first failures of the targeted attacks: the count nodes with the
// largest score(by), each measure's scores computed once.
func (s *spec) resolveAttacks(score func(by string) ([]float64, error)) error {
	cache := map[string][]float64{}
	for k := range s.scen {
		sc := &s.scen[k]
		if sc.typ != TypeTargetedAttack {
			continue
		}
		values, ok := cache[sc.by]
		if !ok {
			var err error
			if values, err = score(sc.by); err != nil {
				return err
			}
			cache[sc.by] = values
		}
		sc.fixed = topNodes(s.ids, values, sc.count)
	}
	return nil
}

// workers is the number of goroutines Analyze runs on: Workers, or GOMAXPROCS, at most 64.
func (opt Options) workers() int {
	w := opt.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return min(w, 64)
}

// progress reports finished runs, serialised and throttled.
type progress struct {
	fn          func(done, total int64)
	mu          sync.Mutex
	done, total int64
	last, step  int64
}

func (p *progress) add(k int64) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += k
	if p.done-p.last >= p.step && p.done < p.total {
		p.last = p.done
		p.fn(p.done, p.total)
	}
}

func (p *progress) finish() {
	if p.fn != nil {
		p.fn(p.total, p.total)
	}
}

// parallel calls fn(worker, i) for i in [0, total) on sim.workers goroutines, in chunks
// taken in turn; which worker makes which i does not affect the result.
func (sim *simulation) parallel(total int, fn func(w, i int)) error {
	if total == 0 {
		return sim.ctx.Err()
	}
	workers := min(sim.workers, total)
	chunk := max(1, min(256, total/(workers*16)))
	var next atomic.Int64
	var wg sync.WaitGroup
	var perr atomic.Value
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					perr.CompareAndSwap(nil, fmt.Errorf("cascade: internal error: %v", p))
					sim.stop.Store(true)
				}
			}()
			for !sim.stop.Load() {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= total {
					return
				}
				hi := min(lo+chunk, total)
				for i := lo; i < hi && !sim.stop.Load(); i++ {
					fn(w, i)
				}
				sim.prog.add(int64(hi - lo))
			}
		}(w)
	}
	wg.Wait()
	if e := perr.Load(); e != nil {
		return e.(error)
	}
	if err := sim.ctx.Err(); err != nil {
		return err
	}
	return nil
}

// runScenario makes the runs of scenario k and summarises them. For the first scenario it
// also returns per-worker node tallies (and exact shortfalls when it has one run).
func (sim *simulation) runScenario(k int, isFirst bool) (ScenarioResult, []float64, []firstStats, []float64, error) {
	s, sc := sim.s, &sim.s.scen[k]
	n := len(s.ids)
	N := sc.runs
	frac := make([]float64, N)
	loss := make([]float64, N)
	rounds := make([]int, N)
	recov := make([]float64, N)
	var short []float64
	en := s.model == mEisenbergNoe
	if en {
		short = make([]float64, N)
	}
	var fs []firstStats
	var exact []float64
	if isFirst {
		fs = make([]firstStats, sim.workers)
		for w := range fs {
			fs[w].fails = ownLines[int32](n)
			if en && N > 1 {
				fs[w].shortQ = ownLines[int64](n)
			}
		}
		if en && N == 1 {
			exact = make([]float64, n)
		}
	}
	draw := newScenarioDraw(s, k)
	total := 0.0
	for _, v := range s.value {
		total += v
	}
	err := sim.parallel(N, func(w, r int) {
		run := sim.runners[w]
		o := run.run(draw.start(run, r), draw.shock)
		frac[r] = math.Min(1, o.failedValue/total)
		loss[r] = o.loss
		rounds[r] = o.rounds
		recov[r] = -1
		if o.recovDen > 0 {
			recov[r] = o.recovNum / o.recovDen
		}
		if en {
			short[r] = o.shortfall
		}
		if !isFirst {
			return
		}
		for _, i := range run.failed {
			fs[w].fails[i]++
		}
		if en {
			for _, i := range run.touched {
				sf := sim.m.pbar[i] - run.pay[i]
				if exact != nil {
					exact[i] = sf
				} else if sf > 0 {
					fs[w].shortQ[i] += int64(math.Round(sf / sim.m.pbar[i] * quantScale))
				}
			}
		}
	})
	if err != nil {
		return ScenarioResult{}, nil, nil, nil, err
	}
	sr := summarise(sc.name, sc.typ, frac, loss, rounds, s.sysThres)
	if en {
		t := mean(short)
		sr.TotalShortfall = &t
	}
	return sr, recov, fs, exact, nil
}

// scenarioDraw makes the initial failures of the runs of one scenario.
type scenarioDraw struct {
	s  *spec
	k  int
	sc *scenario
	// random_failure: the nodes with a positive failure probability.
	rfNodes []int32
	rfProbs []float64
	shock   *shockSpec
}

func newScenarioDraw(s *spec, k int) *scenarioDraw {
	sc := &s.scen[k]
	d := &scenarioDraw{s: s, k: k, sc: sc}
	if sc.typ == TypeRandomFailure && !sc.hasProb {
		for i, p := range s.failP {
			if p > 0 {
				d.rfNodes = append(d.rfNodes, int32(i))
				d.rfProbs = append(d.rfProbs, p)
			}
		}
	}
	if sc.typ == TypeShock {
		d.shock = &shockSpec{nodes: sc.fixed, all: sc.shockAll, frac: sc.lossFrac}
	}
	return d
}

// start points run at the stream of run r of the scenario (its draws depend on nothing
// else) and returns the run's initial failures.
func (d *scenarioDraw) start(run *runner, r int) []int32 {
	sc := d.sc
	run.seed(d.s.seed, uint64(d.k)+1, uint64(r))
	switch sc.typ {
	case TypeRandomNode:
		return run.randomNodes(sc.count)
	case TypeRandomFailure:
		return run.randomFailures(sc.hasProb, sc.prob, d.rfNodes, d.rfProbs)
	case TypeShock:
		return nil
	default:
		return sc.fixed
	}
}

// sweepStream is the first random stream of the blast-radius runs (scenario k draws from
// stream k + 1).
const sweepStream = 1 << 40

// seedSweep points run at the stream of repetition rep of node i's blast-radius run.
func (s *spec) seedSweep(run *runner, i int32, rep int) {
	if s.model == mIndependentCascade {
		run.seed(s.seed, sweepStream+uint64(i), uint64(rep))
		return
	}
	run.seed(s.seed, sweepStream, uint64(i))
}

// sweep computes the blast radius of the swept nodes (and their DebtRank under the
// DebtRank model): the expected failed value fraction when the node alone fails first.
func (sim *simulation) sweep(nodes []int32) ([]float64, []float64, error) {
	s := sim.s
	total := 0.0
	for _, v := range s.value {
		total += v
	}
	blast := make([]float64, len(nodes))
	var dr []float64
	if s.model == mDebtRank {
		dr = make([]float64, len(nodes))
	}
	ic := s.model == mIndependentCascade
	if !ic {
		err := sim.parallel(len(nodes), func(w, k int) {
			run := sim.runners[w]
			i := nodes[k]
			s.seedSweep(run, i, 0)
			o := run.run(nodes[k:k+1], nil)
			blast[k] = math.Min(1, o.failedValue/total)
			if dr != nil {
				dr[k] = math.Max(0, (o.loss-s.value[i])/total)
			}
		})
		return blast, dr, err
	}
	// Independent cascade: ICBlastRuns seeded runs per node, averaged in run order.
	fr := make([]float64, len(nodes)*ICBlastRuns)
	err := sim.parallel(len(fr), func(w, j int) {
		run := sim.runners[w]
		k := j / ICBlastRuns
		s.seedSweep(run, nodes[k], j%ICBlastRuns)
		o := run.run(nodes[k:k+1], nil)
		fr[j] = math.Min(1, o.failedValue/total)
	})
	for k := range blast {
		blast[k] = mean(fr[k*ICBlastRuns : (k+1)*ICBlastRuns])
	}
	return blast, dr, err
}

func (sim *simulation) nodeResults(first []firstStats, exact []float64, sweep []int32, blast, dr []float64) []NodeResult {
	s := sim.s
	n := len(s.ids)
	out := make([]NodeResult, n)
	runs := s.scen[0].runs
	en := s.model == mEisenbergNoe
	for i := 0; i < n; i++ {
		fails := int64(0)
		var q int64
		for _, f := range first {
			fails += int64(f.fails[i])
			if f.shortQ != nil {
				q += f.shortQ[i]
			}
		}
		out[i] = NodeResult{ID: s.ids[i], FailureProbability: float64(fails) / float64(runs)}
		if en {
			pbar := sim.m.pbar[i]
			var sf float64
			if exact != nil {
				sf = exact[i]
			} else {
				sf = pbar * (float64(q) / float64(runs) / quantScale)
			}
			sf = math.Min(pbar, math.Max(0, sf))
			pay := pbar - sf
			out[i].Payment, out[i].Shortfall = &pay, &sf
		}
	}
	for k, i := range sweep {
		b := blast[k]
		out[i].BlastRadius = &b
		if dr != nil {
			d := dr[k]
			out[i].DebtRank = &d
		}
	}
	slices.SortFunc(out, func(a, b NodeResult) int {
		switch {
		case a.BlastRadius != nil && b.BlastRadius == nil:
			return -1
		case a.BlastRadius == nil && b.BlastRadius != nil:
			return 1
		case a.BlastRadius != nil:
			if c := cmp.Compare(*b.BlastRadius, *a.BlastRadius); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.ID, b.ID)
	})
	for k := range out {
		out[k].Rank = k + 1
	}
	return out
}

// score fills the dimensions, score, band and verdict.
func (sim *simulation) score(res *Result, lambda2 float64, comps int, recov [][]float64) {
	s, g := sim.s, sim.g
	d := &res.Dimensions
	meanDeg := g.totalW / float64(g.n)
	conn := 0.0
	if meanDeg > 0 {
		conn = math.Min(1, lambda2/meanDeg)
	}
	d.Connectivity = Connectivity{Score: conn, AlgebraicConnectivity: lambda2, Components: comps}
	worst := 0
	for k, sr := range res.Scenarios {
		w := res.Scenarios[worst]
		if sr.CascadeProbability > w.CascadeProbability || (sr.CascadeProbability == w.CascadeProbability && sr.ExpectedLoss > w.ExpectedLoss) {
			worst = k
		}
		if sr.CascadeProbability >= SystemicCascadeProbability {
			res.SystemicRiskDetected = true
		}
	}
	wp := res.Scenarios[worst].CascadeProbability
	d.CascadeProbability = CascadeDimension{Score: 1 - wp, WorstScenario: res.Scenarios[worst].Name, Probability: wp}
	type dim struct{ score, weight float64 }
	dims := []dim{{conn, 0.15}, {1 - wp, 0.30}}
	if len(s.providers) > 0 {
		top, share, hhi := s.providerShares()
		d.Concentration = &Concentration{Score: 1 - hhi, HHI: hhi, TopProvider: s.providers[top], TopShare: share}
		dims = append(dims, dim{1 - hhi, 0.20})
	}
	if slices.Contains(s.hasHours, true) {
		sum, cnt := 0.0, 0
		for _, v := range recov[worst] {
			if v >= 0 {
				sum += v
				cnt++
			}
		}
		h := 0.0
		if cnt > 0 {
			h = sum / float64(cnt)
		}
		sc := 1 / (1 + h/24)
		d.Recovery = &Recovery{Score: sc, ExpectedRecoveryHours: h}
		dims = append(dims, dim{sc, 0.15})
	}
	lw, ws := 0.0, 0.0
	for _, x := range dims {
		lw += x.weight * math.Log(math.Max(0.01, x.score))
		ws += x.weight
	}
	res.Score = math.Round(1000*math.Exp(lw/ws)) / 10
	res.RiskBand = engine.RiskBand(res.Score)
}
