package cascade

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// denseFiedlerMax: up to this many nodes λ₂ comes from a dense symmetric eigendecomposition
// (LAPACK dsyev through gonum); above it, from LOBPCG.
const denseFiedlerMax = 400

// fiedlerTol: LOBPCG stops when the residual ‖Lx − λx‖ of the λ₂ Ritz pair is below
// fiedlerTol times the Gershgorin bound 2·max degree on ‖L‖.
const fiedlerTol = 1e-10

// fiedlerBlock is the LOBPCG block size. One vector is the fastest on the graphs measured
// (random, preferential-attachment and tree-like graphs of 100,000 nodes; paths and rings);
// a repeated λ₂ (rings) needs no block, since only the value is wanted.
var fiedlerBlock = 1

// fiedlerBudget bounds the LOBPCG iterations by floating-point work (≈ 6·10⁹ operations:
// a few seconds on one core), so a graph whose λ₂ is very close to its λ₃ relative to ‖L‖ (long
// paths, rings) cannot stall a simulation; the value returned is then the Rayleigh quotient
// reached, an upper bound on λ₂.
const fiedlerBudget = 6e9

// fiedlerReport describes how λ₂ was obtained (for tests and benchmarks).
type fiedlerReport struct {
	value      float64
	dense      bool
	iterations int
	residual   float64 // relative to 2·max degree
	converged  bool
}

// algebraicConnectivity returns λ₂ of the Laplacian L = D − S of the undirected graph with
// weights S = (W + Wᵀ)/2, 0 for a disconnected graph or a single node.
func algebraicConnectivity(ctx context.Context, g *network, components, workers int) (fiedlerReport, error) {
	n := g.n
	if n < 2 || components > 1 {
		return fiedlerReport{dense: true, converged: true}, nil
	}
	deg := make([]float64, n)
	maxDeg := 0.0
	for i := 0; i < n; i++ {
		for e := g.symStart[i]; e < g.symStart[i+1]; e++ {
			deg[i] += g.symW[e]
		}
		maxDeg = math.Max(maxDeg, deg[i])
	}
	if maxDeg == 0 {
		return fiedlerReport{dense: true, converged: true}, nil
	}
	if n <= denseFiedlerMax {
		l := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			l.SetSym(i, i, deg[i])
			for e := g.symStart[i]; e < g.symStart[i+1]; e++ {
				if j := int(g.symTo[e]); j > i {
					l.SetSym(i, j, -g.symW[e])
				}
			}
		}
		var es mat.EigenSym
		if es.Factorize(l, false) {
			v := es.Values(nil)[1]
			return fiedlerReport{value: math.Max(0, v), dense: true, converged: true}, nil
		}
		// LAPACK did not converge (never seen): fall through to LOBPCG.
	}
	rows := func(dst, x []float64, lo, hi int) {
		for i := lo; i < hi; i++ {
			v := deg[i] * x[i]
			for e := g.symStart[i]; e < g.symStart[i+1]; e++ {
				v -= g.symW[e] * x[g.symTo[e]]
			}
			dst[i] = v
		}
	}
	apply := func(dst, x []float64) { rows(dst, x, 0, n) }
	if workers > 1 && n+len(g.symTo) >= 200_000 {
		// Row blocks on several goroutines: each row is computed by one of them, in the same
		// order, so the result does not depend on the number of workers.
		apply = func(dst, x []float64) {
			var wg sync.WaitGroup
			var box panicBox
			step := (n + workers - 1) / workers
			for lo := 0; lo < n; lo += step {
				wg.Add(1)
				go func(lo int) {
					defer wg.Done()
					defer box.catch()
					rows(dst, x, lo, min(n, lo+step))
				}(lo)
			}
			wg.Wait()
			box.rethrow()
		}
	}
	precond := func(v []float64) {
		for i := range v {
			if deg[i] > 0 {
				v[i] /= deg[i]
			}
		}
	}
	_, maxIter := lobpcgWork(n, len(g.symTo))
	b := fiedlerBlock
	rep, err := lobpcgSmallest(ctx, n, b, apply, precond, maxIter, fiedlerTol*2*maxDeg, workers)
	rep.value = math.Max(0, rep.value)
	rep.residual /= 2 * maxDeg
	return rep, err
}

