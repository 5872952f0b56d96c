package cascade

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate docs/methods/cascade-gai-kapadia.svg and print the full Gai–Kapadia table")

// scenarioOnly runs the first scenario of in without the blast-radius sweep and the
// spectral analysis (the harnesses below make thousands of such runs).
func scenarioOnly(t testing.TB, in Input, workers int) ScenarioResult {
	t.Helper()
	return prepareScenario(t, in, workers).run(t)
}

// prepareScenario validates in and builds the network, the model and the runners.
func prepareScenario(t testing.TB, in Input, workers int) *simulation {
	t.Helper()
	s, err := compile(&in)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPlan(context.Background(), s, Options{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.resolveAttacks(context.Background(), []int{0}); err != nil {
		t.Fatal(err)
	}
	sim := p.newSimulation(context.Background(), int64(p.s.scen[0].runs), nil)
	sim.workers = workers
	for len(sim.runners) < workers {
		sim.runners = append(sim.runners, newRunner(sim.m))
	}
	sim.noTallies = true
	return sim
}

// run makes the runs of the first scenario and summarises them.
func (sim *simulation) run(t testing.TB) ScenarioResult {
	sc := &sim.s.scen[0]
	sp, _, err := sim.runScenario(0, 0, sc.runs)
	if err != nil {
		t.Fatal(err)
	}
	sumR, maxR := int64(0), int32(0)
	for _, r := range sp.rounds {
		sumR += int64(r)
		maxR = max(maxR, r)
	}
	return summariseRuns(sc.name, sc.typ, sp.frac, sp.loss, sumR, int(maxR), sim.s.sysThres)
}

// gkAnalytic is the large-n probability that one random failure starts a global cascade in
// Gai & Kapadia's network: the survival probability 1 − x of a branching process whose
// offspring (vulnerable creditors of a failed bank) is Poisson(z·q), q = P(Poisson(z) ≤ 3)
// being the chance that a creditor reached along an edge has at most 4 debtors; x solves
// x = exp(−z·q·(1 − x)). It is positive exactly when z·q > 1, i.e. 1.02 < z < 5.77.
func gkAnalytic(z float64) float64 {
	q, term := 0.0, math.Exp(-z)
	for k := 0; k <= 3; k++ {
		q += term
		term *= z / float64(k+1)
	}
	mu := z * q
	if mu <= 1 {
		return 0
	}
	x := 0.0
	for i := 0; i < 10000; i++ {
		x = math.Exp(-mu * (1 - x))
	}
	return 1 - x
}

type gkPoint struct {
	z, freq, analytic float64
	lo, hi            float64 // range of the per-network frequencies
}

// gaiKapadiaCurve simulates, for each z, nets networks of 1,000 banks with runs random
// single failures each, and returns the frequency of contagion (share of runs with at least
// 5 % of the banks failed).
func gaiKapadiaCurve(t testing.TB, zs []float64, nets, runs int, seed uint64) []gkPoint {
	var out []gkPoint
	for zi, z := range zs {
		r := rand.New(rand.NewPCG(seed, uint64(zi)))
		p := gkPoint{z: z, analytic: gkAnalytic(z), lo: 1}
		for k := 0; k < nets; k++ {
			net := gaiKapadia(r, 1000, z, 0.041, "bank")
			sims, sd := runs, int64(k)
			in := Input{Network: net, Scenarios: []ScenarioSpec{{Type: TypeRandomNode}}, Simulations: &sims, Seed: &sd}
			sr := scenarioOnly(t, in, 2)
			p.freq += sr.CascadeProbability / float64(nets)
			p.lo, p.hi = math.Min(p.lo, sr.CascadeProbability), math.Max(p.hi, sr.CascadeProbability)
		}
		out = append(out, p)
	}
	return out
}

// TestGaiKapadiaContagionWindow reproduces Gai & Kapadia (2010), Fig. 1 (capital buffer 4 %):
// contagion is frequent inside the window 1.02 < z < 5.77 and rare outside it.
func TestGaiKapadiaContagionWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("long validation against Gai & Kapadia (2010); run without -short")
	}
	t.Parallel()
	zs := []float64{1, 2, 3, 4, 5, 7, 8}
	pts := gaiKapadiaCurve(t, zs, gkNets, gkRuns, 2010)
	for _, p := range pts {
		t.Logf("z=%g frequency %.3f (per network %.2f–%.2f), analytic %.3f", p.z, p.freq, p.lo, p.hi, p.analytic)
		switch {
		case p.z >= 2 && p.z <= 5:
			// Frequent, and within 0.1 of the branching-process limit.
			if p.freq < 0.3 || math.Abs(p.freq-p.analytic) > 0.1 {
				t.Errorf("z=%g: frequency of contagion %.3f, want frequent (≥ 0.3) and within 0.1 of the analytic %.3f", p.z, p.freq, p.analytic)
			}
		case p.z == 1:
			// The window's lower edge (z·q = 0.98, a nearly critical branching process):
			// finite clusters of 50+ banks still occur in a network of 1,000.
			if p.freq > 0.15 {
				t.Errorf("z=1: frequency of contagion %.3f, want rare (≤ 0.15) at the window's edge", p.freq)
			}
		default:
			if p.freq > 0.05 {
				t.Errorf("z=%g: frequency of contagion %.3f, want rare (≤ 0.05) above the window", p.z, p.freq)
			}
		}
	}
	if *update {
		var full []float64
		for z := 0.5; z <= 10.01; z += 0.5 {
			full = append(full, z)
		}
		curve := gaiKapadiaCurve(t, full, 50, 1000, 2010)
		var b strings.Builder
		b.WriteString("| z | frequency of contagion | range over networks | analytic (n → ∞) |\n|---|---|---|---|\n")
		for _, p := range curve {
			fmt.Fprintf(&b, "| %g | %.3f | %.2f–%.2f | %.3f |\n", p.z, p.freq, p.lo, p.hi, p.analytic)
		}
		t.Log("\n" + b.String())
		if err := os.WriteFile("../docs/methods/cascade-gai-kapadia.svg", []byte(gkSVG(curve)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gkSVG plots the simulated frequency of contagion against z with the analytic curve and
// window, as a self-contained SVG.
func gkSVG(pts []gkPoint) string {
	const w, h, ml, mr, mt, mb = 640.0, 400.0, 60.0, 20.0, 30.0, 50.0
	zmax := 10.0
	x := func(z float64) float64 { return ml + z/zmax*(w-ml-mr) }
	y := func(f float64) float64 { return h - mb - f*(h-mt-mb) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e8f0fb"/>`+"\n", x(1.02), y(1), x(5.77)-x(1.02), y(0)-y(1))
	for f := 0.0; f <= 1.001; f += 0.25 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ccc"/>`+"\n", ml, y(f), w-mr, y(f))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.2f</text>`+"\n", ml-6, y(f)+4, f)
	}
	for z := 0.0; z <= zmax; z++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", x(z), h-mb+18, z)
	}
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", ml, h-mb, w-mr, h-mb)
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", ml, mt, ml, h-mb)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">mean degree z</text>`+"\n", (ml+w-mr)/2, h-12)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">frequency of contagion</text>`+"\n", (mt+h-mb)/2, (mt+h-mb)/2)
	var an strings.Builder
	for z := 0.0; z <= zmax+1e-9; z += 0.02 {
		fmt.Fprintf(&an, "%.1f,%.1f ", x(z), y(gkAnalytic(z)))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#999" stroke-dasharray="5,4" stroke-width="1.5"/>`+"\n", strings.TrimSpace(an.String()))
	var sim strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&sim, "%.1f,%.1f ", x(p.z), y(p.freq))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#1f5fbf" stroke-width="2"/>`+"\n", strings.TrimSpace(sim.String()))
	for _, p := range pts {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1f5fbf" stroke-opacity="0.4"/>`+"\n", x(p.z), y(p.lo), x(p.z), y(p.hi))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#1f5fbf"/>`+"\n", x(p.z), y(p.freq))
	}
	lx := w - mr - 300
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1f5fbf" stroke-width="2"/><text x="%.1f" y="%.1f">simulated, n = 1000 (range over networks)</text>`+"\n", lx, mt+10, lx+24, mt+10, lx+30, mt+14)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="5,4" stroke-width="1.5"/><text x="%.1f" y="%.1f">branching-process limit</text>`+"\n", lx, mt+28, lx+24, mt+28, lx+30, mt+32)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="24" height="10" fill="#e8f0fb"/><text x="%.1f" y="%.1f">analytic window 1.02 &lt; z &lt; 5.77</text>`+"\n", lx, mt+41, lx+30, mt+50)
	b.WriteString("</svg>\n")
	return b.String()
}
