package cascade

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Chunk sizes of a Plan (docs/methods/cascade.md, "Chunked runs"). A chunk holds about
// chunkWork of the contract's work measure (runs × (nodes + edges), see Work), so that a
// chunk is at most about a second of one core whatever the network (AsyncWorkThreshold,
// 5·10⁸, is the 5 s synchronous budget), between minChunkRuns runs (a chunk is a stored
// job: fewer runs would make the bookkeeping cost more than the runs) and maxChunkRuns
// (bounds a chunk's bytes: about 30 bytes a run, so at most ≈ 0.5 MB of outcomes).
const (
	chunkWork    = 1 << 27
	minChunkRuns = 64
	maxChunkRuns = 16_384
)

// Plan is the deterministic split of a simulation into chunks, so that its work can be
// spread over processes: every process that makes a Plan from the same Input (and the same
// Options.ChunkRuns) gets the same chunks, any process may run any chunk (RunChunk), a
// chunk's result travels as bytes (ChunkResult.MarshalBinary, Plan.DecodeChunk), and Merge
// combines the results, in chunk order, into exactly the Result Analyze gives — the same
// JSON bytes, whatever the number of processes, workers, or re-executions of a chunk.
//
// The runs of a simulation are numbered in one sequence: every run of the first scenario,
// then of the second, …, then the blast-radius runs (one per swept node, or ICBlastRuns
// per swept node under independent_cascade). Chunk 0 computes the network's structure (λ₂
// and the components: work that is not per run); chunks 1, 2, … take the runs of that
// sequence in consecutive slices of ChunkRuns. A run's random draws depend only on the
// seed, its scenario and its index (never on its chunk), so how the sequence is cut does
// not change the result.
//
// A Plan is read-only once made, except for the targeted attacks it resolves on first use
// (under a lock): RunChunk may be called on one Plan from several goroutines at once.
type Plan struct {
	s     *spec
	g     *network
	m     *model
	opt   Options
	sweep []int32 // the swept nodes, in sweep order
	reps  int     // blast-radius runs per swept node
	// starts[k] is the first run of scenario k in the sequence; starts[len(scen)] the
	// first blast-radius run; total the number of runs.
	starts  []int64
	total   int64
	per     int64 // runs per chunk
	chunks  int   // chunks, the structure chunk included
	first   firstKind
	hours   bool    // some node has recovery_hours: runs record their recovery time
	valueΣ  float64 // Σ node values, in node order
	attacks attackCache
	// pool holds the runners of finished chunks for the next ones (see takeRunners).
	poolMu sync.Mutex
	pool   []*runner
	// id is the plan's ID, hashed on first use (Analyze never needs it).
	id     [16]byte
	idOnce sync.Once
}

// firstKind is what the runs of the first scenario tally per node besides failures.
type firstKind int

const (
	firstFailsOnly       firstKind = iota
	firstShortfallSums             // Eisenberg–Noe, more than one run: quantised shortfall sums
	firstExactShortfalls           // Eisenberg–Noe, one run: the run's exact shortfalls
)

// attackCache resolves the first failures of targeted attacks on first use: a chunk that
// has no targeted-attack run never computes a centrality.
type attackCache struct {
	mu       sync.Mutex
	resolved []bool
	scores   map[string][]float64
}

// NewPlan validates the input (unless Validate already did), builds its network and splits
// its runs into chunks. Bad input returns an *engine.InputError; a cancelled ctx stops the
// network build. The chunk size is in.Run.ChunkRuns, or by default about chunkWork of work
// a chunk (see the constants); in.Run.Workers is how many goroutines RunChunk uses.
func NewPlan(ctx context.Context, in Input) (*Plan, error) {
	s, err := in.spec()
	if err != nil {
		return nil, err
	}
	if in.Run.ChunkRuns < 0 {
		return nil, fmt.Errorf("cascade: Options.ChunkRuns must not be negative; got %d", in.Run.ChunkRuns)
	}
	return newPlan(ctx, s, in.Run)
}

