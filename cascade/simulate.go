package cascade

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// Analyze validates the input (unless Validate already did), runs every scenario (Monte
// Carlo over in.Run.Workers goroutines, each run with its own generator derived from (seed,
// scenario, run), so the result is the same whatever the number of workers), sweeps the
// blast radius of the nodes, and scores the network. Bad input returns an
// *engine.InputError; a cancelled ctx stops every worker before its next run (the long
// models also look between rounds) and returns ctx's error. It is a Plan's work made in
// one process: every run in one slice, then chunk 0, merged (see Plan).
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

// simulation is one slice of a plan's runs being made: the plan, the model (with this
// slice's cancel flag) and one runner per worker.
type simulation struct {
	ctx     context.Context
	p       *Plan
	s       *spec
	g       *network
	m       *model
	workers int
	runners []*runner
	prog    *progress
	stop    atomic.Bool
	// noTallies skips the first scenario's per-node tallies (benchmarks of the runs alone).
	noTallies bool
	// single holds the outcome of each single-node cascade a grouped scenario of the slice
	// made (exact reuse): the blast-radius sweep, whose runs are those cascades, takes them.
	single map[int32]runOut
}

// simulate is Analyze on a compiled input: the same plan, runs and merge as a chunked
// simulation, with every run made in one slice (docs/methods/cascade.md, "Chunked runs").
func simulate(ctx context.Context, s *spec, opt Options) (Result, error) {
	p, err := newPlan(ctx, s, opt)
	if err != nil {
		return Result{}, err
	}
	prog := &progress{fn: opt.Progress, total: p.total, step: max(1, p.total/200)}
	runs, err := p.runRuns(ctx, 0, p.total, prog)
	if err != nil {
		return Result{}, err
	}
	structure, err := p.runStructure(ctx)
	if err != nil {
		return Result{}, err
	}
	prog.finish()
	m := p.NewMerger()
	m.addPartial(structure)
	m.addPartial(runs) // the merger takes the outcomes over: they are not copied
	return m.result()
}

// newSimulation prepares the making of units runs: at most opt.Workers runners.
func (p *Plan) newSimulation(ctx context.Context, units int64, prog *progress) *simulation {
	if prog == nil {
		prog = &progress{}
	}
	workers := int(min(int64(p.opt.workers()), max(1, units)))
	sim := &simulation{ctx: ctx, p: p, s: p.s, g: p.g, workers: workers, prog: prog}
	m := *p.m
	m.stop = &sim.stop
	sim.m = &m
	sim.runners = p.takeRunners(workers)
	for w, r := range sim.runners {
		if r == nil {
			sim.runners[w] = newRunner(sim.m)
		} else {
			r.m = sim.m
		}
	}
	return sim
}

// takeRunners takes up to n runners that earlier chunks of the plan left (nil for the
// others): a process running many chunks of one plan allocates its runners' per-node
// arrays once instead of once a chunk (they cost ≈ 0.2 ms a chunk at 2,500 nodes, GC
// included).
func (p *Plan) takeRunners(n int) []*runner {
	out := make([]*runner, n)
	p.poolMu.Lock()
	defer p.poolMu.Unlock()
	k := min(n, len(p.pool))
	copy(out, p.pool[len(p.pool)-k:])
	clear(p.pool[len(p.pool)-k:])
	p.pool = p.pool[:len(p.pool)-k]
	return out
}

// release gives the simulation's runners back to the plan, unless it was stopped: a run
// cut short may leave a runner's state mid-run.
func (sim *simulation) release() {
	if sim.stop.Load() {
		return
	}
	p := sim.p
	p.poolMu.Lock()
	defer p.poolMu.Unlock()
	p.pool = append(p.pool, sim.runners...)
}

// runRuns makes runs [lo, hi) of the plan's run sequence (see Plan).
func (p *Plan) runRuns(ctx context.Context, lo, hi int64, prog *progress) (*partial, error) {
	sim := p.newSimulation(ctx, hi-lo, prog)
	stopOnCancel := context.AfterFunc(ctx, func() { sim.stop.Store(true) })
	defer func() {
		stopOnCancel()
		sim.release()
	}()
	part := &partial{lo: lo, hi: hi}
	segs, sweepLo, sweepHi := p.layout(lo, hi)
	ks := make([]int, len(segs))
	for j, sg := range segs {
		ks[j] = sg.k
	}
	if err := p.resolveAttacks(ctx, ks); err != nil {
		return nil, err
	}
	for _, sg := range segs {
		sp, fp, err := sim.runScenario(sg.k, sg.lo, sg.hi)
		if err != nil {
			return nil, err
		}
		part.scen = append(part.scen, sp)
		if fp != nil {
			part.first = fp
		}
	}
	if sweepLo < sweepHi {
		sw, err := sim.sweep(sweepLo, sweepHi)
		if err != nil {
			return nil, err
		}
		part.sweep = sw
	}
	return part, nil
}

// segment is the runs [lo, hi) of scenario k.
type segment struct{ k, lo, hi int }

