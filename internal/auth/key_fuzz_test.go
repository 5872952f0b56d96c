package auth

import (
	"strings"
	"testing"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// FuzzWellFormed feeds arbitrary Authorization headers to WellFormed, which every request
// passes before any store lookup: it never panics, and it accepts a header only when it is
// "Bearer" (any case) and a key of a known prefix, 38 base62 characters and their checksum.
func FuzzWellFormed(f *testing.F) {
	live, test, rstr := GenerateKey(store.KeyLive), GenerateKey(store.KeyTest), GenerateKey(store.KeyRestricted)
	for _, h := range []string{"Bearer " + live, "bearer " + test, "  BEARER \t" + rstr + " ", "Bearer", "Bearer ",
		"Basic " + live, live, "Bearer " + live[:len(live)-1], "Bearer " + live + "0", "Bearer sk_live_", "Bearer sk_other_" + live[8:],
		"Bearer " + strings.Replace(live, live[10:11], "_", 1), "Bearer  " + test, "Bearer " + live + " extra", "Bearer \xff"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		if !WellFormed(header) {
			return
		}
		scheme, key, _ := strings.Cut(strings.TrimSpace(header), " ")
		key = strings.TrimSpace(key)
		if !strings.EqualFold(scheme, "Bearer") {
			t.Fatalf("%q accepted with scheme %q", header, scheme)
		}
		body, ok := strings.CutPrefix(key, PrefixLive)
		if !ok {
			body, ok = strings.CutPrefix(key, PrefixTest)
		}
		if !ok {
			body, ok = strings.CutPrefix(key, PrefixRestricted)
		}
		if !ok || len(body) != bodyLength || strings.Trim(body, ident.Alphabet) != "" || checksum(body[:randomLength]) != body[randomLength:] {
			t.Fatalf("%q accepted: key %q is not a prefix, 38 base62 characters and their checksum", header, key)
		}
	})
}

// FuzzKeyTypo checks the checksum's promise: a key with any one character changed (a typo,
// a truncated copy) is refused by ParseKey without a lookup. CRC32 detects every change
// within 32 consecutive bits, so no single substitution in the random part can keep it.
func FuzzKeyTypo(f *testing.F) {
	f.Add(strings.Repeat("0", randomLength), uint8(0), uint8(0), byte('1'))
	f.Add(ident.Random(randomLength), uint8(1), uint8(20), byte('z'))
	f.Add(ident.Random(randomLength), uint8(2), uint8(45), byte('_'))
	f.Fuzz(func(t *testing.T, random string, typ, at uint8, c byte) {
		if len(random) != randomLength || strings.Trim(random, ident.Alphabet) != "" {
			return
		}
		kt := []store.KeyType{store.KeyLive, store.KeyTest, store.KeyRestricted}[int(typ)%3]
		key := PrefixFor(kt) + random + checksum(random)
		if got, err := ParseKey(key); err != nil || got != kt {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q", key, got, err, kt)
		}
		i := int(at) % len(key)
		if key[i] == c {
			return
		}
		typo := key[:i] + string([]byte{c}) + key[i+1:]
		if got, err := ParseKey(typo); err == nil {
			t.Fatalf("ParseKey(%q), %q with character %d changed, = %q; want ErrMalformedKey", typo, key, i, got)
		}
	})
}
