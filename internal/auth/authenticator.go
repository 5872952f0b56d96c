package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"riskapi/internal/store"
)

// Principal is who a request acts for: the key it presented and that key's account.
type Principal struct {
	Key     store.APIKey
	Account store.Account
}

// Livemode reports whether the principal acts on live (not sandboxed) data.
func (p Principal) Livemode() bool { return p.Key.Mode == store.ModeLive }

// RejectedError is an authentication failure the client caused (HTTP 401). Message says
// which of the documented causes it was, without revealing anything about other keys.
type RejectedError struct{ Message string }

func (e *RejectedError) Error() string { return e.Message }

func rejected(format string, args ...any) error {
	return &RejectedError{Message: fmt.Sprintf(format, args...)}
}

// cacheTTL bounds how long a revocation or expiry made by another process can go unseen:
// the platform contract allows at most one second.
const cacheTTL = time.Second

// KeyStore is what an Authenticator reads and writes: keys by the hash of the key, their
// accounts, and the keys' last-use times. The lookups return store.ErrNotFound for an unknown
// hash or account, which Authenticate reports as an invalid key. store.Store is one.
type KeyStore interface {
	APIKeyByHash(ctx context.Context, hash string) (store.APIKey, error)
	Account(ctx context.Context, id string) (store.Account, error)
	TouchAPIKeys(ctx context.Context, lastUsed map[string]time.Time) error
}

// Authenticator resolves Authorization headers to principals. A one-second cache keeps the
// store out of the hot path for busy keys, and last-use times are collected in memory and
// written in one batch per flush interval instead of one write per request.
type Authenticator struct {
	store KeyStore
	now   func() time.Time
	log   *slog.Logger

	mu      sync.Mutex
	cache   map[string]cachedPrincipal // by key hash
	touched map[string]time.Time       // key id → latest use, not yet written
}

type cachedPrincipal struct {
	principal Principal
	loadedAt  time.Time
}

// NewAuthenticator returns an Authenticator over s. now is the clock (time.Now in production).
func NewAuthenticator(s KeyStore, now func() time.Time, log *slog.Logger) *Authenticator {
	return &Authenticator{
		store:   s,
		now:     now,
		log:     log,
		cache:   map[string]cachedPrincipal{},
		touched: map[string]time.Time{},
	}
}

// Authenticate checks an Authorization header value. It returns a *RejectedError for every
// client-side failure (missing, not Bearer, malformed, unknown, revoked, expired) and a
// wrapped store error when the store cannot answer.
// WellFormed reports whether an Authorization header carries a Bearer key of a valid form
// (prefix, length, checksum): a key that could be looked up. It reads no store.
func WellFormed(header string) bool {
	scheme, key, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	_, err := ParseKey(strings.TrimSpace(key))
	return err == nil
}

func (a *Authenticator) Authenticate(ctx context.Context, header string) (Principal, error) {
	if strings.TrimSpace(header) == "" {
		return Principal{}, rejected("No API key provided. Send it as the header Authorization: Bearer <API_KEY>.")
	}
	scheme, key, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Principal{}, rejected("The Authorization header must use the Bearer scheme: Authorization: Bearer <API_KEY>.")
	}
	key = strings.TrimSpace(key)
	if _, err := ParseKey(key); err != nil {
		return Principal{}, rejected("The API key is malformed (wrong prefix, length or checksum). Check that it was copied completely.")
	}
	hash := HashKey(key)
	now := a.now()
	p, err := a.lookup(ctx, hash, now)
	if err != nil {
		return Principal{}, err
	}
	if p.Key.RevokedAt != nil {
		return Principal{}, rejected("This API key was revoked. Create a new key.")
	}
	if p.Key.ExpiresAt != nil && !now.Before(*p.Key.ExpiresAt) {
		return Principal{}, rejected("This API key expired at %s. Create a new key.", p.Key.ExpiresAt.UTC().Format(time.RFC3339))
	}
	a.mu.Lock()
	a.touched[p.Key.ID] = now
	a.mu.Unlock()
	return p, nil
}

// lookup returns the principal for a key hash from the cache or the store.
func (a *Authenticator) lookup(ctx context.Context, hash string, now time.Time) (Principal, error) {
	a.mu.Lock()
	c, ok := a.cache[hash]
	a.mu.Unlock()
	if ok && now.Sub(c.loadedAt) < cacheTTL && now.Sub(c.loadedAt) >= 0 {
		return c.principal, nil
	}
	k, err := a.store.APIKeyByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, rejected("Invalid API key.")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	// The index found the row; compare the hashes in constant time anyway so no code path
	// depends on a variable-time comparison of secret-derived bytes.
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 {
		return Principal{}, rejected("Invalid API key.")
	}
	acct, err := a.store.Account(ctx, k.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, rejected("Invalid API key.")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: load account: %w", err)
	}
	p := Principal{Key: k, Account: acct}
	a.mu.Lock()
	a.cache[hash] = cachedPrincipal{principal: p, loadedAt: now}
	a.mu.Unlock()
	return p, nil
}

// Forget drops any cached entry of the key with this id, so a revocation made in this
// process takes effect on the very next request.
func (a *Authenticator) Forget(keyID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for hash, c := range a.cache {
		if c.principal.Key.ID == keyID {
			delete(a.cache, hash)
		}
	}
}

// Flush writes the collected last-use times in one store transaction and drops stale cache
// entries. On failure the times are kept for the next flush.
func (a *Authenticator) Flush(ctx context.Context) error {
	a.mu.Lock()
	batch := a.touched
	a.touched = map[string]time.Time{}
	now := a.now()
	for hash, c := range a.cache {
		if now.Sub(c.loadedAt) >= cacheTTL {
			delete(a.cache, hash)
		}
	}
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := a.store.TouchAPIKeys(ctx, batch); err != nil {
		a.mu.Lock()
		for id, t := range batch {
			if t.After(a.touched[id]) {
				a.touched[id] = t
			}
		}
		a.mu.Unlock()
		return fmt.Errorf("record key last use: %w", err)
	}
	return nil
}

// Run flushes every interval until ctx ends, then flushes once more (bounded by 5 s) so
// a graceful shutdown loses no last-use time.
func (a *Authenticator) Run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			if err := a.Flush(ctx); err != nil {
				a.log.Warn("flush key last use", "err", err)
			}
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := a.Flush(final); err != nil {
				a.log.Warn("final flush of key last use", "err", err)
			}
			cancel()
			return
		}
	}
}
