package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"riskapi/internal/dashboard"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
)

// setPassword runs `accounts set-password` with input on standard input.
func setPassword(t *testing.T, e env, input string, args ...string) (string, error) {
	t.Helper()
	old := stdin
	stdin = strings.NewReader(input)
	defer func() { stdin = old }()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"riskapi", "accounts", "set-password"}, args...), e.get, &out, &errOut)
	return out.String(), err
}

// An operator gives a user of an existing account dashboard access, then resets the password;
// the password comes from standard input only, and a reset signs the user out everywhere.
// (Not parallel: it replaces the package's stdin.)
func TestAccountsSetPassword(t *testing.T) {
	dir := sqlitetest.Dir(t)
	e := env{"RISKAPI_DATA_DIR": dir}
	out := cli(t, e, "accounts", "create", "--name", "Acme", "--email", "risk@acme.example", "--plan", "starter", "--json")
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.ID == "" {
		t.Fatalf("accounts create --json: %q, %v", out, err)
	}
	acct := created.ID

	if _, err := setPassword(t, e, "first password 1\n", "--email", "Ops@Acme.example"); err == nil || !strings.Contains(err.Error(), "--account") {
		t.Fatalf("unknown user without --account: %v, want an error naming --account", err)
	}
	got, err := setPassword(t, e, "first password 1\n", "--email", "Ops@Acme.example", "--account", acct)
	if err != nil || !strings.Contains(got, "Created dashboard user ops@acme.example") {
		t.Fatalf("create user: %q, %v", got, err)
	}
	if _, err := setPassword(t, e, "x\n", "--email", "new@acme.example", "--account", "acct_nope0000000000000000000"); err == nil {
		t.Fatal("a user of an unknown account was created")
	}

	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	users := st.(store.UserStore)
	u, err := users.UserByEmail(ctx, "ops@acme.example")
	if err != nil || u.AccountID != acct {
		t.Fatalf("user after set-password: %+v, %v", u, err)
	}
	if ok, _, err := dashboard.VerifyPassword(u.PasswordHash, "first password 1"); !ok || err != nil {
		t.Fatalf("the stored hash does not verify the password read from stdin: %v", err)
	}
	now := time.Now()
	session := store.Session{TokenHash: strings.Repeat("ab", 32), UserID: u.ID, AccountID: acct, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := users.CreateSession(ctx, session); err != nil {
		t.Fatal(err)
	}

	got, err = setPassword(t, e, "second password 2\r\n", "--email", "ops@acme.example")
	if err != nil || !strings.Contains(got, "signed out 1 session") {
		t.Fatalf("reset: %q, %v", got, err)
	}
	u, _ = users.UserByEmail(ctx, "ops@acme.example")
	if ok, _, _ := dashboard.VerifyPassword(u.PasswordHash, "second password 2"); !ok {
		t.Fatal("the new password (CRLF line ending) does not verify")
	}
	if ok, _, _ := dashboard.VerifyPassword(u.PasswordHash, "first password 1"); ok {
		t.Fatal("the old password still verifies")
	}
	if _, err := users.SessionByTokenHash(ctx, session.TokenHash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the user's session survived the reset: %v", err)
	}

	var usage *usageError
	if _, err := setPassword(t, e, "short\n", "--email", "ops@acme.example"); !errors.As(err, &usage) || !strings.Contains(err.Error(), "at least 10") {
		t.Fatalf("short password: %v, want a usage error", err)
	}
	if _, err := setPassword(t, e, "", "--email", "ops@acme.example"); !errors.As(err, &usage) {
		t.Fatalf("empty standard input: %v, want a usage error", err)
	}
	if _, err := setPassword(t, e, "", "--email", "ops@acme.example", "--password", "on the command line"); !errors.As(err, &usage) {
		t.Fatalf("a --password flag: %v, want a usage error (passwords are never taken from argv)", err)
	}
}
