package cascade

import (
	"math"
	"slices"
	"unsafe"
)

// Exact reuse of deterministic cascades (docs/methods/cascade.md, "Exact reuse").
//
// Under the threshold, DebtRank and Eisenberg–Noe models a run is a deterministic function
// of its initial failures: the only random draw of a random_node or random_failure run is
// which nodes fail first. 10,000 runs with one random node failing first on 1,000 nodes
// have at most 1,000 distinct outcomes (on average 1,000·(1 − (1 − 1/1,000)^10,000) ≈
// 1,000), so the runs of such a scenario are grouped by their initial failures, each
// distinct cascade is made once, and every run of its group gets its outcome. The key is
// the exact sequence of initial failures in the order drawn (a run adds its failed values
// in that order), so every run's outcome — and the result's bytes — are those of making it
// alone. Independent cascade draws along the way and is never grouped.

// maxReuseInit is the most initial failures a grouped run may have on average: the keys of
// a slice's runs are held at once.
const maxReuseInit = 8

// reuseShare is the largest expected share of distinct runs for which grouping pays: above
// it, almost every run is new and grouping would only add its bookkeeping.
const reuseShare = 0.5

// distinctRuns is the expected number of distinct initial-failure sequences among the
// scenario's runs and whether its runs are grouped (exact reuse). random_node with count k
// over n nodes draws one of M = n!/(n−k)! equally likely sequences: M·(1 − (1 − 1/M)^N)
// distinct in N runs. random_failure counts the empty draw and each single failure exactly
// and takes every draw of two failures or more as new (an upper bound: the estimate of a
// scenario whose pairs repeat is high, never low).
func (s *spec) distinctRuns(k int) (d float64, reuse bool) {
	sc := &s.scen[k]
	N := float64(sc.runs)
	if s.model == mIndependentCascade || !sc.stochastic || sc.runs < 2 {
		return N, false
	}
	n := len(s.ids)
	switch sc.typ {
	case TypeRandomNode:
		if sc.count > maxReuseInit {
			return N, false
		}
		logM := 0.0
		for j := 0; j < sc.count; j++ {
			logM += math.Log(float64(n - j))
		}
		d = distinctOf(logM, N)
	case TypeRandomFailure:
		var probs []float64
		if sc.hasProb {
			if float64(n)*sc.prob > maxReuseInit {
				return N, false
			}
		} else {
			mean := 0.0
			for _, p := range s.failP {
				mean += p
			}
			if mean > maxReuseInit {
				return N, false
			}
			probs = s.failP
		}
		d = s.distinctFailures(sc, probs, N)
	default:
		return N, false
	}
	return d, d <= reuseShare*N
}

// distinctOf is the expected number of distinct values among N draws from M = e^logM
// equally likely ones: M·(1 − (1 − 1/M)^N), at most N.
func distinctOf(logM, N float64) float64 {
	if logM > 50 {
		return N
	}
	M := math.Exp(logM)
	return math.Min(N, -M*math.Expm1(N*math.Log1p(-1/M)))
}

// distinctFailures bounds the distinct draws of a random_failure scenario from above: the
// empty draw and each single failure exactly, every larger draw as new. probs nil means
// sc.prob for every node.
func (s *spec) distinctFailures(sc *scenario, probs []float64, N float64) float64 {
	n := len(s.ids)
	// logNone is log P(no failure) over the nodes that may or may not fail; a single
	// failure of i among them has probability P(none)·qᵢ/(1 − qᵢ). A node that always fails
	// is in every draw and tells no two draws apart: it is left out.
	q := func(i int) float64 {
		if probs == nil {
			return sc.prob
		}
		return probs[i]
	}
	logNone := 0.0
	for i := 0; i < n; i++ {
		if p := q(i); p < 1 {
			logNone += math.Log1p(-p)
		}
	}
	seen := func(p float64) float64 { return -math.Expm1(N * math.Log1p(-p)) } // P(drawn at least once)
	none := math.Exp(logNone)
	d, single := seen(none), 0.0
	for i := 0; i < n; i++ {
		p := q(i)
		if p <= 0 || p >= 1 {
			continue
		}
		pi := none * p / (1 - p)
		single += pi
		d += seen(pi)
	}
	more := math.Max(0, 1-none-single)
	return math.Min(N, d+N*more)
}

// runGroups are the runs [lo, hi) of a grouped scenario by their initial failures: the
// distinct sequences (flat, with offsets) and, per run, the index of its sequence.
type runGroups struct {
	inits  []int32
	starts []int // sequence d is inits[starts[d]:starts[d+1]]
	runOf  []int32
	mult   []int32 // runs per distinct sequence
}

// groupRuns draws the initial failures of runs [lo, hi) (keys, made by the workers) and
// groups them: sequences in order of first appearance, so the grouping is a function of the
// runs alone.
func groupRuns(keys [][]int32) *runGroups {
	g := &runGroups{runOf: make([]int32, len(keys)), starts: []int{0}}
	index := make(map[string]int32, len(keys)/4)
	for j, key := range keys {
		k := keyString(key)
		d, ok := index[k]
		if !ok {
			d = int32(len(g.mult))
			index[k] = d
			g.inits = append(g.inits, key...)
			g.starts = append(g.starts, len(g.inits))
			g.mult = append(g.mult, 0)
		}
		g.runOf[j] = d
		g.mult[d]++
	}
	return g
}

func (g *runGroups) init(d int) []int32 { return g.inits[g.starts[d]:g.starts[d+1]] }

// keyString views a sequence's bytes as a string without copying them: the map keeps the
// view, so a sequence must not change while its map lives (groupRuns' keys do not).
func keyString(key []int32) string {
	if len(key) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(&key[0])), 4*len(key))
}

// runGrouped makes runs [lo, lo+N) of a grouped scenario: the workers draw each run's
// initial failures, the runs are grouped by them, each distinct cascade is made once (and
// tallied once per run of its group), and every run records its group's outcome. The
// progress counts a distinct cascade as the runs of its group.
func (sim *simulation) runGrouped(draw *scenarioDraw, lo, N int, record func(j int, o runOut), tally func(w int, run *runner, weight int32)) error {
	keys := make([][]int32, N)
	none := func(int) int64 { return 0 }
	if err := sim.parallel(N, none, func(w, j int) {
		keys[j] = slices.Clone(draw.start(sim.runners[w], lo+j))
	}); err != nil {
		return err
	}
	g := groupRuns(keys)
	outs := make([]runOut, len(g.mult))
	if err := sim.parallel(len(outs), func(d int) int64 { return int64(g.mult[d]) }, func(w, d int) {
		run := sim.runners[w]
		outs[d] = run.run(g.init(d), draw.shock)
		tally(w, run, g.mult[d])
	}); err != nil {
		return err
	}
	for j, d := range g.runOf {
		record(j, outs[d])
	}
	if draw.shock == nil {
		// A single-node cascade without a shock is a blast-radius run of that node.
		for d := range outs {
			if init := g.init(d); len(init) == 1 {
				if sim.single == nil {
					sim.single = make(map[int32]runOut, len(outs))
				}
				sim.single[init[0]] = outs[d]
			}
		}
	}
	return nil
}
