package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// RunUsers runs the conformance suite of store.UserStore (dashboard users and sessions). open
// must return an empty, migrated store that no other test uses and that implements
// store.UserStore; subtests run in parallel.
func RunUsers(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s store.UserStore, base store.Store)
	}{
		{"SignUpRoundTrip", testSignUpRoundTrip},
		{"SignUpDuplicateEmail", testSignUpDuplicateEmail},
		{"CreateUser", testCreateUser},
		{"SetPasswordHash", testSetPasswordHash},
		{"SessionLifecycle", testSessionLifecycle},
		{"RevokeUserSessions", testRevokeUserSessions},
		{"PurgeSessions", testPurgeSessions},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			us, ok := s.(store.UserStore)
			if !ok {
				t.Fatalf("%T does not implement store.UserStore", s)
			}
			tc.run(t, us, s)
		})
	}
}

func newUser(accountID, email string) store.User {
	return store.User{
		ID: ident.New("usr"), AccountID: accountID, Email: email,
		PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g",
		CreatedAt:    t0, UpdatedAt: t0,
	}
}

func newSession(u store.User, at time.Time) store.Session {
	return store.Session{TokenHash: randomHash(), UserID: u.ID, AccountID: u.AccountID,
		CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(24 * time.Hour)}
}

// signUp creates an account with one user of that email and returns both.
func signUp(t *testing.T, s store.UserStore, email string) (store.Account, store.User) {
	t.Helper()
	a := newAccount()
	a.Plan = store.PlanFreeTrial
	u := newUser(a.ID, email)
	if err := s.CreateAccountWithUser(context.Background(), a, u); err != nil {
		t.Fatalf("CreateAccountWithUser: %v", err)
	}
	return a, u
}

// uniqueEmail returns a new lower-case email address.
func uniqueEmail() string { return "user-" + strings.ToLower(ident.Random(10)) + "@example.com" }

// testSignUpRoundTrip: the account and its user read back as written; the email is found
// whatever its case and surrounding spaces.
func testSignUpRoundTrip(t *testing.T, s store.UserStore, base store.Store) {
	ctx := context.Background()
	email := uniqueEmail()
	a, u := signUp(t, s, "  "+email[:1]+"X"+email[1:]+" ")
	gotAcct, err := base.Account(ctx, a.ID)
	if err != nil || gotAcct.Plan != store.PlanFreeTrial || gotAcct.Name != a.Name {
		t.Fatalf("Account after sign-up = %+v, %v", gotAcct, err)
	}
	stored := email[:1] + "x" + email[1:]
	for _, lookup := range []string{stored, "  " + email[:1] + "X" + email[1:], email[:1] + "x" + email[1:] + "\t"} {
		got, err := s.UserByEmail(ctx, lookup)
		if err != nil {
			t.Fatalf("UserByEmail(%q): %v", lookup, err)
		}
		if got.ID != u.ID || got.AccountID != a.ID || got.Email != stored || got.PasswordHash != u.PasswordHash ||
			!got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
			t.Fatalf("UserByEmail(%q) = %+v, want %+v with email %q", lookup, got, u, stored)
		}
	}
	byID, err := s.User(ctx, u.ID)
	if err != nil || byID.Email != stored {
		t.Fatalf("User(%s) = %+v, %v", u.ID, byID, err)
	}
	if _, err := s.UserByEmail(ctx, uniqueEmail()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UserByEmail of an unknown email: %v, want ErrNotFound", err)
	}
	if _, err := s.User(ctx, ident.New("usr")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("User of an unknown id: %v, want ErrNotFound", err)
	}
}

// testSignUpDuplicateEmail: a second sign-up with the same email (in another case) is
// ErrConflict and leaves no account behind.
func testSignUpDuplicateEmail(t *testing.T, s store.UserStore, base store.Store) {
	ctx := context.Background()
	email := uniqueEmail()
	signUp(t, s, email)
	a := newAccount()
	err := s.CreateAccountWithUser(ctx, a, newUser(a.ID, "  "+email[:3]+"Q"+email[3:]))
	if err != nil {
		t.Fatalf("a different email was refused: %v", err)
	}
	b := newAccount()
	err = s.CreateAccountWithUser(ctx, b, newUser(b.ID, " "+strings.ToUpper(email)))
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second sign-up with %q: %v, want ErrConflict", strings.ToUpper(email), err)
	}
	if _, err := base.Account(ctx, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused sign-up left its account behind: %v", err)
	}
}

// testCreateUser: a second user of an existing account; an unknown account is ErrNotFound and
// a taken email ErrConflict.
func testCreateUser(t *testing.T, s store.UserStore, base store.Store) {
	ctx := context.Background()
	a, first := signUp(t, s, uniqueEmail())
	second := newUser(a.ID, uniqueEmail())
	if err := s.CreateUser(ctx, second); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if got, err := s.UserByEmail(ctx, second.Email); err != nil || got.AccountID != a.ID {
		t.Fatalf("UserByEmail(second) = %+v, %v", got, err)
	}
	if err := s.CreateUser(ctx, newUser(ident.New("acct"), uniqueEmail())); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateUser of an unknown account: %v, want ErrNotFound", err)
	}
	if err := s.CreateUser(ctx, newUser(a.ID, first.Email)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateUser with a taken email: %v, want ErrConflict", err)
	}
}

