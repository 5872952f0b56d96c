package storetest

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
	"riskapi/internal/store/keyring"
)

// SecretOpener opens a store on the database db (one that NewDatabase returned) with ring's
// keys (nil: none), and closes it when t ends. Several stores may be open on one database.
type SecretOpener func(t *testing.T, db string, ring *keyring.Ring) store.Store

// RunSecrets runs the tests of webhook secrets at rest (store.SecretKeyStore). newDatabase
// returns a fresh, empty database that no other test uses; the subtests run in parallel.
func RunSecrets(t *testing.T, newDatabase func(t *testing.T) string, open SecretOpener) {
	tests := []struct {
		name string
		run  func(t *testing.T, db string, open SecretOpener)
	}{
		{"EncryptedRoundTrip", testSecretsEncryptedRoundTrip},
		{"UnknownKey", testSecretsUnknownKey},
		{"Rotation", testSecretsRotation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newDatabase(t), open)
		})
	}
}

// NewRing returns a ring with a fresh random current key and the given previous keys, and
// the current key's raw bytes.
func NewRing(t testing.TB, previous ...[]byte) (*keyring.Ring, []byte) {
	t.Helper()
	raw, err := keyring.ParseKey(keyring.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	ring, err := keyring.New(raw, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return ring, raw
}

func mustKeyIDs(t *testing.T, s store.Store) map[string]int64 {
	t.Helper()
	ids, err := s.WebhookSecretKeyIDs(context.Background())
	if err != nil {
		t.Fatalf("WebhookSecretKeyIDs: %v", err)
	}
	return ids
}

// testSecretsEncryptedRoundTrip: with keys, every read gives back the plaintext secret (an
// endpoint read, a list, a claim), an update re-encrypts, and the store counts every secret
// under the current key; a store without keys refuses to read them.
func testSecretsEncryptedRoundTrip(t *testing.T, db string, open SecretOpener) {
	ctx := context.Background()
	ring, _ := NewRing(t)
	s := open(t, db, ring)
	acct := ident.New("acct")
	e := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	checkEndpoint(t, mustEndpoint(t, s, e), e)
	page, err := s.ListWebhookEndpoints(ctx, acct, store.ModeLive, store.PageQuery{Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].Secret != e.Secret {
		t.Fatalf("ListWebhookEndpoints: %d items, %v; want the endpoint with its secret", len(page.Items), err)
	}
	e.Secret = "whsec_" + ident.Random(40)
	if err := s.UpdateWebhookEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	checkEndpoint(t, mustEndpoint(t, s, e), e)
	mustCreateEvent(t, s, newEvent(acct, store.ModeLive, kindDrift, t0))
	cs := mustClaim(t, s, claimPolicy("d1", 10, 0), t0)
	if len(cs) != 1 || cs[0].Secret != e.Secret || cs[0].SecretErr != nil {
		t.Fatalf("claim: %d deliveries; want 1 with the updated secret and no error", len(cs))
	}
	if got, want := mustKeyIDs(t, s), map[string]int64{ring.CurrentID(): 1}; !maps.Equal(got, want) {
		t.Errorf("WebhookSecretKeyIDs = %v, want %v", got, want)
	}

	plain := open(t, db, nil)
	if _, err := plain.WebhookEndpoint(ctx, acct, store.ModeLive, e.ID); !errors.Is(err, store.ErrSecretUnavailable) {
		t.Errorf("WebhookEndpoint without keys = %v, want ErrSecretUnavailable", err)
	}
	if _, err := plain.RotateWebhookSecrets(ctx); err == nil {
		t.Error("RotateWebhookSecrets without keys succeeded")
	}
}

// testSecretsUnknownKey: a claim that includes a delivery whose secret does not decrypt
// still hands out the others; that one carries SecretErr and no secret.
func testSecretsUnknownKey(t *testing.T, db string, open SecretOpener) {
	ctx := context.Background()
	first, _ := NewRing(t)
	acct := ident.New("acct")
	locked := mustCreateEndpoint(t, open(t, db, first), newEndpoint(acct, store.ModeLive, store.AllEvents))
	other, _ := NewRing(t)
	s := open(t, db, other)
	readable := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeLive, store.AllEvents))
	mustCreateEvent(t, s, newEvent(acct, store.ModeLive, kindDrift, t0))
	cs := mustClaim(t, s, claimPolicy("d1", 10, 0), t0)
	if len(cs) != 2 {
		t.Fatalf("claim got %d deliveries, want 2", len(cs))
	}
	for _, c := range cs {
		switch c.EndpointID {
		case locked.ID:
			if !errors.Is(c.SecretErr, store.ErrSecretUnavailable) || c.Secret != "" {
				t.Errorf("delivery to the endpoint under an unknown key: SecretErr %v, secret set %t", c.SecretErr, c.Secret != "")
			}
		case readable.ID:
			if c.SecretErr != nil || c.Secret != readable.Secret {
				t.Errorf("delivery to the readable endpoint: SecretErr %v, right secret %t", c.SecretErr, c.Secret == readable.Secret)
			}
		}
	}
	if _, err := s.WebhookEndpoint(ctx, acct, store.ModeLive, locked.ID); !errors.Is(err, store.ErrSecretUnavailable) {
		t.Errorf("WebhookEndpoint under an unknown key = %v, want ErrSecretUnavailable", err)
	}
}

// testSecretsRotation: secrets stored in plaintext are encrypted by a rotation, in batches
// (more endpoints than one batch), then moved to a new key while the old one is configured as
// previous; afterwards the new key alone reads every one of them, and a rotation with an
// unrelated key leaves them alone and counts them as unopened.
func testSecretsRotation(t *testing.T, db string, open SecretOpener) {
	ctx := context.Background()
	const n = 2*200 + 5 // two full rotation batches and a partial one
	plain := open(t, db, nil)
	endpoints := make([]store.WebhookEndpoint, 0, n)
	for range n {
		endpoints = append(endpoints, mustCreateEndpoint(t, plain, newEndpoint(ident.New("acct"), store.ModeTest, store.AllEvents)))
	}
	if got := mustKeyIDs(t, plain); !maps.Equal(got, map[string]int64{"": n}) {
		t.Fatalf("before rotation: %v, want %d plaintext", got, n)
	}

	rotate := func(s store.Store, want store.SecretRotation) {
		t.Helper()
		got, err := s.RotateWebhookSecrets(ctx)
		if err != nil {
			t.Fatalf("RotateWebhookSecrets: %v", err)
		}
		if got.KeyID != want.KeyID || got.Reencrypted != want.Reencrypted || got.FromPlaintext != want.FromPlaintext ||
			got.AlreadyCurrent != want.AlreadyCurrent || !maps.Equal(got.Unopened, want.Unopened) {
			t.Fatalf("RotateWebhookSecrets = %+v, want %+v", got, want)
		}
	}
	readAll := func(s store.Store) {
		t.Helper()
		for _, e := range endpoints {
			if got := mustEndpoint(t, s, e); got.Secret != e.Secret {
				t.Fatalf("endpoint %s: secret differs after rotation", e.ID)
			}
		}
	}

	ringA, keyA := NewRing(t)
	rotate(open(t, db, ringA), store.SecretRotation{KeyID: ringA.CurrentID(), Reencrypted: n, FromPlaintext: n, Unopened: map[string]int64{}})
	if got := mustKeyIDs(t, plain); !maps.Equal(got, map[string]int64{ringA.CurrentID(): n}) {
		t.Fatalf("after the first rotation: %v, want all %d under key %s", got, n, ringA.CurrentID())
	}

	ringB, keyB := NewRing(t, keyA)
	sB := open(t, db, ringB)
	readAll(sB) // the previous key still opens every secret
	created := mustCreateEndpoint(t, sB, newEndpoint(ident.New("acct"), store.ModeTest, store.AllEvents))
	endpoints = append(endpoints, created)
	rotate(sB, store.SecretRotation{KeyID: ringB.CurrentID(), Reencrypted: n, AlreadyCurrent: 1, Unopened: map[string]int64{}})

	onlyB, err := keyring.New(keyB)
	if err != nil {
		t.Fatal(err)
	}
	sOnlyB := open(t, db, onlyB)
	readAll(sOnlyB)
	mustCreateEvent(t, sOnlyB, newEvent(created.AccountID, created.Mode, kindDrift, t0))
	if cs := mustClaim(t, sOnlyB, claimPolicy("d1", 10, 0), t0); len(cs) != 1 || cs[0].Secret != created.Secret || cs[0].SecretErr != nil {
		t.Fatalf("claim after rotation: %d deliveries; want 1 with the endpoint's secret", len(cs))
	}

	ringC, _ := NewRing(t)
	rotate(open(t, db, ringC), store.SecretRotation{KeyID: ringC.CurrentID(), Unopened: map[string]int64{ringB.CurrentID(): n + 1}})
	readAll(sOnlyB) // untouched
}

// UseWebhookSecrets does with s what a running server does with webhook secrets: it creates
// endpoints with secrets of both forms (whsec_ + base64, and plain text), changes one secret,
// and sends an event through the delivery queue (claimed, recorded). It returns, for each
// secret stored along the way (the replaced one included), the texts that must not be found
// in the database when secrets are encrypted: the secret and the part after whsec_.
func UseWebhookSecrets(t testing.TB, s store.Store) []string {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	acct := ident.New("acct")
	secrets := []string{
		"whsec_" + base64.StdEncoding.EncodeToString([]byte(ident.Random(32))),
		"whsec_" + ident.Random(40),
		"whsec_" + base64.StdEncoding.EncodeToString([]byte(ident.Random(32))),
	}
	var endpoints []store.WebhookEndpoint
	for _, secret := range secrets[:2] {
		e := newEndpoint(acct, store.ModeLive, store.AllEvents)
		e.Secret, e.CreatedAt, e.UpdatedAt = secret, now, now
		if err := s.CreateWebhookEndpoint(ctx, e, store.MaxEndpointsPerMode, nil); err != nil {
			t.Fatal(err)
		}
		endpoints = append(endpoints, e)
	}
	endpoints[1].Secret = secrets[2]
	if err := s.UpdateWebhookEndpoint(ctx, endpoints[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateEvent(ctx, newEvent(acct, store.ModeLive, kindDrift, now)); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimDeliveries(ctx, claimPolicy("d1", 10, 0), now)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d deliveries, %v", len(claimed), err)
	}
	for _, c := range claimed {
		if c.SecretErr != nil || (c.Secret != secrets[0] && c.Secret != secrets[2]) {
			t.Fatalf("claimed delivery to %s: secret error %v", c.EndpointID, c.SecretErr)
		}
		if _, err := s.RecordAttempt(ctx, "d1", c.ID, store.AttemptOutcome{At: now, StatusCode: 200, Succeeded: true}); err != nil {
			t.Fatal(err)
		}
	}
	var texts []string
	for _, secret := range secrets {
		texts = append(texts, secret, strings.TrimPrefix(secret, "whsec_"))
	}
	return texts
}
