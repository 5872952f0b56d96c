package drift

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"riskapi/engine"
)

// instrWeight is the share of each party's level given to the instruction path when that
// path can reject at all (see testParties).
const instrWeight = 0.2

// CUSUM design for first_detected_at: reference value k is half the standardised shift
// (clamped to [0.1, 1]); threshold h = 8 gives an in-control run length of several
// thousand events for k ≥ 0.25 (Siegmund's approximation).
const cusumH = 8.0

type benefit struct {
	party int
	value float64
}

// prepared holds the per-event quantities every test reads.
type prepared struct {
	ev          []Event
	n, nb       int
	isPrincipal func(string) bool
	names       []string
	// ben[off[i]:off[i+1]]: non-principal parties with value > 0 on event i (aggregated
	// per party); see benefits.
	ben     []benefit
	off     []int
	total   []float64 // Σ non-principal beneficiary value of event i
	cntV    []int     // prefix count of events with total > 0
	loss    []float64 // principal loss of event i (valid when hasLoss)
	hasLoss []bool
	basePV  float64 // mean principal value over baseline events that have one
	// wLoss, wPV: loss and principal value winsorized on the harmful side and centred
	// (winsorize).
	wLoss, wPV []float64
	// stratum[i] is the action stratum of event i, of strata in all (see strata).
	stratum []int
	strata  int
	// byParty[k]: the events party k benefits from, in event order; hasInstr: some event
	// carries instructed_by; instructs[k]: party k instructed a monitoring event it
	// benefits from (indexParties).
	byParty   [][]partyEvent
	hasInstr  bool
	instructs []bool
	// baseTotal: Σ total over the baseline, in event order; baseOver of baseOverN baseline
	// events with overridden set were overridden. Each description reads them.
	baseTotal           float64
	baseOver, baseOverN int
	// valued and identity: the event indices of the share series and of the instruction
	// series, made once for every description that needs them (shareSeries, instrSeries).
	valued, identity []int
	// series and prefix: the memory of one party's series and of its fit's prefix sums,
	// reused by the next description (a fresh 2.4 MB a party at 100,000 events kept the
	// collector busy).
	series, prefix []float64
}

// scratch returns n zeros in *buf, growing it when it is too short.
func scratch(buf *[]float64, n int) []float64 {
	if cap(*buf) < n {
		*buf = make([]float64, n)
	}
	s := (*buf)[:n]
	clear(s)
	return s
}

// Analyze analyses an agent's events. It takes the events in timestamp order (stable for
// equal timestamps; it never modifies in.Events), splits them into baseline and
// monitoring, tests every non-principal party that benefits from a monitoring event, and
// reports the detected shadow principals; when there are none, the top-level change point
// is the strongest significant change in the agent's behaviour, if any
// (method: docs/methods/drift.md).
// It validates the input first (the events only unless Validate already checked them) and
// returns an *engine.InputError when the input cannot be analysed. It then estimates the
// work (Estimate) and refuses work above in.Budget (default engine.DefaultSyncBudget) with
// WORK_LIMIT_EXCEEDED before starting it; describing detected parties beyond the first
// costs a pass over the events each, so once the tests have found them it checks the
// budget again with their number. It returns ctx's error once ctx ends: ctx is checked in
// every loop over the events or the parties, so the analysis stops within milliseconds.
func Analyze(ctx context.Context, in Input) (Analysis, error) {
	budget := in.Budget
	if budget <= 0 {
		budget = engine.DefaultSyncBudget
	}
	return analyze(ctx, in, budget)
}

