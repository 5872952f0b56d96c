package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"riskapi/internal/store/keyring"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlite"
	"riskapi/webhook"
)

// sendTestEvent sends POST /v1/webhooks/{id}/test and waits for the receiver's n-th request,
// which it returns after checking both signatures with secret.
func sendTestEvent(t *testing.T, svc *service, rc *receiver, key, id, secret string, n int) receivedRequest {
	t.Helper()
	if status, res := apiCall(t, svc, http.MethodPost, "/v1/webhooks/"+id+"/test", key, ""); status != http.StatusAccepted {
		t.Fatalf("test event: %d %v", status, res)
	}
	rc.waitFor(t, 5*time.Second, fmt.Sprintf("delivery %d", n), func() bool { return len(rc.received()) >= n })
	got := rc.received()[n-1]
	if err := webhook.Verify(got.body, got.header, secret); err != nil {
		t.Fatalf("delivery %d: webhook.Verify: %v", n, err)
	}
	if err := webhook.VerifyHex(got.body, got.signature, secret); err != nil {
		t.Fatalf("delivery %d: webhook.VerifyHex: %v", n, err)
	}
	return got
}

// storeContains reports whether any file of the SQLite data directory holds s; false on
// PostgreSQL, whose rows internal/store/postgres searches instead.
func storeContains(t *testing.T, e env, s string) bool {
	t.Helper()
	dir := e["RISKAPI_DATA_DIR"]
	if dir == "" {
		return false
	}
	for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal", sqlite.FileName + "-shm"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil && bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// with returns e plus the given variables.
func (e env) with(kv ...string) env {
	out := env{}
	for k, v := range e {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// rotateSecrets runs `riskapi secrets rotate --json` and returns its report.
func rotateSecrets(t *testing.T, e env) rotationReport {
	t.Helper()
	var r rotationReport
	if err := json.Unmarshal([]byte(cli(t, e, "secrets", "rotate", "--json")), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// secretsAtRestScenario: a webhook created without a key is delivered; `secrets rotate`
// encrypts its secret under key A; a server with A delivers it; rotating to key B (A as
// previous) re-encrypts it; a server with B alone delivers it; a rotation with an unrelated
// key fails and names the key it lacks. Every delivery verifies, Standard Webhooks and hex.
// base holds the store settings; account creates the account to use and returns its test key.
func secretsAtRestScenario(t *testing.T, base env, account func() string) {
	rc := newReceiver(t)
	key := account()
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a 32-byte key for this test only"))
	keyA, keyB := keyring.NewKey(), keyring.NewKey()
	idA, idB := keyID(t, keyA), keyID(t, keyB)
	serve := base.with("RISKAPI_ALLOW_PRIVATE_WEBHOOKS", "true", "RISKAPI_NO_BOOTSTRAP", "true")

	svc := startServe(t, serve)
	status, created := apiCall(t, svc, http.MethodPost, "/v1/webhooks", key,
		fmt.Sprintf(`{"url": %q, "events": ["*"], "secret": %q}`, rc.URL+"/hook", secret))
	if status != http.StatusCreated {
		t.Fatalf("create webhook: %d %v", status, created)
	}
	id := dig(created, "data.id").(string)
	sendTestEvent(t, svc, rc, key, id, secret, 1)
	if err := svc.stop(); err != nil {
		t.Fatal(err)
	}
	if base["RISKAPI_DATA_DIR"] != "" && !storeContains(t, base, secret) {
		t.Fatal("without a key the secret is not found in the store's files: the check cannot see it")
	}

	r := rotateSecrets(t, base.with("RISKAPI_SECRET_KEY", keyA))
	if r.KeyID != idA || r.Reencrypted != 1 || r.FromPlaintext != 1 || len(r.Unopened) != 0 {
		t.Fatalf("rotation from plaintext: %+v", r)
	}
	if storeContains(t, base, secret) {
		t.Fatal("after the rotation the store's files still hold the plaintext secret")
	}
	svc = startServe(t, serve.with("RISKAPI_SECRET_KEY", keyA))
	sendTestEvent(t, svc, rc, key, id, secret, 2)
	if err := svc.stop(); err != nil {
		t.Fatal(err)
	}

	r = rotateSecrets(t, base.with("RISKAPI_SECRET_KEY", keyB, "RISKAPI_SECRET_KEY_PREVIOUS", keyA))
	if r.KeyID != idB || r.Reencrypted != 1 || r.FromPlaintext != 0 || len(r.Unopened) != 0 {
		t.Fatalf("rotation from key A to key B: %+v", r)
	}
	svc = startServe(t, serve.with("RISKAPI_SECRET_KEY", keyB))
	sendTestEvent(t, svc, rc, key, id, secret, 3)
	if err := svc.stop(); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{svc.stdout.String(), svc.stderr.String()} {
		if strings.Contains(out, secret) || strings.Contains(out, keyA) || strings.Contains(out, keyB) {
			t.Fatal("a secret or key appears in the server's output")
		}
	}
	if storeContains(t, base, secret) {
		t.Fatal("the store's files hold the plaintext secret")
	}

	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"riskapi", "secrets", "rotate"}, base.with("RISKAPI_SECRET_KEY", keyring.NewKey()).get, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), idB) {
		t.Fatalf("rotation without the key the secret is under: %v, want an error naming key %s", err, idB)
	}
}

func keyID(t *testing.T, key string) string {
	t.Helper()
	raw, err := keyring.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return keyring.KeyID(raw)
}

func TestSecretsAtRestSQLite(t *testing.T) {
	t.Parallel()
	base := env{"RISKAPI_DATA_DIR": t.TempDir()}
	secretsAtRestScenario(t, base, func() string { return createTestKey(t, base) })
}

func TestSecretsAtRestPostgres(t *testing.T) {
	t.Parallel()
	base := env{"RISKAPI_DATABASE_URL": pgtest.NewDatabase(t)}
	cli(t, base, "migrate")
	secretsAtRestScenario(t, base, func() string { return createTestKey(t, base) })
}

// createTestKey creates an account and a test-mode key for it, and returns the key.
func createTestKey(t *testing.T, e env) string {
	t.Helper()
	accountID := createAccount(t, e)
	var created struct{ Key string }
	if err := json.Unmarshal([]byte(cli(t, e, "keys", "create", "--account", accountID, "--type", "test", "--json")), &created); err != nil {
		t.Fatal(err)
	}
	return created.Key
}

// A PostgreSQL deployment without RISKAPI_SECRET_KEY warns once that webhook secrets are
// stored in plaintext; with the key, or on the embedded store, it does not.
func TestServeWarnsOfPlaintextSecretsOnPostgres(t *testing.T) {
	t.Parallel()
	const warning = "RISKAPI_SECRET_KEY is not set"
	dbURL := pgtest.NewDatabase(t)
	for _, tc := range []struct {
		name  string
		env   env
		warns int
	}{
		{"postgres without a key", env{"RISKAPI_DATABASE_URL": dbURL}, 1},
		{"postgres with a key", env{"RISKAPI_DATABASE_URL": dbURL, "RISKAPI_SECRET_KEY": keyring.NewKey()}, 0},
		{"embedded without a key", env{"RISKAPI_DATA_DIR": t.TempDir()}, 0},
	} {
		svc := startServe(t, tc.env)
		if err := svc.stop(); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(svc.stderr.String(), warning); n != tc.warns {
			t.Errorf("%s: the plaintext warning was logged %d times, want %d", tc.name, n, tc.warns)
		}
	}
}

// Keys are checked before anything is opened, and a bad one is named, never echoed.
func TestSecretKeySettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		env  env
		want string
	}{
		{env{"RISKAPI_SECRET_KEY": "hunter2-is-not-a-key"}, "RISKAPI_SECRET_KEY"},
		{env{"RISKAPI_SECRET_KEY": base64.StdEncoding.EncodeToString(make([]byte, 16))}, "decodes to 16 bytes"},
		{env{"RISKAPI_SECRET_KEY": keyring.NewKey(), "RISKAPI_SECRET_KEY_PREVIOUS": "x,hunter3"}, "RISKAPI_SECRET_KEY_PREVIOUS, key 1"},
		{env{"RISKAPI_SECRET_KEY_PREVIOUS": keyring.NewKey()}, "RISKAPI_SECRET_KEY is not"},
	} {
		tc.env["RISKAPI_DATA_DIR"] = dir
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"riskapi", "keys", "list", "--account", "acct_x"}, tc.env.get, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter") {
			t.Errorf("%v: error %v, want one containing %q and no key text", tc.env, err, tc.want)
		}
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"riskapi", "secrets", "rotate"}, env{"RISKAPI_DATA_DIR": dir}.get, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "RISKAPI_SECRET_KEY") {
		t.Errorf("secrets rotate without a key: %v, want an error asking for RISKAPI_SECRET_KEY", err)
	}
}

// new-key prints a key RISKAPI_SECRET_KEY accepts; new-webhook-secret a secret of the form the
// stock Standard Webhooks libraries take as it is.
func TestSecretsGenerators(t *testing.T) {
	t.Parallel()
	key := strings.TrimSpace(cli(t, env{}, "secrets", "new-key"))
	if _, err := keyring.ParseKey(key); err != nil {
		t.Errorf("secrets new-key printed %d characters that are not a key: %v", len(key), err)
	}
	secret := strings.TrimSpace(cli(t, env{}, "secrets", "new-webhook-secret"))
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(raw) != 32 {
		t.Errorf("secrets new-webhook-secret printed %q, want whsec_ and the base64 of 32 bytes", secret)
	}
}
