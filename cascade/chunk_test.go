package cascade

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"riskapi/internal/enginetest"
)

// chunkCase is an input whose chunked simulation is compared with Analyze.
type chunkCase struct {
	name string
	in   Input
}

// chunkCases are every model on mixedInput (every scenario type, recovery hours, providers,
// failure probabilities), once as is and once with the scenarios reversed, so that the
// first scenario — whose runs tally per node — is stochastic in one and a single run in
// the other (Eisenberg–Noe's exact shortfalls).
func chunkCases(sims int) []chunkCase {
	var cases []chunkCase
	for _, m := range modelNames {
		in := mixedInput(m)
		in.Simulations = ptr(sims)
		cases = append(cases, chunkCase{m, in})
		rev := in
		rev.Scenarios = slices.Clone(in.Scenarios)
		slices.Reverse(rev.Scenarios)
		cases = append(cases, chunkCase{m + "/reversed", rev})
	}
	return cases
}

// analyzeBytes is Analyze's result as JSON.
func analyzeBytes(t *testing.T, in Input) []byte {
	t.Helper()
	res, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runChunksShuffled runs every chunk of p in a random order on two goroutines, runs a
// third of them a second time (another Plan of the same input: another process) and checks
// that a re-executed chunk gives the same bytes; it returns each chunk's bytes.
func runChunksShuffled(t *testing.T, in Input, p *Plan, r *rand.Rand) [][]byte {
	t.Helper()
	order := r.Perm(p.Chunks())
	encoded := make([][]byte, p.Chunks())
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for range 2 {
		wg.Go(func() {
			for {
				mu.Lock()
				if next == len(order) {
					mu.Unlock()
					return
				}
				c := order[next]
				next++
				mu.Unlock()
				res, err := p.RunChunk(context.Background(), c)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := res.MarshalBinary()
				if err != nil {
					t.Error(err)
					return
				}
				encoded[c] = b
			}
		})
	}
	wg.Wait()
	other := in
	other.Run.Workers = 3
	q, err := NewPlan(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	if q.ID() != p.ID() {
		t.Fatalf("another plan of the same input has ID %s, not %s", q.ID(), p.ID())
	}
	for _, c := range order[:len(order)/3+1] {
		res, err := q.RunChunk(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := res.MarshalBinary()
		if !bytes.Equal(b, encoded[c]) {
			t.Errorf("chunk %d run again with 3 workers gives other bytes", c)
		}
	}
	return encoded
}

// mergeEncoded decodes the chunks' bytes and merges them in chunk order.
func mergeEncoded(t *testing.T, p *Plan, encoded [][]byte) []byte {
	t.Helper()
	results := make([]*ChunkResult, len(encoded))
	for c, b := range encoded {
		res, err := p.DecodeChunk(b)
		if err != nil {
			t.Fatalf("chunk %d: %v", c, err)
		}
		if res.Chunk() != c {
			t.Fatalf("chunk %d decodes as chunk %d", c, res.Chunk())
		}
		if again, _ := res.MarshalBinary(); !bytes.Equal(again, b) {
			t.Fatalf("chunk %d: decoding and encoding again changes the bytes", c)
		}
		results[c] = res
	}
	res, err := p.Merge(results)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChunkedEqualsAnalyze is the chunked simulation's key property: for every model and
// scenario type, and chunk sizes from one run to more than all of them, the chunks run in
// a random order on two goroutines (a third of them again, by another plan with another
// number of workers), sent through their bytes and merged in chunk order give the JSON
// bytes of Analyze.
func TestChunkedEqualsAnalyze(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	for _, c := range chunkCases(detSims / 10) {
		want := analyzeBytes(t, c.in)
		for _, size := range []int{1, 7, 64, 1000, 0, 1 << 20} {
			if size == 1 && strings.HasPrefix(c.name, ModelIndependentCascade) {
				size = 3 // the sweep alone is 100 runs a node
			}
			in := c.in
			in.Run = Options{Workers: 1 + r.IntN(3), ChunkRuns: size}
			p, err := NewPlan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			got := mergeEncoded(t, p, runChunksShuffled(t, in, p, r))
			if !bytes.Equal(got, want) {
				t.Errorf("%s, %d runs a chunk (%d chunks): merged bytes differ from Analyze's", c.name, p.ChunkRuns(), p.Chunks())
			}
		}
	}
}

// Chunk boundaries depend on the input alone: the default is about chunkWork of work a
// chunk, within [minChunkRuns, maxChunkRuns], whatever the workers; chunk 0 makes no runs
// and the others cover the run sequence once.
func TestPlanChunksDependOnInputOnly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		nodes    int
		z        float64
		sims     int
		wantRuns int
	}{
		{300, 3, 100_000, maxChunkRuns}, // ≈ 1,200 nodes and edges: 111,848 runs of work, capped
		{10_000, 10, 1000, 0},           // ≈ 110,000: about 1,220 runs
	} {
		in := benchInput(c.nodes, c.z, c.sims)
		var ref *Plan
		for _, w := range []int{1, 5} {
			in.Run.Workers = w
			p, err := NewPlan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = p
			} else if p.ID() != ref.ID() || p.Chunks() != ref.Chunks() {
				t.Errorf("%d nodes: the plan changes with the workers", c.nodes)
			}
		}
		size := int64(c.nodes) + int64(len(in.Network.Edges))
		if want := min(maxChunkRuns, max(minChunkRuns, chunkWork/size)); ref.ChunkRuns() != int(want) {
			t.Errorf("%d nodes and edges: %d runs a chunk, want %d", size, ref.ChunkRuns(), want)
		}
		if c.wantRuns != 0 && ref.ChunkRuns() != c.wantRuns {
			t.Errorf("%d nodes: %d runs a chunk, want %d", c.nodes, ref.ChunkRuns(), c.wantRuns)
		}
		var sum int64
		for ch := range ref.Chunks() {
			runs := ref.RunsIn(ch)
			if ch == 0 && runs != 0 || ch > 0 && (runs < 1 || runs > int64(ref.ChunkRuns())) {
				t.Errorf("%d nodes: chunk %d has %d runs", c.nodes, ch, runs)
			}
			sum += runs
		}
		swept := c.nodes
		if swept > SweepAllMax {
			swept = SweepTop
		}
		if want := int64(c.sims + swept); sum != ref.Runs() || ref.Runs() != want {
			t.Errorf("%d nodes: chunks hold %d runs, plan %d, want %d", c.nodes, sum, ref.Runs(), want)
		}
	}
}

// Progress is finished runs over all runs, counting a re-executed chunk once.
func TestPlanProgress(t *testing.T) {
	t.Parallel()
	in := mixedInput(ModelThreshold)
	in.Run.ChunkRuns = 100
	p, err := NewPlan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	total := p.Runs()
	if want := int64(3*detSims + 5 + detNodes); total != want {
		t.Fatalf("Runs() = %d, want %d", total, want)
	}
	if got := p.Progress(nil); got != 0 {
		t.Errorf("nothing done: progress %g", got)
	}
	if got := p.Progress([]int{0}); got != 0 {
		t.Errorf("chunk 0 done: progress %g, want 0 (it makes no runs)", got)
	}
	if got, want := p.Progress([]int{1, 1, 2, -1, p.Chunks()}), 200/float64(total); got != want {
		t.Errorf("chunks 1 and 2 done (1 twice): progress %g, want %g", got, want)
	}
	all := make([]int, p.Chunks())
	for c := range all {
		all[c] = c
	}
	if got := p.Progress(all); got != 1 {
		t.Errorf("every chunk done: progress %g", got)
	}
}

// encodedChunks runs every chunk of a small Eisenberg–Noe plan with recovery hours (every
// column of the format) and returns the plan and the chunks' bytes.
func encodedChunks(t testing.TB) (*Plan, [][]byte) {
	in := mixedInput(ModelEisenbergNoe)
	in.Network.Nodes = in.Network.Nodes[:40]
	var edges []Edge
	ids := map[string]bool{}
	for _, n := range in.Network.Nodes {
		ids[n.ID] = true
	}
	for _, e := range in.Network.Edges {
		if ids[e.Source] && ids[e.Target] {
			edges = append(edges, e)
		}
	}
	in.Network.Edges = edges
	in.Scenarios = []ScenarioSpec{
		{Type: TypeRandomNode, Count: ptr(2)},
		{Type: TypeShock, LossFraction: ptr(0.7)},
	}
	in.Simulations = ptr(20)
	in.Run.ChunkRuns = 16
	p, err := NewPlan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, p.Chunks())
	for c := range out {
		res, err := p.RunChunk(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if out[c], err = res.MarshalBinary(); err != nil {
			t.Fatal(err)
		}
	}
	return p, out
}

// withChecksum replaces b's checksum by the right one, so that a decoder's other checks
// are reached.
func withChecksum(b []byte) []byte {
	b = slices.Clone(b)
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
	return b
}

// Corrupt, foreign or out-of-range chunk bytes are refused with an error (never a panic),
// and merging refuses chunks out of order, twice, missing, or of another plan.
func TestDecodeChunkRefusesBadBytes(t *testing.T) {
	t.Parallel()
	p, enc := encodedChunks(t)
	good := enc[1]
	setF64 := func(b []byte, at int, v float64) []byte {
		b = slices.Clone(b)
		binary.LittleEndian.PutUint64(b[at:], math.Float64bits(v))
		return withChecksum(b)
	}
	body := chunkHeader + 1 // chunk 1's index is one byte
	for name, b := range map[string][]byte{
		"empty":           nil,
		"truncated":       good[:len(good)/2],
		"bit flipped":     func() []byte { b := slices.Clone(good); b[len(b)/2] ^= 4; return b }(),
		"bad magic":       withChecksum(append([]byte("XSCK"), good[4:]...)),
		"future format":   withChecksum(append(append([]byte(chunkMagic), chunkFormat+1), good[5:]...)),
		"another plan":    func() []byte { b := slices.Clone(good); b[6] ^= 1; return withChecksum(b) }(),
		"index too big":   func() []byte { b := slices.Clone(good); b[chunkHeader] = byte(p.Chunks()); return withChecksum(b) }(),
		"loss is NaN":     setF64(good, body, math.NaN()),
		"loss negative":   setF64(good, body, -1),
		"bytes left":      withChecksum(append(slices.Clone(good[:len(good)-4]), 0, 0, 0, 0, 0)),
		"λ₂ infinite":     setF64(enc[0], chunkHeader+1, math.Inf(1)),
		"zero components": func() []byte { b := slices.Clone(enc[0]); b[chunkHeader+9] = 0; return withChecksum(b) }(),
	} {
		if _, err := p.DecodeChunk(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}

	results := make([]*ChunkResult, len(enc))
	for c, b := range enc {
		var err error
		if results[c], err = p.DecodeChunk(b); err != nil {
			t.Fatal(err)
		}
	}
	other := mixedInput(ModelThreshold)
	q, err := NewPlan(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := q.RunChunk(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DecodeChunk(enc[0][:0]); err == nil {
		t.Error("empty bytes decoded")
	}
	if b, _ := foreign.MarshalBinary(); b != nil {
		if _, err := p.DecodeChunk(b); err == nil {
			t.Error("another plan's chunk 0 decoded")
		}
	}
	swapped := slices.Clone(results)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	for name, list := range map[string][]*ChunkResult{
		"missing last": results[:len(results)-1],
		"out of order": swapped,
		"twice":        append(slices.Clone(results[:2]), results[1:]...),
		"foreign":      append([]*ChunkResult{foreign}, results[1:]...),
		"nil":          append([]*ChunkResult{nil}, results[1:]...),
	} {
		if _, err := p.Merge(list); err == nil {
			t.Errorf("merge with a chunk list %s: no error", name)
		}
	}
	if _, err := p.Merge(results); err != nil {
		t.Errorf("merge of the right chunks: %v", err)
	}
	if _, err := p.RunChunk(context.Background(), p.Chunks()); err == nil {
		t.Error("RunChunk beyond the last chunk: no error")
	}
}

// A chunk's bytes stay bounded: at most 37 bytes a run (DebtRank or Eisenberg–Noe with
// recovery hours: three float64 columns, the rounds, the recovery hours) plus the first
// scenario's tallies, ≈ 21 bytes a node at most; at the default chunk size a scenario of
// 100,000 runs on a small network is cut into chunks of maxChunkRuns runs.
func TestChunkBytesBounded(t *testing.T) {
	t.Parallel()
	for _, m := range modelNames {
		in := mixedInput(m)
		in.Scenarios = in.Scenarios[:1]
		in.Simulations = ptr(MaxSimulations)
		p, err := NewPlan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if p.ChunkRuns() != maxChunkRuns || p.Chunks() < 1+MaxSimulations/maxChunkRuns {
			t.Fatalf("%s: %d chunks of %d runs", m, p.Chunks(), p.ChunkRuns())
		}
		res, err := p.RunChunk(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := res.MarshalBinary()
		perRun := float64(len(b)-chunkHeader-8-21*detNodes) / maxChunkRuns
		t.Logf("%s: chunk 1 of %d: %d bytes for %d runs (%.1f bytes a run beyond the tallies' bound)", m, p.Chunks(), len(b), maxChunkRuns, perRun)
		if perRun > 37 {
			t.Errorf("%s: %.1f bytes a run", m, perRun)
		}
	}
}

// RunChunk stops within 100 ms of its context's cancel, like Analyze: a chunk of 300
// runs on 10,000 nodes and 100,000 edges, and chunk 0 (λ₂ of a tree of 8,000 nodes).
func TestRunChunkStopsSoonAfterCancel(t *testing.T) {
	in := benchInput(10_000, 10, 300)
	in.Run.ChunkRuns = 300
	p, err := NewPlan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := p.RunChunk(ctx, 1)
		return err
	})
	tree, err := NewPlan(context.Background(), graphInput(prefAttachPairs(8000, 1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := tree.RunChunk(ctx, 0)
		return err
	})
}

// The plan's ID changes with anything the result depends on, and with the chunk size.
func TestPlanIDCoversInput(t *testing.T) {
	t.Parallel()
	base := mixedInput(ModelThreshold)
	id := func(in Input) string {
		p, err := NewPlan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return p.ID()
	}
	ref := id(base)
	for name, change := range map[string]func(*Input){
		"seed":        func(in *Input) { in.Seed = ptr(*in.Seed + 1) },
		"chunk size":  func(in *Input) { in.Run.ChunkRuns = 5 },
		"model":       func(in *Input) { in.Model = ModelDebtRank },
		"simulations": func(in *Input) { in.Simulations = ptr(detSims + 1) },
		"capital": func(in *Input) {
			in.Network.Nodes = slices.Clone(in.Network.Nodes)
			in.Network.Nodes[3].Capital = ptr(0.123)
		},
		"edge weight": func(in *Input) {
			in.Network.Edges = slices.Clone(in.Network.Edges)
			in.Network.Edges[7].Weight = ptr(3.5)
		},
		"scenario": func(in *Input) { in.Scenarios = in.Scenarios[1:] },
	} {
		in := base
		change(&in)
		if id(in) == ref {
			t.Errorf("changing the %s keeps the plan ID", name)
		}
	}
	in := base
	in.Run.Workers = 3
	if id(in) != ref {
		t.Error("the workers change the plan ID")
	}
}

// Chunk results merged as RunChunk returns them, without going through bytes (one process
// running every chunk), give Analyze's bytes too.
func TestMergeWithoutBytes(t *testing.T) {
	t.Parallel()
	for _, m := range modelNames {
		in := mixedInput(m)
		in.Run.ChunkRuns = 250
		p, err := NewPlan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		results := make([]*ChunkResult, p.Chunks())
		for c := range results {
			if results[c], err = p.RunChunk(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
		res, err := p.Merge(results)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(res)
		if !bytes.Equal(got, analyzeBytes(t, in)) {
			t.Errorf("%s: merged bytes differ from Analyze's", m)
		}
	}
}

// runChunked is a chunked simulation of in made in one process, as a job runner would:
// every chunk run, encoded, decoded and merged.
func runChunked(t testing.TB, in Input) Result {
	p, err := NewPlan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	m := p.NewMerger()
	for c := range p.Chunks() {
		res, err := p.RunChunk(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		b, err := res.MarshalBinary()
		if err == nil {
			res, err = p.DecodeChunk(b)
		}
		if err == nil {
			err = m.Add(res)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := m.Result()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Estimate holds for a chunked simulation too (every model, a small and a large network,
// random_node, chunks of an eighth of the runs): the chunks' CPU summed is within 3× of the
// estimate, and the estimate's memory covers the peak heap of one process making them all.
func TestCostEstimateHoldsChunked(t *testing.T) {
	for _, c := range costNetworks {
		name := fmt.Sprintf("%s/%s/chunked", c.model, c.size)
		in := costInput(c.model, c.n, c.z, c.capital, c.ext, TypeRandomNode, c.sims)
		in.Run.ChunkRuns = max(1, c.sims/8)
		est, err := Estimate(in)
		if err != nil {
			t.Fatal(err)
		}
		run := func() func() {
			v := in
			if err := v.Validate(); err != nil {
				t.Fatal(err)
			}
			return func() { runChunked(t, v) }
		}
		enginetest.EstimateHolds(t, name+" ("+est.Field+")", est, run())
		enginetest.MemoryEstimateHolds(t, name, est, run())
	}
}
