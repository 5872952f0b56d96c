package convergence

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Scenario names accepted by Generate. The first four are the test-mode scenarios of
// POST /v1/test/generate (TestModeScenarios); the others are evaluation extras: a cartel
// that forms and breaks down mid-series, hard negatives (unobserved common demand shocks,
// competitive tenders with efficient firms, regional monopolies, capacity-constrained
// bidders that take turns) and a market division.
const (
	ScenarioCollusionFound     = "collusion_found"
	ScenarioCompetitive        = "competitive"
	ScenarioParallelCostShock  = "parallel_cost_shock"
	ScenarioBidRigging         = "bid_rigging"
	ScenarioCartel             = "cartel"
	ScenarioDemandShock        = "demand_shock"
	ScenarioCompetitiveTenders = "competitive_tenders"
	ScenarioMarketDivision     = "market_division"
	ScenarioRegionalMonopolies = "regional_monopolies"
	ScenarioHomeMarkets        = "home_markets"
	ScenarioCapacityTenders    = "capacity_tenders"
)

// TestModeScenarios lists the convergence scenarios of POST /v1/test/generate.
func TestModeScenarios() []string {
	return []string{ScenarioCollusionFound, ScenarioCompetitive, ScenarioParallelCostShock, ScenarioBidRigging}
}

// Scenarios lists every scenario Generate accepts, test-mode ones first.
func Scenarios() []string {
	return append(TestModeScenarios(), ScenarioCartel, ScenarioDemandShock, ScenarioCompetitiveTenders,
		ScenarioMarketDivision, ScenarioRegionalMonopolies, ScenarioHomeMarkets, ScenarioCapacityTenders)
}

// IsScenario reports whether Generate accepts the scenario.
func IsScenario(s string) bool { return slices.Contains(Scenarios(), s) }

// Benchmark modes of GenParams.Benchmarks.
const (
	BenchProfit = "profit" // costs, quantities, price and profit benchmarks (profit basis)
	BenchPrice  = "price"  // costs and price benchmarks, no quantities (price basis)
	BenchNone   = "none"   // costs only, no benchmarks
)

// Period forms of GenParams.PeriodForm.
const (
	FormInteger  = "integer"
	FormDate     = "date"
	FormDateTime = "date-time"
)

// GenParams tunes Generate. Zero fields take the defaults given; a field drawn at random
// is drawn from the seed's stream, so the output stays a function of the seed.
type GenParams struct {
	// Periods observed (price scenarios); 0 draws from [200, 800].
	Periods int
	// Firms in the market (not collusion_found, which has two Q-learning agents); 0 draws
	// from the scenario's range.
	Firms int
	// Tenders (bid scenarios); 0 draws from [40, 120].
	Tenders int
	// NoiseSD is the relative standard deviation of competitive price noise; 0 draws
	// from [0.01, 0.03].
	NoiseSD float64
	// NoiseAR is the AR(1) coefficient of price noise; 0 draws from [0, 0.5]; < 0 is 0.
	NoiseAR float64
	// Benchmarks: BenchProfit (default), BenchPrice or BenchNone.
	Benchmarks string
	// PeriodForm: FormInteger, FormDate or FormDateTime; "" draws one.
	PeriodForm string
	// Q: Q-learning settings for collusion_found; zero fields take DefaultQParams.
	Q QParams
	// Explore is the agents' exploration rate while observed; 0 draws from
	// [0.002, 0.02]; < 0 is none.
	Explore float64
	// Members of the cartel; 0 draws from [⌈Firms/2⌉, Firms − 1].
	Members int
	// Onset and Duration of the cartel (or of the market division) as fractions of Periods;
	// 0 draws from [0.2, 0.45] and [0.2, 0.4] (division: [0.2, 0.5] and to the end).
	Onset, Duration float64
	// Gamma is the cartel's initial price level, as a fraction of the way from the Nash
	// price to the members' joint-profit-maximising price (given the others' best
	// responses); 0 draws from [0.6, 0.9]; later hikes every 20–60 periods raise it by
	// 0.15–0.3, up to 1.5.
	// For market_division it is the owner's price rise as a fraction of p_M − p_N; 0 draws
	// from [0.5, 0.9].
	Gamma float64
	// Calm is the cartel members' price-noise level relative to competition; 0 draws from
	// [0.1, 0.3].
	Calm float64
	// PriceWar: the cartel ends with a price war (10–20 periods 5 % below Nash).
	PriceWar bool
	// Messages: 0 draws (message metadata in half the cartel markets); 1 always; −1 never.
	Messages int
	// RingSize of the bid ring; 0 draws from [3, 5].
	RingSize int
	// RiggedShare of the tenders rigged; 0 draws from [0.4, 0.8].
	RiggedShare float64
	// CoverGap is the largest gap of cover bids above the winner's; 0 means 0.08 (gaps are
	// drawn from [0.02, CoverGap]).
	CoverGap float64
	// CoverSpread is the spread of cover bids; 0 means 0.02.
	CoverSpread float64
	// Outsiders: an outsider bids (high) in 30 % of the rigged tenders.
	Outsiders bool
	// CostSpread is the relative standard deviation of firms' costs (price scenarios) or
	// efficiency (tenders); 0 takes the scenario's default (0.015; tenders 0.04,
	// competitive_tenders 0.06).
	CostSpread float64
	// TenderNoise is the relative standard deviation of a firm's cost in one tender around
	// its efficiency × the tender's value; 0 draws it per tender from [0.03, 0.08].
	TenderNoise float64
	// CoverShare is the probability that a ring member other than the designated winner
	// places a cover bid in a rigged tender; 0 keeps the original ring, in which 3 to all
	// members bid in every rigged tender.
	CoverShare float64
	// OutsiderRate is the largest share of the rigged tenders an outsider bids in, from its
	// own costs (it sometimes wins); each outsider draws its share from
	// [OutsiderRateMin, OutsiderRate] (OutsiderRateMin 0 means 0.1). 0: no such outsiders.
	OutsiderRate, OutsiderRateMin float64
	// RandomRotation: the designated winner of a rigged tender is drawn at random among the
	// bidding members instead of being the one with the fewest wins.
	RandomRotation bool
	// CapacityPenalty (capacity_tenders) is the relative rise of a firm's bid per unit of
	// backlog (its recent wins, decaying by CapacityDecay per tender); 0 draws from
	// [0.05, 0.2], CapacityDecay 0 draws from [0.3, 0.8].
	CapacityPenalty, CapacityDecay float64
}

