// Package cascade simulates how failures and losses propagate through a network of agents,
// services or institutions (threshold, independent-cascade, DebtRank and Eisenberg–Noe
// models, Monte Carlo over shocks) and scores its systemic fragility. It is a pure engine:
// Analyze turns an Input into a Result; a Plan splits the same simulation into chunks that
// any process may run and merges them into the same Result (docs/methods/cascade.md §14);
// Generate produces networks with known truth for tests and test mode.
package cascade

import "riskapi/engine"

// MethodVersion identifies the method documented in docs/methods/cascade.md.
const MethodVersion = "cascade/1"

// Models (Input.Model).
const (
	ModelThreshold          = "threshold"
	ModelIndependentCascade = "independent_cascade"
	ModelDebtRank           = "debtrank"
	ModelEisenbergNoe       = "eisenberg_noe"
)

// Scenario types (ScenarioSpec.Type).
const (
	TypeNodeFailure    = "node_failure"
	TypeRandomNode     = "random_node"
	TypeRandomFailure  = "random_failure"
	TypeTargetedAttack = "targeted_attack"
	TypeProviderOutage = "provider_outage"
	TypeShock          = "shock"
)

// Centralities of a targeted attack (ScenarioSpec.By).
const (
	ByDegree      = "degree"
	ByExposure    = "exposure"
	ByEigenvector = "eigenvector"
)

// Limits and defaults of the contract (shared/spec/cascade.md).
const (
	MaxNodes                   = 100_000
	MaxEdges                   = 1_000_000
	MaxSimulations             = 100_000
	DefaultSimulations         = 10_000
	DefaultSystemicThreshold   = 0.05
	MaxScenarios               = 100
	MaxMagnitude               = 1e15 // largest accepted capital, value, weight, … (keeps sums finite)
	AsyncWorkThreshold         = 500_000_000
	SystemicCascadeProbability = 0.05 // systemic_risk_detected when a scenario's cascade_probability reaches this
	// Blast radius: every node when there are at most SweepAllMax nodes, otherwise the
	// SweepTop nodes with the largest out-exposure; independent cascade averages
	// ICBlastRuns seeded runs per node.
	SweepAllMax = 2000
	SweepTop    = 1000
	ICBlastRuns = 100
)

// Error codes of the *engine.InputError values Analyze returns.
const (
	CodeInvalidNetwork           = "INVALID_NETWORK"
	CodeInvalidModel             = "INVALID_MODEL"
	CodeInvalidScenarios         = "INVALID_SCENARIOS"
	CodeInvalidSimulations       = "INVALID_SIMULATIONS"
	CodeInvalidRecoveryRate      = "INVALID_RECOVERY_RATE"
	CodeInvalidSystemicThreshold = "INVALID_SYSTEMIC_THRESHOLD"
)

// Node is one agent, service or institution. Optional numbers are pointers (nil = default).
type Node struct {
	ID string `json:"id"`
	// Capital absorbs losses (threshold, DebtRank); default 1.
	Capital *float64 `json:"capital,omitempty"`
	// ExternalAssets are the assets outside the network (Eisenberg–Noe); default 0.
	ExternalAssets *float64 `json:"external_assets,omitempty"`
	// Value weighs the node in failed fractions and losses; default 1.
	Value *float64 `json:"value,omitempty"`
	// FailureProbability is used by random_failure scenarios; default 0.
	FailureProbability *float64 `json:"failure_probability,omitempty"`
	Provider           string   `json:"provider,omitempty"`
	RecoveryHours      *float64 `json:"recovery_hours,omitempty"`
}

// Edge source → target: the target is exposed to the source (for Eisenberg–Noe, the source
// owes the target Weight).
type Edge struct {
	Source string `json:"source"`
	Target string `json:"target"`
	// Weight is the exposure; default 1.
	Weight *float64 `json:"weight,omitempty"`
	// Probability that a failure transmits (independent cascade only); default 1.
	Probability *float64 `json:"probability,omitempty"`
}

// Network is the simulated graph.
type Network struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
	// decoded records that the network was sent in JSON, even as {}: a request without one
	// is told that "network" is missing, one with an empty one that "network.nodes" is.
	decoded bool
}

// ScenarioSpec is one requested scenario; which fields apply depends on Type.
type ScenarioSpec struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type"`
	// Count: random_node (default 1) and targeted_attack (default 1).
	Count *int `json:"count,omitempty"`
	// Nodes: node_failure (required) and shock (default: all nodes).
	Nodes []string `json:"nodes,omitempty"`
	// Probability: random_failure, replacing every node's failure_probability.
	Probability *float64 `json:"probability,omitempty"`
	// By: targeted_attack, one of degree, exposure (default), eigenvector.
	By string `json:"by,omitempty"`
	// Provider: provider_outage (required).
	Provider string `json:"provider,omitempty"`
	// LossFraction: shock (required, in (0, 1]).
	LossFraction *float64 `json:"loss_fraction,omitempty"`
}

