-- Background simulations can be canceled (status canceled: a queued one never runs, a running
-- one stops), and runners share the work fairly between accounts: at most one simulation of
-- an account and mode runs at a time, and the account served least recently goes first.
-- cascade_simulation_turns records when each account and mode last had a simulation claimed.

-- +goose Up
ALTER TABLE cascade_simulations DROP CONSTRAINT cascade_simulations_status_check,
    ADD CONSTRAINT cascade_simulations_status_check CHECK (status IN ('queued', 'running', 'completed', 'failed', 'canceled'));

-- An account's unfinished simulations: the per-account limit counts them, and claiming skips
-- accounts with one running.
CREATE INDEX cascade_simulations_account_unfinished ON cascade_simulations (account_id, mode, status) WHERE status IN ('queued', 'running');

CREATE TABLE cascade_simulation_turns (
    account_id TEXT   NOT NULL,
    mode       TEXT   NOT NULL CHECK (mode IN ('live', 'test')),
    claimed_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, mode)
);

-- +goose Down
DROP TABLE cascade_simulation_turns;
DROP INDEX cascade_simulations_account_unfinished;
-- A canceled simulation becomes a failed one: the older schema has no other finished status.
UPDATE cascade_simulations SET status = 'failed' WHERE status = 'canceled';
ALTER TABLE cascade_simulations DROP CONSTRAINT cascade_simulations_status_check,
    ADD CONSTRAINT cascade_simulations_status_check CHECK (status IN ('queued', 'running', 'completed', 'failed'));