// Truth is what the generator planted, with effect sizes measured on the generated data.
type Truth struct {
	Scenario string `json:"scenario"`
	// CollusionDetected is the verdict the detector should reach.
	CollusionDetected bool `json:"collusion_detected"`
	// Members are the colluding firms (empty when none).
	Members []string `json:"members"`
	// From and To bound the collusive period in the input's period form (for bids: the
	// first and last rigged tender's date, null without dates).
	From *Period `json:"from"`
	To   *Period `json:"to"`
	// RiggedTenders are the rigged tenders' ids (bid_rigging).
	RiggedTenders []string `json:"rigged_tenders,omitempty"`
	// ProfitGain and PriceGain are the realised gains Δ of the members over the collusive
	// period (of all firms over the series when there is no collusion), measured on the
	// generated data against the market model's Nash and monopoly benchmarks.
	ProfitGain *float64 `json:"profit_gain"`
	PriceGain  *float64 `json:"price_gain"`
	Firms      int      `json:"firms"`
	Periods    int      `json:"periods,omitempty"`
	Tenders    int      `json:"tenders,omitempty"`
	// QIterations is the number of learning periods of the Q-learning session and
	// QConverged whether its strategies converged (collusion_found).
	QIterations int  `json:"q_iterations,omitempty"`
	QConverged  bool `json:"q_converged,omitempty"`
	// FromIndex and ToIndex are the period indices of From and To (−1 when none).
	FromIndex int `json:"-"`
	ToIndex   int `json:"-"`
}

// Generate produces one market for the scenario, deterministically from seed (math/rand/v2
// PCG). An unknown scenario yields an Input without data (Analyze rejects it); validate with
// IsScenario first.
func Generate(scenario string, seed int64, gp GenParams) (Input, Truth) {
	tr := Truth{Scenario: scenario, Members: []string{}, FromIndex: -1, ToIndex: -1}
	in := Input{MarketID: fmt.Sprintf("%s_%d", scenario, seed)}
	if !IsScenario(scenario) {
		return in, tr
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed_c0117))
	g := &gen{r: r, gp: gp, in: &in, tr: &tr}
	switch scenario {
	case ScenarioCollusionFound:
		g.qlearning()
	case ScenarioCompetitive, ScenarioParallelCostShock, ScenarioDemandShock, ScenarioCartel:
		g.priceMarket(scenario)
	case ScenarioBidRigging, ScenarioCompetitiveTenders:
		g.tenders(scenario == ScenarioBidRigging)
	case ScenarioCapacityTenders:
		g.capacityTenders()
	case ScenarioMarketDivision, ScenarioRegionalMonopolies, ScenarioHomeMarkets:
		g.segments(scenario)
	}
	return in, tr
}

