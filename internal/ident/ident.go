// Package ident makes the random identifiers the service hands out: typed object ids
// (acct_…, key_…), request ids (req_…) and the random body of API keys. All of them are
// base62 so they survive URLs, headers and double-click selection unescaped.
package ident

import (
	"crypto/rand"
)

// Alphabet is the base62 alphabet, in the order 0-9A-Za-z that the key checksum also uses.
const Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// idLength is the random part of object and request ids: 24 base62 characters carry
// about 143 bits, so collisions are not a practical concern.
const idLength = 24

// Random returns n characters drawn uniformly from Alphabet using crypto/rand.
// Rejection sampling (bytes ≥ 248 are redrawn) keeps the distribution exactly uniform.
func Random(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			// crypto/rand.Read never fails on supported platforms (Go 1.24+ panics internally instead).
			panic("ident: crypto/rand failed: " + err.Error())
		}
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62: the largest multiple of 62 that fits in a byte
				continue
			}
			out = append(out, Alphabet[b%62])
			if len(out) == n {
				break
			}
		}
	}
	return string(out)
}

// New returns a typed identifier such as "acct_3kTMd9…": prefix, underscore, 24 random characters.
func New(prefix string) string {
	return prefix + "_" + Random(idLength)
}
