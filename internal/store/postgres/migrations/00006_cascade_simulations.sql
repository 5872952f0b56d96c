-- Cascade simulations. request is the validated request body (a background run starts again
-- from it after a restart); payload is the object as GET returns it, rewritten at every change
-- of status. A running simulation is held by a runner's lease (lease_owner, lease_until): a
-- runner that dies stops renewing it and the simulation is claimed again when it expires;
-- attempts counts the claims, so one that keeps being interrupted is failed, not retried forever.

-- +goose Up
CREATE TABLE cascade_simulations (
    id          TEXT    NOT NULL PRIMARY KEY,
    account_id  TEXT    NOT NULL,
    mode        TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    status      TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    request     BYTEA   NOT NULL,
    payload     BYTEA   NOT NULL,
    attempts    BIGINT  NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until BIGINT,
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL
);

-- GET /v1/cascade/simulations newest first.
CREATE INDEX cascade_simulations_account_created ON cascade_simulations (account_id, mode, created_at DESC, id DESC);
-- Claiming: the unfinished ones, oldest first.
CREATE INDEX cascade_simulations_unfinished ON cascade_simulations (created_at, id) WHERE status IN ('queued', 'running');

-- +goose Down
DROP TABLE cascade_simulations;