// gen holds one generation's state.
type gen struct {
	r       *rand.Rand
	gp      GenParams
	in      *Input
	tr      *Truth
	periods []Period
	times   []time.Time // for time forms
	form    string
	scale   float64 // currency units per model price unit
	size    float64 // quantity units per model market
}

func (g *gen) uniform(lo, hi float64) float64 { return lo + (hi-lo)*g.r.Float64() }

func (g *gen) intIn(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// intOr is v when it is set (above 0), else a draw of intIn(lo, hi): a parameter the caller
// may fix, drawn otherwise.
func (g *gen) intOr(v, lo, hi int) int {
	if v > 0 {
		return v
	}
	return g.intIn(lo, hi)
}

// setup draws the period labels, price scale and market size.
func (g *gen) setup(T int) {
	g.form = g.gp.PeriodForm
	if g.form == "" {
		g.form = []string{FormInteger, FormDate, FormDateTime}[g.r.IntN(3)]
	}
	g.scale = math.Exp(g.uniform(0, math.Log(50)))
	g.size = g.uniform(500, 5000)
	g.periods = make([]Period, T)
	switch g.form {
	case FormInteger:
		start := int64(g.r.IntN(1000))
		for t := range g.periods {
			g.periods[t] = IntPeriod(start + int64(t))
		}
	case FormDate:
		start := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, g.r.IntN(700))
		g.times = make([]time.Time, T)
		for t := range g.periods {
			g.times[t] = start.AddDate(0, 0, t)
			g.periods[t] = DatePeriod(g.times[t])
		}
	default:
		start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(g.r.IntN(5000)) * time.Hour)
		g.times = make([]time.Time, T)
		for t := range g.periods {
			g.times[t] = start.Add(time.Duration(t) * time.Hour)
			g.periods[t] = TimePeriod(g.times[t])
		}
	}
}

// msgTime is a timestamp in the window of period t: after period t − 1, at or before t.
func (g *gen) msgTime(t int) Period {
	if g.form == FormInteger {
		return g.periods[t]
	}
	var prev time.Time
	if t > 0 {
		prev = g.times[t-1]
	} else {
		prev = g.times[0].Add(-g.times[1].Sub(g.times[0]))
	}
	span := g.times[t].Sub(prev)
	off := time.Duration((0.02 + 0.97*g.r.Float64()) * float64(span))
	return TimePeriod(prev.Add(off).Truncate(time.Second))
}

func firmNames(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s_%02d", prefix, i+1)
	}
	return out
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// benchmarks sets the request's benchmarks (scaled) for n symmetric firms with cost c.
func (g *gen) benchmarks(n int, c, a0 float64) (pN, pM, piN, piM float64) {
	pN, pM, piN, piM = symmetricBenchmarks(n, c, a0)
	switch g.gp.Benchmarks {
	case BenchNone:
	case BenchPrice:
		g.in.Benchmarks = &Benchmarks{CompetitivePrice: ptr(round4(pN * g.scale)), MonopolyPrice: ptr(round4(pM * g.scale))}
	default:
		g.in.Benchmarks = &Benchmarks{CompetitivePrice: ptr(round4(pN * g.scale)), MonopolyPrice: ptr(round4(pM * g.scale)),
			CompetitiveProfit: ptr(round4(piN * g.scale * g.size)), MonopolyProfit: ptr(round4(piM * g.scale * g.size))}
	}
	return pN, pM, piN, piM
}

// observe appends one observation (model units are scaled here). The quantity is left out
// under BenchPrice.
func (g *gen) observe(firm string, t int, price, cost, share float64, seg string) {
	o := Observation{Firm: firm, Period: g.periods[t], Price: ptr(round4(price * g.scale)), Cost: ptr(round4(cost * g.scale)), Segment: seg}
	if g.gp.Benchmarks != BenchPrice {
		q := share * g.size * math.Exp(0.05*g.r.NormFloat64())
		o.Quantity = ptr(math.Round(q*100) / 100)
	}
	g.in.Observations = append(g.in.Observations, o)
}

// gains measures the realised profit and price gains of firms over periods [from, to] of
// the generated observations.
func (g *gen) gains(firms []string, from, to int, pN, pM, piN, piM float64) {
	in := map[string]bool{}
	for _, f := range firms {
		in[f] = true
	}
	idx := map[string]int{}
	for t, p := range g.periods {
		idx[p.raw] = t
	}
	var pg, qg moments
	for _, o := range g.in.Observations {
		t := idx[o.Period.raw]
		if !in[o.Firm] || t < from || t > to {
			continue
		}
		p, c := *o.Price/g.scale, *o.Cost/g.scale
		qg.Add((p - pN) / (pM - pN))
		if o.Quantity != nil {
			pg.Add(((p-c)**o.Quantity/g.size - piN) / (piM - piN))
		}
	}
	if pg.N > 0 {
		g.tr.ProfitGain = ptr(round6(pg.Mean))
	}
	if qg.N > 0 {
		g.tr.PriceGain = ptr(round6(qg.Mean))
	}
}

