-- Accounts and their API keys. Times are INTEGER Unix milliseconds UTC; scopes are one
-- space-separated TEXT; custom_limits is a JSON object. STRICT makes SQLite reject a value of
-- the wrong type, as PostgreSQL does.

-- +goose Up
CREATE TABLE accounts (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL,
    email         TEXT    NOT NULL,
    plan          TEXT    NOT NULL CHECK (plan IN ('free_trial', 'starter', 'professional', 'enterprise')),
    region        TEXT    NOT NULL,
    custom_limits TEXT    NOT NULL DEFAULT '{}',
    created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id           TEXT    NOT NULL PRIMARY KEY,
    account_id   TEXT    NOT NULL REFERENCES accounts (id),
    type         TEXT    NOT NULL CHECK (type IN ('live', 'test', 'restricted')),
    mode         TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    name         TEXT    NOT NULL,
    scopes       TEXT    NOT NULL,
    rate_limit   INTEGER NOT NULL DEFAULT 0,
    hash         TEXT    NOT NULL,
    prefix       TEXT    NOT NULL,
    last4        TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER,
    expires_at   INTEGER
) STRICT;

-- Authentication looks keys up by hash, and a hash must name one key.
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);

-- Listing an account's keys newest first reads this index in order.
CREATE INDEX api_keys_account_created ON api_keys (account_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE accounts;
