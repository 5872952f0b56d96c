// Package numeric holds the small numerical routines several engines share and no
// dependency offers in streaming or in-place form: running moments (Welford) and selection
// of the k-th smallest value without sorting.
package numeric

import "slices"

// Moments accumulates the count, mean and sum of squared deviations of a stream of values
// (Welford 1962), stable where the naive sums of x and x² cancel.
type Moments struct {
	N    float64
	Mean float64
	M2   float64
}

// Add includes x.
func (m *Moments) Add(x float64) {
	m.N++
	d := x - m.Mean
	m.Mean += d / m.N
	m.M2 += d * (x - m.Mean)
}

// Variance is the unbiased sample variance (0 when N < 2).
func (m Moments) Variance() float64 {
	if m.N < 2 {
		return 0
	}
	return m.M2 / (m.N - 1)
}

// SelectKth partially orders x so that x[k] is its k-th smallest value (0-based), with
// smaller-or-equal values before it and larger-or-equal after, and returns x[k]. Quickselect
// with median-of-three pivots (Hoare 1961); after 64 partitioning rounds the rest is sorted,
// so the time stays O(n log n) on any input.
func SelectKth(x []float64, k int) float64 {
	lo, hi := 0, len(x)-1
	for round := 0; lo < hi; round++ {
		if round == 64 {
			slices.Sort(x[lo : hi+1])
			break
		}
		mid := lo + (hi-lo)/2
		if x[mid] < x[lo] {
			x[mid], x[lo] = x[lo], x[mid]
		}
		if x[hi] < x[lo] {
			x[hi], x[lo] = x[lo], x[hi]
		}
		if x[hi] < x[mid] {
			x[hi], x[mid] = x[mid], x[hi]
		}
		pivot := x[mid]
		i, j := lo, hi
		for i <= j {
			for x[i] < pivot {
				i++
			}
			for x[j] > pivot {
				j--
			}
			if i <= j {
				x[i], x[j] = x[j], x[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return x[k]
		}
	}
	return x[k]
}