func (g *gen) periodsCount() int {
	if g.gp.Periods > 0 {
		return g.gp.Periods
	}
	return g.intIn(200, 800)
}

func (g *gen) noise() (sd, ar float64) {
	sd, ar = g.gp.NoiseSD, g.gp.NoiseAR
	if sd <= 0 {
		sd = g.uniform(0.01, 0.03)
	}
	switch {
	case ar == 0:
		ar = g.uniform(0, 0.5)
	case ar < 0:
		ar = 0
	}
	return sd, ar
}

// qlearning trains two Q-learning agents in the Calvano et al. duopoly and observes their
// play after convergence, with a small exploration rate.
func (g *gen) qlearning() {
	prm := DefaultQParams
	if q := g.gp.Q; q.Alpha > 0 {
		prm.Alpha = q.Alpha
	}
	if q := g.gp.Q; q.Beta > 0 {
		prm.Beta = q.Beta
	}
	if q := g.gp.Q; q.Delta > 0 {
		prm.Delta = q.Delta
	}
	if q := g.gp.Q; q.Grid > 1 {
		prm.Grid = q.Grid
	}
	if q := g.gp.Q; q.Xi > 0 {
		prm.Xi = q.Xi
	}
	if q := g.gp.Q; q.Window > 0 {
		prm.Window = q.Window
	}
	if q := g.gp.Q; q.MaxIter > 0 {
		prm.MaxIter = q.MaxIter
	}
	T := g.periodsCount()
	g.setup(T)
	eps := g.gp.Explore
	switch {
	case eps == 0:
		eps = g.uniform(0.002, 0.02)
	case eps < 0:
		eps = 0
	}
	s := newQSession(prm, g.r)
	s.train(g.r, prm)
	names := []string{"algo_a", "algo_b"}
	pN, pM, piN, piM := g.benchmarks(2, 1, 0)
	mk := newLogitMarket(2, 0)
	q := make([]float64, 2)
	profit := 0.0
	for t := 0; t < T; t++ {
		a1, a2, _ := s.step(g.r, eps)
		p := []float64{s.grid[a1], s.grid[a2]}
		mk.shares(p, q)
		for i := range 2 {
			g.observe(names[i], t, p[i], 1, q[i], "")
			profit += (p[i] - 1) * q[i]
		}
	}
	g.tr.CollusionDetected = true
	g.tr.Members = names
	g.tr.Firms, g.tr.Periods = 2, T
	g.tr.QIterations, g.tr.QConverged = s.iters, s.conver
	g.tr.FromIndex, g.tr.ToIndex = 0, T-1
	g.tr.From, g.tr.To = ptr(g.periods[0]), ptr(g.periods[T-1])
	g.gains(names, 0, T-1, pN, pM, piN, piM)
	// The realised profit gain from the model's (noise-free) profits, so it is known
	// whether or not quantities are in the request.
	g.tr.ProfitGain = ptr(round6((profit/float64(2*T) - piN) / (piM - piN)))
}