// Input is the request of POST /v1/cascade/simulate.
type Input struct {
	Network Network `json:"network"`
	// Model: threshold (default), independent_cascade, debtrank, eisenberg_noe.
	Model string `json:"model,omitempty"`
	// Scenarios: nil means the defaults of the contract.
	Scenarios []ScenarioSpec `json:"scenarios,omitempty"`
	// Simulations: Monte Carlo runs of each stochastic scenario, 1–100,000 (default 10,000).
	Simulations *int `json:"simulations,omitempty"`
	// Seed of every random draw. The HTTP layer draws one when the request has none;
	// Analyze uses 0 when it is nil. Result.Seed reports the seed used.
	Seed *int64 `json:"seed,omitempty"`
	// RecoveryRate in [0, 1] (default 0): the share of an exposure recovered when the source fails.
	RecoveryRate *float64 `json:"recovery_rate,omitempty"`
	// SystemicThreshold in (0, 1] (default 0.05): a run is systemic when its failed value
	// fraction reaches it.
	SystemicThreshold *float64 `json:"systemic_threshold,omitempty"`
	// Async asks the HTTP layer to run the simulation in the background; the engine ignores it.
	Async bool `json:"async,omitempty"`

	// Run tunes how Analyze runs; it never changes the result and is not part of the body.
	Run Options `json:"-"`

	// compiled is what Validate compiled, so that Analyze does not compile the same
	// network twice (see Validate).
	compiled engine.Compiled[inputKey, spec]
}

// Quantiles of the failed value fraction.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// TailLevels holds a value at the 0.95 and 0.99 levels.
type TailLevels struct {
	L95 float64 `json:"0.95"`
	L99 float64 `json:"0.99"`
}

// Histogram of the failed value fraction: 10 equal bins over [0, 1], the last one closed.
type Histogram struct {
	Edges  []float64 `json:"edges"`
	Counts []int     `json:"counts"`
}

// ScenarioResult summarises the runs of one scenario.
type ScenarioResult struct {
	Name                    string     `json:"name"`
	Type                    string     `json:"type"`
	Runs                    int        `json:"runs"`
	CascadeProbability      float64    `json:"cascade_probability"`
	ExpectedFailedFraction  float64    `json:"expected_failed_fraction"`
	FailedFractionQuantiles Quantiles  `json:"failed_fraction_quantiles"`
	ExpectedLoss            float64    `json:"expected_loss"`
	ValueAtRisk             TailLevels `json:"value_at_risk"`
	ExpectedShortfall       TailLevels `json:"expected_shortfall"`
	MeanRounds              float64    `json:"mean_rounds"`
	MaxRounds               int        `json:"max_rounds"`
	Histogram               Histogram  `json:"histogram"`
	// TotalShortfall: Eisenberg–Noe only (mean Σ p̄ᵢ − pᵢ), else nil.
	TotalShortfall *float64 `json:"total_shortfall"`
}

// NodeResult is one node's systemic importance and vulnerability.
type NodeResult struct {
	ID                 string   `json:"id"`
	FailureProbability float64  `json:"failure_probability"`
	BlastRadius        *float64 `json:"blast_radius"`
	DebtRank           *float64 `json:"debtrank"`
	Payment            *float64 `json:"payment"`
	Shortfall          *float64 `json:"shortfall"`
	Rank               int      `json:"rank"`
}

// Connectivity is the structural dimension.
type Connectivity struct {
	Score                 float64 `json:"score"`
	AlgebraicConnectivity float64 `json:"algebraic_connectivity"`
	Components            int     `json:"components"`
}

// CascadeDimension reports the worst scenario.
type CascadeDimension struct {
	Score         float64 `json:"score"`
	WorstScenario string  `json:"worst_scenario"`
	Probability   float64 `json:"probability"`
}

// Concentration is provider concentration (nil without providers).
type Concentration struct {
	Score       float64 `json:"score"`
	HHI         float64 `json:"hhi"`
	TopProvider string  `json:"top_provider"`
	TopShare    float64 `json:"top_share"`
}

// Recovery is the expected recovery time of the worst scenario (nil without recovery_hours).
type Recovery struct {
	Score                 float64 `json:"score"`
	ExpectedRecoveryHours float64 `json:"expected_recovery_hours"`
}

// Dimensions of the score.
type Dimensions struct {
	Connectivity       Connectivity     `json:"connectivity"`
	CascadeProbability CascadeDimension `json:"cascade_probability"`
	Concentration      *Concentration   `json:"concentration"`
	Recovery           *Recovery        `json:"recovery"`
}

// Result is the simulation object minus the resource envelope the HTTP layer adds
// (id, object, status, livemode, created_at, completed_at).
type Result struct {
	Model                string           `json:"model"`
	Seed                 int64            `json:"seed"`
	Simulations          int              `json:"simulations"`
	SystemicRiskDetected bool             `json:"systemic_risk_detected"`
	Score                float64          `json:"score"`
	RiskBand             string           `json:"risk_band"`
	Dimensions           Dimensions       `json:"dimensions"`
	Scenarios            []ScenarioResult `json:"scenarios"`
	Nodes                []NodeResult     `json:"nodes"`
	MethodVersion        string           `json:"method_version"`
}

// Options tune how Analyze runs; they never change its result.
type Options struct {
	// Workers is the number of goroutines; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, is called with the finished and total number of runs (scenario
	// runs plus blast-radius runs) — serialised, at most about 200 times, and once at the end.
	// Analyze calls it; Plan.RunChunk does not (Plan.Progress is a chunked simulation's).
	Progress func(done, total int64)
	// ChunkRuns is the number of runs per chunk of a Plan (NewPlan); 0 means the default,
	// about a second of one core a chunk (see Plan). Every process working on one
	// simulation must use the same value: it is part of the plan's ID. Analyze makes every
	// run in one slice and ignores it.
	ChunkRuns int
	// everyRun turns exact reuse off (every run made on its own): the reference the reuse
	// tests compare its bytes with.
	everyRun bool
}
