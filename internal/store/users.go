package store

import (
	"context"
	"strings"
	"time"
)

// User is a person who signs in to the customer dashboard on behalf of one account. The
// password is kept only as PasswordHash, an encoded argon2id hash (the dashboard package
// defines the encoding); the store never sees a password.
type User struct {
	ID        string // usr_…
	AccountID string
	// Email is the sign-in name, unique across the store. The store keeps it as
	// NormalizeEmail returns it, so look-ups ignore case and surrounding spaces.
	Email        string
	PasswordHash string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Session is a signed-in dashboard session. The browser holds a random token; the store keeps
// only its SHA-256 (TokenHash), so a copy of the database signs nobody in.
type Session struct {
	TokenHash  string // lower-case hex SHA-256 of the session token
	UserID     string
	AccountID  string
	CreatedAt  time.Time
	LastSeenAt time.Time // updated by TouchSession; the dashboard ends idle sessions by it
	ExpiresAt  time.Time // absolute end of the session
}

// NormalizeEmail is the form in which emails of users are stored and looked up: trimmed and
// lower-cased.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// UserStore keeps dashboard users and their sessions. Implementations normalise every email
// they are given with NormalizeEmail.
type UserStore interface {
	// CreateAccountWithUser inserts a new account and its first user in one transaction (the
	// dashboard's sign-up): ErrConflict, and neither is inserted, if a user with that email or
	// either id exists.
	CreateAccountWithUser(ctx context.Context, a Account, u User) error
	// CreateUser inserts a user of an existing account: ErrNotFound if the account does not
	// exist, ErrConflict if a user with that email or id exists.
	CreateUser(ctx context.Context, u User) error
	// UserByEmail returns the user with that email, or ErrNotFound.
	UserByEmail(ctx context.Context, email string) (User, error)
	// User returns the user with that id, or ErrNotFound.
	User(ctx context.Context, id string) (User, error)
	// SetPasswordHash replaces a user's password hash and sets UpdatedAt to at; ErrNotFound
	// if there is no such user.
	SetPasswordHash(ctx context.Context, userID, hash string, at time.Time) error

	// CreateSession inserts a session; ErrNotFound if its user does not exist, ErrConflict if
	// its token hash exists.
	CreateSession(ctx context.Context, s Session) error
	// SessionByTokenHash returns the session with that token hash, expired or not, or
	// ErrNotFound (for instance after it was revoked).
	SessionByTokenHash(ctx context.Context, tokenHash string) (Session, error)
	// TouchSession sets the session's LastSeenAt to at, unless it is already later. A
	// session that no longer exists is ignored.
	TouchSession(ctx context.Context, tokenHash string, at time.Time) error
	// RevokeSession deletes the session; revoking one that does not exist does nothing.
	RevokeSession(ctx context.Context, tokenHash string) error
	// RevokeUserSessions deletes every session of the user and returns how many.
	RevokeUserSessions(ctx context.Context, userID string) (int64, error)
	// PurgeSessions deletes the sessions whose ExpiresAt is at or before now, and those not
	// seen since idleBefore, and returns how many.
	PurgeSessions(ctx context.Context, now, idleBefore time.Time) (int64, error)
}