func testSetPasswordHash(t *testing.T, s store.UserStore, _ store.Store) {
	ctx := context.Background()
	_, u := signUp(t, s, uniqueEmail())
	later := t0.Add(time.Hour)
	if err := s.SetPasswordHash(ctx, u.ID, "$argon2id$new", later); err != nil {
		t.Fatalf("SetPasswordHash: %v", err)
	}
	got, err := s.User(ctx, u.ID)
	if err != nil || got.PasswordHash != "$argon2id$new" || !got.UpdatedAt.Equal(later) || !got.CreatedAt.Equal(t0) {
		t.Fatalf("after SetPasswordHash: %+v, %v", got, err)
	}
	if err := s.SetPasswordHash(ctx, ident.New("usr"), "x", later); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SetPasswordHash of an unknown user: %v, want ErrNotFound", err)
	}
}

// testSessionLifecycle: create, read, touch (never backwards), revoke; a session of an unknown
// user is refused, a token hash is unique.
func testSessionLifecycle(t *testing.T, s store.UserStore, _ store.Store) {
	ctx := context.Background()
	_, u := signUp(t, s, uniqueEmail())
	se := newSession(u, t0)
	if err := s.CreateSession(ctx, se); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if err := s.CreateSession(ctx, se); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateSession twice: %v, want ErrConflict", err)
	}
	stranger := newUser(ident.New("acct"), uniqueEmail())
	if err := s.CreateSession(ctx, newSession(stranger, t0)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateSession of an unknown user: %v, want ErrNotFound", err)
	}
	got, err := s.SessionByTokenHash(ctx, se.TokenHash)
	if err != nil || got != se {
		t.Fatalf("SessionByTokenHash = %+v, %v; want %+v", got, err, se)
	}
	if err := s.TouchSession(ctx, se.TokenHash, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchSession(ctx, se.TokenHash, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchSession(ctx, randomHash(), t0); err != nil {
		t.Fatalf("TouchSession of an unknown session: %v, want nil", err)
	}
	got, _ = s.SessionByTokenHash(ctx, se.TokenHash)
	if !got.LastSeenAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("LastSeenAt = %v, want the latest touch %v", got.LastSeenAt, t0.Add(time.Minute))
	}
	if err := s.RevokeSession(ctx, se.TokenHash); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByTokenHash(ctx, se.TokenHash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SessionByTokenHash after revocation: %v, want ErrNotFound", err)
	}
	if err := s.RevokeSession(ctx, se.TokenHash); err != nil {
		t.Fatalf("revoking twice: %v, want nil", err)
	}
}

// testRevokeUserSessions ends every session of one user and no other.
func testRevokeUserSessions(t *testing.T, s store.UserStore, _ store.Store) {
	ctx := context.Background()
	_, u := signUp(t, s, uniqueEmail())
	_, other := signUp(t, s, uniqueEmail())
	mine := []store.Session{newSession(u, t0), newSession(u, t0.Add(time.Second)), newSession(u, t0.Add(2*time.Second))}
	theirs := newSession(other, t0)
	for _, se := range append(mine, theirs) {
		if err := s.CreateSession(ctx, se); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.RevokeUserSessions(ctx, u.ID)
	if err != nil || n != 3 {
		t.Fatalf("RevokeUserSessions = %d, %v; want 3", n, err)
	}
	for _, se := range mine {
		if _, err := s.SessionByTokenHash(ctx, se.TokenHash); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a revoked session is still there: %v", err)
		}
	}
	if _, err := s.SessionByTokenHash(ctx, theirs.TokenHash); err != nil {
		t.Fatalf("another user's session was revoked: %v", err)
	}
}

// testPurgeSessions deletes sessions past their expiry or idle too long, and keeps the rest.
func testPurgeSessions(t *testing.T, s store.UserStore, _ store.Store) {
	ctx := context.Background()
	_, u := signUp(t, s, uniqueEmail())
	now := t0.Add(48 * time.Hour)
	expired := newSession(u, t0) // expires at t0+24h
	idle := newSession(u, now.Add(-3*time.Hour))
	fresh := newSession(u, now.Add(-time.Minute))
	for _, se := range []store.Session{expired, idle, fresh} {
		if err := s.CreateSession(ctx, se); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PurgeSessions(ctx, now, now.Add(-2*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PurgeSessions = %d, %v; want 2", n, err)
	}
	if _, err := s.SessionByTokenHash(ctx, fresh.TokenHash); err != nil {
		t.Fatalf("the fresh session was purged: %v", err)
	}
	for _, se := range []store.Session{expired, idle} {
		if _, err := s.SessionByTokenHash(ctx, se.TokenHash); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an expired or idle session survived: %v", err)
		}
	}
}
