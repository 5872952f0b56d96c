package cascade

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// undirected builds a network whose symmetrised weights are 1 on the given pairs (both
// directions with weight 1: (W + Wᵀ)/2 = 1).
func undirected(n int, pairs [][2]int) *network {
	s := &spec{ids: make([]string, n)}
	for i := range s.ids {
		s.ids[i] = fmt.Sprintf("n%d", i)
	}
	for _, p := range pairs {
		for _, d := range [][2]int{{p[0], p[1]}, {p[1], p[0]}} {
			s.src = append(s.src, int32(d[0]))
			s.dst = append(s.dst, int32(d[1]))
			s.weight = append(s.weight, 1)
			s.prob = append(s.prob, 1)
		}
	}
	return buildNetwork(s)
}

func path(n int) [][2]int {
	var p [][2]int
	for i := 0; i+1 < n; i++ {
		p = append(p, [2]int{i, i + 1})
	}
	return p
}

func TestAlgebraicConnectivityKnownGraphs(t *testing.T) {
	t.Parallel()
	type tc struct {
		name  string
		n     int
		pairs [][2]int
		want  float64
	}
	var cases []tc
	for _, n := range fiedlerPaths {
		cases = append(cases, tc{fmt.Sprintf("path%d", n), n, path(n), 2 * (1 - math.Cos(math.Pi/float64(n)))})
	}
	for _, n := range fiedlerCycles {
		cases = append(cases, tc{fmt.Sprintf("cycle%d", n), n, append(path(n), [2]int{n - 1, 0}), 2 * (1 - math.Cos(2*math.Pi/float64(n)))})
	}
	for _, n := range fiedlerCompletes {
		var p [][2]int
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				p = append(p, [2]int{i, j})
			}
		}
		cases = append(cases, tc{fmt.Sprintf("complete%d", n), n, p, float64(n)})
	}
	for _, c := range cases {
		g := undirected(c.n, c.pairs)
		rep, err := algebraicConnectivity(context.Background(), g, g.components(), 2)
		if err != nil {
			t.Fatal(err)
		}
		if rel := math.Abs(rep.value-c.want) / c.want; rel > 1e-6 {
			t.Errorf("%s: λ₂ = %.12g, want %.12g (relative error %.2g, dense %v, %d iterations, converged %v)", c.name, rep.value, c.want, rel, rep.dense, rep.iterations, rep.converged)
		}
		t.Logf("%s: λ₂ = %.10g (want %.10g, relative error %.1g), dense %v, %d iterations", c.name, rep.value, c.want, math.Abs(rep.value-c.want)/c.want, rep.dense, rep.iterations)
	}
}

// TestAlgebraicConnectivityRandomGraphs compares LOBPCG with a dense eigendecomposition of
// the same Laplacian (gonum's LAPACK dsyev) on random connected graphs with random weights.
func TestAlgebraicConnectivityRandomGraphs(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 3; seed++ {
		g := randomGraphT(fiedlerRandomN, float64(2*seed), seed)
		r := rand.New(rand.NewPCG(seed, 9))
		for i := 0; i < g.n; i++ { // random symmetric weights
			for e := g.symStart[i]; e < g.symStart[i+1]; e++ {
				if j := g.symTo[e]; int(j) > i {
					w := 0.1 + 2*r.Float64()
					g.symW[e] = w
					for f := g.symStart[j]; f < g.symStart[j+1]; f++ {
						if int(g.symTo[f]) == i {
							g.symW[f] = w
						}
					}
				}
			}
		}
		rep, err := algebraicConnectivity(context.Background(), g, g.components(), 2)
		if err != nil {
			t.Fatal(err)
		}
		l := mat.NewSymDense(g.n, nil)
		for i := 0; i < g.n; i++ {
			for e := g.symStart[i]; e < g.symStart[i+1]; e++ {
				l.SetSym(i, i, l.At(i, i)+g.symW[e])
				if j := int(g.symTo[e]); j > i {
					l.SetSym(i, j, -g.symW[e])
				}
			}
		}
		var es mat.EigenSym
		es.Factorize(l, false)
		want := es.Values(nil)[1]
		if rel := math.Abs(rep.value-want) / want; rel > 1e-6 || rep.dense {
			t.Errorf("seed %d: LOBPCG λ₂ = %.12g, dense %.12g (relative error %.2g, %d iterations)", seed, rep.value, want, rel, rep.iterations)
		}
		t.Logf("random graph n=%d z=%d: λ₂ = %.10g, dense %.10g (relative error %.1g), %d iterations", g.n, 2*seed, rep.value, want, math.Abs(rep.value-want)/want, rep.iterations)
	}
}

func randomGraphT(n int, z float64, seed uint64) *network {
	r := rand.New(rand.NewPCG(seed, 1))
	var p [][2]int
	for i := 1; i < n; i++ {
		p = append(p, [2]int{i, r.IntN(i)}) // a random tree keeps it connected
	}
	for k := 0; k < int(z*float64(n)/2); k++ {
		a, b := r.IntN(n), r.IntN(n)
		if a != b {
			p = append(p, [2]int{a, b})
		}
	}
	return undirected(n, p)
}
