package ident

import (
	"strings"
	"testing"
)

func TestNewHasPrefixAndBase62Body(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := New("acct")
		body, ok := strings.CutPrefix(id, "acct_")
		if !ok || len(body) != idLength {
			t.Fatalf("id %q: want acct_ + %d chars", id, idLength)
		}
		for _, c := range body {
			if !strings.ContainsRune(Alphabet, c) {
				t.Fatalf("id %q has non-base62 character %q", id, c)
			}
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestRandomUsesWholeAlphabet(t *testing.T) {
	counts := map[rune]int{}
	for _, c := range Random(62 * 200) {
		counts[c]++
	}
	if len(counts) != 62 {
		t.Fatalf("saw %d distinct characters, want 62", len(counts))
	}
	for c, n := range counts {
		// Expected 200 each; a uniform draw stays far inside [100, 300].
		if n < 100 || n > 300 {
			t.Errorf("character %q drawn %d times, want about 200", c, n)
		}
	}
}
