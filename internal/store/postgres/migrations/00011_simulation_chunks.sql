-- Background simulations run as River jobs in chunks of runs (docs/methods/cascade.md, "Chunked
-- runs"): any process may run any chunk, and each chunk's result is kept here until the
-- simulation is merged. A simulation is dispatched (its first job queued) when its account and
-- mode has no other dispatched unfinished simulation, which keeps the accounts' jobs
-- interleaved in River's queue; chunks is the number of chunks once the first job has made the
-- plan, next_chunk the next chunk to queue (each simulation keeps a window of chunks queued).
-- The lease columns and the turns table of the hand-written queue are no longer used; an
-- unfinished simulation of the older queue is handed back as queued, not dispatched, and the
-- dispatch sweep queues it again.

-- +goose Up
ALTER TABLE cascade_simulations ADD COLUMN dispatched INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cascade_simulations ADD COLUMN chunks     INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cascade_simulations ADD COLUMN next_chunk INTEGER NOT NULL DEFAULT 0;
UPDATE cascade_simulations SET status = 'queued', lease_owner = NULL, lease_until = NULL WHERE status = 'running';
DROP TABLE cascade_simulation_turns;

CREATE TABLE cascade_simulation_chunks (
    simulation_id TEXT    NOT NULL REFERENCES cascade_simulations (id) ON DELETE CASCADE,
    chunk         INTEGER NOT NULL,
    body          BYTEA   NOT NULL,
    worker        TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL,
    PRIMARY KEY (simulation_id, chunk)
);

-- +goose Down
DROP TABLE cascade_simulation_chunks;
CREATE TABLE cascade_simulation_turns (
    account_id TEXT    NOT NULL,
    mode       TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    claimed_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, mode)
);
ALTER TABLE cascade_simulations DROP COLUMN next_chunk;
ALTER TABLE cascade_simulations DROP COLUMN chunks;
ALTER TABLE cascade_simulations DROP COLUMN dispatched;
