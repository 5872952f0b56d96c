package convergence

import "math"

// logitMarket is the differentiated-products Bertrand market of Calvano, Calzolari,
// Denicolò & Pastorello (2020): firm i sells
//
//	q_i = exp((a_i − p_i)/μ) / (Σ_j exp((a_j − p_j)/μ) + exp(a₀/μ))
//
// (a market of size 1), with product quality a_i, outside good a₀ and horizontal
// differentiation μ. Their baseline is a_i = 2, c_i = 1, a₀ = 0, μ = 0.25.
type logitMarket struct {
	a  []float64
	a0 float64
	mu float64
}

func newLogitMarket(n int, a0 float64) logitMarket {
	a := make([]float64, n)
	for i := range a {
		a[i] = 2
	}
	return logitMarket{a: a, a0: a0, mu: 0.25}
}

// shares writes the market shares at prices p into q.
func (m logitMarket) shares(p, q []float64) {
	// Subtract the largest exponent for stability.
	top := m.a0 / m.mu
	for i := range p {
		top = math.Max(top, (m.a[i]-p[i])/m.mu)
	}
	s := math.Exp(m.a0/m.mu - top)
	for i := range p {
		q[i] = math.Exp((m.a[i]-p[i])/m.mu - top)
		s += q[i]
	}
	for i := range q {
		q[i] /= s
	}
}

// nash solves the first-order conditions p_i = c_i + μ/(1 − q_i(p)) of the one-shot Bertrand–
// Nash equilibrium for the firms with free[i] (all when free is nil), the others' prices
// fixed at p's values; p is the starting point and is overwritten.
func (m logitMarket) nash(c, p []float64, free []bool) {
	q := make([]float64, len(p))
	for it := 0; it < 2000; it++ {
		m.shares(p, q)
		d := 0.0
		for i := range p {
			if free != nil && !free[i] {
				continue
			}
			np := c[i] + m.mu/(1-q[i])
			d = math.Max(d, math.Abs(np-p[i]))
			p[i] = 0.5*p[i] + 0.5*np
		}
		if d < 1e-12 {
			return
		}
	}
}

// coalitionNash solves the equilibrium in which the members act as one multi-product firm
// (for logit demand its optimal markup is common: p_i − c_i = μ/(1 − Σ_{j∈K} q_j)) and the
// other firms best-respond (p_i = c_i + μ/(1 − q_i)); p is the starting point.
func (m logitMarket) coalitionNash(c, p []float64, member []bool) {
	q := make([]float64, len(p))
	for it := 0; it < 2000; it++ {
		m.shares(p, q)
		qk := 0.0
		for i := range q {
			if member[i] {
				qk += q[i]
			}
		}
		d := 0.0
		for i := range p {
			np := c[i] + m.mu/(1-q[i])
			if member[i] {
				np = c[i] + m.mu/(1-qk)
			}
			d = math.Max(d, math.Abs(np-p[i]))
			p[i] = 0.5*p[i] + 0.5*np
		}
		if d < 1e-12 {
			return
		}
	}
}

// nashPrices is the Bertrand–Nash equilibrium at costs c.
func (m logitMarket) nashPrices(c []float64) []float64 {
	p := make([]float64, len(c))
	for i := range p {
		p[i] = c[i] + m.mu
	}
	m.nash(c, p, nil)
	return p
}

// monopolyPrices maximises the joint profit of all firms: the optimal markup is common,
// m = p_i − c_i = μ/q₀(m) with q₀ the outside good's share; m − μ/q₀(m) increases in m, so
// the root is found by bisection.
func (m logitMarket) monopolyPrices(c []float64) []float64 {
	n := len(c)
	p := make([]float64, n)
	q := make([]float64, n)
	gap := func(mk float64) float64 {
		for i := range p {
			p[i] = c[i] + mk
		}
		m.shares(p, q)
		q0 := 1.0
		for _, v := range q {
			q0 -= v
		}
		return mk - m.mu/q0
	}
	lo, hi := 0.0, m.mu
	for gap(hi) < 0 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if gap(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	mk := (lo + hi) / 2
	for i := range p {
		p[i] = c[i] + mk
	}
	return p
}

// profits returns each firm's profit (p_i − c_i)·q_i at prices p.
func (m logitMarket) profits(p, c []float64) []float64 {
	q := make([]float64, len(p))
	m.shares(p, q)
	out := make([]float64, len(p))
	for i := range p {
		out[i] = (p[i] - c[i]) * q[i]
	}
	return out
}

// symmetricBenchmarks are the Nash and monopoly price and per-firm profit of n firms with
// common cost c.
func symmetricBenchmarks(n int, c, a0 float64) (pN, pM, piN, piM float64) {
	m := newLogitMarket(n, a0)
	cs := make([]float64, n)
	for i := range cs {
		cs[i] = c
	}
	nash := m.nashPrices(cs)
	mono := m.monopolyPrices(cs)
	return nash[0], mono[0], m.profits(nash, cs)[0], m.profits(mono, cs)[0]
}
