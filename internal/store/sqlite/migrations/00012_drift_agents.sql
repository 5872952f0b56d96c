-- Drift's agents get a row of their own holding a number for the agent and its event count:
-- each stored event carries the number instead of the account, mode and agent id (some 50
-- bytes of text) in its row and in each of its three indexes, and a batch's answer reads the
-- agent's total from the count instead of counting the agent's whole history (a read that
-- grew with every batch). Measured in docs/opentelemetry.md, "Ingestion throughput".
-- Existing events keep their seq, so their insertion order is unchanged.

-- +goose Up
CREATE TABLE drift_agents (
    id         INTEGER NOT NULL PRIMARY KEY,
    account_id TEXT    NOT NULL,
    mode       TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    agent_id   TEXT    NOT NULL,
    events     INTEGER NOT NULL DEFAULT 0,
    UNIQUE (account_id, mode, agent_id)
) STRICT;
INSERT INTO drift_agents (account_id, mode, agent_id, events)
    SELECT account_id, mode, agent_id, COUNT(*) FROM drift_events GROUP BY account_id, mode, agent_id;

CREATE TABLE drift_agent_events (
    seq      INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    agent    INTEGER NOT NULL,
    event_id TEXT,
    ts       INTEGER NOT NULL,
    payload  BLOB    NOT NULL
) STRICT;
INSERT INTO drift_agent_events (seq, agent, event_id, ts, payload)
    SELECT e.seq, a.id, e.event_id, e.ts, e.payload
    FROM drift_events e JOIN drift_agents a
        ON a.account_id = e.account_id AND a.mode = e.mode AND a.agent_id = e.agent_id
    ORDER BY e.seq;
DROP TABLE drift_events;
ALTER TABLE drift_agent_events RENAME TO drift_events;

-- Reading an agent's history (in insertion order, or within a time window).
CREATE INDEX drift_events_agent_seq ON drift_events (agent, seq);
CREATE INDEX drift_events_agent_ts ON drift_events (agent, ts);
-- An event id is stored once per agent; inserts skip repeats with ON CONFLICT DO NOTHING.
CREATE UNIQUE INDEX drift_events_agent_event_id ON drift_events (agent, event_id)
    WHERE event_id IS NOT NULL;

-- +goose Down
CREATE TABLE drift_account_events (
    seq        INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    account_id TEXT    NOT NULL,
    mode       TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    agent_id   TEXT    NOT NULL,
    event_id   TEXT,
    ts         INTEGER NOT NULL,
    payload    BLOB    NOT NULL
) STRICT;
INSERT INTO drift_account_events (seq, account_id, mode, agent_id, event_id, ts, payload)
    SELECT e.seq, a.account_id, a.mode, a.agent_id, e.event_id, e.ts, e.payload
    FROM drift_events e JOIN drift_agents a ON a.id = e.agent
    ORDER BY e.seq;
DROP TABLE drift_events;
DROP TABLE drift_agents;
ALTER TABLE drift_account_events RENAME TO drift_events;
CREATE INDEX drift_events_agent_seq ON drift_events (account_id, mode, agent_id, seq);
CREATE INDEX drift_events_agent_ts ON drift_events (account_id, mode, agent_id, ts);
CREATE UNIQUE INDEX drift_events_agent_event_id ON drift_events (account_id, mode, agent_id, event_id)
    WHERE event_id IS NOT NULL;
