//go:build race

package cascade

// Harness sizes under the race detector (10–60× slower): smaller samples, same targets.
const (
	gkNets          = 8
	gkRuns          = 250
	evalPerScenario = 9
	detNodes        = 150
	detSims         = 500
)

var (
	fiedlerRandomN   = 420
	fiedlerPaths     = []int{2, 10, 100, 420}
	fiedlerCycles    = []int{3, 50, 420}
	fiedlerCompletes = []int{2, 30, 410}
)

// TestLargeNetwork: nodes (≈ 9.9 edges each) and runs.
const (
	largeNodes = 20_000
	largeRuns  = 100
)
