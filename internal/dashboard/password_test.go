package dashboard

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"

	"riskapi/internal/store"
)

func TestPasswordHashing(t *testing.T) {
	t.Parallel()
	hash := testHash()
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q: want argon2id with m=19456, t=2, p=1", hash)
	}
	if ok, outdated, err := VerifyPassword(hash, testPassword); !ok || outdated || err != nil {
		t.Fatalf("VerifyPassword(right) = %v, %v, %v", ok, outdated, err)
	}
	if ok, _, _ := VerifyPassword(hash, testPassword+" "); ok {
		t.Fatal("a different password verified")
	}
	if HashPassword(testPassword) == hash {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaA", "$argon2id$v=19$m=1,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=19456,t=2,p=1$!!$aGFzaA"} {
		if _, _, err := VerifyPassword(bad, testPassword); err == nil {
			t.Errorf("VerifyPassword(%q) accepted a malformed hash", bad)
		}
	}
	for p, ok := range map[string]bool{"123456789": false, "1234567890": true, strings.Repeat("é", 256): true, strings.Repeat("x", 257): false} {
		if err := CheckPassword(p); (err == nil) != ok {
			t.Errorf("CheckPassword(%d chars) = %v", len(p), err)
		}
	}
}

// A hash made with older (weaker) parameters still signs the user in, and is replaced by one
// with the current parameters.
func TestOutdatedHashIsUpgradedAtSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, u := b.newUser(store.PlanStarter)
	salt := []byte("0123456789abcdef")
	old := "$argon2id$v=19$m=8192,t=1,p=1$" + b64.EncodeToString(salt) + "$" +
		b64.EncodeToString(argon2.IDKey([]byte(testPassword), salt, 1, 8192, 1, 32))
	if err := b.store.SetPasswordHash(context.Background(), u.ID, old, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	br := b.browser()
	br.get("/dashboard/signin")
	wantRedirect(t, "sign in", br.post("/dashboard/signin", url.Values{"email": {u.Email}, "password": {testPassword}}), "/dashboard/settings/keys")
	got, _ := b.store.User(context.Background(), u.ID)
	if ok, outdated, err := VerifyPassword(got.PasswordHash, testPassword); !ok || outdated || err != nil {
		t.Fatalf("after sign-in the hash is %q (ok %v, outdated %v, %v)", got.PasswordHash, ok, outdated, err)
	}
}

// BenchmarkHashPassword measures one argon2id hash with the production parameters: the cost
// of a sign-up, a password change, and (as a verification) of every sign-in attempt.
func BenchmarkHashPassword(b *testing.B) {
	for b.Loop() {
		HashPassword(testPassword)
	}
}
