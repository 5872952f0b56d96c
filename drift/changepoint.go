package drift

import "math"

// rampFit locates the onset of a mean change in x by least squares over a
// "broken-stick" mean: a before s, rising linearly to c between s and e, c from e on
// (e = s+1 is an abrupt step). Its start s is the change point; for gradual drift it is
// where the ramp starts. Candidate (s, e) pairs are searched on a grid of at most 200
// points and then refined one index at a time by coordinate descent; every evaluation is
// O(1) from prefix sums. It returns s and e (0 < s < e ≤ len(x)), or ok=false when
// len(x) < 4.
func rampFit(x []float64) (s, e int, ok bool) { return rampFitIn(x, nil) }

// rampFitIn is rampFit with its prefix sums kept in buf when buf has room for them
// (2·(len(x)+1) elements), so that fits one after another reuse the same memory.
func rampFitIn(x, buf []float64) (s, e int, ok bool) {
	m := len(x)
	if m < 4 {
		return 0, 0, false
	}
	if cap(buf) < 2*(m+1) {
		buf = make([]float64, 2*(m+1))
	}
	px := buf[:m+1]           // Σ x
	pix := buf[m+1 : 2*(m+1)] // Σ i·x
	px[0], pix[0] = 0, 0
	for i, v := range x {
		px[i+1] = px[i] + v
		pix[i+1] = pix[i] + float64(i)*v
	}
	sx := px[m]
	fm := float64(m)
	// explained returns the regression sum of squares of x on g(s,e); larger is better.
	explained := func(s, e int) float64 {
		L := float64(e - s)
		sg := (L-1)/2 + float64(m-e)
		sgg := (L-1)*(2*L-1)/(6*L) + float64(m-e)
		rampIX := (pix[e] - pix[s]) - float64(s)*(px[e]-px[s])
		sgx := rampIX/L + (px[m] - px[e])
		vg := sgg - sg*sg/fm
		if vg <= 1e-12 {
			return math.Inf(-1)
		}
		cg := sgx - sg*sx/fm
		return cg * cg / vg
	}
	grid := 200
	if m-1 < grid {
		grid = m - 1
	}
	pos := func(k int) int { return 1 + k*(m-2)/grid } // in [1, m-1]
	best := math.Inf(-1)
	for a := 0; a <= grid; a++ {
		sa := pos(a)
		for b := a; b <= grid; b++ {
			eb := pos(b) + 1
			if eb > m {
				eb = m
			}
			if v := explained(sa, eb); v > best {
				best, s, e = v, sa, eb
			}
		}
	}
	step := (m-2)/grid + 1
	for iter := 0; iter < 3; iter++ {
		for c := s - step; c <= s+step; c++ {
			if c >= 1 && c < e {
				if v := explained(c, e); v > best {
					best, s = v, c
				}
			}
		}
		for c := e - step; c <= e+step; c++ {
			if c > s && c <= m {
				if v := explained(s, c); v > best {
					best, e = v, c
				}
			}
		}
	}
	return s, e, true
}

// cusumAlarm runs Page's one-sided CUSUM (Page 1954) on x from index start:
// S_i = max(0, S_{i−1} + (x_i − mu0)/sigma − k), alarm when S_i > h, reset after an alarm.
// It returns the first alarm index ≥ notBefore, or −1.
func cusumAlarm(x []float64, start, notBefore int, mu0, sigma, k, h float64) int {
	if sigma <= 0 {
		sigma = 1
	}
	S := 0.0
	for i := start; i < len(x); i++ {
		S += (x[i]-mu0)/sigma - k
		if S < 0 {
			S = 0
		}
		if S > h {
			if i >= notBefore {
				return i
			}
			S = 0
		}
	}
	return -1
}
