package cascade

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// The chunk format (docs/methods/cascade.md, "Chunked runs"), little-endian:
//
//	magic "CSCK", format version (1 byte), plan ID (16 bytes), chunk index (uvarint),
//	the body, CRC-32C of everything before it (4 bytes).
//
// The body's layout follows from the plan and the chunk index alone, so it carries no
// lengths or names. Chunk 0: λ₂ (float64), components (uvarint). Other chunks, for each
// scenario whose runs the chunk holds, in order, one column after another: the failed
// value fractions (DebtRank only: the other models' is min(1, loss / Σ values)), the
// losses, the rounds (uvarints), the recovery hours (when some node has recovery_hours),
// the shortfalls (Eisenberg–Noe); then, when the chunk holds runs of the first scenario,
// the per-node tallies as sparse lists (count, then gap and value for each node with a
// non-zero value: failures; Eisenberg–Noe's quantised shortfall sums, or the exact
// shortfalls of a one-run first scenario as float64 bits); then the blast-radius runs'
// failed fractions (and DebtRanks).
//
// Every encoding is canonical (minimal varints, no zero entries in sparse lists), so
// decoding and encoding again gives the same bytes.
const (
	chunkMagic  = "CSCK"
	chunkFormat = 1
	chunkHeader = len(chunkMagic) + 1 + 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes the chunk's result (see the chunk format): about 9 bytes a run
// under threshold and independent_cascade, 17 under DebtRank and Eisenberg–Noe, 8 more
// with recovery hours, plus at most about 20 bytes per node for the first scenario's
// tallies.
func (c *ChunkResult) MarshalBinary() ([]byte, error) {
	if c == nil || c.plan == nil || c.part == nil {
		return nil, errors.New("cascade: encoding an empty chunk result")
	}
	p, part := c.plan, c.part
	b := make([]byte, 0, 64+c.size())
	b = append(b, chunkMagic...)
	b = append(b, chunkFormat)
	id := p.idBytes()
	b = append(b, id[:]...)
	b = binary.AppendUvarint(b, uint64(c.chunk))
	if part.structure {
		b = appendF64(b, part.lambda2)
		b = binary.AppendUvarint(b, uint64(part.components))
	} else {
		for _, sp := range part.scen {
			if p.s.model == mDebtRank {
				b = appendF64s(b, sp.frac)
			}
			b = appendF64s(b, sp.loss)
			for _, r := range sp.rounds {
				b = binary.AppendUvarint(b, uint64(r))
			}
			b = appendF64s(b, sp.recov)
			b = appendF64s(b, sp.short)
		}
		if f := part.first; f != nil {
			b = appendSparse(b, f.fails, func(b []byte, v int32) []byte { return binary.AppendUvarint(b, uint64(v)) })
			if f.shortQ != nil {
				b = appendSparse(b, f.shortQ, func(b []byte, v int64) []byte { return binary.AppendUvarint(b, uint64(v)) })
			}
			if f.exact != nil {
				b = appendSparse(b, f.exact, appendF64)
			}
		}
		if sw := part.sweep; sw != nil {
			b = appendF64s(b, sw.frac)
			b = appendF64s(b, sw.dr)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// size is about the encoded size of the body.
func (c *ChunkResult) size() int {
	n := 0
	for _, sp := range c.part.scen {
		n += (sp.hi - sp.lo) * 40
	}
	if c.part.sweep != nil {
		n += (c.part.sweep.hi - c.part.sweep.lo) * 16
	}
	return n
}

func appendF64(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func appendF64s(b []byte, x []float64) []byte {
	for _, v := range x {
		b = appendF64(b, v)
	}
	return b
}

// appendSparse appends the count of non-zero values of x, then for each its gap from the
// previous one (index − previous index − 1; the first's previous index is −1) and value.
func appendSparse[T int32 | int64 | float64](b []byte, x []T, value func([]byte, T) []byte) []byte {
	count := 0
	for _, v := range x {
		if !isZero(v) {
			count++
		}
	}
	b = binary.AppendUvarint(b, uint64(count))
	prev := -1
	for i, v := range x {
		if isZero(v) {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i-prev-1))
		b = value(b, v)
		prev = i
	}
	return b
}

// isZero: a sparse list leaves out exact zeros (+0 for floats: −0 keeps its sign).
func isZero[T int32 | int64 | float64](v T) bool {
	if f, ok := any(v).(float64); ok {
		return math.Float64bits(f) == 0
	}
	return v == 0
}

// DecodeChunk decodes a chunk result encoded by MarshalBinary for this plan. It checks the
// bytes (the checksum, the plan ID, the chunk index, the layout the plan gives the chunk,
// every value's range) and returns an error, never a panic, when they do not hold.
func (p *Plan) DecodeChunk(b []byte) (*ChunkResult, error) {
	if len(b) < chunkHeader+1+4 {
		return nil, fmt.Errorf("cascade: chunk of %d bytes: too short", len(b))
	}
	if string(b[:len(chunkMagic)]) != chunkMagic {
		return nil, errors.New("cascade: not a chunk result (bad magic)")
	}
	if v := b[len(chunkMagic)]; v != chunkFormat {
		return nil, fmt.Errorf("cascade: chunk format %d; this engine reads format %d", v, chunkFormat)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errors.New("cascade: chunk result is corrupt (checksum mismatch)")
	}
	if id := p.idBytes(); string(b[len(chunkMagic)+1:chunkHeader]) != string(id[:]) {
		return nil, errors.New("cascade: chunk result of another plan (another input, chunk size or engine version)")
	}
	r := &chunkReader{b: body[chunkHeader:]}
	c64 := r.uvarint()
	if r.err != nil || c64 >= uint64(p.chunks) {
		return nil, fmt.Errorf("cascade: chunk index out of range (the plan has %d chunks)", p.chunks)
	}
	c := int(c64)
	part, err := p.decodeBody(r, c)
	if err != nil {
		return nil, fmt.Errorf("cascade: chunk %d: %w", c, err)
	}
	return &ChunkResult{plan: p, chunk: c, part: part}, nil
}

func (p *Plan) decodeBody(r *chunkReader, c int) (*partial, error) {
	n := len(p.s.ids)
	var part *partial
	if c == 0 {
		part = &partial{structure: true}
		part.lambda2 = r.f64()
		comps := r.uvarint()
		if r.err == nil && (!finite(part.lambda2) || part.lambda2 < 0 || comps < 1 || comps > uint64(n)) {
			r.fail("λ₂ %g or %d components out of range", part.lambda2, comps)
		}
		part.components = int(comps)
	} else {
		lo, hi := p.runRange(c)
		part = &partial{lo: lo, hi: hi}
		segs, sweepLo, sweepHi := p.layout(lo, hi)
		en, dr := p.s.model == mEisenbergNoe, p.s.model == mDebtRank
		firstRuns := 0
		for _, sg := range segs {
			N := sg.hi - sg.lo
			sp := scenPart{k: sg.k, lo: sg.lo, hi: sg.hi, frac: make([]float64, N), rounds: make([]int32, N)}
			if dr {
				sp.frac = r.f64s(N, "failed fraction", inUnit)
			}
			sp.loss = r.f64s(N, "loss", func(v float64) bool { return finite(v) && (dr || v >= 0) })
			if !dr {
				for j, v := range sp.loss {
					sp.frac[j] = math.Min(1, v/p.valueΣ)
				}
			}
			for j := range sp.rounds {
				v := r.uvarint()
				if v > math.MaxInt32 {
					r.fail("rounds %d out of range", v)
				}
				sp.rounds[j] = int32(v)
			}
			if p.hours {
				sp.recov = r.f64s(N, "recovery hours", func(v float64) bool { return v == -1 || (finite(v) && v >= 0) })
			}
			if en {
				sp.short = r.f64s(N, "shortfall", finite)
			}
			part.scen = append(part.scen, sp)
			if sg.k == 0 {
				firstRuns = N
			}
		}
		if firstRuns > 0 {
			f := &firstPart{fails: make([]int32, n)}
			readSparse(r, f.fails, "failures", func() (int32, bool) {
				v := r.uvarint()
				return int32(v), v >= 1 && v <= uint64(firstRuns)
			})
			switch p.first {
			case firstShortfallSums:
				f.shortQ = make([]int64, n)
				readSparse(r, f.shortQ, "shortfall sum", func() (int64, bool) {
					v := r.uvarint()
					return int64(v), v >= 1 && v <= 2*quantScale*uint64(firstRuns)
				})
			case firstExactShortfalls:
				f.exact = make([]float64, n)
				readSparse(r, f.exact, "shortfall", func() (float64, bool) {
					v := r.f64()
					return v, finite(v) && math.Float64bits(v) != 0
				})
			}
			part.first = f
		}
		if sweepLo < sweepHi {
			N := sweepHi - sweepLo
			sw := &sweepPart{lo: sweepLo, hi: sweepHi}
			sw.frac = r.f64s(N, "blast radius", inUnit)
			if dr {
				sw.dr = r.f64s(N, "DebtRank", func(v float64) bool { return finite(v) && v >= 0 })
			}
			part.sweep = sw
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d bytes left after the chunk's layout", len(r.b))
	}
	return part, r.err
}

// readSparse reads a sparse list (see appendSparse) into x.
func readSparse[T int32 | int64 | float64](r *chunkReader, x []T, what string, value func() (T, bool)) {
	count := r.uvarint()
	if r.err != nil {
		return
	}
	if count > uint64(len(x)) {
		r.fail("%d %s entries for %d nodes", count, what, len(x))
		return
	}
	i := -1
	for range count {
		gap := r.uvarint()
		if r.err != nil {
			return
		}
		if gap >= uint64(len(x)-i-1) {
			r.fail("%s entry beyond the last node", what)
			return
		}
		i += int(gap) + 1
		v, ok := value()
		if r.err != nil {
			return
		}
		if !ok {
			r.fail("%s of node %d out of range", what, i)
			return
		}
		x[i] = v
	}
}

// chunkReader reads a chunk's body; the first error sticks and later reads return zeros.
type chunkReader struct {
	b   []byte
	err error
}

func (r *chunkReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *chunkReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail("truncated or overlong varint")
		return 0
	}
	if k != len(binary.AppendUvarint(nil, v)) {
		r.fail("non-minimal varint")
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *chunkReader) f64() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail("truncated")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

// f64s reads N float64 values, each of which must satisfy ok.
func (r *chunkReader) f64s(N int, what string, ok func(float64) bool) []float64 {
	if r.err == nil && len(r.b) < 8*N {
		r.fail("truncated in the %s column", what)
	}
	if r.err != nil {
		return make([]float64, N)
	}
	x := make([]float64, N)
	for j := range x {
		x[j] = math.Float64frombits(binary.LittleEndian.Uint64(r.b[8*j:]))
		if !ok(x[j]) {
			r.fail("%s %g out of range", what, x[j])
			break
		}
	}
	r.b = r.b[8*N:]
	return x
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
func inUnit(v float64) bool { return v >= 0 && v <= 1 }