// layout cuts runs [lo, hi) of the run sequence into the scenarios' runs and the
// blast-radius runs [sweepLo, sweepHi) it holds.
func (p *Plan) layout(lo, hi int64) (segs []segment, sweepLo, sweepHi int) {
	nScen := len(p.s.scen)
	for k := 0; k < nScen; k++ {
		a, b := max(lo, p.starts[k]), min(hi, p.starts[k+1])
		if a < b {
			segs = append(segs, segment{k, int(a - p.starts[k]), int(b - p.starts[k])})
		}
	}
	base := p.starts[nScen]
	if a, b := max(lo, base), min(hi, p.total); a < b {
		sweepLo, sweepHi = int(a-base), int(b-base)
	}
	return segs, sweepLo, sweepHi
}

// resolveAttacks sets the first failures of every targeted attack: the count nodes with
// the largest score(by), each measure's scores computed once (Estimate's pilot; a Plan
// resolves its attacks on first use, see Plan.resolveAttacks).
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
// taken in turn; which worker makes which i does not affect the result. Each i counts as
// units(i) runs of the progress (one when units is nil).
func (sim *simulation) parallel(total int, units func(i int) int64, fn func(w, i int)) error {
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
				done := int64(hi - lo)
				if units != nil {
					done = 0
				}
				for i := lo; i < hi && !sim.stop.Load(); i++ {
					fn(w, i)
					if units != nil {
						done += units(i)
					}
				}
				sim.prog.add(done)
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

// runScenario makes runs [lo, hi) of scenario k. For the first scenario it also tallies
// per node (see firstPart).
func (sim *simulation) runScenario(k, lo, hi int) (scenPart, *firstPart, error) {
	p, s := sim.p, sim.s
	n := len(s.ids)
	N := hi - lo
	sp := scenPart{k: k, lo: lo, hi: hi, frac: make([]float64, N), loss: make([]float64, N), rounds: make([]int32, N)}
	if p.hours {
		sp.recov = make([]float64, N)
	}
	en := s.model == mEisenbergNoe
	if en {
		sp.short = make([]float64, N)
	}
	isFirst := k == 0 && !sim.noTallies
	var fs []firstStats
	var fp *firstPart
	if isFirst {
		fs = make([]firstStats, sim.workers)
		for w := range fs {
			fs[w].fails = ownLines[int32](n)
			if p.first == firstShortfallSums {
				fs[w].shortQ = ownLines[int64](n)
			}
		}
		fp = &firstPart{}
		if p.first == firstExactShortfalls {
			fp.exact = make([]float64, n)
		}
	}
	draw := newScenarioDraw(s, k)
	total := p.valueΣ
	// record stores run j's outcome; tally adds the failures (and Eisenberg–Noe shortfalls)
	// the runner's last run left, weight times, to worker w's tallies of the first scenario.
	record := func(j int, o runOut) {
		sp.frac[j] = math.Min(1, o.failedValue/total)
		sp.loss[j] = o.loss
		sp.rounds[j] = int32(o.rounds)
		if sp.recov != nil {
			sp.recov[j] = -1
			if o.recovDen > 0 {
				sp.recov[j] = o.recovNum / o.recovDen
			}
		}
		if en {
			sp.short[j] = o.shortfall
		}
	}
	tally := func(w int, run *runner, weight int32) {
		if !isFirst {
			return
		}
		for _, i := range run.failed {
			fs[w].fails[i] += weight
		}
		if en {
			for _, i := range run.touched {
				sf := sim.m.pbar[i] - run.pay[i]
				if fp.exact != nil {
					fp.exact[i] = sf
				} else if sf > 0 {
					fs[w].shortQ[i] += int64(weight) * int64(math.Round(sf/sim.m.pbar[i]*quantScale))
				}
			}
		}
	}
	var err error
	if _, reuse := s.distinctRuns(k); reuse && N > 1 && !p.opt.everyRun {
		err = sim.runGrouped(draw, lo, N, record, tally)
	} else {
		err = sim.parallel(N, nil, func(w, j int) {
			run := sim.runners[w]
			record(j, run.run(draw.start(run, lo+j), draw.shock))
			tally(w, run, 1)
		})
	}
	if err != nil {
		return scenPart{}, nil, err
	}
	if isFirst {
		// The workers' tallies are integers: their sum does not depend on who made which run.
		fp.fails = fs[0].fails
		fp.shortQ = fs[0].shortQ
		for _, f := range fs[1:] {
			for i, v := range f.fails {
				fp.fails[i] += v
			}
			for i, v := range f.shortQ {
				fp.shortQ[i] += v
			}
		}
	}
	return sp, fp, nil
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

// sweep makes blast-radius runs [lo, hi) (see sweepPart): the failed value fraction when
// the swept node alone fails first (and its DebtRank under the DebtRank model).
func (sim *simulation) sweep(lo, hi int) (*sweepPart, error) {
	p, s := sim.p, sim.s
	total := p.valueΣ
	sw := &sweepPart{lo: lo, hi: hi, frac: make([]float64, hi-lo)}
	if s.model == mDebtRank {
		sw.dr = make([]float64, hi-lo)
	}
	err := sim.parallel(hi-lo, nil, func(w, t int) {
		run := sim.runners[w]
		j := lo + t
		k := j / p.reps
		i := p.sweep[k]
		o, made := sim.single[i]
		if !made {
			s.seedSweep(run, i, j%p.reps)
			o = run.run(p.sweep[k:k+1], nil)
		}
		sw.frac[t] = math.Min(1, o.failedValue/total)
		if sw.dr != nil {
			sw.dr[t] = math.Max(0, (o.loss-s.value[i])/total)
		}
	})
	if err != nil {
		return nil, err
	}
	return sw, nil
}
