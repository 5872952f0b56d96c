package cascade

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"riskapi/engine"
)

// Merge combines the results of every chunk of the plan, given in chunk order (0, 1, …,
// Chunks() − 1, each once), into the Result that Analyze gives for the plan's input. It is
// NewMerger, Add for each result, and Result.
func (p *Plan) Merge(results []*ChunkResult) (Result, error) {
	m := p.NewMerger()
	for _, c := range results {
		if err := m.Add(c); err != nil {
			return Result{}, err
		}
	}
	return m.Result()
}

// Merger combines chunk results one at a time, in chunk order, so that a process can read
// them one by one (from a database, say) and hold only the runs' failed fractions and
// losses (16 bytes a run, which the scenarios' quantiles need) instead of every chunk.
type Merger struct {
	p       *Plan
	next    int   // the next chunk Add takes
	nextRun int64 // the next run of the sequence (see Plan)
	// chunk 0
	structure  bool
	lambda2    float64
	components int
	scen       []scenAcc
	// the first scenario's per-node tallies (see firstPart)
	fails  []int64
	shortQ []int64
	exact  []float64
	// the blast-radius runs' failed fractions and DebtRanks, by sweep run
	sweep, dr []float64
}

// scenAcc is a scenario's outcomes so far. Sums that the statistics take in run order
// (the recovery hours, the shortfall's compensated sum) are kept as running sums: the runs
// arrive in order, so they are the sums Analyze computes.
type scenAcc struct {
	frac, loss []float64
	sumRounds  int64
	maxRounds  int32
	recovSum   float64
	recovCount int
	short      neumaier
}

// NewMerger starts merging the plan's chunk results.
func (p *Plan) NewMerger() *Merger {
	return &Merger{p: p, scen: make([]scenAcc, len(p.s.scen))}
}

// Add merges the next chunk's result. Results must come in chunk order, each chunk once;
// a result of another plan (another input, chunk size or engine version: see Plan.ID) is
// refused.
func (m *Merger) Add(c *ChunkResult) error {
	if c == nil || c.part == nil {
		return fmt.Errorf("cascade: merging chunk %d: no result", m.next)
	}
	if c.plan != m.p && c.plan.idBytes() != m.p.idBytes() {
		return fmt.Errorf("cascade: chunk %d belongs to plan %s, not to plan %s", c.chunk, c.plan.ID(), m.p.ID())
	}
	if c.chunk != m.next {
		return fmt.Errorf("cascade: chunk %d given where chunk %d is next: chunks merge in order, each once", c.chunk, m.next)
	}
	if c.chunk > 0 {
		if lo, hi := m.p.runRange(c.chunk); c.part.lo != lo || c.part.hi != hi {
			return fmt.Errorf("cascade: chunk %d holds runs [%d, %d), not [%d, %d)", c.chunk, c.part.lo, c.part.hi, lo, hi)
		}
	}
	m.addPartial(c.part)
	m.next++
	return nil
}

// addPartial merges a partial: the structure, or the next runs of the sequence. The
// outcomes of a scenario whose runs all lie in the partial are taken over, not copied.
func (m *Merger) addPartial(part *partial) {
	p := m.p
	if part.structure {
		m.structure, m.lambda2, m.components = true, part.lambda2, part.components
		return
	}
	m.nextRun = part.hi
	for _, sp := range part.scen {
		acc := &m.scen[sp.k]
		runs := p.s.scen[sp.k].runs
		if sp.lo == 0 && sp.hi == runs {
			acc.frac, acc.loss = sp.frac, sp.loss
		} else {
			if acc.frac == nil {
				acc.frac, acc.loss = make([]float64, runs), make([]float64, runs)
			}
			copy(acc.frac[sp.lo:sp.hi], sp.frac)
			copy(acc.loss[sp.lo:sp.hi], sp.loss)
		}
		for _, r := range sp.rounds {
			acc.sumRounds += int64(r)
			acc.maxRounds = max(acc.maxRounds, r)
		}
		for _, v := range sp.recov {
			if v >= 0 {
				acc.recovSum += v
				acc.recovCount++
			}
		}
		for _, v := range sp.short {
			acc.short.add(v)
		}
	}
	if f := part.first; f != nil {
		n := len(p.s.ids)
		if m.fails == nil {
			m.fails = make([]int64, n)
		}
		for i, v := range f.fails {
			m.fails[i] += int64(v)
		}
		if f.shortQ != nil {
			if m.shortQ == nil {
				m.shortQ = make([]int64, n)
			}
			for i, v := range f.shortQ {
				m.shortQ[i] += v
			}
		}
		if f.exact != nil {
			m.exact = f.exact
		}
	}
	if sw := part.sweep; sw != nil {
		runs := len(p.sweep) * p.reps
		switch {
		case sw.lo == 0 && sw.hi == runs:
			m.sweep, m.dr = sw.frac, sw.dr
		default:
			if m.sweep == nil {
				m.sweep = make([]float64, runs)
				if sw.dr != nil {
					m.dr = make([]float64, runs)
				}
			}
			copy(m.sweep[sw.lo:sw.hi], sw.frac)
			if sw.dr != nil {
				copy(m.dr[sw.lo:sw.hi], sw.dr)
			}
		}
	}
}

