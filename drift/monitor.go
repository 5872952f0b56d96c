package drift

import (
	"context"
	"math"
	"slices"
)

// Continuous monitoring (shared/spec/agents.md §2; docs/methods/drift.md §11). A monitor
// analyses an agent's growing history again and again; each look is an Analyze at a level
// of its own, and the levels are an alpha-spending sequence over the number of events, so
// that the probability that any look ever detects a party on an agent without a shadow
// principal stays at most the monitor's sensitivity (Bonferroni over looks: the union bound
// needs no assumption on how the looks depend on each other).

// MonitorSpendShare is the share of a monitor's sensitivity that looks up to n events may
// have spent, for a monitor that starts looking at minEvents events:
//
//	A(n) = 1 − √(minEvents / (n + minEvents))   (0 before minEvents events)
//
// A rises from 0.29 at the first look towards 1 as n grows without bound, so the budget is
// never exhausted however long the agent runs, and what a look may spend falls like n^−3/2
// per event: at minEvents = 200, a look of 50 new events at 2,500 events spends 0.25 % of
// the sensitivity, at 5,000 events 0.10 %, and 80 % is spent by 5,000 events.
func MonitorSpendShare(n, minEvents int) float64 {
	if minEvents < 1 {
		minEvents = 1
	}
	if n < minEvents {
		return 0
	}
	return 1 - math.Sqrt(float64(minEvents)/float64(n+minEvents))
}

// MonitorLookLevel is the level of a monitor's look at n events: sensitivity·A(n) minus what
// the earlier looks spent (spent, in units of the level itself). It is 0 when nothing is left
// to spend (the sensitivity was lowered below what was spent); a look at level 0 detects
// nothing. The new total spent is spent + level.
func MonitorLookLevel(sensitivity, spent float64, n, minEvents int) float64 {
	level := sensitivity*MonitorSpendShare(n, minEvents) - spent
	if !(level > 0) {
		return 0
	}
	return min(level, 0.2) // the largest level Analyze accepts
}

// MonitorState is what a monitor keeps from one look to the next.
type MonitorState struct {
	// EventsSeen is how many events the agent had at the last look; Spent the level the looks so far
	// have spent (the sum of their levels).
	EventsSeen int
	Spent      float64
	// Detected are the parties the last look detected: they do not alert again while later
	// looks keep detecting them.
	Detected []string
}

// MonitorLook is one look of a monitor: Analyze of in (the agent's events, with the
// monitor's principal and baseline) at the look's level MonitorLookLevel(sensitivity,
// st.Spent, total, minEvents), which replaces in.Sensitivity. total is how many events the
// agent has: len(in.Events) when the look analyses all of them, more when its history is
// longer than one analysis takes and in holds part of it (the newest events). The union bound
// over looks holds for any events a look analyses, as long as the choice does not depend on
// their content. It returns the analysis, the state after the look (EventsSeen = total), and
// the detected parties that alert: those the previous look did not detect, in the analysis's
// order. When no level is left the look still analyses (at the smallest positive level, where
// nothing is detected).
func MonitorLook(ctx context.Context, in Input, total int, st MonitorState, sensitivity float64, minEvents int) (Analysis, MonitorState, []ShadowPrincipal, error) {
	total = max(total, len(in.Events))
	level := MonitorLookLevel(sensitivity, st.Spent, total, minEvents)
	at := level
	if at == 0 {
		at = math.SmallestNonzeroFloat64
	}
	in.Sensitivity = &at
	a, err := Analyze(ctx, in)
	if err != nil {
		return Analysis{}, st, nil, err
	}
	next := MonitorState{EventsSeen: total, Spent: st.Spent + level}
	var alerts []ShadowPrincipal
	for _, sp := range a.ShadowPrincipals {
		next.Detected = append(next.Detected, sp.Party)
		if !slices.Contains(st.Detected, sp.Party) {
			alerts = append(alerts, sp)
		}
	}
	slices.Sort(next.Detected)
	return a, next, alerts, nil
}
