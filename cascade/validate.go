package cascade

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"

	"riskapi/engine"
)

// Validate checks the input against the contract and returns the first failure in document
// order as an *engine.InputError, or nil. It keeps what it compiled in the Input
// (engine.Compiled), so that Work and Analyze on the same value do not compile the network
// again.
func (in *Input) Validate() error { return in.compiled.Validate(in.key(), in.compile) }

// spec is the compiled input: Validate's, or compiled now.
func (in *Input) spec() (*spec, error) { return in.compiled.Get(in.key(), in.compile) }

// inputKey is what the compiled input was compiled from (see engine.Compiled).
type inputKey struct {
	nodes     engine.Slice[Node]
	edges     engine.Slice[Edge]
	scenarios engine.Slice[ScenarioSpec]
	model     string
	sims      engine.Optional[int]
	seed      engine.Optional[int64]
	recovery  engine.Optional[float64]
	systemic  engine.Optional[float64]
}

func (in *Input) key() inputKey {
	return inputKey{
		nodes: engine.SliceOf(in.Network.Nodes), edges: engine.SliceOf(in.Network.Edges),
		scenarios: engine.SliceOf(in.Scenarios), model: in.Model, sims: engine.ValueOf(in.Simulations),
		seed: engine.ValueOf(in.Seed), recovery: engine.ValueOf(in.RecoveryRate), systemic: engine.ValueOf(in.SystemicThreshold),
	}
}