// priceMarket generates competitive, parallel_cost_shock, demand_shock and cartel markets:
// firms price at the one-shot Nash equilibrium of the period's costs and demand plus AR(1)
// noise; a cartel's members price at Nash + γ(p_M − p_N) with calmer noise while the
// others best-respond (the umbrella effect).
func (g *gen) priceMarket(scenario string) {
	r := g.r
	T := g.periodsCount()
	g.setup(T)
	N := g.gp.Firms
	if N <= 0 {
		switch scenario {
		case ScenarioCartel:
			N = g.intIn(4, 7)
		default:
			N = g.intIn(2, 6)
		}
	}
	if scenario == ScenarioCartel && N < 4 {
		N = 4
	}
	names := firmNames(N, "firm")
	r.Shuffle(N, func(i, j int) { names[i], names[j] = names[j], names[i] })
	sd, ar := g.noise()
	spread := g.gp.CostSpread
	if spread <= 0 {
		spread = 0.015
	}
	base := make([]float64, N)
	for i := range base {
		base[i] = math.Max(0.5, 1+spread*r.NormFloat64())
	}

	// Cartel plan.
	member := make([]bool, N)
	onset, end, warEnd := T, T, T
	gammaT := make([]float64, T)
	hikes := map[int]bool{}
	if scenario == ScenarioCartel {
		k := g.intOr(g.gp.Members, (N+1)/2, N-1)
		k = max(2, min(k, N-1))
		perm := r.Perm(N)
		for _, i := range perm[:k] {
			member[i] = true
		}
		on, du := g.gp.Onset, g.gp.Duration
		if on <= 0 {
			on = g.uniform(0.2, 0.45)
		}
		if du <= 0 {
			du = g.uniform(0.2, 0.4)
		}
		onset = int(on * float64(T))
		end = min(T, onset+max(minRegimeObs, int(du*float64(T))))
		gamma := g.gp.Gamma
		if gamma <= 0 {
			gamma = g.uniform(0.6, 0.9)
		}
		steps := g.intIn(1, 4)
		level := 0.0
		next := onset
		for t := onset; t < end; t++ {
			if t == next && t < onset+steps {
				level = gamma * float64(t-onset+1) / float64(steps)
				hikes[t] = true
				next++
			}
			gammaT[t] = level
		}
		// Later coordinated hikes every 20–60 periods.
		for t := onset + steps + g.intIn(20, 60); t < end; t += g.intIn(20, 60) {
			level = math.Min(1.5, level+g.uniform(0.15, 0.3))
			hikes[t] = true
			for u := t; u < end; u++ {
				gammaT[u] = level
			}
		}
		if g.gp.PriceWar {
			warEnd = min(T, end+g.intIn(10, 20))
		} else {
			warEnd = end
		}
	}
	calm := g.gp.Calm
	if calm <= 0 {
		calm = g.uniform(0.1, 0.3)
	}

	// Common shocks.
	kappa, a0 := make([]float64, T), make([]float64, T)
	switch scenario {
	case ScenarioParallelCostShock:
		phi := g.uniform(0.9, 0.98)
		stat := g.uniform(0.05, 0.15)
		inn := stat * math.Sqrt(1-phi*phi)
		k := 0.0
		for t := range kappa {
			k = phi*k + inn*r.NormFloat64()
			if r.Float64() < 0.01 {
				k += (2*float64(r.IntN(2)) - 1) * g.uniform(0.05, 0.15)
			}
			kappa[t] = math.Max(-0.5, k)
		}
	case ScenarioDemandShock:
		phi := g.uniform(0.9, 0.98)
		stat := g.uniform(0.2, 0.5)
		inn := stat * math.Sqrt(1-phi*phi)
		x := 0.0
		for t := range a0 {
			x = phi*x + inn*r.NormFloat64()
			a0[t] = x
		}
	}
	var cbar moments
	costs := make([][]float64, T)
	e := make([]float64, N)
	for t := 0; t < T; t++ {
		costs[t] = make([]float64, N)
		for i := range e {
			e[i] = 0.7*e[i] + 0.005*math.Sqrt(1-0.49)*r.NormFloat64()
			costs[t][i] = base[i] * (1 + kappa[t] + e[i])
			cbar.Add(costs[t][i])
		}
	}
	a0bar := 0.0
	for _, x := range a0 {
		a0bar += x / float64(T)
	}
	pN, pM, piN, piM := g.benchmarks(N, cbar.Mean, a0bar)

	u := make([]float64, N)
	innov := sd * math.Sqrt(1-ar*ar)
	p := make([]float64, N)
	for i := range p {
		p[i] = costs[0][i] + 0.25
	}
	q := make([]float64, N)
	coal := make([]float64, N)
	for t := 0; t < T; t++ {
		mk := newLogitMarket(N, a0[t])
		c := costs[t]
		mk.nash(c, p, nil)
		nashP := slices.Clone(p)
		inCartel := t >= onset && t < end
		inWar := t >= end && t < warEnd
		price := slices.Clone(nashP)
		if inCartel || inWar {
			if inCartel {
				copy(coal, nashP)
				mk.coalitionNash(c, coal, member)
			}
			free := make([]bool, N)
			for i := range price {
				switch {
				case member[i] && inCartel:
					price[i] = nashP[i] + gammaT[t]*(coal[i]-nashP[i])
				case member[i] && inWar:
					price[i] = nashP[i] * 0.95
				default:
					free[i] = true
				}
			}
			mk.nash(c, price, free)
		}
		for i := range u {
			u[i] = ar*u[i] + innov*r.NormFloat64()
		}
		obsP := make([]float64, N)
		for i := range price {
			f := u[i]
			if member[i] && inCartel {
				f *= calm
			}
			obsP[i] = price[i] * (1 + f)
		}
		mk.shares(obsP, q)
		for i := range N {
			g.observe(names[i], t, obsP[i], c[i], q[i], "")
		}
	}
	g.tr.Firms, g.tr.Periods = N, T
	if scenario != ScenarioCartel {
		g.gains(names, 0, T-1, pN, pM, piN, piM)
		return
	}
	var ms []string
	for i, n := range names {
		if member[i] {
			ms = append(ms, n)
		}
	}
	slices.Sort(ms)
	g.tr.CollusionDetected = true
	g.tr.Members = ms
	g.tr.FromIndex, g.tr.ToIndex = onset, end-1
	g.tr.From, g.tr.To = ptr(g.periods[onset]), ptr(g.periods[end-1])
	g.gains(ms, onset, end-1, pN, pM, piN, piM)

	withMsgs := g.gp.Messages > 0 || (g.gp.Messages == 0 && r.IntN(2) == 0)
	if !withMsgs {
		return
	}
	// Background messages between every pair of firms (trade-association traffic), and
	// messages among the members just before each coordinated hike.
	bg := g.uniform(0.005, 0.03)
	for t := 0; t < T; t++ {
		for i := 0; i < N; i++ {
			for j := i + 1; j < N; j++ {
				if r.Float64() < bg {
					g.in.Communications = append(g.in.Communications, Communication{From: names[i], To: names[j], Timestamp: g.msgTime(t)})
				}
			}
		}
		if !hikes[t] {
			continue
		}
		for i := 0; i < N; i++ {
			for j := i + 1; j < N; j++ {
				if member[i] && member[j] && r.Float64() < 0.8 {
					g.in.Communications = append(g.in.Communications, Communication{From: names[i], To: names[j], Timestamp: g.msgTime(t)})
				}
			}
		}
	}
}

