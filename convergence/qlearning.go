package convergence

import (
	"math"
	"math/rand/v2"
)

// QParams are the Q-learning settings of Calvano et al. (2020): a grid of Grid prices
// spanning [p_N − ξ(p_M − p_N), p_M + ξ(p_M − p_N)], one period of memory (the state is last
// period's pair of prices), learning rate Alpha, discount factor Delta, and ε-greedy
// exploration ε_t = exp(−Beta·t). Learning stops when neither agent's greedy strategy has
// changed in any state for Window consecutive periods, or after MaxIter periods.
type QParams struct {
	Alpha   float64
	Beta    float64
	Delta   float64
	Grid    int
	Xi      float64
	Window  int
	MaxIter int
}

// DefaultQParams are the paper's baseline (α = 0.15, δ = 0.95, m = 15, ξ = 0.1, convergence
// after 100,000 unchanged periods), except β = 2×10⁻⁵ — the fast end of the paper's grid of
// β values, instead of its baseline 4×10⁻⁶ — so a session converges in about 0.5 million
// periods instead of about 1.7 million.
var DefaultQParams = QParams{Alpha: 0.15, Beta: 2e-5, Delta: 0.95, Grid: 15, Xi: 0.1, Window: 100_000, MaxIter: 5_000_000}

// qSession is a pair of Q-learning agents pricing in the symmetric logit duopoly.
type qSession struct {
	m      int
	grid   []float64
	prof   [2][]float64 // prof[i][a1*m+a2]: agent i's profit at the price pair
	q      [2][]float64 // q[i][s*m+a]
	amax   [2][]int32   // greedy action per state
	vmax   [2][]float64 // its value
	state  int
	alpha  float64
	delta  float64
	iters  int
	conver bool
	pN, pM float64
}

// newQSession sets up the grid, the profit table and the paper's initial Q-values: the
// discounted payoff of each price when the rival randomises uniformly,
// Q₀(s, a_i) = Σ_{a_j} π_i(a_i, a_j) / ((1 − δ)·m).
func newQSession(prm QParams, r *rand.Rand) *qSession {
	pN, pM, _, _ := symmetricBenchmarks(2, 1, 0)
	m := prm.Grid
	s := &qSession{m: m, alpha: prm.Alpha, delta: prm.Delta, pN: pN, pM: pM}
	s.grid = make([]float64, m)
	lo, hi := pN-prm.Xi*(pM-pN), pM+prm.Xi*(pM-pN)
	for i := range s.grid {
		s.grid[i] = lo + (hi-lo)*float64(i)/float64(m-1)
	}
	mk := newLogitMarket(2, 0)
	c := []float64{1, 1}
	for ag := 0; ag < 2; ag++ {
		s.prof[ag] = make([]float64, m*m)
	}
	for a1 := 0; a1 < m; a1++ {
		for a2 := 0; a2 < m; a2++ {
			pr := mk.profits([]float64{s.grid[a1], s.grid[a2]}, c)
			s.prof[0][a1*m+a2], s.prof[1][a1*m+a2] = pr[0], pr[1]
		}
	}
	for ag := 0; ag < 2; ag++ {
		s.q[ag] = make([]float64, m*m*m)
		s.amax[ag] = make([]int32, m*m)
		s.vmax[ag] = make([]float64, m*m)
		for a := 0; a < m; a++ {
			v := 0.0
			for o := 0; o < m; o++ {
				if ag == 0 {
					v += s.prof[0][a*m+o]
				} else {
					v += s.prof[1][o*m+a]
				}
			}
			v /= (1 - prm.Delta) * float64(m)
			for st := 0; st < m*m; st++ {
				s.q[ag][st*m+a] = v
			}
		}
		for st := 0; st < m*m; st++ {
			s.refresh(ag, st)
		}
	}
	s.state = r.IntN(m * m)
	return s
}

// refresh recomputes the greedy action of a state; it reports whether it changed.
func (s *qSession) refresh(ag, st int) bool {
	row := s.q[ag][st*s.m : st*s.m+s.m]
	best := 0
	for a := 1; a < len(row); a++ {
		if row[a] > row[best] {
			best = a
		}
	}
	changed := s.amax[ag][st] != int32(best)
	s.amax[ag][st] = int32(best)
	s.vmax[ag][st] = row[best]
	return changed
}

// step plays one period with exploration probability eps for both agents, updates both
// Q-matrices and reports whether a greedy strategy changed.
func (s *qSession) step(r *rand.Rand, eps float64) (a1, a2 int, changed bool) {
	m := s.m
	st := s.state
	a1, a2 = int(s.amax[0][st]), int(s.amax[1][st])
	if eps > 0 {
		if r.Float64() < eps {
			a1 = r.IntN(m)
		}
		if r.Float64() < eps {
			a2 = r.IntN(m)
		}
	}
	ns := a1*m + a2
	for ag := 0; ag < 2; ag++ {
		a := a1
		if ag == 1 {
			a = a2
		}
		k := st*m + a
		nv := (1-s.alpha)*s.q[ag][k] + s.alpha*(s.prof[ag][ns]+s.delta*s.vmax[ag][ns])
		s.q[ag][k] = nv
		switch {
		case int32(a) == s.amax[ag][st]:
			if nv >= s.vmax[ag][st] {
				s.vmax[ag][st] = nv
			} else if s.refresh(ag, st) {
				changed = true
			}
		case nv > s.vmax[ag][st]:
			s.amax[ag][st] = int32(a)
			s.vmax[ag][st] = nv
			changed = true
		}
	}
	s.state = ns
	return a1, a2, changed
}

// train runs the learning process until convergence or MaxIter periods.
func (s *qSession) train(r *rand.Rand, prm QParams) {
	decay := math.Exp(-prm.Beta)
	eps := 1.0
	stable := 0
	t := 0
	for ; t < prm.MaxIter; t++ {
		_, _, changed := s.step(r, eps)
		eps *= decay
		if changed {
			stable = 0
		} else if stable++; stable >= prm.Window {
			s.conver = true
			t++
			break
		}
	}
	s.iters = t
}
