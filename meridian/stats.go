package meridian

import (
	"math"
	"slices"
	"sort"
)

// numericSummary holds the numeric values of a column as sorted distinct values with their
// counts. Every statistic is computed from it in sorted order, so no result depends on the
// order of the rows.
type numericSummary struct {
	vals []float64 // ascending, distinct
	cnt  []int
	cum  []int // cum[i] = Σ cnt[:i+1]
	n    int
}

// numeric returns the summary of the numeric values of c (JSON numbers; CSV text that parses
// as a number), kept for the other checks of the column.
func (c *column) numeric() *numericSummary {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	if c.stats == nil {
		c.stats = c.summary()
	}
	return c.stats
}

// summary computes the numeric summary of c: 40 bytes per distinct number while it is built
// (a 16-byte pair to sort, then 24 bytes kept), none wasted on growing slices.
func (c *column) summary() *numericSummary {
	d := &c.dict
	n := 0
	for id := 1; id < len(d.count); id++ {
		if d.flags[id]&fNumber != 0 && d.count[id] > 0 {
			n++
		}
	}
	tmp := make([]valCount, 0, n)
	for id := 1; id < len(d.count); id++ {
		if d.flags[id]&fNumber != 0 && d.count[id] > 0 {
			tmp = append(tmp, valCount{d.num[id], int(d.count[id])})
		}
	}
	return summarize(tmp)
}

type valCount struct {
	v float64
	c int
}

// summarize sorts the values (reordering vc) and merges equal ones.
func summarize(vc []valCount) *numericSummary {
	slices.SortFunc(vc, func(a, b valCount) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	s := &numericSummary{vals: make([]float64, 0, len(vc)), cnt: make([]int, 0, len(vc)), cum: make([]int, 0, len(vc))}
	for _, e := range vc {
		s.n += e.c
		if k := len(s.vals); k > 0 && s.vals[k-1] == e.v {
			s.cnt[k-1] += e.c
			s.cum[k-1] = s.n
			continue
		}
		s.vals = append(s.vals, e.v)
		s.cnt = append(s.cnt, e.c)
		s.cum = append(s.cum, s.n)
	}
	return s
}

// at returns the value of 0-based rank r in sorted order.
func (s *numericSummary) at(r int) float64 {
	i := sort.SearchInts(s.cum, r+1)
	return s.vals[i]
}

// quantile is the p-quantile by linear interpolation between closest ranks (numpy's and
// pandas' default, "type 7" of Hyndman & Fan 1996). NaN when there are no values.
func (s *numericSummary) quantile(p float64) float64 {
	if s.n == 0 {
		return math.NaN()
	}
	h := float64(s.n-1) * p
	lo := int(math.Floor(h))
	t := h - float64(lo)
	a := s.at(lo)
	if t == 0 || lo+1 >= s.n {
		return a
	}
	return lerp(a, s.at(lo+1), t)
}

// lerp interpolates as numpy does: a + (b−a)·t, from the upper end when t ≥ 0.5.
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

// neumaier is compensated summation (Neumaier 1974).
type neumaier struct{ sum, c float64 }

func (k *neumaier) add(x float64) {
	t := k.sum + x
	if math.Abs(k.sum) >= math.Abs(x) {
		k.c += (k.sum - t) + x
	} else {
		k.c += (x - t) + k.sum
	}
	k.sum = t
}

func (k *neumaier) value() float64 { return k.sum + k.c }

func (s *numericSummary) sum() float64 {
	var k neumaier
	for i, v := range s.vals {
		k.add(v * float64(s.cnt[i]))
	}
	return k.value()
}

func (s *numericSummary) mean() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.sum() / float64(s.n)
}

// stddev is the sample standard deviation (n − 1); NaN with fewer than 2 values.
func (s *numericSummary) stddev() float64 {
	if s.n < 2 {
		return math.NaN()
	}
	m := s.mean()
	var k neumaier
	for i, v := range s.vals {
		d := v - m
		k.add(d * d * float64(s.cnt[i]))
	}
	return math.Sqrt(k.value() / float64(s.n-1))
}

func (s *numericSummary) min() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.vals[0]
}

func (s *numericSummary) max() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.vals[len(s.vals)-1]
}

// statistic returns one of the statistics of statistic_between.
func (s *numericSummary) statistic(name string) float64 {
	switch name {
	case "mean":
		return s.mean()
	case "median":
		return s.quantile(0.5)
	case "min":
		return s.min()
	case "max":
		return s.max()
	case "sum":
		if s.n == 0 {
			return math.NaN()
		}
		return s.sum()
	case "stddev":
		return s.stddev()
	}
	return math.NaN()
}

// mad returns the median absolute deviation from the median m and the mean absolute
// deviation from m.
func (s *numericSummary) mad(m float64) (mad, meanAD float64) {
	devs := make([]valCount, len(s.vals))
	var k neumaier
	for i, v := range s.vals {
		d := math.Abs(v - m)
		devs[i] = valCount{d, s.cnt[i]}
		k.add(d * float64(s.cnt[i]))
	}
	ds := summarize(devs)
	return ds.quantile(0.5), k.value() / float64(s.n)
}

// ptr returns &f, or nil when f is NaN or infinite (JSON cannot carry them).
func ptr(f float64) *float64 {
	if !finite(f) {
		return nil
	}
	return &f
}
