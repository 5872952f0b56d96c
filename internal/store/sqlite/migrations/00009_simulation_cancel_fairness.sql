-- Background simulations can be canceled (status canceled: a queued one never runs, a running
-- one stops), and runners share the work fairly between accounts: at most one simulation of
-- an account and mode runs at a time, and the account served least recently goes first.
-- cascade_simulation_turns records when each account and mode last had a simulation claimed.
-- SQLite cannot change a CHECK constraint in place, so the table is rebuilt with the new status;
-- nothing refers to it.

-- +goose Up
CREATE TABLE cascade_simulations_new (
    id          TEXT    NOT NULL PRIMARY KEY,
    account_id  TEXT    NOT NULL,
    mode        TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    status      TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'canceled')),
    request     BLOB    NOT NULL,
    payload     BLOB    NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    summary     BLOB    NOT NULL DEFAULT X''
) STRICT;
INSERT INTO cascade_simulations_new (id, account_id, mode, status, request, payload, attempts, lease_owner, lease_until, created_at, updated_at, summary)
    SELECT id, account_id, mode, status, request, payload, attempts, lease_owner, lease_until, created_at, updated_at, summary
    FROM cascade_simulations;
DROP TABLE cascade_simulations;
ALTER TABLE cascade_simulations_new RENAME TO cascade_simulations;

-- GET /v1/cascade/simulations newest first.
CREATE INDEX cascade_simulations_account_created ON cascade_simulations (account_id, mode, created_at DESC, id DESC);
-- Claiming: the unfinished ones, oldest first.
CREATE INDEX cascade_simulations_unfinished ON cascade_simulations (created_at, id) WHERE status IN ('queued', 'running');
-- An account's unfinished simulations: the per-account limit counts them, and claiming skips
-- accounts with one running.
CREATE INDEX cascade_simulations_account_unfinished ON cascade_simulations (account_id, mode, status) WHERE status IN ('queued', 'running');

CREATE TABLE cascade_simulation_turns (
    account_id TEXT    NOT NULL,
    mode       TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    claimed_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, mode)
) STRICT;

-- +goose Down
DROP TABLE cascade_simulation_turns;
CREATE TABLE cascade_simulations_old (
    id          TEXT    NOT NULL PRIMARY KEY,
    account_id  TEXT    NOT NULL,
    mode        TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    status      TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    request     BLOB    NOT NULL,
    payload     BLOB    NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    summary     BLOB    NOT NULL DEFAULT X''
) STRICT;
-- A canceled simulation becomes a failed one: the older schema has no other finished status.
INSERT INTO cascade_simulations_old (id, account_id, mode, status, request, payload, attempts, lease_owner, lease_until, created_at, updated_at, summary)
    SELECT id, account_id, mode, CASE status WHEN 'canceled' THEN 'failed' ELSE status END, request, payload, attempts,
        lease_owner, lease_until, created_at, updated_at, summary
    FROM cascade_simulations;
DROP TABLE cascade_simulations;
ALTER TABLE cascade_simulations_old RENAME TO cascade_simulations;
CREATE INDEX cascade_simulations_account_created ON cascade_simulations (account_id, mode, created_at DESC, id DESC);
CREATE INDEX cascade_simulations_unfinished ON cascade_simulations (created_at, id) WHERE status IN ('queued', 'running');
