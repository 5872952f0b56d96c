//go:build !race

package cascade

// Harness sizes without the race detector.
const (
	gkNets = 20
	gkRuns = 500
	// evalPerScenario: generated networks per test-mode scenario in the main evaluation run.
	evalPerScenario = 60
	// detNodes, detSims: size of the byte-identity test's network and runs.
	detNodes = 300
	detSims  = 3000
)

// Known graphs of the λ₂ test (sizes above denseFiedlerMax go through LOBPCG).
var (
	fiedlerRandomN   = 900
	fiedlerPaths     = []int{2, 10, 100, 600, 1500}
	fiedlerCycles    = []int{3, 50, 500, 3000}
	fiedlerCompletes = []int{2, 30, 450}
)

// TestLargeNetwork: nodes (≈ 9.9 edges each) and runs.
const (
	largeNodes = 100_000
	largeRuns  = 1000
)