// analyze is Analyze with the CPU budget it refuses work above.
func analyze(ctx context.Context, in Input, budget time.Duration) (Analysis, error) {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	stopped := stop.Load
	if err := in.validateForAnalysis(stopped); err != nil {
		if err == errStopped {
			return Analysis{}, ctx.Err()
		}
		return Analysis{}, err
	}
	work := measureWorkload(&in, stopped)
	if err := ctx.Err(); err != nil {
		return Analysis{}, err
	}
	cost := work.cost()
	if err := cost.Within(budget); err != nil {
		return Analysis{}, err
	}
	alpha := DefaultSensitivity
	if in.Sensitivity != nil {
		alpha = *in.Sensitivity
	}
	n := len(in.Events)
	// Analyze never modifies the events: they are read in place when already in time
	// order, else from a stably sorted copy.
	ev := in.Events
	if !work.sorted {
		ev = sortedByTime(ev)
	}

	nb := n * 3 / 10
	if b := in.Baseline; b != nil && b.Until != nil {
		nb = 0
		for nb < n && ev[nb].Timestamp.Before(*b.Until) {
			nb++
		}
	} else if b != nil && b.Fraction != nil {
		nb = int(math.Floor(*b.Fraction * float64(n)))
	}
	if nb < 1 || nb > n-1 {
		return Analysis{}, engine.Invalid("", "baseline", "object (a baseline that leaves both parts non-empty)", "object",
			"baseline leaves %d of the %d events in the baseline; both the baseline and the monitoring part need events.", nb, n)
	}
	if err := ctx.Err(); err != nil {
		return Analysis{}, err
	}

	principal := ""
	if in.PrincipalID != nil {
		principal = *in.PrincipalID
	}
	p := prepare(ev, nb, principal, stopped)
	if err := ctx.Err(); err != nil {
		return Analysis{}, err
	}
	res := Analysis{
		AgentID:          in.AgentID,
		ShadowPrincipals: []ShadowPrincipal{},
		EventsAnalyzed:   n,
		MethodVersion:    MethodVersion,
		Window: Window{
			Baseline:   Span{From: ev[0].Timestamp, To: ev[nb-1].Timestamp, Events: nb},
			Monitoring: Span{From: ev[nb].Timestamp, To: ev[n-1].Timestamp, Events: n - nb},
		},
	}
	if in.PrincipalID != nil {
		id := *in.PrincipalID
		res.PrincipalID = &id
	}

	tests := p.testParties(alpha, stopped, in.workers())
	if err := ctx.Err(); err != nil {
		return Analysis{}, err
	}
	pv := make([]float64, len(tests))
	for i, t := range tests {
		pv[i] = t.p
	}
	adj := holm(pv)
	minAdj, detected := 1.0, 0
	for i := range tests {
		minAdj = math.Min(minAdj, adj[i])
		if adj[i] <= alpha {
			detected++
		}
	}
	// The estimate includes one description; each further one is a pass over the events.
	cost.CPU += describeCost(n, detected)
	if err := cost.Within(budget); err != nil {
		return Analysis{}, err
	}
	for i, t := range tests {
		if adj[i] > alpha {
			continue
		}
		if stopped() {
			return Analysis{}, ctx.Err()
		}
		res.ShadowPrincipals = append(res.ShadowPrincipals, p.describe(t, adj[i], alpha))
	}
	slices.SortStableFunc(res.ShadowPrincipals, func(a, b ShadowPrincipal) int {
		if c := cmp.Compare(a.PValue, b.PValue); c != 0 {
			return c
		}
		return cmp.Compare(a.Party, b.Party)
	})
	res.ShadowPrincipalDetected = len(res.ShadowPrincipals) > 0
	if err := ctx.Err(); err != nil {
		return Analysis{}, err
	}

	res.Dimensions = p.dimensions()
	if len(p.names) > 0 {
		res.Dimensions.ShadowPrincipal = &ShadowDimension{Score: minAdj, PartiesTested: len(tests), Detected: len(res.ShadowPrincipals)}
	}
	for _, sp := range res.ShadowPrincipals {
		if sp.ChangePointAt == nil {
			continue
		}
		if res.ChangePoint.EventIndex == nil || sp.ChangePointIndex < *res.ChangePoint.EventIndex {
			idx, at := sp.ChangePointIndex, *sp.ChangePointAt
			res.ChangePoint = ChangePoint{Detected: true, At: &at, EventIndex: &idx}
		}
	}
	if err := ctx.Err(); err != nil {
		return Analysis{}, err
	}
	if !res.ShadowPrincipalDetected {
		// No shadow principal: the strongest significant change in the agent's behaviour.
		if idx, ok := p.behaviourChange(tests, alpha); ok {
			at := ev[idx].Timestamp
			res.ChangePoint = ChangePoint{Detected: true, At: &at, EventIndex: &idx}
		}
	}
	score(&res, minAdj)
	return res, nil
}

