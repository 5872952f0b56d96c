// Package auth holds the API key format (generation, checksum, hashing, display) and the
// scope rules. It knows nothing of HTTP or storage, so the command line, the HTTP layer and
// tests share one definition of what a key is.
package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"strings"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// Key layout: prefix + 32 random base62 characters + 6 base62 characters of the CRC32 (IEEE)
// of the random part, most significant digit first. 62^6 ≈ 5.7e10 > 2^32, so six digits hold
// any CRC32; a single mistyped character changes the CRC and is rejected without a lookup.
const (
	randomLength   = 32
	checksumLength = 6
	bodyLength     = randomLength + checksumLength
)

// Prefixes of the three key types.
const (
	PrefixLive       = "sk_live_"
	PrefixTest       = "sk_test_"
	PrefixRestricted = "sk_rstr_"
)

// ErrMalformedKey means the string is not a well-formed key: wrong prefix, length,
// alphabet or checksum. Such a key is rejected before any store lookup.
var ErrMalformedKey = errors.New("malformed API key")

// PrefixFor returns the key prefix of a key type.
func PrefixFor(t store.KeyType) string {
	switch t {
	case store.KeyLive:
		return PrefixLive
	case store.KeyTest:
		return PrefixTest
	default:
		return PrefixRestricted
	}
}

// GenerateKey returns a new random key of type t.
func GenerateKey(t store.KeyType) string {
	random := ident.Random(randomLength)
	return PrefixFor(t) + random + checksum(random)
}

// checksum encodes CRC32-IEEE(random) as six zero-padded base62 digits.
func checksum(random string) string {
	sum := crc32.ChecksumIEEE([]byte(random))
	var digits [checksumLength]byte
	for i := checksumLength - 1; i >= 0; i-- {
		digits[i] = ident.Alphabet[sum%62]
		sum /= 62
	}
	return string(digits[:])
}

// ParseKey checks a presented key's form and checksum and returns its type.
// It does no I/O and takes time independent of where a wrong character is, apart from the
// length and prefix checks, which reveal nothing secret.
func ParseKey(key string) (store.KeyType, error) {
	var t store.KeyType
	var body string
	switch {
	case strings.HasPrefix(key, PrefixLive):
		t, body = store.KeyLive, key[len(PrefixLive):]
	case strings.HasPrefix(key, PrefixTest):
		t, body = store.KeyTest, key[len(PrefixTest):]
	case strings.HasPrefix(key, PrefixRestricted):
		t, body = store.KeyRestricted, key[len(PrefixRestricted):]
	default:
		return "", ErrMalformedKey
	}
	if len(body) != bodyLength {
		return "", ErrMalformedKey
	}
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(ident.Alphabet, body[i]) < 0 {
			return "", ErrMalformedKey
		}
	}
	if checksum(body[:randomLength]) != body[randomLength:] {
		return "", ErrMalformedKey
	}
	return t, nil
}

// HashKey returns the lower-case hex SHA-256 of a key: the only form the store keeps.
// SHA-256 without salt is right here: keys carry 190 random bits, so there is nothing to
// brute-force, and an unsalted hash can be looked up by index.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Last4 returns the last four characters of a key, kept for display.
func Last4(key string) string {
	if len(key) < 4 {
		return key
	}
	return key[len(key)-4:]
}

// Display renders a stored key the way it may be shown after creation: "sk_live_…wxyz".
func Display(k store.APIKey) string {
	return k.Prefix + "…" + k.Last4
}
