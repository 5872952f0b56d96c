package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/store"
)

func TestAccountShowsTheKeyButNeverTheSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.get("/v1/account", b.testKey)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if r.field("data.id") != b.account.ID || r.field("data.object") != "account" || r.field("data.plan") != "starter" {
		t.Fatalf("account fields: %s", r.raw)
	}
	if r.field("data.livemode") != false || r.field("data.api_key.type") != "test" || r.field("data.api_key.mode") != "test" {
		t.Fatalf("test key not reported as test mode: %s", r.raw)
	}
	if want := "sk_test_…" + b.testKey[len(b.testKey)-4:]; r.field("data.api_key.display") != want {
		t.Fatalf("display = %v, want %s", r.field("data.api_key.display"), want)
	}
	if strings.Contains(string(r.raw), b.testKey) || strings.Contains(string(r.raw), auth.HashKey(b.testKey)) {
		t.Fatal("response contains the key or its hash")
	}
	if scopes, _ := r.field("data.api_key.scopes").([]any); len(scopes) != len(auth.Scopes) {
		t.Fatalf("test key scopes = %v, want all %d", scopes, len(auth.Scopes))
	}
	live := b.get("/v1/account", b.liveKey)
	if live.field("data.livemode") != true || live.field("data.api_key.mode") != "live" {
		t.Fatalf("live key: %s", live.raw)
	}
	restricted := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"drift:read"}, RateLimit: 50})
	rr := b.get("/v1/account", restricted)
	if rr.field("data.api_key.type") != "restricted" || rr.field("data.livemode") != false || rr.field("data.api_key.rate_limit") != 50.0 {
		t.Fatalf("restricted key: %s", rr.raw)
	}
	if logs := b.logs.String(); strings.Contains(logs, b.testKey) || strings.Contains(logs, restricted) {
		t.Fatal("a key appears in the logs")
	}
}

func TestAuthenticationFailuresAre401InTheEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	typo := []byte(b.testKey)
	typo[12] ^= 1 // a mistyped character: the checksum no longer matches
	unknown := auth.GenerateKey(store.KeyLive)
	revoked := b.newKey(auth.KeyParams{Type: store.KeyTest})
	expiring := b.newKey(auth.KeyParams{Type: store.KeyTest, ExpiresAt: b.clock.Now().Add(time.Hour)})
	revokedKey, err := b.store.APIKeyByHash(context.Background(), auth.HashKey(revoked))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.RevokeAPIKey(context.Background(), revokedKey.ID, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(2 * time.Hour)

	cases := map[string]string{
		"missing header":      "",
		"no Bearer scheme":    b.testKey,
		"Basic scheme":        "Basic " + b.testKey,
		"Bearer without key":  "Bearer",
		"Bearer empty":        "Bearer ",
		"bad checksum":        "Bearer " + string(typo),
		"unknown key":         "Bearer " + unknown,
		"revoked key":         "Bearer " + revoked,
		"expired key":         "Bearer " + expiring,
		"not a key at all":    "Bearer hello",
		"key with extra text": "Bearer " + b.testKey + " x",
	}
	for name, header := range cases {
		h := map[string]string{}
		if header != "" {
			h["Authorization"] = header
		}
		r := b.do(http.MethodGet, "/v1/account", nil, h)
		r.wantError(t, http.StatusUnauthorized, "authentication_error", CodeUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate header", name)
		}
	}
	if msg := b.get("/v1/account", revoked).field("error.message").(string); !strings.Contains(msg, "revoked") {
		t.Errorf("revoked key message: %q", msg)
	}
	if msg := b.get("/v1/account", expiring).field("error.message").(string); !strings.Contains(msg, "expired") {
		t.Errorf("expired key message: %q", msg)
	}
	// The scheme name is case-insensitive (RFC 7235).
	if r := b.do(http.MethodGet, "/v1/account", nil, map[string]string{"Authorization": "bearer " + b.testKey}); r.status != http.StatusOK {
		t.Fatalf("lower-case bearer: %d", r.status)
	}
}

func TestRevocationTakesEffectWithinOneSecond(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	if r := b.get("/v1/account", b.testKey); r.status != http.StatusOK {
		t.Fatalf("before revocation: %d", r.status)
	}
	k, err := b.store.APIKeyByHash(context.Background(), auth.HashKey(b.testKey))
	if err != nil {
		t.Fatal(err)
	}
	// Revoked by another process (the command line): this process only sees it when its
	// one-second cache entry expires.
	if _, err := b.store.RevokeAPIKey(context.Background(), k.ID, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
	b.get("/v1/account", b.testKey).wantError(t, http.StatusUnauthorized, "authentication_error", CodeUnauthorized)

	// Revoked in this process: Forget makes it immediate.
	k2, _ := b.store.APIKeyByHash(context.Background(), auth.HashKey(b.liveKey))
	if r := b.get("/v1/account", b.liveKey); r.status != http.StatusOK {
		t.Fatalf("live key before revocation: %d", r.status)
	}
	if _, err := b.store.RevokeAPIKey(context.Background(), k2.ID, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	b.auth.Forget(k2.ID)
	b.get("/v1/account", b.liveKey).wantError(t, http.StatusUnauthorized, "authentication_error", CodeUnauthorized)
}

func TestLastUsedIsWrittenInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for range 5 {
		b.get("/v1/account", b.testKey)
	}
	k, _ := b.store.APIKeyByHash(context.Background(), auth.HashKey(b.testKey))
	if k.LastUsedAt != nil {
		t.Fatal("last_used_at written on the request path; it should wait for the batch")
	}
	if err := b.auth.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	k, _ = b.store.APIKeyByHash(context.Background(), auth.HashKey(b.testKey))
	if k.LastUsedAt == nil || k.LastUsedAt.Sub(b.clock.Now()).Abs() > time.Millisecond {
		t.Fatalf("last_used_at = %v, want %v", k.LastUsedAt, b.clock.Now())
	}
	b.clock.Advance(2 * time.Second) // past the cache entry, so the response shows the stored value
	r := b.get("/v1/account", b.testKey)
	if r.field("data.api_key.last_used_at") == nil {
		t.Fatalf("last_used_at not shown: %s", r.raw)
	}
}