// lobpcgWork is the floating-point work of one LOBPCG iteration on a graph of n nodes and
// sym entries of the symmetrised graph (two products by L per block vector, and the
// orthonormalisation and Ritz updates of the 3b-column basis), and the iterations that
// fiedlerBudget allows (200 to 20,000).
func lobpcgWork(n, sym int) (perIter float64, maxIter int) {
	b := float64(fiedlerBlock)
	perIter = float64(sym)*2*b + float64(n)*9*b*b*4
	return perIter, int(math.Min(20000, math.Max(200, fiedlerBudget/perIter)))
}

// lobpcgSmallest finds the smallest eigenvalue of the symmetric positive semidefinite
// operator apply on the orthogonal complement of the constant vector, by the locally optimal
// block preconditioned conjugate gradient method (Knyazev 2001) with block size b: each step
// is a Rayleigh–Ritz projection on span[X, T·R, P] (iterates, preconditioned residuals,
// previous search directions), orthonormalised by twice-iterated modified Gram–Schmidt.
// Everything is computed in a fixed order, so the result does not depend on workers.
func lobpcgSmallest(ctx context.Context, n, b int, apply func(dst, x []float64), precond func([]float64), maxIter int, tol float64, workers int) (fiedlerReport, error) {
	if b > n-1 {
		b = n - 1
	}
	newCols := func(k int) [][]float64 {
		c := make([][]float64, k)
		for i := range c {
			c[i] = make([]float64, n)
		}
		return c
	}
	applyAll := func(dst, src [][]float64) {
		if workers <= 1 || len(src) == 1 {
			for j := range src {
				apply(dst[j], src[j])
			}
			return
		}
		var wg sync.WaitGroup
		var box panicBox
		sem := make(chan struct{}, workers)
		for j := range src {
			wg.Add(1)
			sem <- struct{}{}
			go func(j int) {
				defer wg.Done()
				defer func() { <-sem }()
				defer box.catch()
				apply(dst[j], src[j])
			}(j)
		}
		wg.Wait()
		box.rethrow()
	}
	// Fixed pseudo-random start, orthogonal to the constant vector.
	rng := rand.New(rand.NewPCG(0x5eed, 0xf1ed1e))
	X, AX := newCols(b), newCols(b)
	for j := range X {
		for i := range X[j] {
			X[j][i] = rng.Float64() - 0.5
		}
		centre(X[j])
	}
	// Work space: the basis S = [X W P] and its image, the next X and P.
	S, AS := newCols(3*b), newCols(3*b)
	Xn, AXn, Pn, APn := newCols(b), newCols(b), newCols(b), newCols(b)
	P, AP := newCols(b), newCols(b)
	nP := 0
	k := orthonormalize(X, nil, 0)
	X = X[:k]
	applyAll(AX, X)
	lam := make([]float64, b)
	rep := fiedlerReport{}
	for it := 0; ; it++ {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		// Basis: X, then W = T·R, then P.
		m := 0
		for j := range X {
			copy(S[m], X[j])
			copy(AS[m], AX[j])
			m++
		}
		if it > 0 {
			// Residuals of the current Ritz pairs.
			res0 := 0.0
			for j := range X {
				w := S[m]
				for i := range w {
					w[i] = AX[j][i] - lam[j]*X[j][i]
				}
				if j == 0 {
					res0 = math.Sqrt(dot(w, w))
				}
				precond(w)
				centre(w)
				m++
			}
			rep.iterations, rep.residual = it, res0
			if res0 <= tol || it >= maxIter {
				rep.converged = res0 <= tol
				break
			}
			applyAll(AS[len(X):m], S[len(X):m])
			for j := 0; j < nP; j++ {
				copy(S[m], P[j])
				copy(AS[m], AP[j])
				m++
			}
		}
		m = orthonormalize(S[:m], AS[:m], len(X))
		// Rayleigh–Ritz: eigenpairs of G = Sᵀ A S (m×m).
		G := mat.NewSymDense(m, nil)
		for i := 0; i < m; i++ {
			for j := i; j < m; j++ {
				G.SetSym(i, j, dot(S[i], AS[j]))
			}
		}
		var es mat.EigenSym
		if !es.Factorize(G, true) {
			break
		}
		vals := es.Values(nil)
		var V mat.Dense
		es.VectorsTo(&V)
		nb := min(b, m)
		for j := 0; j < nb; j++ {
			lam[j] = vals[j]
			combine(Xn[j], S[:m], &V, j, 0)
			combine(AXn[j], AS[:m], &V, j, 0)
			combine(Pn[j], S[:m], &V, j, len(X))
			combine(APn[j], AS[:m], &V, j, len(X))
		}
		for j := 0; j < nb; j++ {
			Xn[j], X[j] = X[j], Xn[j]
			AXn[j], AX[j] = AX[j], AXn[j]
			Pn[j], P[j] = P[j], Pn[j]
			APn[j], AP[j] = AP[j], APn[j]
		}
		X, AX = X[:nb], AX[:nb]
		nP = 0
		if it > 0 {
			nP = nb
		}
		if it%25 == 24 {
			// Refresh X's orthonormality and image against rounding drift.
			for j := range X {
				centre(X[j])
			}
			k := orthonormalize(X, nil, 0)
			X, AX = X[:k], AX[:k]
			applyAll(AX, X)
			for j := range X {
				lam[j] = dot(X[j], AX[j])
			}
		}
	}
	x := X[0]
	ax := make([]float64, n)
	apply(ax, x)
	rep.value = dot(x, ax) / dot(x, x)
	return rep, nil
}

