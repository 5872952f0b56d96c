-- Continuous Drift monitors (shared/spec/agents.md §2): one per account, mode and agent.
-- principal_id '' is none; baseline is the analysis's baseline member as JSON ('' for the
-- default); alerts and detected are JSON arrays the store writes and reads whole (a monitor
-- has at most one alert per party episode, and looks rewrite them in the look's transaction).
-- spent is the sum of the levels the looks so far ran at (alpha spending, docs/methods/drift.md §11).

-- +goose Up
CREATE TABLE drift_monitors (
    id                TEXT    NOT NULL PRIMARY KEY,
    account_id        TEXT    NOT NULL,
    mode              TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    agent_id          TEXT    NOT NULL,
    principal_id      TEXT    NOT NULL DEFAULT '',
    sensitivity       REAL    NOT NULL,
    baseline          TEXT    NOT NULL DEFAULT '',
    min_events        INTEGER NOT NULL,
    description       TEXT    NOT NULL DEFAULT '',
    status            TEXT    NOT NULL CHECK (status IN ('active', 'paused')),
    events_seen       INTEGER NOT NULL DEFAULT 0,
    looks             INTEGER NOT NULL DEFAULT 0,
    spent             REAL    NOT NULL DEFAULT 0,
    last_evaluated_at INTEGER,
    alerts            TEXT    NOT NULL DEFAULT '[]',
    detected          TEXT    NOT NULL DEFAULT '[]',
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

-- One monitor per agent and mode (409 CONFLICT for a second); also the lookup after ingestion.
CREATE UNIQUE INDEX drift_monitors_agent ON drift_monitors (account_id, mode, agent_id);
-- The list newest first.
CREATE INDEX drift_monitors_account_created ON drift_monitors (account_id, mode, created_at DESC, id DESC);

-- +goose Down
DROP TABLE drift_monitors;
