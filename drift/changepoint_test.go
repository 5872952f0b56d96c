package drift

import (
	"math/rand/v2"
	"testing"
)

func TestRampFitFindsStepAndRampStart(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const n = 2000
	for _, tc := range []struct {
		name       string
		start, end int
	}{{"step", 1200, 1201}, {"ramp", 800, 1400}} {
		x := make([]float64, n)
		for i := range x {
			mu := 0.1
			switch {
			case i >= tc.end:
				mu = 0.4
			case i >= tc.start:
				mu = 0.1 + 0.3*float64(i-tc.start)/float64(tc.end-tc.start)
			}
			if r.Float64() < mu {
				x[i] = 1
			}
		}
		s, _, ok := rampFit(x)
		if !ok {
			t.Fatalf("%s: no fit", tc.name)
		}
		if d := s - tc.start; d > n/20 || d < -n/20 {
			t.Errorf("%s: onset %d, want %d ± %d", tc.name, s, tc.start, n/20)
		}
	}
}

func TestCusumAlarmsAfterShiftOnly(t *testing.T) {
	t.Parallel()
	x := make([]float64, 400)
	for i := 200; i < 400; i++ {
		x[i] = 1
	}
	if got := cusumAlarm(x, 0, 0, 0, 1, 0.5, 5); got < 200 || got > 215 {
		t.Errorf("alarm at %d, want shortly after 200", got)
	}
	if got := cusumAlarm(x[:200], 0, 0, 0, 1, 0.5, 5); got != -1 {
		t.Errorf("alarm at %d on an unchanged series", got)
	}
}
