package drift

// shareSeries is the party's per-event benefit share v_ip/V_i on the events with any
// non-principal benefit (0 where the party gets nothing), with each element's event index.
func (p *prepared) shareSeries(party int) (x []float64, at []int) {
	if p.valued == nil {
		p.valued = make([]int, 0, p.cntV[p.n])
		for i := range p.ev {
			if p.total[i] > 0 {
				p.valued = append(p.valued, i)
			}
		}
	}
	x = scratch(&p.series, p.cntV[p.n])
	for _, e := range p.byParty[party] {
		x[p.cntV[e.i]] = e.share // the event's position among those with benefit
	}
	return x, p.valued
}

// instrSeries is the indicator "instructed by and benefiting the party" on every event,
// with each element's event index.
func (p *prepared) instrSeries(party int) (x []float64, at []int) {
	if p.identity == nil {
		p.identity = make([]int, p.n)
		for i := range p.identity {
			p.identity[i] = i
		}
	}
	x = scratch(&p.series, p.n)
	for _, e := range p.byParty[party] {
		if e.instr {
			x[e.i] = 1
		}
	}
	return x, p.identity
}

// lossSeries is the winsorized principal loss of the events that have one, with each
// element's event index.
func (p *prepared) lossSeries() (x []float64, at []int) {
	count := 0
	for _, ok := range p.hasLoss {
		if ok {
			count++
		}
	}
	x, at = make([]float64, 0, count), make([]int, 0, count)
	for i := range p.ev {
		if p.hasLoss[i] {
			x = append(x, p.wLoss[i])
			at = append(at, i)
		}
	}
	return x, at
}

// behaviourChange looks for the strongest statistically significant change in the
// agent's behaviour when no shadow principal was detected. The family of hypotheses is:
// for every tested party, a rise of its benefit share (the share scan of testParties,
// p-value pShare); and, over all events, a rise and a fall of the principal's loss (the
// same window scan on the winsorized loss). The principal value itself is left out: its
// level moves with the environment (prices, seasons), not only with the agent's choices.
// Holm's procedure at alpha runs over the whole family; the hypothesis with the smallest
// adjusted p-value, if ≤ alpha, is the change, and its onset is located by rampFit on the
// corresponding series. It returns the event index of that onset, or ok = false.
func (p *prepared) behaviourChange(tests []partyTest, alpha float64) (idx int, ok bool) {
	type candidate struct {
		p     float64
		party int // −1 for the principal's loss
	}
	var cands []candidate
	for _, t := range tests {
		cands = append(cands, candidate{p: t.pShare, party: t.party})
	}
	n := p.n
	starts := scanStarts(n, p.nb)
	rule := newOwenRule()
	if x, at := p.lossSeries(); len(x) >= 4 {
		// Prefix sums over the series; window j is the elements with event index ≥ s_j.
		cum := make([]sums, len(x)+1)
		for k, v := range x {
			cum[k+1] = cum[k]
			cum[k+1].add(v)
		}
		var up, down armScan
		G := len(starts)
		up.z, down.z = make([]float64, G), make([]float64, G)
		mw, rw := make([]float64, G), make([]float64, G)
		pos := 0
		for j, s := range starts {
			for pos < len(at) && at[pos] < s {
				pos++
			}
			ref, win := cum[pos], cum[len(x)]
			win.minus(ref)
			up.z[j] = riseZ(ref, win)
			down.z[j] = fallZ(ref, win)
			mw[j], rw[j] = win.n, ref.n
		}
		up.chain(mw, rw)
		down.a = up.a
		cands = append(cands, candidate{p: up.best(rule), party: -1}, candidate{p: down.best(rule), party: -1})
	}
	if len(cands) == 0 {
		return 0, false
	}
	pv := make([]float64, len(cands))
	for i, c := range cands {
		pv[i] = c.p
	}
	adj := holm(pv)
	best := -1
	for i := range cands {
		if adj[i] <= alpha && (best < 0 || adj[i] < adj[best]) {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	c := cands[best]
	var x []float64
	var at []int
	if c.party >= 0 {
		x, at = p.shareSeries(c.party)
	} else {
		x, at = p.lossSeries()
	}
	s, _, fit := rampFitIn(x, scratch(&p.prefix, 2*(len(x)+1)))
	if !fit {
		return 0, false
	}
	return at[s], true
}
