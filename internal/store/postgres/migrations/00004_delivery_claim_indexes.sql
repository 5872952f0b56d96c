-- ClaimDeliveries, per endpoint: the pending deliveries of each endpoint by due time. When
-- the head of the queue (deliveries_due) is crowded with deliveries a claim cannot take (the
-- backlog of an endpoint at its concurrency cap, or of a disabled endpoint), the claim lists
-- the endpoints that have pending deliveries by a loose scan of this index and reads the
-- oldest few of each: a probe per endpoint rather than a step per delivery. Partial: ended
-- deliveries, the bulk of the table, are not in it.
--
-- The SQLite store's index leads with status for its planner; here it must not: PostgreSQL
-- drops status = 'pending' from the index conditions (the predicate implies it), and a
-- leading column without a condition would turn every seek on endpoint_id into a full scan.
--
-- Built CONCURRENTLY, outside a transaction, so that instances still running keep writing
-- deliveries while it is built over 30 days of them. A build that fails leaves an invalid
-- index behind and the version unrecorded; the DROP lets the next attempt start over.

-- +goose NO TRANSACTION
-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS deliveries_endpoint_pending;
CREATE INDEX CONCURRENTLY deliveries_endpoint_pending ON deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS deliveries_endpoint_pending;