func (in *Input) compile() (*spec, error) {
	s, err := compile(in)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Work is the contract's measure of a simulation's size: Σ over scenarios of runs ×
// (nodes + edges), plus swept nodes × (nodes + edges) for the blast radius. Above
// AsyncWorkThreshold the HTTP layer runs the simulation in the background. Work validates
// the input first (unless Validate already did).
func Work(in Input) (int64, error) {
	s, err := in.spec()
	if err != nil {
		return 0, err
	}
	return s.work(), nil
}

func (s *spec) work() int64 {
	size := int64(len(s.ids)) + int64(s.rawEdges)
	var w int64
	for _, sc := range s.scen {
		w += int64(sc.runs) * size
	}
	return w + int64(s.swept())*s.sweepRuns()*size
}

// sweepRuns is how many runs the blast-radius sweep makes per swept node: one, or
// ICBlastRuns seeded runs averaged under independent_cascade (platform contract §11: the
// estimate covers the sweep's per-node repetitions, which dominate such a request).
func (s *spec) sweepRuns() int64 {
	if s.model == mIndependentCascade {
		return ICBlastRuns
	}
	return 1
}

func (s *spec) swept() int {
	if len(s.ids) <= SweepAllMax {
		return len(s.ids)
	}
	return SweepTop
}

// spec is a validated input: nodes by index, raw edges resolved to indices, scenarios with
// their parameters. The network is built from it by build.
type spec struct {
	model                  int
	modelName              string
	ids                    []string
	value, capital, extA   []float64
	failP, hours           []float64
	hasHours               []bool
	provider               []int32 // −1: none
	providers              []string
	rawEdges               int
	src, dst               []int32
	weight, prob           []float64
	scen                   []scenario
	sims                   int
	seed                   int64
	recoveryRate, sysThres float64
	// built is the network, built on first use (by Estimate or Analyze) and then shared
	// read-only by every copy of the spec.
	built *builtNetwork
}

type builtNetwork struct {
	mu sync.Mutex
	g  *network
}

// network returns the spec's network, building it on first use; a build cancelled by ctx
// returns ctx's error and is not kept.
func (s *spec) network(ctx context.Context) (*network, error) {
	if s.built == nil { // a spec made by hand in a test
		return newNetwork(ctx, s)
	}
	s.built.mu.Lock()
	defer s.built.mu.Unlock()
	if s.built.g == nil {
		g, err := newNetwork(ctx, s)
		if err != nil {
			return nil, err
		}
		s.built.g = g
	}
	return s.built.g, nil
}

const (
	mThreshold = iota
	mIndependentCascade
	mDebtRank
	mEisenbergNoe
)

var modelNames = []string{ModelThreshold, ModelIndependentCascade, ModelDebtRank, ModelEisenbergNoe}

// scenario is a validated scenario. Deterministic shocks list their nodes in fixed; a
// targeted attack or provider outage is resolved by the network build.
type scenario struct {
	name, typ  string
	runs       int
	stochastic bool
	fixed      []int32 // node_failure, provider_outage, targeted_attack (after build)
	count      int     // random_node, targeted_attack
	by         string  // targeted_attack
	prob       float64 // random_failure override when hasProb
	hasProb    bool
	shockAll   bool
	lossFrac   float64 // shock
	providerIx int32   // provider_outage
}

const (
	expMag  = "number (0-1e15)"
	expProb = "number (0-1)"
)

// num checks an optional non-negative magnitude.
func num(p *float64, def float64, field string, max float64, expected string) (float64, *engine.InputError) {
	if p == nil {
		return def, nil
	}
	v := *p
	if !(v >= 0 && v <= max) {
		return 0, engine.Invalid(CodeInvalidNetwork, field, expected, "number", "%s must be a number between 0 and %s; got %s.", field, fmtG(max), fmtG(v))
	}
	return v, nil
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func compile(in *Input) (*spec, error) {
	s := &spec{built: &builtNetwork{}}
	nodes, edges := in.Network.Nodes, in.Network.Edges
	n := len(nodes)
	if n == 0 && nodes == nil && in.Network.Edges == nil && !in.Network.decoded {
		return nil, engine.Invalid(CodeInvalidNetwork, "network", "object (nodes and edges)", "missing", "network is required: an object with nodes and edges.")
	}
	if n == 0 {
		rec := "array"
		if nodes == nil {
			rec = "missing"
		}
		return nil, engine.Invalid(CodeInvalidNetwork, "network.nodes", "array (1-100000 nodes)", rec, "network.nodes must list at least one node.")
	}
	if n > MaxNodes {
		return nil, engine.Invalid(CodeInvalidNetwork, "network.nodes", "array (1-100000 nodes)", "array", "network.nodes has %d nodes; at most %d are allowed.", n, MaxNodes)
	}
	s.ids = make([]string, n)
	s.value = make([]float64, n)
	s.capital = make([]float64, n)
	s.extA = make([]float64, n)
	s.failP = make([]float64, n)
	s.hours = make([]float64, n)
	s.hasHours = make([]bool, n)
	s.provider = make([]int32, n)
	index := make(map[string]int32, n)
	provIndex := map[string]int32{}
	var total float64
	for i, nd := range nodes {
		p := fmt.Sprintf("network.nodes[%d]", i)
		if nd.ID == "" {
			return nil, engine.Invalid(CodeInvalidNetwork, p+".id", "string (non-empty, unique)", "missing", "%s.id is required.", p)
		}
		if j, dup := index[nd.ID]; dup {
			return nil, engine.Invalid(CodeInvalidNetwork, p+".id", "string (non-empty, unique)", "string", "node id %q is already used by network.nodes[%d].", nd.ID, j)
		}
		index[nd.ID] = int32(i)
		s.ids[i] = nd.ID
		var err *engine.InputError
		if s.capital[i], err = num(nd.Capital, 1, p+".capital", MaxMagnitude, expMag); err != nil {
			return nil, err
		}
		if s.extA[i], err = num(nd.ExternalAssets, 0, p+".external_assets", MaxMagnitude, expMag); err != nil {
			return nil, err
		}
		if s.value[i], err = num(nd.Value, 1, p+".value", MaxMagnitude, expMag); err != nil {
			return nil, err
		}
		if s.failP[i], err = num(nd.FailureProbability, 0, p+".failure_probability", 1, expProb); err != nil {
			return nil, err
		}
		if nd.RecoveryHours != nil {
			if s.hours[i], err = num(nd.RecoveryHours, 0, p+".recovery_hours", MaxMagnitude, expMag); err != nil {
				return nil, err
			}
			s.hasHours[i] = true
		}
		s.provider[i] = -1
		if nd.Provider != "" {
			k, ok := provIndex[nd.Provider]
			if !ok {
				k = int32(len(s.providers))
				provIndex[nd.Provider] = k
				s.providers = append(s.providers, nd.Provider)
			}
			s.provider[i] = k
		}
		total += s.value[i]
	}
	if !(total > 0) {
		return nil, engine.Invalid(CodeInvalidNetwork, "network.nodes", "array (total value above 0)", "array", "the nodes' values sum to 0; at least one node needs a positive value.")
	}
	if len(edges) > MaxEdges {
		return nil, engine.Invalid(CodeInvalidNetwork, "network.edges", "array (at most 1000000 edges)", "array", "network.edges has %d edges; at most %d are allowed.", len(edges), MaxEdges)
	}
	s.rawEdges = len(edges)
	s.src = make([]int32, 0, len(edges))
	s.dst = make([]int32, 0, len(edges))
	s.weight = make([]float64, 0, len(edges))
	s.prob = make([]float64, 0, len(edges))
	for i, e := range edges {
		p := fmt.Sprintf("network.edges[%d]", i)
		a, ok := index[e.Source]
		if !ok {
			return nil, unknownNode(CodeInvalidNetwork, p+".source", e.Source)
		}
		b, ok := index[e.Target]
		if !ok {
			return nil, unknownNode(CodeInvalidNetwork, p+".target", e.Target)
		}
		w, err := num(e.Weight, 1, p+".weight", MaxMagnitude, expMag)
		if err != nil {
			return nil, err
		}
		pr, err := num(e.Probability, 1, p+".probability", 1, expProb)
		if err != nil {
			return nil, err
		}
		if a == b {
			continue // self-loops are ignored
		}
		s.src = append(s.src, a)
		s.dst = append(s.dst, b)
		s.weight = append(s.weight, w)
		s.prob = append(s.prob, pr)
	}

	s.modelName = in.Model
	if s.modelName == "" {
		s.modelName = ModelThreshold
	}
	s.model = -1
	for k, m := range modelNames {
		if m == s.modelName {
			s.model = k
		}
	}
	if s.model < 0 {
		return nil, engine.Invalid(CodeInvalidModel, "model", "string (threshold, independent_cascade, debtrank or eisenberg_noe)", "string", "unknown model %q.", in.Model)
	}

	s.sims = DefaultSimulations
	if in.Simulations != nil {
		s.sims = *in.Simulations
	}
	if err := s.compileScenarios(in, index); err != nil {
		return nil, err
	}
	if in.Simulations != nil && (s.sims < 1 || s.sims > MaxSimulations) {
		return nil, engine.Invalid(CodeInvalidSimulations, "simulations", "integer (1-100000)", "number", "simulations must be between 1 and %d; got %d.", MaxSimulations, s.sims)
	}
	if in.Seed != nil {
		s.seed = *in.Seed
	}
	if in.RecoveryRate != nil {
		if v := *in.RecoveryRate; !(v >= 0 && v <= 1) {
			return nil, engine.Invalid(CodeInvalidRecoveryRate, "recovery_rate", expProb, "number", "recovery_rate must be between 0 and 1; got %s.", fmtG(v))
		}
		s.recoveryRate = *in.RecoveryRate
	}
	s.sysThres = DefaultSystemicThreshold
	if in.SystemicThreshold != nil {
		if v := *in.SystemicThreshold; !(v > 0 && v <= 1) {
			return nil, engine.Invalid(CodeInvalidSystemicThreshold, "systemic_threshold", "number (above 0, at most 1)", "number", "systemic_threshold must be above 0 and at most 1; got %s.", fmtG(v))
		}
		s.sysThres = *in.SystemicThreshold
	}
	// Runs depend on simulations, validated after the scenarios (document order).
	for k := range s.scen {
		sc := &s.scen[k]
		sc.runs = 1
		if sc.stochastic {
			sc.runs = s.sims
		}
	}
	return s, nil
}

func unknownNode(code, field, id string) *engine.InputError {
	if id == "" {
		return engine.Invalid(code, field, "string (a node id)", "missing", "%s is required.", field)
	}
	return engine.Invalid(code, field, "string (a node id)", "string", "%s: %q is not the id of a node of the network.", field, id)
}

var scenarioTypes = []string{TypeNodeFailure, TypeRandomNode, TypeRandomFailure, TypeTargetedAttack, TypeProviderOutage, TypeShock}

const expTypes = "string (node_failure, random_node, random_failure, targeted_attack, provider_outage or shock)"

func (s *spec) compileScenarios(in *Input, index map[string]int32) *engine.InputError {
	n := len(s.ids)
	ic := s.model == mIndependentCascade
	if in.Scenarios == nil {
		s.scen = s.defaultScenarios()
		for k := range s.scen {
			s.scen[k].stochastic = s.scen[k].stochastic || ic
		}
		return nil
	}
	if len(in.Scenarios) == 0 || len(in.Scenarios) > MaxScenarios {
		return engine.Invalid(CodeInvalidScenarios, "scenarios", "array (1-100 scenarios)", "array", "scenarios must list between 1 and %d scenarios (omit it for the defaults); got %d.", MaxScenarios, len(in.Scenarios))
	}
	for k, sp := range in.Scenarios {
		p := fmt.Sprintf("scenarios[%d]", k)
		sc := scenario{name: sp.Name, typ: sp.Type, providerIx: -1}
		if sc.name == "" {
			sc.name = sp.Type
		}
		known := false
		for _, t := range scenarioTypes {
			known = known || t == sp.Type
		}
		if !known {
			rec := "string"
			if sp.Type == "" {
				rec = "missing"
			}
			return engine.Invalid(CodeInvalidScenarios, p+".type", expTypes, rec, "%s.type must be one of node_failure, random_node, random_failure, targeted_attack, provider_outage, shock; got %q.", p, sp.Type)
		}
		// Parameters that the type does not use are rejected rather than silently ignored.
		uses := map[string]bool{
			TypeNodeFailure:    sp.Type == TypeNodeFailure || sp.Type == TypeShock,
			TypeRandomNode:     sp.Type == TypeRandomNode || sp.Type == TypeTargetedAttack,
			TypeRandomFailure:  sp.Type == TypeRandomFailure,
			TypeTargetedAttack: sp.Type == TypeTargetedAttack,
			TypeProviderOutage: sp.Type == TypeProviderOutage,
			TypeShock:          sp.Type == TypeShock,
		}
		for _, f := range []struct {
			present bool
			use     string
			name    string
			rec     string
		}{
			{sp.Count != nil, TypeRandomNode, "count", "number"},
			{sp.Nodes != nil, TypeNodeFailure, "nodes", "array"},
			{sp.Probability != nil, TypeRandomFailure, "probability", "number"},
			{sp.By != "", TypeTargetedAttack, "by", "string"},
			{sp.Provider != "", TypeProviderOutage, "provider", "string"},
			{sp.LossFraction != nil, TypeShock, "loss_fraction", "number"},
		} {
			if f.present && !uses[f.use] {
				return engine.Invalid(CodeInvalidScenarios, p+"."+f.name, "absent (not used by "+sp.Type+")", f.rec, "%s.%s does not apply to a %s scenario.", p, f.name, sp.Type)
			}
		}
		switch sp.Type {
		case TypeNodeFailure, TypeShock:
			if sp.Type == TypeShock && ic {
				return engine.Invalid(CodeInvalidScenarios, p+".type", "string (shock is not available under independent_cascade)", "string", "shock scenarios are not available under the independent_cascade model.")
			}
			if sp.Type == TypeNodeFailure && len(sp.Nodes) == 0 {
				rec := "array"
				if sp.Nodes == nil {
					rec = "missing"
				}
				return engine.Invalid(CodeInvalidScenarios, p+".nodes", "array (at least one node id)", rec, "%s.nodes must list the nodes that fail.", p)
			}
			if sp.Type == TypeShock && sp.Nodes != nil && len(sp.Nodes) == 0 {
				return engine.Invalid(CodeInvalidScenarios, p+".nodes", "array (at least one node id; omit for all nodes)", "array", "%s.nodes is empty; omit it to shock every node.", p)
			}
			seen := make(map[int32]bool, len(sp.Nodes))
			for j, id := range sp.Nodes {
				ix, ok := index[id]
				if !ok {
					return unknownNode(CodeInvalidScenarios, fmt.Sprintf("%s.nodes[%d]", p, j), id)
				}
				if !seen[ix] {
					seen[ix] = true
					sc.fixed = append(sc.fixed, ix)
				}
			}
			if sp.Type == TypeShock {
				sc.shockAll = sp.Nodes == nil
				if sp.LossFraction == nil {
					return engine.Invalid(CodeInvalidScenarios, p+".loss_fraction", "number (above 0, at most 1)", "missing", "%s.loss_fraction is required for a shock.", p)
				}
				if v := *sp.LossFraction; !(v > 0 && v <= 1) {
					return engine.Invalid(CodeInvalidScenarios, p+".loss_fraction", "number (above 0, at most 1)", "number", "%s.loss_fraction must be above 0 and at most 1; got %s.", p, fmtG(v))
				}
				sc.lossFrac = *sp.LossFraction
			}
		case TypeRandomNode, TypeTargetedAttack:
			sc.count = 1
			if sp.Count != nil {
				sc.count = *sp.Count
			}
			if sc.count < 1 || sc.count > n {
				return engine.Invalid(CodeInvalidScenarios, p+".count", fmt.Sprintf("integer (1-%d, the node count)", n), "number", "%s.count must be between 1 and the number of nodes (%d); got %d.", p, n, sc.count)
			}
			sc.stochastic = sp.Type == TypeRandomNode
			if sp.Type == TypeTargetedAttack {
				sc.by = sp.By
				if sc.by == "" {
					sc.by = ByExposure
				}
				if sc.by != ByDegree && sc.by != ByExposure && sc.by != ByEigenvector {
					return engine.Invalid(CodeInvalidScenarios, p+".by", "string (degree, exposure or eigenvector)", "string", "%s.by must be degree, exposure or eigenvector; got %q.", p, sp.By)
				}
			}
		case TypeRandomFailure:
			sc.stochastic = true
			if sp.Probability != nil {
				if v := *sp.Probability; !(v >= 0 && v <= 1) {
					return engine.Invalid(CodeInvalidScenarios, p+".probability", expProb, "number", "%s.probability must be between 0 and 1; got %s.", p, fmtG(v))
				}
				sc.prob, sc.hasProb = *sp.Probability, true
			}
		case TypeProviderOutage:
			if sp.Provider == "" {
				return engine.Invalid(CodeInvalidScenarios, p+".provider", "string (a provider of the network)", "missing", "%s.provider is required.", p)
			}
			for k, name := range s.providers {
				if name == sp.Provider {
					sc.providerIx = int32(k)
				}
			}
			if sc.providerIx < 0 {
				return engine.Invalid(CodeInvalidScenarios, p+".provider", "string (a provider of the network)", "string", "no node of the network has provider %q.", sp.Provider)
			}
			sc.fixed = s.providerNodes(sc.providerIx)
		}
		sc.stochastic = sc.stochastic || ic
		s.scen = append(s.scen, sc)
	}
	return nil
}

// defaultScenarios: random_failure when some node has a positive failure probability, a
// targeted attack on the top node by exposure, and an outage of the largest provider by value.
func (s *spec) defaultScenarios() []scenario {
	var out []scenario
	for _, p := range s.failP {
		if p > 0 {
			out = append(out, scenario{name: TypeRandomFailure, typ: TypeRandomFailure, stochastic: true, providerIx: -1})
			break
		}
	}
	out = append(out, scenario{name: TypeTargetedAttack, typ: TypeTargetedAttack, count: 1, by: ByExposure, providerIx: -1})
	if len(s.providers) > 0 {
		top, _, _ := s.providerShares()
		out = append(out, scenario{name: TypeProviderOutage, typ: TypeProviderOutage, providerIx: int32(top), fixed: s.providerNodes(int32(top))})
	}
	return out
}

func (s *spec) providerNodes(k int32) []int32 {
	var out []int32
	for i, p := range s.provider {
		if p == k {
			out = append(out, int32(i))
		}
	}
	return out
}

// providerShares returns the largest provider by value (ties by name), its share and the
// HHI, shares being of the value of the nodes that name a provider.
func (s *spec) providerShares() (top int, topShare, hhi float64) {
	val := make([]float64, len(s.providers))
	var tot float64
	for i, p := range s.provider {
		if p >= 0 {
			val[p] += s.value[i]
			tot += s.value[i]
		}
	}
	top = 0
	for k := range val {
		if val[k] > val[top] || (val[k] == val[top] && s.providers[k] < s.providers[top]) {
			top = k
		}
	}
	if tot <= 0 {
		// Every provider's nodes have value 0: shares by node count instead.
		for k := range val {
			val[k] = 0
		}
		for _, p := range s.provider {
			if p >= 0 {
				val[p]++
				tot++
			}
		}
		top = 0
		for k := range val {
			if val[k] > val[top] || (val[k] == val[top] && s.providers[k] < s.providers[top]) {
				top = k
			}
		}
	}
	for _, v := range val {
		sh := v / tot
		hhi += sh * sh
	}
	return top, val[top] / tot, math.Min(1, hhi)
}
