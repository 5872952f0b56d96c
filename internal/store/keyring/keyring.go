// Package keyring encrypts the secrets the store keeps for customers (webhook signing
// secrets) with AES-256-GCM under keys the operator supplies (RISKAPI_SECRET_KEY), and
// decrypts them with whichever known key sealed them, so that keys can be rotated without
// downtime: new secrets are sealed under the current key, old ones open under any key on the
// ring until `riskapi secrets rotate` has re-sealed them.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: 32 bytes, for AES-256.
const KeySize = 32

// keyIDContext separates key ids from any other use of a SHA-256 of the key.
const keyIDContext = "riskapi secret key id\x00"

// ErrUnknownKey: a secret was sealed under a key that is not on the ring.
var ErrUnknownKey = errors.New("keyring: secret sealed under a key that is not configured")

// key is one AES-256-GCM key and its id.
type key struct {
	id   string
	aead cipher.AEAD
}

// Ring is the current key, which seals, and every key that may open: the current one and
// the previous ones. It is safe for concurrent use.
type Ring struct {
	current *key
	byID    map[string]*key
}

// New returns a ring that seals under current and opens under current and every one of
// previous. Every key must be KeySize bytes; repeated keys are kept once.
func New(current []byte, previous ...[]byte) (*Ring, error) {
	r := &Ring{byID: map[string]*key{}}
	for i, raw := range append([][]byte{current}, previous...) {
		k, err := newKey(raw)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("current key: %w", err)
			}
			return nil, fmt.Errorf("previous key %d: %w", i, err)
		}
		if i == 0 {
			r.current = k
		}
		if _, ok := r.byID[k.id]; !ok {
			r.byID[k.id] = k
		}
	}
	return r, nil
}

func newKey(raw []byte) (*key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("a key is %d bytes, got %d", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &key{id: KeyID(raw), aead: aead}, nil
}

// KeyID names a key in the store, beside every secret sealed under it: the first 8 bytes of
// SHA-256 over a fixed context and the key, in hex (16 characters). It reveals nothing
// useful about a 256-bit random key, and two keys collide with probability 2⁻⁶⁴.
func KeyID(raw []byte) string {
	h := sha256.New()
	h.Write([]byte(keyIDContext))
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ParseKey decodes a key as an operator writes it: standard base64 (padding optional, as
// `openssl rand -base64 32` and `riskapi secrets new-key` print it) of KeySize bytes. Its
// errors never repeat the value.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, errors.New("not standard base64")
	}
	if len(raw) != KeySize {
		return nil, fmt.Errorf("decodes to %d bytes, want %d", len(raw), KeySize)
	}
	return raw, nil
}

// NewKey returns a fresh random key, base64-encoded as ParseKey reads it.
func NewKey() string {
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw) // crypto/rand.Read never returns an error (Go 1.24+)
	return base64.StdEncoding.EncodeToString(raw)
}

// CurrentID is the id of the key Seal uses.
func (r *Ring) CurrentID() string { return r.current.id }

// Knows reports whether the key with that id is on the ring.
func (r *Ring) Knows(id string) bool {
	_, ok := r.byID[id]
	return ok
}

// Seal encrypts plaintext under the current key and returns that key's id and the nonce
// followed by the ciphertext and tag. aad (additional data, not stored) binds the result to
// where it is kept: Open with other aad fails, so a sealed secret copied to another row does
// not open there. The 12-byte nonce is random: at 2³² seals per key the chance of a repeat
// is still below 2⁻³², and rotation moves every secret to a fresh key.
func (r *Ring) Seal(plaintext, aad []byte) (keyID string, sealed []byte) {
	k := r.current
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	_, _ = rand.Read(nonce)
	return k.id, k.aead.Seal(nonce, nonce, plaintext, aad)
}

// Open decrypts what Seal returned, with the key keyID names. It returns ErrUnknownKey when
// that key is not on the ring, and an error when sealed was altered or aad differs.
func (r *Ring) Open(keyID string, sealed, aad []byte) ([]byte, error) {
	k, ok := r.byID[keyID]
	if !ok {
		return nil, fmt.Errorf("%w (key id %s)", ErrUnknownKey, keyID)
	}
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, fmt.Errorf("keyring: sealed secret under key %s is %d bytes, too short", keyID, len(sealed))
	}
	plaintext, err := k.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, fmt.Errorf("keyring: secret under key %s does not open: altered, or stored for another row", keyID)
	}
	return plaintext, nil
}
