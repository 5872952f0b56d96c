package drift

import (
	"context"
	"math"
	"slices"
	"testing"
)

// The levels of any sequence of looks sum to less than the sensitivity, however many looks
// and however they are spaced; each look's level is positive while the events grow; a
// lowered sensitivity spends nothing until the new budget exceeds what was spent.
func TestMonitorLevelsSumBelowSensitivity(t *testing.T) {
	const s, m = 0.01, 200
	for _, every := range []int{1, 50, 1000} {
		spent, last := 0.0, 0
		for n := m; n <= 2_000_000; n += every {
			level := MonitorLookLevel(s, spent, n, m)
			if !(level > 0) {
				t.Fatalf("every %d: look at %d events has level %g", every, n, level)
			}
			spent, last = spent+level, n
		}
		if !(spent < s) || math.Abs(spent-s*MonitorSpendShare(last, m)) > 1e-9 {
			t.Errorf("every %d: spent %g of %g, want s·A(%d) = %g", every, spent, s, last, s*MonitorSpendShare(last, m))
		}
	}
	if got := MonitorSpendShare(m, m); math.Abs(got-(1-math.Sqrt(0.5))) > 1e-12 {
		t.Errorf("first look's share %g", got)
	}
	if MonitorSpendShare(m-1, m) != 0 || MonitorLookLevel(s, 0, m-1, m) != 0 {
		t.Error("a look before min_events spends")
	}
	spent := s * MonitorSpendShare(5000, m)
	if level := MonitorLookLevel(0.001, spent, 5050, m); level != 0 {
		t.Errorf("after lowering the sensitivity below what was spent: level %g", level)
	}
}

// A party alerts on the look that first detects it, not on the following looks that still
// detect it; the state carries what was spent and seen.
func TestMonitorLookAlertsOncePerDetection(t *testing.T) {
	in, truth := Generate(ScenarioShadow, 3, GenParams{Events: 3000, Onset: 0.4, ShareGain: 0.35, RegretFrac: 0.3})
	var st MonitorState
	var alertsAt []int
	for _, n := range []int{600, 1200, 2000, 2500, 3000} {
		look := in
		look.Events = in.Events[:n]
		a, next, alerts, err := MonitorLook(context.Background(), look, len(look.Events), st, 0.01, 200)
		if err != nil {
			t.Fatal(err)
		}
		if next.EventsSeen != n || !(next.Spent > st.Spent) || a.EventsAnalyzed != n {
			t.Fatalf("state after the look at %d: %+v (before %+v)", n, next, st)
		}
		for _, sp := range alerts {
			if sp.Party == truth.Party {
				alertsAt = append(alertsAt, n)
			}
		}
		st = next
	}
	if len(alertsAt) != 1 || alertsAt[0] == 600 || !slices.Contains(st.Detected, truth.Party) {
		t.Fatalf("alerts of %s at %v, detected at the end %v", truth.Party, alertsAt, st.Detected)
	}
}
