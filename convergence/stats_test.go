package convergence

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"riskapi/internal/numeric"
)

func TestKuiperTailKnownValues(t *testing.T) {
	t.Parallel()
	// Critical values of Kuiper's statistic (Stephens 1970): 1.620 (10 %), 1.747 (5 %),
	// 2.001 (1 %).
	for _, c := range []struct{ v, p float64 }{{1.620, 0.10}, {1.747, 0.05}, {2.001, 0.01}} {
		if got := kuiperUpper(c.v); math.Abs(got-c.p) > 0.002 {
			t.Errorf("P(V > %v) = %v, want %v", c.v, got, c.p)
		}
	}
	if kuiperUpper(0.1) != 1 || kuiperUpper(math.Inf(1)) != 0 || kuiperUpper(math.NaN()) != 1 {
		t.Error("edge values")
	}
}

func TestMedianMatchesSorting(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 1))
	for k := 0; k < 500; k++ {
		n := 1 + r.IntN(40)
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(r.IntN(7)) // many ties
		}
		orig := slices.Clone(x)
		y := slices.Clone(x)
		slices.Sort(y)
		want := y[n/2]
		if n%2 == 0 {
			want = (y[n/2-1] + y[n/2]) / 2
		}
		if got := median(x); got != want || !slices.Equal(x, orig) {
			t.Fatalf("median(%v) = %v, want %v", orig, got, want)
		}
	}
}

func TestTailFunctions(t *testing.T) {
	t.Parallel()
	if p := numeric.StudentTUpper(2.0, 10); math.Abs(p-0.036694) > 1e-5 {
		t.Errorf("t tail %v", p)
	}
	// Reference: numerical integration of the F(5, 20) density beyond 3.
	if p := fUpper(3.0, 5, 20); math.Abs(p-0.0352013) > 1e-6 {
		t.Errorf("F tail %v", p)
	}
	if p := chiSquareUpper(18.307, 10); math.Abs(p-0.05) > 1e-4 {
		t.Errorf("χ² tail %v", p)
	}
	if q := tQuantileUpper(0.025, 10); math.Abs(q-2.228139) > 1e-5 {
		t.Errorf("t quantile %v", q)
	}
}

// TestRegimeTestFalseAlarmRate checks the per-firm regime test on series without a regime:
// white noise and AR(1) noise with φ = 0.5, on top of a random-walk cost passed through.
// At level 0.01 it must reject rarely (it is an intersection–union test, so well below).
func TestRegimeTestFalseAlarmRate(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(8, 8))
	const reps = 600
	rejections := 0
	for k := 0; k < reps; k++ {
		n := 100 + r.IntN(700)
		phi := 0.0
		if k%2 == 1 {
			phi = 0.5
		}
		s := &series{t: make([]int, n), y: make([]float64, n)}
		u := 0.0
		for i := range s.y {
			u = phi*u + r.NormFloat64()
			s.t[i] = i
			s.y[i] = 100 + u
		}
		var m moments
		for _, y := range s.y {
			m.Add(y)
		}
		s.meanY = m.Mean
		if f := fitRegime(s, 0); f.p <= 0.01 {
			rejections++
		}
	}
	if rate := float64(rejections) / reps; rate > 0.01 {
		t.Errorf("false-alarm rate %v at level 0.01", rate)
	}
}

func TestWindowTestNeedsBothRiseAndCalm(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 2))
	mk := func(rise, calm float64) *series {
		s := &series{}
		for i := 0; i < 300; i++ {
			y := 100 + r.NormFloat64()
			if i >= 100 && i < 200 {
				y = 100*(1+rise) + calm*r.NormFloat64()
			}
			s.t = append(s.t, i)
			s.y = append(s.y, y)
		}
		return s
	}
	if p := windowTest(mk(0.05, 0.2), 100, 199); p > 1e-6 {
		t.Errorf("rise and calm: p %v", p)
	}
	if p := windowTest(mk(0.05, 1), 100, 199); p != 1 {
		t.Errorf("rise without calm: p %v, want 1", p)
	}
	if p := windowTest(mk(0, 0.2), 100, 199); p != 1 {
		t.Errorf("calm without rise: p %v, want 1", p)
	}
}
