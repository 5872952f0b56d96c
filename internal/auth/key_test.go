package auth

import (
	"strings"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

func TestGeneratedKeysParse(t *testing.T) {
	for _, typ := range []store.KeyType{store.KeyLive, store.KeyTest, store.KeyRestricted} {
		key := GenerateKey(typ)
		if want := len(PrefixFor(typ)) + 38; len(key) != want {
			t.Fatalf("%s key %q has length %d, want %d", typ, key, len(key), want)
		}
		got, err := ParseKey(key)
		if err != nil || got != typ {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q", key, got, err, typ)
		}
	}
}

func TestChecksumIsCRC32InBase62(t *testing.T) {
	// CRC32-IEEE of 32 "0" characters is 0xA0F292D0 = 2700251856, which is "2wjyrI" in
	// zero-padded base62 over 0-9A-Za-z (computed independently with Python's zlib.crc32).
	random := strings.Repeat("0", 32)
	if got := checksum(random); got != "2wjyrI" {
		t.Fatalf("checksum = %q, want 2wjyrI", got)
	}
	if _, err := ParseKey(PrefixTest + random + "2wjyrI"); err != nil {
		t.Fatalf("hand-built key rejected: %v", err)
	}
}

func TestEverySingleCharacterTypoIsRejected(t *testing.T) {
	key := GenerateKey(store.KeyLive)
	body := len(PrefixLive)
	for i := body; i < len(key); i++ {
		for _, c := range []byte(ident.Alphabet) {
			if c == key[i] {
				continue
			}
			typo := key[:i] + string(c) + key[i+1:]
			if _, err := ParseKey(typo); err == nil {
				t.Fatalf("typo at %d (%q) accepted", i, typo)
			}
		}
	}
}

func TestMalformedKeys(t *testing.T) {
	good := GenerateKey(store.KeyTest)
	for name, key := range map[string]string{
		"empty":          "",
		"unknown prefix": "pk_test_" + good[len(PrefixTest):],
		"short":          good[:len(good)-1],
		"long":           good + "0",
		"bad alphabet":   good[:10] + "-" + good[11:],
		"swapped type":   PrefixLive + good[len(PrefixTest):] + "x",
	} {
		if _, err := ParseKey(key); err != ErrMalformedKey {
			t.Errorf("%s: ParseKey(%q) err = %v, want ErrMalformedKey", name, key, err)
		}
	}
}

func TestHashAndDisplay(t *testing.T) {
	key := PrefixTest + strings.Repeat("0", 32) + "2wjyrI"
	if h := HashKey(key); len(h) != 64 || h == HashKey(key+"x") {
		t.Fatalf("HashKey gave %q", h)
	}
	k := store.APIKey{Prefix: PrefixTest, Last4: Last4(key)}
	if got := Display(k); got != "sk_test_…jyrI" {
		t.Fatalf("Display = %q", got)
	}
}

func TestScopes(t *testing.T) {
	if !Grants([]string{"drift:*"}, "drift:write") || !Grants([]string{"drift:read"}, "drift:read") {
		t.Fatal("wildcard or exact scope not granted")
	}
	if Grants([]string{"drift:read"}, "drift:write") || Grants([]string{"cascade:*"}, "drift:read") {
		t.Fatal("scope granted that was not held")
	}
	if _, err := ParseScopes("drift:read, meridian:*"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"drift", "drift:delete", "nope:*", "*"} {
		if _, err := ParseScopes(bad); err == nil {
			t.Errorf("ParseScopes(%q) accepted", bad)
		}
	}
}

func TestNewAPIKeyRules(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)
	k, secret, err := NewAPIKey(KeyParams{AccountID: "acct_1", Type: store.KeyRestricted, Scopes: []string{"drift:read"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if k.Mode != store.ModeLive || k.Hash != HashKey(secret) || k.Last4 != Last4(secret) || !strings.HasPrefix(secret, PrefixRestricted) {
		t.Fatalf("restricted key record %+v does not match secret", k)
	}
	if !k.CreatedAt.Equal(now.Truncate(time.Millisecond)) {
		t.Fatalf("created_at %v not truncated to ms", k.CreatedAt)
	}
	live, _, err := NewAPIKey(KeyParams{AccountID: "acct_1", Type: store.KeyLive}, now)
	if err != nil || len(live.Scopes) != len(Scopes) || live.Mode != store.ModeLive {
		t.Fatalf("live key: %+v, %v", live, err)
	}
	exp, _, err := NewAPIKey(KeyParams{AccountID: "acct_1", Type: store.KeyTest, ExpiresAt: now.Add(90 * time.Minute)}, now)
	if err != nil || exp.ExpiresAt == nil || exp.ExpiresAt.Nanosecond() != 0 {
		t.Fatalf("expiry not kept to the second: %+v, %v", exp.ExpiresAt, err)
	}
	for name, p := range map[string]KeyParams{
		"restricted without scopes": {Type: store.KeyRestricted},
		"live with scopes":          {Type: store.KeyLive, Scopes: []string{"drift:read"}},
		"test key in live mode":     {Type: store.KeyTest, Mode: store.ModeLive},
		"unknown type":              {Type: "admin"},
		"unknown scope":             {Type: store.KeyRestricted, Scopes: []string{"drift:admin"}},
		"expiry in the past":        {Type: store.KeyTest, ExpiresAt: now.Add(-time.Second)},
		"negative rate limit":       {Type: store.KeyTest, RateLimit: -1},
	} {
		if _, _, err := NewAPIKey(p, now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