// combine sets dst = Σ_{i ≥ from} cols[i]·V[i][j].
func combine(dst []float64, cols [][]float64, V *mat.Dense, j, from int) {
	for i := range dst {
		dst[i] = 0
	}
	for i := from; i < len(cols); i++ {
		c := V.At(i, j)
		if c == 0 {
			continue
		}
		for k, v := range cols[i] {
			dst[k] += c * v
		}
	}
}

// orthonormalize runs twice-iterated modified Gram–Schmidt on cols (applying the same
// operations to img, the operator's image of cols, when not nil), keeping the first keep
// columns' directions and dropping later columns that are numerically dependent. It returns
// the number of columns kept, compacted to the front.
func orthonormalize(cols, img [][]float64, keep int) int {
	k := 0
	for j := range cols {
		v := cols[j]
		before := math.Sqrt(dot(v, v))
		after := before
		// Twice is enough (Kahan–Parlett): a second pass only when the first cancelled
		// much of the column.
		for pass := 0; pass < 2 && k > 0; pass++ {
			for i := 0; i < k; i++ {
				c := dot(cols[i], v)
				if img != nil {
					axpy2(-c, cols[i], v, img[i], img[j])
				} else {
					axpy(-c, cols[i], v)
				}
			}
			prev := after
			after = math.Sqrt(dot(v, v))
			if after > 0.5*prev {
				break
			}
		}
		if j >= keep && (before == 0 || after <= 1e-10*before) {
			continue
		}
		if after == 0 {
			continue
		}
		scale(1/after, v)
		if img != nil {
			scale(1/after, img[j])
		}
		if k != j {
			cols[k], cols[j] = cols[j], cols[k]
			if img != nil {
				img[k], img[j] = img[j], img[k]
			}
		}
		k++
	}
	return k
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func axpy(a float64, x, y []float64) {
	for i, v := range x {
		y[i] += a * v
	}
}

// axpy2 does y += a·x and v += a·u in one pass.
func axpy2(a float64, x, y, u, v []float64) {
	y = y[:len(x)]
	u = u[:len(x)]
	v = v[:len(x)]
	for i, xi := range x {
		y[i] += a * xi
		v[i] += a * u[i]
	}
}

func scale(a float64, x []float64) {
	for i := range x {
		x[i] *= a
	}
}

// centre projects out the constant vector (the Laplacian's null space).
func centre(x []float64) {
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for i := range x {
		x[i] -= m
	}
}

// panicBox carries a panic from a helper goroutine to the goroutine that waits for it, so
// that it is recovered where the caller recovers (the request handler, the background
// runner) instead of ending the process.
type panicBox struct {
	mu sync.Mutex
	p  any
}

// catch must be deferred directly by the helper goroutine.
func (b *panicBox) catch() {
	if p := recover(); p != nil {
		b.mu.Lock()
		if b.p == nil {
			b.p = p
		}
		b.mu.Unlock()
	}
}

// rethrow re-raises the first caught panic, if any, after every helper has returned.
func (b *panicBox) rethrow() {
	b.mu.Lock()
	p := b.p
	b.mu.Unlock()
	if p != nil {
		panic(p)
	}
}