// Result is the merged Result; every chunk must have been added.
func (m *Merger) Result() (Result, error) {
	if m.next != m.p.chunks {
		return Result{}, fmt.Errorf("cascade: %d of the plan's %d chunks were merged", m.next, m.p.chunks)
	}
	return m.result()
}

func (m *Merger) result() (Result, error) {
	p, s := m.p, m.p.s
	if !m.structure || m.nextRun != p.total {
		return Result{}, fmt.Errorf("cascade: internal error: merged %d of %d runs (structure: %v)", m.nextRun, p.total, m.structure)
	}
	res := Result{Model: s.modelName, Seed: s.seed, Simulations: s.sims, MethodVersion: MethodVersion,
		Scenarios: make([]ScenarioResult, len(s.scen))}
	for k := range s.scen {
		sc, acc := &s.scen[k], &m.scen[k]
		sr := summariseRuns(sc.name, sc.typ, acc.frac, acc.loss, acc.sumRounds, int(acc.maxRounds), s.sysThres)
		if s.model == mEisenbergNoe {
			t := acc.short.mean()
			sr.TotalShortfall = &t
		}
		res.Scenarios[k] = sr
		acc.frac, acc.loss = nil, nil // summarised: let them go
	}
	blast := make([]float64, len(p.sweep))
	var dr []float64
	if m.dr != nil {
		dr = make([]float64, len(p.sweep))
	}
	for k := range blast {
		// Independent cascade averages the node's ICBlastRuns runs in run order.
		blast[k] = m.sweep[k]
		if p.reps > 1 {
			blast[k] = mean(m.sweep[k*p.reps : (k+1)*p.reps])
		}
		if dr != nil {
			dr[k] = m.dr[k]
		}
	}
	res.Nodes = p.nodeResults(m.fails, m.shortQ, m.exact, blast, dr)
	p.score(&res, m.lambda2, m.components, m.scen)
	return res, nil
}

func (p *Plan) nodeResults(fails, shortQ []int64, exact []float64, blast, dr []float64) []NodeResult {
	s := p.s
	n := len(s.ids)
	out := make([]NodeResult, n)
	runs := s.scen[0].runs
	en := s.model == mEisenbergNoe
	for i := 0; i < n; i++ {
		out[i] = NodeResult{ID: s.ids[i], FailureProbability: float64(fails[i]) / float64(runs)}
		if en {
			pbar := p.m.pbar[i]
			var sf float64
			if exact != nil {
				sf = exact[i]
			} else {
				sf = pbar * (float64(shortQ[i]) / float64(runs) / quantScale)
			}
			sf = math.Min(pbar, math.Max(0, sf))
			pay := pbar - sf
			out[i].Payment, out[i].Shortfall = &pay, &sf
		}
	}
	for k, i := range p.sweep {
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
func (p *Plan) score(res *Result, lambda2 float64, comps int, scen []scenAcc) {
	s, g := p.s, p.g
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
	if p.hours {
		h := 0.0
		if acc := scen[worst]; acc.recovCount > 0 {
			h = acc.recovSum / float64(acc.recovCount)
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
