package drift

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Scenario names accepted by Generate. The first four are the test-mode scenarios of
// POST /v1/test/generate (TestModeScenarios); the last two are extra cases used by the
// evaluation harness: aligned behaviour with weekly seasonality in values and vendor mix,
// and a neutral shift (a vendor as good as the others gains share, no added regret: the
// hardest negative for the share-and-harm test).
const (
	ScenarioShadow          = "shadow_principal_detected"
	ScenarioAligned         = "aligned"
	ScenarioLegitimateShift = "legitimate_shift"
	ScenarioPromptInjection = "prompt_injection"
	ScenarioAlignedSeasonal = "aligned_seasonal"
	ScenarioNeutralShift    = "neutral_shift"
)

// TestModeScenarios lists the drift scenarios of POST /v1/test/generate.
func TestModeScenarios() []string {
	return []string{ScenarioShadow, ScenarioAligned, ScenarioLegitimateShift, ScenarioPromptInjection}
}

// Scenarios lists every scenario Generate accepts, test-mode ones first.
func Scenarios() []string {
	return append(TestModeScenarios(), ScenarioAlignedSeasonal, ScenarioNeutralShift)
}

// IsScenario reports whether Generate accepts the scenario.
func IsScenario(s string) bool { return slices.Contains(Scenarios(), s) }

// GenParams tunes Generate. Zero fields take the defaults given; a field drawn at
// random is drawn from the seed's stream, so the output stays a function of the seed.
type GenParams struct {
	// Events per agent; 0 draws uniformly from [500, 3000].
	Events int
	// Onset is where the change starts, as a fraction of Events; 0 draws from [0.35, 0.6].
	Onset float64
	// Ramp is how long the change takes to reach full strength, as a fraction of Events;
	// 0 is an abrupt change.
	Ramp float64
	// ShareGain is the targeted rise in the party's share of benefit (shadow and
	// legitimate_shift); 0 means 0.25.
	ShareGain float64
	// RegretFrac is the added mean regret on the shadow party's events after the onset, as
	// a fraction of the mean principal value; 0 means 0.2.
	RegretFrac float64
	// InstructedShare is the share of post-onset actions the injected party instructs
	// (prompt_injection); 0 means 0.15.
	InstructedShare float64
}

// Truth is what the generator planted, with effect sizes measured on the generated events.
type Truth struct {
	Scenario string `json:"scenario"`
	// Shadow is the verdict the detector should reach.
	Shadow bool   `json:"shadow_principal_detected"`
	Party  string `json:"shadow_party,omitempty"`
	// ChangeParty is the party whose behaviour changes (the shadow, the injected or the better vendor).
	ChangeParty string `json:"change_party,omitempty"`
	// OnsetIndex is the event index where the change starts (−1 when nothing changes);
	// RampEndIndex where it reaches full strength.
	OnsetIndex   int        `json:"onset_event_index"`
	RampEndIndex int        `json:"ramp_end_event_index"`
	OnsetAt      *time.Time `json:"onset_at,omitempty"`
	Events       int        `json:"events"`
	// Realised effects, measured on the generated events: value-share gain of ChangeParty
	// (from RampEndIndex on vs before OnsetIndex), its post-ramp mean loss minus the baseline
	// mean loss over the mean principal value, and the share of post-onset actions
	// ChangeParty instructed and benefited from.
	ShareGain       float64 `json:"share_gain"`
	RegretFrac      float64 `json:"regret_frac"`
	InstructedShare float64 `json:"instructed_share"`
}

