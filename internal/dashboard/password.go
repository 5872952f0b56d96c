package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Password hashing: argon2id (RFC 9106) with OWASP's first recommended setting — 19 MiB of
// memory, 2 passes, 1 lane — a 16-byte random salt and a 32-byte tag, stored in the PHC string
// format "$argon2id$v=19$m=19456,t=2,p=1$<salt>$<tag>" (unpadded standard base64). The
// parameters travel with each hash, so they can be raised later: a sign-in with a hash made
// under other parameters is re-hashed with the current ones.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonSaltLen   = 16
	argonKeyLen    = 32
	// maxConcurrentHashes bounds the memory hashing can take (19 MiB each) however many
	// sign-in attempts arrive at once; the others wait their turn.
	maxConcurrentHashes = 4
)

// Password rules: at least 10 characters (NIST SP 800-63B asks for at least 8), at most 256
// so a hash request stays cheap.
const (
	minPasswordChars = 10
	maxPasswordChars = 256
)

// ErrMalformedHash: a stored hash is not an argon2id PHC string this package can read.
var ErrMalformedHash = errors.New("dashboard: malformed password hash")

// CheckPassword reports why p is not acceptable as a password ("password needs at least 10
// characters"), or nil.
func CheckPassword(p string) error {
	n := utf8.RuneCountInString(p)
	switch {
	case !utf8.ValidString(p):
		return errors.New("password is not valid UTF-8 text")
	case n < minPasswordChars:
		return fmt.Errorf("password needs at least %d characters", minPasswordChars)
	case n > maxPasswordChars:
		return fmt.Errorf("password may have at most %d characters", maxPasswordChars)
	}
	return nil
}

// passwordHasher hashes and verifies passwords, at most maxConcurrentHashes at a time.
type passwordHasher struct {
	slots chan struct{}
	// dummy is a hash of a random password, verified against when an email is unknown so that
	// a sign-in takes as long whether or not the account exists. Made on first use.
	dummy func() string
}

func newPasswordHasher() *passwordHasher {
	return &passwordHasher{
		slots: make(chan struct{}, maxConcurrentHashes),
		dummy: sync.OnceValue(func() string { return HashPassword(rand.Text()) }),
	}
}

func (p *passwordHasher) hash(password string) string {
	p.slots <- struct{}{}
	defer func() { <-p.slots }()
	return HashPassword(password)
}

// errHashersBusy: no hashing slot came free in time; the sign-in is answered 503 instead of
// queueing without bound (a flood of sign-ins must not hold every later one for minutes).
var errHashersBusy = errors.New("dashboard: every password hasher is busy")

// slotWait bounds how long a verification waits for one of the maxConcurrentHashes slots.
const slotWait = 5 * time.Second

// verify checks password against hash in a hashing slot; errHashersBusy when none came free
// within slotWait or ctx ended first.
func (p *passwordHasher) verify(ctx context.Context, hash, password string) (ok, outdated bool, err error) {
	timer := time.NewTimer(slotWait)
	defer timer.Stop()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return false, false, errHashersBusy
	case <-timer.C:
		return false, false, errHashersBusy
	}
	defer func() { <-p.slots }()
	ok, outdated, verr := VerifyPassword(hash, password)
	if verr != nil {
		return false, false, nil // an unreadable stored hash matches nothing
	}
	return ok, outdated, nil
}

// burn spends the time of one verification, for a sign-in with an unknown email.
func (p *passwordHasher) burn(ctx context.Context, password string) error {
	_, _, err := p.verify(ctx, p.dummy(), password)
	return err
}

// HashPassword returns the PHC string of password under the current parameters.
func HashPassword(password string) string {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		panic("dashboard: crypto/rand failed: " + err.Error())
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

var b64 = base64.RawStdEncoding

// VerifyPassword reports whether password matches hash (compared in constant time), and
// whether the hash was made with parameters other than the current ones.
func VerifyPassword(hash, password string) (ok, outdated bool, err error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, false, ErrMalformedHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, false, ErrMalformedHash
	}
	var memory, passes uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &passes, &threads); err != nil ||
		memory < 8 || memory > 256<<10 || passes < 1 || passes > 16 || threads < 1 || threads > 16 {
		return false, false, ErrMalformedHash
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return false, false, ErrMalformedHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) < 16 || len(want) > 128 {
		return false, false, ErrMalformedHash
	}
	got := argon2.IDKey([]byte(password), salt, passes, memory, threads, uint32(len(want)))
	ok = subtle.ConstantTimeCompare(got, want) == 1
	outdated = memory != argonMemoryKiB || passes != argonTime || threads != argonThreads ||
		len(salt) != argonSaltLen || len(want) != argonKeyLen
	return ok, outdated, nil
}