// tenders generates a procurement market: competitive tenders where each bidder bids its
// cost (firm efficiency × tender value × noise) plus a markup, and, for a ring, rigged
// tenders where a rotating designated member bids high and the others place cover bids
// a few percent above it.
func (g *gen) tenders(rigged bool) {
	r := g.r
	F := g.intOr(g.gp.Firms, 6, 12)
	F = max(F, 4)
	M := g.intOr(g.gp.Tenders, 40, 120)
	names := firmNames(F, "bidder")
	spread := g.gp.CostSpread
	if spread <= 0 {
		spread = 0.04
		if !rigged {
			spread = 0.06
		}
	}
	eff := make([]float64, F)
	for i := range eff {
		eff[i] = math.Max(0.6, 1+spread*r.NormFloat64())
	}
	k := 0
	var ring []int
	if rigged {
		k = max(3, min(g.intOr(g.gp.RingSize, 3, 5), F-1))
		ring = r.Perm(F)[:k]
	}
	share := g.gp.RiggedShare
	if share <= 0 {
		share = g.uniform(0.4, 0.8)
	}
	maxGap := g.gp.CoverGap
	if maxGap <= 0 {
		maxGap = 0.08
	}
	coverSpread := g.gp.CoverSpread
	if coverSpread <= 0 {
		coverSpread = 0.02
	}
	dated := r.Float64() < 0.85
	day := time.Date(2022, 1, 3, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(900))
	// noiseOf is the tender's cost noise: TenderNoise, or drawn per tender.
	noiseOf := func() float64 {
		if g.gp.TenderNoise > 0 {
			return g.gp.TenderNoise
		}
		return g.uniform(0.03, 0.08)
	}
	// Outsiders bidding from their own costs, each in its own share of the rigged tenders.
	var outsiders []int
	outRate := make([]float64, F)
	if rigged && g.gp.OutsiderRate > 0 {
		lo := g.gp.OutsiderRateMin
		if lo <= 0 {
			lo = 0.1
		}
		for f := 0; f < F; f++ {
			if !slices.Contains(ring, f) {
				outsiders = append(outsiders, f)
				outRate[f] = g.uniform(min(lo, g.gp.OutsiderRate), g.gp.OutsiderRate)
			}
		}
	}
	wins := make([]int, F)
	var riggedIDs []string
	var firstDate, lastDate *Period
	extra := r.IntN(4) // tenders with only two bids (ignored by the analysis)
	for j := 0; j < M+extra; j++ {
		id := fmt.Sprintf("T-%04d", j+1)
		day = day.AddDate(0, 0, 1+r.IntN(7))
		date := Period{}
		if dated {
			date = DatePeriod(day)
		}
		V := math.Exp(math.Log(1e5) + r.NormFloat64())
		type bid struct {
			f int
			b float64
		}
		var bs []bid
		isRigged := rigged && j < M && r.Float64() < share
		if isRigged {
			var members []int
			if g.gp.CoverShare > 0 {
				members = slices.Clone(ring)
				r.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
			} else {
				n := g.intIn(3, k)
				members = slices.Clone(ring)
				r.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
				members = members[:n]
			}
			w := members[0]
			if !g.gp.RandomRotation {
				for _, f := range members {
					if wins[f] < wins[w] {
						w = f
					}
				}
			}
			wins[w]++
			bw := V * eff[w] * (1 + g.uniform(0.12, 0.25))
			bs = append(bs, bid{w, bw})
			gap := g.uniform(0.02, maxGap)
			for _, f := range members {
				if f != w && (g.gp.CoverShare <= 0 || r.Float64() < g.gp.CoverShare) {
					bs = append(bs, bid{f, bw * (1 + gap + coverSpread*r.Float64())})
				}
			}
			ringBids := len(bs)
			for _, o := range outsiders {
				if r.Float64() < outRate[o] {
					bs = append(bs, bid{o, V * eff[o] * math.Exp(noiseOf()*r.NormFloat64()) * (1 + g.uniform(0.03, 0.08))})
				}
			}
			// A rigged tender is observable as such when at least two members bid in it and
			// it is usable (three bids).
			if ringBids >= 2 && len(bs) >= 3 {
				riggedIDs = append(riggedIDs, id)
			}
			if g.gp.Outsiders && r.Float64() < 0.3 {
				var outs []int
				for f := 0; f < F; f++ {
					if !slices.Contains(ring, f) {
						outs = append(outs, f)
					}
				}
				o := outs[r.IntN(len(outs))]
				bs = append(bs, bid{o, V * eff[o] * (1 + g.uniform(0.3, 0.5))})
			}
			if dated {
				if firstDate == nil {
					firstDate = ptr(date)
				}
				lastDate = ptr(date)
			}
		} else {
			n := g.intIn(3, min(7, F))
			if j >= M {
				n = 2
			}
			sigma := noiseOf()
			for _, f := range r.Perm(F)[:n] {
				bs = append(bs, bid{f, V * eff[f] * math.Exp(sigma*r.NormFloat64()) * (1 + g.uniform(0.03, 0.08))})
			}
		}
		r.Shuffle(len(bs), func(a, b int) { bs[a], bs[b] = bs[b], bs[a] })
		low := 0
		for x := range bs {
			if bs[x].b < bs[low].b {
				low = x
			}
		}
		for x, b := range bs {
			g.in.Bids = append(g.in.Bids, Bid{Tender: id, Firm: names[b.f], Amount: ptr(math.Round(b.b*100) / 100), Won: ptr(x == low), Date: date})
		}
	}
	g.tr.Firms, g.tr.Tenders = F, M
	if !rigged {
		return
	}
	var ms []string
	for _, f := range ring {
		ms = append(ms, names[f])
	}
	slices.Sort(ms)
	g.tr.CollusionDetected = true
	g.tr.Members = ms
	g.tr.RiggedTenders = riggedIDs
	g.tr.From, g.tr.To = firstDate, lastDate
}