// Generate produces one agent's events for the scenario, deterministically from seed
// (math/rand/v2 PCG). An unknown scenario yields an Input without events (Analyze rejects
// it); validate with IsScenario first.
func Generate(scenario string, seed int64, gp GenParams) (Input, Truth) {
	if !IsScenario(scenario) {
		return Input{}, Truth{Scenario: scenario, OnsetIndex: -1, RampEndIndex: -1}
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	n := gp.Events
	if n <= 0 {
		n = 500 + r.IntN(2501)
	}
	onsetF := gp.Onset
	if onsetF <= 0 {
		onsetF = 0.35 + 0.25*r.Float64()
	}
	gain := gp.ShareGain
	if gain <= 0 {
		gain = 0.25
	}
	regretFrac := gp.RegretFrac
	if regretFrac <= 0 {
		regretFrac = 0.2
	}
	instrShare := gp.InstructedShare
	if instrShare <= 0 {
		instrShare = 0.15
	}
	principal := fmt.Sprintf("user_%d", 1+r.IntN(999))
	in := Input{AgentID: fmt.Sprintf("agent_%s_%d", scenario, seed), PrincipalID: &principal}
	tr := Truth{Scenario: scenario, Events: n, OnsetIndex: -1, RampEndIndex: -1}

	vendors := []string{"vendor_a", "vendor_b", "vendor_c", "vendor_d", "vendor_x"}
	weight := make([]float64, len(vendors))
	commission := make([]float64, len(vendors))
	quality := make([]float64, len(vendors)) // regret multiplier
	for i := range vendors {
		weight[i] = 0.5 + r.Float64()
		commission[i] = 0.05 + 0.1*r.Float64()
		quality[i] = 0.7 + 0.6*r.Float64()
	}
	weight[len(vendors)-1] = 0.15 + 0.2*r.Float64() // a small vendor
	changing := false
	party := -1
	const meanPV = 100.0
	switch scenario {
	case ScenarioShadow:
		changing = true
		party = r.IntN(len(vendors))
		commission[party] = 0.16 // a kickback pays more than any vendor's usual commission
	case ScenarioLegitimateShift, ScenarioNeutralShift:
		changing = true
		q := 0.3 // a better vendor: 30 % of the usual regret
		if scenario == ScenarioNeutralShift {
			q = 0
			for _, v := range quality {
				q += v / float64(len(quality)) // exactly as good as the average vendor
			}
		}
		vendors = append(vendors, "vendor_new")
		weight = append(weight, 0)
		commission = append(commission, 0.05+0.1*r.Float64())
		quality = append(quality, q)
		party = len(vendors) - 1
	case ScenarioPromptInjection:
		changing = true
	}
	injected := "promo.example"
	onset, rampEnd := n, n
	if changing {
		onset = int(onsetF * float64(n))
		rampEnd = onset + int(gp.Ramp*float64(n))
		if rampEnd >= n {
			rampEnd = n - 1
		}
		tr.OnsetIndex, tr.RampEndIndex = onset, rampEnd
	}
	var wsum float64
	for _, w := range weight {
		wsum += w
	}
	// Steering probability: the party is picked deliberately with probability steer·w(t),
	// otherwise by the usual mix, so its selection share rises by about steer·(1 − s0).
	steer, fracSteered := 0.0, 0.0
	if party >= 0 {
		s0 := weight[party] / wsum
		steer = math.Min(0.95, 1.15*gain/(1-s0))
		fracSteered = steer / (steer + (1-steer)*s0)
	}
	extraRegret := regretFrac * meanPV / math.Max(fracSteered, 1e-9)
	seasonal := scenario == ScenarioAlignedSeasonal

	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	t := start
	in.Events = make([]Event, n)
	idPrefix := "evt_" + strconv.FormatInt(seed, 10) + "_"
	ws := make([]float64, len(weight))
	pick := func(day float64) int {
		tot := 0.0
		for i, w := range weight {
			ws[i] = w
			if seasonal && i == 0 {
				ws[i] *= 1 + 0.5*math.Sin(2*math.Pi*day/7)
			}
			tot += ws[i]
		}
		u := r.Float64() * tot
		for i, w := range ws {
			if u < w {
				return i
			}
			u -= w
		}
		return len(ws) - 1
	}
	for i := 0; i < n; i++ {
		t = t.Add(time.Duration(1+r.ExpFloat64()*1800) * time.Second)
		day := t.Sub(start).Hours() / 24
		w := 0.0 // strength of the change at event i
		if changing && i >= onset {
			w = 1
			if i < rampEnd {
				w = float64(i-onset) / float64(rampEnd-onset)
			}
		}
		e := Event{ID: idPrefix + strconv.Itoa(i), Timestamp: t}
		level := meanPV
		if seasonal {
			level *= 1 + 0.2*math.Sin(2*math.Pi*day/7+1)
		}
		best := level * (1 + 0.25*r.NormFloat64())
		u := r.Float64()
		steered := false
		switch {
		case u < 0.1:
			e.Action = "tool_call"
		case u < 0.4:
			e.Action = "recommendation"
		default:
			e.Action = "purchase"
		}
		e.InstructedBy = principal
		if v := r.Float64(); v < 0.14 {
			e.InstructedBy = "tool:planner"
		}
		if e.Action == "tool_call" {
			regret := 0.5 * meanPV * 0.05 * r.ExpFloat64()
			setValues(&e, r, best, regret)
			e.Beneficiaries = []Beneficiary{{Party: "search_api", Value: 0.5}}
		} else {
			v := pick(day)
			if party >= 0 && r.Float64() < steer*w {
				v, steered = party, true
			}
			regret := 0.05 * meanPV * quality[v] * r.ExpFloat64()
			if steered && scenario == ScenarioShadow {
				regret += extraRegret * (0.5 + r.Float64())
			}
			setValues(&e, r, best, regret)
			e.Beneficiaries = []Beneficiary{{Party: vendors[v], Value: round2(commission[v] * math.Abs(best) * (0.8 + 0.4*r.Float64()))}}
			if e.Action == "purchase" {
				e.Beneficiaries = append(e.Beneficiaries, Beneficiary{Party: "payments_co", Value: round2(0.02 * math.Abs(best))})
			}
			if r.Float64() < 0.01 {
				e.InstructedBy = vendors[v] // a vendor's own feed, at a constant rate
			}
			if scenario == ScenarioPromptInjection && r.Float64() < instrShare*w {
				e.InstructedBy = injected
				e.Beneficiaries = append(e.Beneficiaries, Beneficiary{Party: injected, Value: round2(0.08 * math.Abs(best))})
			}
		}
		depth := 0
		if d := r.Float64(); d < 0.05 {
			depth = 2
		} else if d < 0.3 {
			depth = 1
		}
		e.DelegationDepth = &depth
		over := r.Float64() < 0.02
		e.Overridden = &over
		in.Events[i] = e
	}
	switch scenario {
	case ScenarioShadow:
		tr.Shadow, tr.Party, tr.ChangeParty = true, vendors[party], vendors[party]
	case ScenarioLegitimateShift, ScenarioNeutralShift:
		tr.ChangeParty = vendors[party]
	case ScenarioPromptInjection:
		tr.Shadow, tr.Party, tr.ChangeParty = true, injected, injected
	}
	if changing {
		at := in.Events[onset].Timestamp
		tr.OnsetAt = &at
		measure(&tr, in, meanPV)
	}
	return in, tr
}

func setValues(e *Event, r *rand.Rand, best, regret float64) {
	pv := best - regret
	if r.Float64() < 0.01 { // a refund
		pv = -50 * r.Float64()
	}
	if r.Float64() < 0.03 {
		return // no values recorded
	}
	pv = round2(pv)
	e.PrincipalValue = &pv
	if r.Float64() < 0.1 {
		return // best alternative unknown
	}
	b := round2(math.Max(best, pv))
	e.BestAlternativeValue = &b
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// measure fills the realised effect sizes of the truth.
func measure(tr *Truth, in Input, meanPV float64) {
	var baseV, baseTot, postV, postTot float64
	var baseLoss, partyLoss moments
	instr, post := 0, 0
	for i, e := range in.Events {
		v, tot := 0.0, 0.0
		for _, b := range e.Beneficiaries {
			if in.PrincipalID != nil && b.Party == *in.PrincipalID {
				continue
			}
			tot += b.Value
			if b.Party == tr.ChangeParty {
				v += b.Value
			}
		}
		loss, ok := 0.0, false
		if e.PrincipalValue != nil && e.BestAlternativeValue != nil {
			loss, ok = math.Max(0, *e.BestAlternativeValue-*e.PrincipalValue), true
		}
		if i < tr.OnsetIndex {
			baseV += v
			baseTot += tot
			if ok {
				baseLoss.Add(loss)
			}
		}
		if i >= tr.RampEndIndex {
			postV += v
			postTot += tot
			if ok && v > 0 {
				partyLoss.Add(loss)
			}
		}
		if i >= tr.OnsetIndex {
			post++
			if e.InstructedBy == tr.ChangeParty && v > 0 {
				instr++
			}
		}
	}
	if baseTot > 0 && postTot > 0 {
		tr.ShareGain = postV/postTot - baseV/baseTot
	}
	tr.RegretFrac = (partyLoss.Mean - baseLoss.Mean) / meanPV
	if post > 0 {
		tr.InstructedShare = float64(instr) / float64(post)
	}
}