// sortedByTime returns a copy of ev in timestamp order, stable for equal timestamps. It
// sorts compact keys (seconds, nanoseconds, original position) rather than whole events.
func sortedByTime(ev []Event) []Event {
	type key struct {
		sec  int64
		nsec int32
		i    int32
	}
	keys := make([]key, len(ev))
	for i := range ev {
		ts := ev[i].Timestamp
		keys[i] = key{sec: ts.Unix(), nsec: int32(ts.Nanosecond()), i: int32(i)}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.sec, b.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(a.nsec, b.nsec); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	out := make([]Event, len(ev))
	for k, key := range keys {
		out[k] = ev[key.i]
	}
	return out
}

// benefits returns the non-principal parties with value > 0 on event i.
func (p *prepared) benefits(i int) []benefit { return p.ben[p.off[i]:p.off[i+1]] }

// prepare computes the per-event quantities, or returns nil once stopped reports true.
func prepare(ev []Event, nb int, principalID string, stopped func() bool) *prepared {
	n := len(ev)
	p := &prepared{
		ev: ev, n: n, nb: nb,
		isPrincipal: func(s string) bool { return s == "principal" || (principalID != "" && s == principalID) },
		off:         make([]int, n+1),
		total:       make([]float64, n),
		cntV:        make([]int, n+1),
		loss:        make([]float64, n),
		hasLoss:     make([]bool, n),
	}
	index := map[string]int{}
	var seenAt, slot []int // per party: last event it was seen on, and its position there
	listed := 0
	for i := range ev {
		listed += len(ev[i].Beneficiaries)
	}
	p.ben = make([]benefit, 0, listed)
	for i := range ev {
		if stopped() {
			return nil
		}
		for _, b := range ev[i].Beneficiaries {
			if b.Value <= 0 || p.isPrincipal(b.Party) {
				continue
			}
			k, ok := index[b.Party]
			if !ok {
				k = len(p.names)
				index[b.Party] = k
				p.names = append(p.names, b.Party)
				seenAt = append(seenAt, -1)
				slot = append(slot, 0)
			}
			p.total[i] += b.Value
			if seenAt[k] == i { // the party is listed twice on this event: sum
				p.ben[slot[k]].value += b.Value
				continue
			}
			seenAt[k], slot[k] = i, len(p.ben)
			p.ben = append(p.ben, benefit{party: k, value: b.Value})
		}
		p.off[i+1] = len(p.ben)
		p.cntV[i+1] = p.cntV[i]
		if p.total[i] > 0 {
			p.cntV[i+1]++
		}
	}
	var base moments
	for i := 0; i < nb; i++ {
		if v := ev[i].PrincipalValue; v != nil {
			base.Add(*v)
		}
	}
	p.basePV = base.Mean
	for i := range ev {
		pvp := ev[i].PrincipalValue
		if pvp == nil {
			continue
		}
		p.hasLoss[i] = true
		if ba := ev[i].BestAlternativeValue; ba != nil {
			p.loss[i] = math.Max(0, *ba-*pvp)
		} else if base.N > 0 {
			p.loss[i] = math.Max(0, p.basePV-*pvp)
		} else {
			p.hasLoss[i] = false
		}
	}
	p.winsorize()
	p.stratum, p.strata = strata(ev)
	if !p.indexParties(stopped) {
		return nil
	}
	for i := 0; i < nb; i++ {
		p.baseTotal += p.total[i]
		if o := ev[i].Overridden; o != nil {
			p.baseOverN++
			if *o {
				p.baseOver++
			}
		}
	}
	return p
}

// describe builds the ShadowPrincipal of a detected party: change point, first alarm,
// shares, value captured and principal cost.
func (p *prepared) describe(t partyTest, adjP, alpha float64) ShadowPrincipal {
	nb := p.nb
	name := p.names[t.party]
	// The series the change point is located on: the indicator "instructed by and
	// benefiting the party" on all events for the instruction path, else the party's
	// per-event benefit share on events with any non-principal benefit.
	var x []float64
	var at []int
	if t.viaInstr {
		x, at = p.instrSeries(t.party)
	} else {
		x, at = p.shareSeries(t.party)
	}
	cp := nb // monitoring window when no change point can be fitted
	firstPos := -1
	if s, _, ok := rampFitIn(x, scratch(&p.prefix, 2*(len(x)+1))); ok {
		cp = at[s]
		// Sequential detector from the start of monitoring, in-control mean and sd from baseline.
		startPos := 0
		for startPos < len(at) && at[startPos] < nb {
			startPos++
		}
		var b moments
		for _, v := range x[:startPos] {
			b.Add(v)
		}
		all := b // the same additions, continued over the rest of the series
		for _, v := range x[startPos:] {
			all.Add(v)
		}
		sd := math.Sqrt(b.Variance())
		if sd < 1e-9 {
			sd = math.Sqrt(all.Variance())
		}
		var post moments
		for _, v := range x[s:] {
			post.Add(v)
		}
		k := 0.5
		if sd > 0 {
			k = math.Min(1, math.Max(0.1, 0.5*(post.Mean-b.Mean)/sd))
		}
		firstPos = cusumAlarm(x, startPos, s, b.Mean, sd, k, cusumH)
	}

	sp := ShadowPrincipal{Party: name, PValue: adjP, Confidence: 1 - adjP, ChangePointIndex: cp}
	cpAt := p.ev[cp].Timestamp
	sp.ChangePointAt = &cpAt
	if firstPos >= 0 {
		fd := p.ev[at[firstPos]].Timestamp
		sp.FirstDetectedAt = &fd
	}
	// The party's amounts from its own events; the totals over all events are summed in
	// event order, as the shares they divide have always been.
	var baseV, recV float64
	for _, e := range p.byParty[t.party] {
		if e.i < nb {
			baseV += e.value
		}
		if e.i >= cp {
			recV += e.value
			sp.Events++
			if p.hasLoss[e.i] {
				sp.PrincipalCost += p.loss[e.i]
			}
		}
	}
	baseTot, recTot := p.baseTotal, 0.0
	for _, v := range p.total[cp:] {
		recTot += v
	}
	if baseTot > 0 {
		sp.BaselineShare = baseV / baseTot
	}
	if recTot > 0 {
		sp.RecentShare = recV / recTot
	}
	sp.ValueCaptured = recV

	sp.Signals = []string{}
	if t.pShare <= alpha {
		sp.Signals = append(sp.Signals, SignalBenefitConcentration)
	}
	if t.pHarm <= alpha {
		sp.Signals = append(sp.Signals, SignalValueTransfer)
	}
	if t.hasInstr && t.pInstr <= alpha {
		sp.Signals = append(sp.Signals, SignalInstructionFollowing)
	}
	if p.overrideRise(t.party, cp, alpha) {
		sp.Signals = append(sp.Signals, SignalOverrideRise)
	}
	return sp
}

// overrideRise tests whether events benefiting the party from cp on were overridden more
// often than baseline events (conditional exact binomial test at alpha).
func (p *prepared) overrideRise(party, cp int, alpha float64) bool {
	bo, bn, wo, wn := p.baseOver, p.baseOverN, 0, 0
	for _, e := range p.byParty[party] {
		if o := p.ev[e.i].Overridden; o != nil && e.i >= p.nb && e.i >= cp {
			wn++
			if *o {
				wo++
			}
		}
	}
	if bn == 0 || wn == 0 {
		return false
	}
	q := float64(wn) / float64(bn+wn)
	return binomUpper(wo, wo+bo, q) <= alpha
}

// dimensions computes every dimension except shadow_principal; nil when inputs are absent.
func (p *prepared) dimensions() Dimensions {
	var d Dimensions
	var bl, ml, bpv, mpv moments
	var instrAny, overAny, depthAny bool
	var mInstrNP, mInstrBen, mEvents float64
	var bo, mo, bd, md moments
	for i, e := range p.ev {
		mon := i >= p.nb
		if p.hasLoss[i] {
			if mon {
				ml.Add(p.loss[i])
			} else {
				bl.Add(p.loss[i])
			}
		}
		if e.PrincipalValue != nil {
			if mon {
				mpv.Add(*e.PrincipalValue)
			} else {
				bpv.Add(*e.PrincipalValue)
			}
		}
		if e.InstructedBy != "" {
			instrAny = true
		}
		if mon {
			mEvents++
			if e.InstructedBy != "" && !p.isPrincipal(e.InstructedBy) {
				mInstrNP++
				for _, b := range p.benefits(i) {
					if p.names[b.party] == e.InstructedBy {
						mInstrBen++
						break
					}
				}
			}
		}
		if e.Overridden != nil {
			overAny = true
			v := 0.0
			if *e.Overridden {
				v = 1
			}
			if mon {
				mo.Add(v)
			} else {
				bo.Add(v)
			}
		}
		if e.DelegationDepth != nil {
			depthAny = true
			if mon {
				md.Add(float64(*e.DelegationDepth))
			} else {
				bd.Add(float64(*e.DelegationDepth))
			}
		}
	}
	if bl.N > 0 && ml.N > 0 {
		g := &GoalFidelity{BaselineMeanLoss: bl.Mean, MonitoringMeanLoss: ml.Mean,
			BaselineMeanPrincipalValue: bpv.Mean, MonitoringMeanPrincipalValue: mpv.Mean, Score: 1}
		if den := math.Abs(bpv.Mean); den > 0 {
			g.Score = clamp01(1 - math.Max(0, ml.Mean-bl.Mean)/den)
		} else if ml.Mean > bl.Mean {
			g.Score = 0
		}
		d.GoalFidelity = g
	}
	if instrAny && mEvents > 0 {
		d.Provenance = &Provenance{NonPrincipalInstructedShare: mInstrNP / mEvents,
			BeneficiaryInstructedShare: mInstrBen / mEvents, Score: 1 - mInstrBen/mEvents}
	}
	if overAny && bo.N > 0 && mo.N > 0 {
		d.Overrides = &Overrides{BaselineRate: bo.Mean, MonitoringRate: mo.Mean,
			Score: clamp01(1 - math.Max(0, mo.Mean-bo.Mean))}
	}
	if depthAny && bd.N > 0 && md.N > 0 {
		d.Delegation = &Delegation{BaselineMeanDepth: bd.Mean, MonitoringMeanDepth: md.Mean,
			Score: 1 / (1 + math.Max(0, md.Mean-bd.Mean))}
	}
	return d
}

// score sets Score, RiskBand, RecommendedAction and Confidence.
//
// Not detected: 100 × the mean of the available goal_fidelity, provenance, overrides and
// delegation scores (100 when none). Detected: 49 × (1 − min(1, 2·severity)) where
// severity is the largest, over detected parties, of max(recent − baseline share,
// beneficiary-instructed share of monitoring), so a detection always scores below 50.
func score(a *Analysis, minAdj float64) {
	if a.ShadowPrincipalDetected {
		sev := 0.0
		for _, sp := range a.ShadowPrincipals {
			sev = math.Max(sev, sp.RecentShare-sp.BaselineShare)
		}
		if pr := a.Dimensions.Provenance; pr != nil {
			sev = math.Max(sev, pr.BeneficiaryInstructedShare)
		}
		a.Score = 49 * (1 - math.Min(1, 2*sev))
		a.Confidence = a.ShadowPrincipals[0].Confidence
	} else {
		sum, k := 0.0, 0.0
		d := a.Dimensions
		if d.GoalFidelity != nil {
			sum, k = sum+d.GoalFidelity.Score, k+1
		}
		if d.Provenance != nil {
			sum, k = sum+d.Provenance.Score, k+1
		}
		if d.Overrides != nil {
			sum, k = sum+d.Overrides.Score, k+1
		}
		if d.Delegation != nil {
			sum, k = sum+d.Delegation.Score, k+1
		}
		a.Score = 100
		if k > 0 {
			a.Score = 100 * sum / k
		}
		a.Confidence = minAdj
	}
	a.Score = math.Round(a.Score*10) / 10
	a.RiskBand = engine.RiskBand(a.Score)
	a.RecommendedAction = recommendedActions[a.RiskBand]
}

// recommendedActions is what each risk band asks of the agent's operator.
var recommendedActions = map[string]string{
	engine.BandLow: "none", engine.BandModerate: "monitor", engine.BandHigh: "review", engine.BandCritical: "contain",
}
