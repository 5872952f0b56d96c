package cascade

import (
	"bytes"
	"testing"
)

// FuzzDecodeChunk: whatever the bytes, DecodeChunk returns a result or an error, never
// panics; a result encodes back to the same bytes (the format is canonical) and merges
// with the plan's other chunks without panicking. The seeds are every chunk of a small
// Eisenberg–Noe plan with recovery hours (every column of the format), the same with their
// checksums recomputed after one byte changed (so that the checks behind the checksum are
// reached), and truncations. Run it with `go test -run '^$' -fuzz FuzzDecodeChunk ./cascade/`.
func FuzzDecodeChunk(f *testing.F) {
	p, enc := encodedChunks(f)
	for _, b := range enc {
		f.Add(b)
		f.Add(b[:len(b)/2])
		for _, at := range []int{chunkHeader, chunkHeader + 1, chunkHeader + 9, len(b) / 2, len(b) - 5} {
			if at < len(b)-4 {
				c := bytes.Clone(b)
				c[at] ^= 0x81
				f.Add(withChecksum(c))
			}
		}
	}
	results := make([]*ChunkResult, len(enc))
	for c, b := range enc {
		var err error
		if results[c], err = p.DecodeChunk(b); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Give the fuzzer a valid checksum half of the time, so that it explores the body.
		if len(b) > 4 && b[len(b)-1]&1 == 0 {
			b = withChecksum(b)
		}
		res, err := p.DecodeChunk(b)
		if err != nil {
			return
		}
		again, err := res.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decoded chunk %d encodes to other bytes", res.Chunk())
		}
		list := append([]*ChunkResult(nil), results...)
		list[res.Chunk()] = res
		if _, err := p.Merge(list); err != nil {
			t.Fatalf("merging a decoded chunk %d: %v", res.Chunk(), err)
		}
	})
}
