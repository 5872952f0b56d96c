package auth

import (
	"errors"
	"fmt"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// KeyParams describes a key to create. The command line and the dashboard both build keys
// through NewAPIKey so the rules below hold everywhere.
type KeyParams struct {
	AccountID string
	Type      store.KeyType
	// Mode is required only for restricted keys (default live); live and test keys have
	// the mode of their type, and asking for the other one is an error.
	Mode      store.Mode
	Name      string
	Scopes    []string  // restricted keys only; live and test keys hold every scope
	RateLimit int64     // optional per-key requests per hour; 0 means none
	ExpiresAt time.Time // zero means never; kept to the second
}

// NewAPIKey validates p and returns the record to store and the key itself, which the
// caller shows once and then forgets.
func NewAPIKey(p KeyParams, now time.Time) (store.APIKey, string, error) {
	if !p.Type.Valid() {
		return store.APIKey{}, "", fmt.Errorf("key type %q: want live, test or restricted", p.Type)
	}
	mode, err := keyMode(p.Type, p.Mode)
	if err != nil {
		return store.APIKey{}, "", err
	}
	scopes := p.Scopes
	switch {
	case p.Type != store.KeyRestricted && len(scopes) > 0:
		return store.APIKey{}, "", errors.New("scopes apply to restricted keys only: live and test keys hold every scope")
	case p.Type != store.KeyRestricted:
		scopes = append([]string(nil), Scopes...)
	case len(scopes) == 0:
		return store.APIKey{}, "", errors.New("a restricted key needs at least one scope")
	}
	for _, s := range scopes {
		if !ValidScope(s) {
			return store.APIKey{}, "", fmt.Errorf("unknown scope %q", s)
		}
	}
	if p.RateLimit < 0 {
		return store.APIKey{}, "", errors.New("rate limit must be a positive number of requests per hour")
	}
	now = now.UTC().Truncate(time.Millisecond)
	var expires *time.Time
	if !p.ExpiresAt.IsZero() {
		e := p.ExpiresAt.UTC().Truncate(time.Second)
		if !e.After(now) {
			return store.APIKey{}, "", errors.New("expiry must be in the future")
		}
		expires = &e
	}
	secret := GenerateKey(p.Type)
	return store.APIKey{
		ID:        ident.New("key"),
		AccountID: p.AccountID,
		Type:      p.Type,
		Mode:      mode,
		Name:      p.Name,
		Scopes:    scopes,
		RateLimit: p.RateLimit,
		Hash:      HashKey(secret),
		Prefix:    PrefixFor(p.Type),
		Last4:     Last4(secret),
		CreatedAt: now,
		ExpiresAt: expires,
	}, secret, nil
}

func keyMode(t store.KeyType, asked store.Mode) (store.Mode, error) {
	if asked != "" && !asked.Valid() {
		return "", fmt.Errorf("mode %q: want live or test", asked)
	}
	switch t {
	case store.KeyLive, store.KeyTest:
		own := store.Mode(t)
		if asked != "" && asked != own {
			return "", fmt.Errorf("a %s key is always in %s mode", t, own)
		}
		return own, nil
	default:
		if asked == "" {
			return store.ModeLive, nil
		}
		return asked, nil
	}
}

// Status names a key's state for people: "revoked", "expired" or "active" at now. The
// command line and the dashboard list keys with it.
func Status(k store.APIKey, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return "expired"
	}
	return "active"
}