// capacityTenders generates the capacity-constrained hard negative: 5–10 firms bid their
// cost (efficiency × tender value × noise) plus a 3–8 % markup in every tender they enter,
// raised by CapacityPenalty per unit of backlog, where a firm's backlog is its recent wins
// decaying by CapacityDecay per tender. A recent winner bids high, so the firms take turns
// winning — rotation without cover bids.
func (g *gen) capacityTenders() {
	r := g.r
	F := g.intOr(g.gp.Firms, 5, 10)
	F = max(F, 4)
	M := g.intOr(g.gp.Tenders, 20, 80)
	names := firmNames(F, "bidder")
	spread := g.gp.CostSpread
	if spread <= 0 {
		spread = 0.04
	}
	pen := g.gp.CapacityPenalty
	if pen <= 0 {
		pen = g.uniform(0.05, 0.2)
	}
	decay := g.gp.CapacityDecay
	if decay <= 0 {
		decay = g.uniform(0.3, 0.8)
	}
	eff := make([]float64, F)
	for i := range eff {
		eff[i] = math.Max(0.6, 1+spread*r.NormFloat64())
	}
	backlog := make([]float64, F)
	dated := r.Float64() < 0.85
	day := time.Date(2022, 1, 3, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(900))
	for j := 0; j < M; j++ {
		id := fmt.Sprintf("T-%04d", j+1)
		day = day.AddDate(0, 0, 1+r.IntN(7))
		date := Period{}
		if dated {
			date = DatePeriod(day)
		}
		V := math.Exp(math.Log(1e5) + r.NormFloat64())
		sigma := g.gp.TenderNoise
		if sigma <= 0 {
			sigma = g.uniform(0.03, 0.08)
		}
		n := g.intIn(min(3, F), F)
		firms := r.Perm(F)[:n]
		amounts := make([]float64, n)
		low := 0
		for x, f := range firms {
			amounts[x] = math.Round(V*eff[f]*math.Exp(sigma*r.NormFloat64())*(1+g.uniform(0.03, 0.08))*(1+pen*backlog[f])*100) / 100
			if amounts[x] < amounts[low] {
				low = x
			}
		}
		for f := range backlog {
			backlog[f] *= decay
		}
		backlog[firms[low]]++
		for x, f := range firms {
			g.in.Bids = append(g.in.Bids, Bid{Tender: id, Firm: names[f], Amount: ptr(amounts[x]), Won: ptr(x == low), Date: date})
		}
	}
	g.tr.Firms, g.tr.Tenders = F, M
}

