package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"riskapi/internal/store"
)

var _ store.UserStore = (*Store)(nil)

// userColumns is the column list scanUser reads, in its order.
const userColumns = `id, account_id, email, password_hash, created_at, updated_at`

// sessionColumns is the column list scanSession reads, in its order.
const sessionColumns = `token_hash, user_id, account_id, created_at, last_seen_at, expires_at`

// CreateAccountWithUser inserts a and u in one transaction; ErrConflict (and nothing inserted)
// if u's email, or either id, exists.
func (s *Store) CreateAccountWithUser(ctx context.Context, a store.Account, u store.User) error {
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if err := s.insertAccount(ctx, tx, a); err != nil {
			return err
		}
		return s.insertUser(ctx, tx, u)
	})
	if err != nil {
		return fmt.Errorf("store create account with user: %w", err)
	}
	return nil
}

// CreateUser inserts u; ErrNotFound if its account does not exist, ErrConflict if its email
// or id exists.
func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	if err := s.insertUser(ctx, s.writer, u); err != nil {
		return fmt.Errorf("store create user: %w", err)
	}
	return nil
}

func (s *Store) insertUser(ctx context.Context, db execer, u store.User) error {
	_, err := db.ExecContext(ctx, s.rebind(`INSERT INTO dashboard_users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?)`),
		u.ID, u.AccountID, store.NormalizeEmail(u.Email), u.PasswordHash, u.CreatedAt.UnixMilli(), u.UpdatedAt.UnixMilli())
	if err != nil {
		// The email stays out of the message: it is personal data and errors end up in logs.
		return s.constraintError("user "+u.ID, err)
	}
	return nil
}

// UserByEmail returns the user with that email (normalised), or ErrNotFound.
func (s *Store) UserByEmail(ctx context.Context, email string) (store.User, error) {
	u, err := s.user(ctx, "email", store.NormalizeEmail(email))
	if err != nil {
		return store.User{}, fmt.Errorf("store user by email: %w", err)
	}
	return u, nil
}

// User returns the user with that id, or ErrNotFound.
func (s *Store) User(ctx context.Context, id string) (store.User, error) {
	u, err := s.user(ctx, "id", id)
	if err != nil {
		return store.User{}, fmt.Errorf("store user %s: %w", id, err)
	}
	return u, nil
}

// user reads the user whose column (a constant: "id" or "email") equals value.
func (s *Store) user(ctx context.Context, column, value string) (store.User, error) {
	var (
		u                store.User
		created, updated int64
	)
	err := s.reader.QueryRowContext(ctx, s.rebind(`SELECT `+userColumns+` FROM dashboard_users WHERE `+column+` = ?`), value).
		Scan(&u.ID, &u.AccountID, &u.Email, &u.PasswordHash, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.User{}, store.ErrNotFound
	}
	if err != nil {
		return store.User{}, err
	}
	u.CreatedAt, u.UpdatedAt = fromMillis(created), fromMillis(updated)
	return u, nil
}

// SetPasswordHash replaces the user's password hash; ErrNotFound if there is no such user.
func (s *Store) SetPasswordHash(ctx context.Context, userID, hash string, at time.Time) error {
	res, err := s.writer.ExecContext(ctx, s.rebind(`UPDATE dashboard_users SET password_hash = ?, updated_at = ? WHERE id = ?`),
		hash, at.UnixMilli(), userID)
	if err == nil {
		err = rowsAffected(res)
	}
	if err != nil {
		return fmt.Errorf("store set password of user %s: %w", userID, err)
	}
	return nil
}

// rowsAffected is ErrNotFound when an update matched no row.
func rowsAffected(res sql.Result) error { return matchedOr(res, store.ErrNotFound) }

// matchedOr returns none when a statement matched no row, the driver's error if it cannot
// tell, and nil otherwise.
func matchedOr(res sql.Result, none error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return none
	}
	return nil
}

// CreateSession inserts a session; ErrNotFound if its user does not exist, ErrConflict if its
// token hash exists.
func (s *Store) CreateSession(ctx context.Context, se store.Session) error {
	_, err := s.writer.ExecContext(ctx, s.rebind(`INSERT INTO dashboard_sessions (`+sessionColumns+`) VALUES (?, ?, ?, ?, ?, ?)`),
		se.TokenHash, se.UserID, se.AccountID, se.CreatedAt.UnixMilli(), se.LastSeenAt.UnixMilli(), se.ExpiresAt.UnixMilli())
	if err != nil {
		// The token hash stays out of the message: it is the look-up key of a live session.
		if s.dialect.IsForeignKeyViolation(err) {
			return fmt.Errorf("store create session: user %s: %w (%v)", se.UserID, store.ErrNotFound, err)
		}
		return fmt.Errorf("store create session of user %s: %w", se.UserID, s.constraintError("session", err))
	}
	return nil
}

// SessionByTokenHash returns the session with that token hash, or ErrNotFound.
func (s *Store) SessionByTokenHash(ctx context.Context, tokenHash string) (store.Session, error) {
	var (
		se                     store.Session
		created, seen, expires int64
	)
	err := s.reader.QueryRowContext(ctx, s.rebind(`SELECT `+sessionColumns+` FROM dashboard_sessions WHERE token_hash = ?`), tokenHash).
		Scan(&se.TokenHash, &se.UserID, &se.AccountID, &created, &seen, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("store session: %w", err)
	}
	se.CreatedAt, se.LastSeenAt, se.ExpiresAt = fromMillis(created), fromMillis(seen), fromMillis(expires)
	return se, nil
}

// TouchSession moves the session's last-seen time forward to at.
func (s *Store) TouchSession(ctx context.Context, tokenHash string, at time.Time) error {
	ms := at.UnixMilli()
	_, err := s.writer.ExecContext(ctx, s.rebind(`UPDATE dashboard_sessions SET last_seen_at = ? WHERE token_hash = ? AND last_seen_at < ?`),
		ms, tokenHash, ms)
	if err != nil {
		return fmt.Errorf("store touch session: %w", err)
	}
	return nil
}

// RevokeSession deletes the session, if it exists.
func (s *Store) RevokeSession(ctx context.Context, tokenHash string) error {
	if _, err := s.writer.ExecContext(ctx, s.rebind(`DELETE FROM dashboard_sessions WHERE token_hash = ?`), tokenHash); err != nil {
		return fmt.Errorf("store revoke session: %w", err)
	}
	return nil
}

// RevokeUserSessions deletes every session of the user.
func (s *Store) RevokeUserSessions(ctx context.Context, userID string) (int64, error) {
	res, err := s.writer.ExecContext(ctx, s.rebind(`DELETE FROM dashboard_sessions WHERE user_id = ?`), userID)
	if err != nil {
		return 0, fmt.Errorf("store revoke sessions of user %s: %w", userID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store revoke sessions of user %s: %w", userID, err)
	}
	return n, nil
}

// PurgeSessions deletes expired sessions and those idle since before idleBefore.
func (s *Store) PurgeSessions(ctx context.Context, now, idleBefore time.Time) (int64, error) {
	res, err := s.writer.ExecContext(ctx, s.rebind(`DELETE FROM dashboard_sessions WHERE expires_at <= ? OR last_seen_at < ?`),
		now.UnixMilli(), idleBefore.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("store purge sessions: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store purge sessions: %w", err)
	}
	return n, nil
}