func newPlan(ctx context.Context, s *spec, opt Options) (*Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The compiled input may be shared (Validate keeps it for every copy of the Input, and
	// copies may be analysed at once): what this plan resolves goes into its own scenarios.
	// The network is shared too (built once, read-only).
	own := *s
	own.scen = slices.Clone(s.scen)
	s = &own
	g, err := s.network(ctx)
	if err != nil {
		return nil, err
	}
	p := &Plan{s: s, g: g, m: newModel(s, g), opt: opt, reps: int(s.sweepRuns())}
	p.sweep = topNodes(s.ids, g.exposure, s.swept())
	p.starts = make([]int64, len(s.scen)+1)
	for k, sc := range s.scen {
		p.starts[k+1] = p.starts[k] + int64(sc.runs)
	}
	p.total = p.starts[len(s.scen)] + int64(len(p.sweep))*int64(p.reps)
	p.per = int64(opt.ChunkRuns)
	if p.per == 0 {
		size := int64(len(s.ids)) + int64(s.rawEdges)
		p.per = min(maxChunkRuns, max(minChunkRuns, chunkWork/size))
	}
	p.chunks = 1 + int((p.total+p.per-1)/p.per)
	if s.model == mEisenbergNoe {
		p.first = firstShortfallSums
		if s.scen[0].runs == 1 {
			p.first = firstExactShortfalls
		}
	}
	p.hours = slices.Contains(s.hasHours, true)
	for _, v := range s.value {
		p.valueΣ += v
	}
	p.attacks.resolved = make([]bool, len(s.scen))
	p.attacks.scores = map[string][]float64{}
	return p, nil
}

// Chunks is the number of chunks: chunk 0 (the network's structure) and the chunks of runs.
func (p *Plan) Chunks() int { return p.chunks }

// ChunkRuns is the number of runs per chunk (the last chunk may have fewer).
func (p *Plan) ChunkRuns() int { return int(p.per) }

// Runs is the number of runs of the simulation: every scenario's and the blast-radius runs.
// It is the total that Options.Progress reports.
func (p *Plan) Runs() int64 { return p.total }

// ID identifies the plan: a hash of the compiled input, the chunk size, the method version
// and the chunk format. A chunk's bytes carry it, so that a chunk of another simulation,
// another chunk size or another version of the engine is refused rather than merged.
func (p *Plan) ID() string {
	id := p.idBytes()
	return hex.EncodeToString(id[:])
}

// idBytes is the plan's ID, computed once: ≈ 40 ms at the contract's limits.
func (p *Plan) idBytes() [16]byte {
	p.idOnce.Do(func() { p.id = p.s.fingerprint(p.per) })
	return p.id
}

// Runs of chunk c: [lo, hi) of the run sequence (empty for chunk 0).
func (p *Plan) runRange(c int) (lo, hi int64) {
	if c == 0 {
		return 0, 0
	}
	lo = int64(c-1) * p.per
	return lo, min(lo+p.per, p.total)
}

// RunsIn is the number of runs chunk c makes (0 for chunk 0, whose work is not per run).
func (p *Plan) RunsIn(c int) int64 {
	if c < 0 || c >= p.chunks {
		return 0
	}
	lo, hi := p.runRange(c)
	return hi - lo
}

// Progress is the share of the runs made by the chunks listed in done (finished runs / all
// runs, in [0, 1]); a chunk listed twice (re-executed) or out of range counts once or not
// at all. Chunk 0 makes no runs: progress can reach 1 while λ₂ is still being computed.
func (p *Plan) Progress(done []int) float64 {
	if p.total == 0 {
		return 1
	}
	seen := make(map[int]bool, len(done))
	var runs int64
	for _, c := range done {
		if c > 0 && c < p.chunks && !seen[c] {
			seen[c] = true
			runs += p.RunsIn(c)
		}
	}
	return float64(runs) / float64(p.total)
}

// ChunkResult is what one chunk computed: the outcomes of its runs (or, for chunk 0, the
// network's structure). It is produced by RunChunk or DecodeChunk and consumed by Merge.
type ChunkResult struct {
	plan  *Plan
	chunk int
	part  *partial
}

// Chunk is the chunk's index.
func (c *ChunkResult) Chunk() int { return c.chunk }

// RunChunk runs chunk c of the plan on in.Run.Workers goroutines: for chunk 0, λ₂ and the
// components; for the others, the chunk's runs. Its result does not depend on the workers,
// on which process runs it or on how often: running a chunk again gives the same bytes. A
// cancelled ctx stops it as it stops Analyze (within 100 ms) and returns ctx's error.
func (p *Plan) RunChunk(ctx context.Context, c int) (*ChunkResult, error) {
	if c < 0 || c >= p.chunks {
		return nil, fmt.Errorf("cascade: chunk %d is out of range: the plan has chunks 0 to %d", c, p.chunks-1)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var part *partial
	var err error
	if c == 0 {
		part, err = p.runStructure(ctx)
	} else {
		lo, hi := p.runRange(c)
		part, err = p.runRuns(ctx, lo, hi, nil)
	}
	if err != nil {
		return nil, err
	}
	return &ChunkResult{plan: p, chunk: c, part: part}, nil
}

// partial is the outcome of a slice [lo, hi) of the run sequence (or of the structure).
type partial struct {
	lo, hi int64
	scen   []scenPart // the scenarios' runs in the slice, in order
	first  *firstPart // per-node tallies, when the slice has runs of the first scenario
	sweep  *sweepPart // the blast-radius runs in the slice
	// structure (chunk 0)
	structure  bool
	lambda2    float64
	components int
}

// scenPart holds the outcomes of runs [lo, hi) of scenario k, indexed by run − lo.
type scenPart struct {
	k, lo, hi int
	frac      []float64 // failed value fraction
	loss      []float64
	rounds    []int32
	recov     []float64 // recovery hours (−1: no failed node with hours); only when Plan.hours
	short     []float64 // Σ shortfall; Eisenberg–Noe only
}

// firstPart is what the first scenario's runs of a slice tally per node: the runs in which
// the node failed, and (Eisenberg–Noe) its quantised shortfall sum or, when the scenario
// has one run, its exact shortfall.
type firstPart struct {
	fails  []int32
	shortQ []int64
	exact  []float64
}

// sweepPart holds blast-radius runs [lo, hi) of the sweep: the failed value fraction of
// each (and the DebtRank of each under the DebtRank model). Run j is repetition j mod reps
// of swept node j / reps.
type sweepPart struct {
	lo, hi int
	frac   []float64
	dr     []float64
}

// runStructure computes chunk 0: the components and λ₂ of the network.
func (p *Plan) runStructure(ctx context.Context) (*partial, error) {
	comps := p.g.components()
	fr, err := algebraicConnectivity(ctx, p.g, comps, p.opt.workers())
	if err != nil {
		return nil, err
	}
	return &partial{structure: true, lambda2: fr.value, components: comps}, nil
}

// resolveAttacks sets the first failures of the targeted attacks among scenarios ks that
// are not resolved yet: the count nodes with the largest centrality, each centrality
// computed once per plan.
func (p *Plan) resolveAttacks(ctx context.Context, ks []int) error {
	a := &p.attacks
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range ks {
		sc := &p.s.scen[k]
		if sc.typ != TypeTargetedAttack || a.resolved[k] {
			continue
		}
		values, ok := a.scores[sc.by]
		if !ok {
			var err error
			if values, err = p.g.centrality(ctx, sc.by); err != nil {
				return err
			}
			a.scores[sc.by] = values
		}
		sc.fixed = topNodes(p.s.ids, values, sc.count)
		a.resolved[k] = true
	}
	return nil
}

// fingerprint hashes what the runs' outcomes depend on: the compiled input, the chunk size
// and the versions of the method and of the chunk format (SHA-256, 128 bits kept).
func (s *spec) fingerprint(per int64) [16]byte {
	h := sha256.New()
	buf := make([]byte, 0, 4096)
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	u64 := func(v uint64) {
		if len(buf)+8 > cap(buf) {
			flush()
		}
		buf = binary.LittleEndian.AppendUint64(buf, v)
	}
	str := func(x string) {
		u64(uint64(len(x)))
		flush()
		h.Write([]byte(x))
	}
	f64s := func(x []float64) {
		u64(uint64(len(x)))
		for _, v := range x {
			u64(math.Float64bits(v))
		}
	}
	i32s := func(x []int32) {
		u64(uint64(len(x)))
		for _, v := range x {
			u64(uint64(uint32(v)))
		}
	}
	b2u := func(b bool) uint64 {
		if b {
			return 1
		}
		return 0
	}
	str(MethodVersion)
	u64(chunkFormat)
	u64(uint64(per))
	u64(uint64(s.model))
	u64(uint64(s.seed))
	u64(uint64(s.sims))
	u64(math.Float64bits(s.recoveryRate))
	u64(math.Float64bits(s.sysThres))
	u64(uint64(len(s.ids)))
	for _, id := range s.ids {
		str(id)
	}
	f64s(s.value)
	f64s(s.capital)
	f64s(s.extA)
	f64s(s.failP)
	f64s(s.hours)
	u64(uint64(len(s.hasHours)))
	for _, b := range s.hasHours {
		u64(b2u(b))
	}
	i32s(s.provider)
	u64(uint64(len(s.providers)))
	for _, x := range s.providers {
		str(x)
	}
	u64(uint64(s.rawEdges))
	i32s(s.src)
	i32s(s.dst)
	f64s(s.weight)
	f64s(s.prob)
	u64(uint64(len(s.scen)))
	for k := range s.scen {
		// By pointer, and a targeted attack's first failures left out: a plan resolves them
		// (from the network, hashed above) when a chunk first needs them, maybe meanwhile.
		sc := &s.scen[k]
		str(sc.name)
		str(sc.typ)
		str(sc.by)
		u64(uint64(sc.runs))
		u64(b2u(sc.stochastic))
		if sc.typ != TypeTargetedAttack {
			i32s(sc.fixed)
		}
		u64(uint64(sc.count))
		u64(math.Float64bits(sc.prob))
		u64(b2u(sc.hasProb))
		u64(b2u(sc.shockAll))
		u64(math.Float64bits(sc.lossFrac))
		u64(uint64(uint32(sc.providerIx)))
	}
	flush()
	var id [16]byte
	copy(id[:], h.Sum(nil))
	return id
}
