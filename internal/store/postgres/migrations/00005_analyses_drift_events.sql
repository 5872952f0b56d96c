-- Stored analyses of the synchronous products, and Drift's per-agent event histories.
-- analyses.payload is the object exactly as GET returns it; subject is what the product's list
-- filters on (agent_id, market_id, source_id). drift_events keeps each event as the JSON the
-- API accepted, in insertion order (seq), with its timestamp in Unix nanoseconds for window
-- filters; event_id is the client's de-duplication key (NULL: none, never a duplicate).

-- +goose Up
CREATE TABLE analyses (
    id         TEXT    NOT NULL PRIMARY KEY,
    account_id TEXT    NOT NULL,
    mode       TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    product    TEXT    NOT NULL,
    subject    TEXT    NOT NULL DEFAULT '',
    payload    BYTEA   NOT NULL,
    created_at BIGINT  NOT NULL
);

-- The product's list newest first, unfiltered and filtered by subject; each reads one index.
CREATE INDEX analyses_account_product_created ON analyses (account_id, mode, product, created_at DESC, id DESC);
CREATE INDEX analyses_account_subject_created ON analyses (account_id, mode, product, subject, created_at DESC, id DESC);

CREATE TABLE drift_events (
    seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id TEXT    NOT NULL,
    mode       TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    agent_id   TEXT    NOT NULL,
    event_id   TEXT,
    ts         BIGINT  NOT NULL,
    payload    BYTEA   NOT NULL
);

-- Reading an agent's history (in insertion order, or within a time window) and counting it.
CREATE INDEX drift_events_agent_seq ON drift_events (account_id, mode, agent_id, seq);
CREATE INDEX drift_events_agent_ts ON drift_events (account_id, mode, agent_id, ts);
-- An event id is stored once per agent; inserts skip repeats with ON CONFLICT DO NOTHING.
CREATE UNIQUE INDEX drift_events_agent_event_id ON drift_events (account_id, mode, agent_id, event_id)
    WHERE event_id IS NOT NULL;

-- +goose Down
DROP TABLE drift_events;
DROP TABLE analyses;
