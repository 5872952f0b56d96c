-- The event outbox, webhook endpoints and the delivery queue: the same tables as the SQLite
-- store. Times are BIGINT Unix milliseconds UTC like every other table; an endpoint's events
-- are one space-separated TEXT ("*" subscribes to every kind). Events and endpoints carry
-- account_id without a foreign key, as idempotency records and usage do: accounts are never
-- deleted, and tenancy is enforced by every query filtering on account_id and mode.

-- +goose Up
CREATE TABLE events (
    id         TEXT    NOT NULL PRIMARY KEY,
    account_id TEXT    NOT NULL,
    mode       TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    type       TEXT    NOT NULL,
    payload    BYTEA   NOT NULL,
    created_at BIGINT  NOT NULL
);

-- GET /v1/events newest first, unfiltered and filtered by type; each reads one index in order.
CREATE INDEX events_account_created ON events (account_id, mode, created_at DESC, id DESC);
CREATE INDEX events_account_type_created ON events (account_id, mode, type, created_at DESC, id DESC);
-- The retention purge deletes by age.
CREATE INDEX events_created ON events (created_at);

CREATE TABLE webhook_endpoints (
    id              TEXT    NOT NULL PRIMARY KEY,
    account_id      TEXT    NOT NULL,
    mode            TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    url             TEXT    NOT NULL,
    events          TEXT    NOT NULL,
    secret          TEXT    NOT NULL,
    description     TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL CHECK (status IN ('enabled', 'disabled')),
    disabled_reason TEXT    NOT NULL DEFAULT '',
    created_at      BIGINT  NOT NULL,
    updated_at      BIGINT  NOT NULL,
    last_success_at BIGINT
);

-- Listing, counting against the limit of 16, and the fan-out all filter on account and mode.
CREATE INDEX webhook_endpoints_account_created ON webhook_endpoints (account_id, mode, created_at DESC, id DESC);

-- One row per event and endpoint. account_id, mode and event_type are copied from the event
-- so that scoped reads need no join. manual_retry_at is when a manual retry was asked for
-- (NULL: none outstanding); lease_manual_at is the manual_retry_at the current lease serves
-- (NULL: the leased attempt is an automatic one), so a manual retry asked for while an
-- attempt is in flight is not mistaken for that attempt.
CREATE TABLE deliveries (
    id               TEXT    NOT NULL PRIMARY KEY,
    endpoint_id      TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id         TEXT    NOT NULL REFERENCES events (id),
    event_type       TEXT    NOT NULL,
    account_id       TEXT    NOT NULL,
    mode             TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    status           TEXT    NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT    NOT NULL DEFAULT '',
    next_attempt_at  BIGINT,
    manual_retry_at  BIGINT,
    lease_owner      TEXT,
    lease_until      BIGINT,
    lease_manual_at  BIGINT,
    created_at       BIGINT  NOT NULL,
    completed_at     BIGINT
);

-- An event reaches an endpoint once; the index also serves the purge and the foreign key.
CREATE UNIQUE INDEX deliveries_event_endpoint ON deliveries (event_id, endpoint_id);
-- Claiming: pending deliveries by due time, and the few with a manual retry outstanding.
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_manual_retry ON deliveries (manual_retry_at) WHERE manual_retry_at IS NOT NULL;
-- Counting the leases per endpoint for the per-endpoint cap; released leases are NULL.
CREATE INDEX deliveries_leased ON deliveries (lease_until, endpoint_id) WHERE lease_until IS NOT NULL;
-- GET /v1/webhooks/{id}/deliveries newest first, and the cascade from the endpoint.
CREATE INDEX deliveries_endpoint_created ON deliveries (endpoint_id, created_at DESC, id DESC);
-- The auto-disable rule counts an endpoint's failed deliveries since its last success.
CREATE INDEX deliveries_endpoint_failed ON deliveries (endpoint_id, completed_at) WHERE status = 'failed';

-- +goose Down
DROP TABLE deliveries;
DROP TABLE webhook_endpoints;
DROP TABLE events;
