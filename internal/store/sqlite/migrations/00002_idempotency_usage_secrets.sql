-- Idempotency records, daily usage totals and process-shared secrets.

-- +goose Up
-- One row per (account, mode, Idempotency-Key). token identifies the execution holding an
-- in-flight record, so a slow execution whose record was reclaimed cannot overwrite the
-- reclaimer's result.
CREATE TABLE idempotency_keys (
    account_id   TEXT    NOT NULL,
    mode         TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    key          TEXT    NOT NULL,
    fingerprint  TEXT    NOT NULL,
    token        TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('in_flight', 'done')),
    status       INTEGER NOT NULL DEFAULT 0,
    body         BLOB,
    created_at   INTEGER NOT NULL,
    locked_at    INTEGER NOT NULL,
    completed_at INTEGER,
    PRIMARY KEY (account_id, mode, key)
) STRICT;

-- The purge deletes by age.
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Billable units per account, UTC day (YYYY-MM-DD), product and endpoint.
CREATE TABLE usage_daily (
    account_id TEXT    NOT NULL,
    day        TEXT    NOT NULL,
    product    TEXT    NOT NULL,
    endpoint   TEXT    NOT NULL,
    units      INTEGER NOT NULL,
    PRIMARY KEY (account_id, day, product, endpoint)
) STRICT;

-- Secrets every process of a deployment must share (the pagination cursor key).
CREATE TABLE secrets (
    name       TEXT    NOT NULL PRIMARY KEY,
    value      BLOB    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE secrets;
DROP TABLE usage_daily;
DROP TABLE idempotency_keys;