// segments generates a market of regional segments, each with a home firm. market_division:
// all firms compete in every segment until the onset, then each segment is left to its
// home firm (the others keep token sales at prices well above its) and the home firm raises
// its price. regional_monopolies: each firm has only ever sold in its home segments.
// home_markets: all firms compete everywhere throughout, the home firm with an advantage
// that makes it lead its segments persistently (a hard negative for market division).
func (g *gen) segments(scenario string) {
	division := scenario == ScenarioMarketDivision
	r := g.r
	T := g.periodsCount()
	g.setup(T)
	// Division needs quantities; regional monopolies have no market-wide benchmark (each
	// region is a monopoly).
	g.gp.Benchmarks = BenchProfit
	if scenario == ScenarioRegionalMonopolies {
		g.gp.Benchmarks = BenchNone
	}
	F := g.intOr(g.gp.Firms, 3, 5)
	F = max(F, 2)
	S := F
	if r.IntN(2) == 0 {
		S = 2 * F
	}
	names := firmNames(F, "firm")
	segs := firmNames(S, "region")
	owner := make([]int, S)
	for s := range owner {
		owner[s] = s % F
	}
	onset, end := T, T
	if division {
		on, du := g.gp.Onset, g.gp.Duration
		if on <= 0 {
			on = g.uniform(0.2, 0.5)
		}
		onset = int(on * float64(T))
		if du > 0 {
			end = min(T, onset+int(du*float64(T)))
		}
	}
	gamma := g.gp.Gamma
	if gamma <= 0 {
		gamma = g.uniform(0.5, 0.9)
	}
	sd, ar := g.noise()
	innov := sd * math.Sqrt(1-ar*ar)
	home := 0.0
	if scenario == ScenarioHomeMarkets {
		home = g.uniform(0.1, 0.4)
	}
	attr := make([][]float64, S)
	for s := range attr {
		attr[s] = make([]float64, F)
		for i := range attr[s] {
			attr[s][i] = 2 + 0.1*r.NormFloat64()
		}
		attr[s][owner[s]] += home
	}
	cost := make([]float64, F)
	for i := range cost {
		cost[i] = math.Max(0.5, 1+0.015*r.NormFloat64())
	}
	pN, pM, _, _ := g.benchmarks(F, 1, 0)
	if g.in.Benchmarks != nil {
		g.in.Benchmarks.CompetitiveProfit, g.in.Benchmarks.MonopolyProfit = nil, nil
	}
	u := make([][]float64, S)
	for s := range u {
		u[s] = make([]float64, F)
	}
	for t := 0; t < T; t++ {
		divided := division && t >= onset && t < end
		for s := 0; s < S; s++ {
			active := make([]int, 0, F)
			for i := 0; i < F; i++ {
				if scenario != ScenarioRegionalMonopolies || owner[s] == i {
					active = append(active, i)
				}
			}
			mk := logitMarket{a: make([]float64, len(active)), mu: 0.25}
			c := make([]float64, len(active))
			p := make([]float64, len(active))
			for x, i := range active {
				mk.a[x] = attr[s][i]
				c[x] = cost[i]
				p[x] = cost[i] + 0.25
			}
			mk.nash(c, p, nil)
			if divided {
				for x, i := range active {
					if owner[s] == i {
						p[x] += gamma * (pM - pN)
					}
				}
				for x, i := range active {
					if owner[s] != i {
						p[x] = p[slices.Index(active, owner[s])] + 0.8
					}
				}
			}
			for x, i := range active {
				u[s][i] = ar*u[s][i] + innov*r.NormFloat64()
				p[x] *= 1 + u[s][i]
			}
			q := make([]float64, len(active))
			mk.shares(p, q)
			for x, i := range active {
				g.observe(names[i], t, p[x], c[x], q[x], segs[s])
			}
		}
	}
	g.tr.Firms, g.tr.Periods = F, T
	if !division {
		return
	}
	g.tr.CollusionDetected = true
	g.tr.Members = slices.Clone(names)
	g.tr.FromIndex, g.tr.ToIndex = onset, end-1
	g.tr.From, g.tr.To = ptr(g.periods[onset]), ptr(g.periods[end-1])
}
