-- ClaimDeliveries, per endpoint: the pending deliveries of each endpoint by due time. When
-- the head of the queue (deliveries_due) is crowded with deliveries a claim cannot take (the
-- backlog of an endpoint at its concurrency cap, or of a disabled endpoint), the claim lists
-- the endpoints that have pending deliveries by a loose scan of this index and reads the
-- oldest few of each: a probe per endpoint rather than a step per delivery. Partial: ended
-- deliveries, the bulk of the table, are not in it. status leads although every entry is
-- 'pending', so that the planner, which has no statistics here (the store never runs
-- ANALYZE), sees this index constrain more columns than deliveries_due (status,
-- next_attempt_at) and picks it for those lookups.

-- +goose Up
CREATE INDEX deliveries_endpoint_pending ON deliveries (status, endpoint_id, next_attempt_at) WHERE status = 'pending';

-- +goose Down
DROP INDEX deliveries_endpoint_pending;
