-- Customer dashboard: the people who sign in for an account, and their sessions. Emails are
-- stored trimmed and lower-cased, so the unique index makes them unique whatever their case.
-- password_hash is an encoded argon2id hash; a session is kept by the SHA-256 of its token
-- only. Deleting a user deletes its sessions.

-- +goose Up
CREATE TABLE dashboard_users (
    id            TEXT    NOT NULL PRIMARY KEY,
    account_id    TEXT    NOT NULL REFERENCES accounts (id),
    email         TEXT    NOT NULL,
    password_hash TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) STRICT;

-- Sign-in looks users up by email, and an email names one user.
CREATE UNIQUE INDEX dashboard_users_email ON dashboard_users (email);
CREATE INDEX dashboard_users_account ON dashboard_users (account_id);

CREATE TABLE dashboard_sessions (
    token_hash   TEXT    NOT NULL PRIMARY KEY,
    user_id      TEXT    NOT NULL REFERENCES dashboard_users (id) ON DELETE CASCADE,
    account_id   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;

-- "Sign out everywhere" deletes a user's sessions; purging reads the expiry and idle times.
CREATE INDEX dashboard_sessions_user ON dashboard_sessions (user_id);
CREATE INDEX dashboard_sessions_expires ON dashboard_sessions (expires_at);
CREATE INDEX dashboard_sessions_last_seen ON dashboard_sessions (last_seen_at);

-- +goose Down
DROP TABLE dashboard_sessions;
DROP TABLE dashboard_users;
