-- Accounts and their API keys: the same tables as the SQLite store. Times are BIGINT Unix
-- milliseconds UTC (not timestamptz) so both databases compare and order them identically;
-- scopes are one space-separated TEXT; custom_limits is a JSON object kept as TEXT.

-- +goose Up
CREATE TABLE accounts (
    id            TEXT   NOT NULL PRIMARY KEY,
    name          TEXT   NOT NULL,
    email         TEXT   NOT NULL,
    plan          TEXT   NOT NULL CHECK (plan IN ('free_trial', 'starter', 'professional', 'enterprise')),
    region        TEXT   NOT NULL,
    custom_limits TEXT   NOT NULL DEFAULT '{}',
    created_at    BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT   NOT NULL PRIMARY KEY,
    account_id   TEXT   NOT NULL REFERENCES accounts (id),
    type         TEXT   NOT NULL CHECK (type IN ('live', 'test', 'restricted')),
    mode         TEXT   NOT NULL CHECK (mode IN ('live', 'test')),
    name         TEXT   NOT NULL,
    scopes       TEXT   NOT NULL,
    rate_limit   BIGINT NOT NULL DEFAULT 0,
    hash         TEXT   NOT NULL,
    prefix       TEXT   NOT NULL,
    last4        TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT,
    expires_at   BIGINT
);

-- Authentication looks keys up by hash, and a hash must name one key.
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);

-- Listing an account's keys newest first reads this index in order.
CREATE INDEX api_keys_account_created ON api_keys (account_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE accounts;
