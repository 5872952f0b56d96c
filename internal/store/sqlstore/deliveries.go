package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"riskapi/internal/store"
)

// deliveryColumns is the column list scanDelivery reads, in its order.
const deliveryColumns = `id, endpoint_id, event_id, event_type, account_id, mode, status, attempts,
	last_status_code, last_error, next_attempt_at, manual_retry_at, created_at, completed_at`

// claimLockKey serialises ClaimDeliveries across processes on PostgreSQL (see there).
const claimLockKey = "deliveries claim"

// dueAt is the SQL expression of when a due delivery (of table alias d) fell due: the earlier
// of its manual retry request and its scheduled attempt. Claims take the oldest first.
const dueAt = `CASE WHEN d.manual_retry_at IS NOT NULL
	AND (d.next_attempt_at IS NULL OR d.manual_retry_at < d.next_attempt_at)
	THEN d.manual_retry_at ELSE d.next_attempt_at END`

// Delivery returns a delivery of the endpoint, in the account and mode, or ErrNotFound.
func (s *Store) Delivery(ctx context.Context, accountID string, mode store.Mode, endpointID, id string) (store.Delivery, error) {
	d, err := s.delivery(ctx, s.reader, accountID, mode, endpointID, id)
	if err != nil {
		return store.Delivery{}, fmt.Errorf("store delivery %s: %w", id, err)
	}
	return d, nil
}

// ListDeliveries pages through an endpoint's deliveries, newest first. ErrNotFound if the
// endpoint is not one of the account and mode, so that the caller can answer 404 rather than
// an empty list for another account's endpoint.
func (s *Store) ListDeliveries(ctx context.Context, accountID string, mode store.Mode, endpointID string, q store.PageQuery) (store.Page[store.Delivery], error) {
	var exists bool
	if err := s.reader.QueryRowContext(ctx, s.rebind(`SELECT EXISTS (SELECT 1 FROM webhook_endpoints
		WHERE id = ? AND account_id = ? AND mode = ?)`), endpointID, accountID, string(mode)).Scan(&exists); err != nil {
		return store.Page[store.Delivery]{}, fmt.Errorf("store list deliveries: %w", err)
	}
	if !exists {
		return store.Page[store.Delivery]{}, fmt.Errorf("store list deliveries: webhook endpoint %s: %w", endpointID, store.ErrNotFound)
	}
	page, err := listPage(ctx, s, "deliveries", deliveryColumns, "endpoint_id = ? AND account_id = ? AND mode = ?",
		[]any{endpointID, accountID, string(mode)}, q, scanDelivery)
	if err != nil {
		return store.Page[store.Delivery]{}, fmt.Errorf("store list deliveries: %w", err)
	}
	return page, nil
}

// RequestManualRetry records a request for one more attempt of the delivery at now. An
// outstanding request keeps its earlier time (it is already due), unless it is the one an
// attempt in flight is serving: then the new request is a new one, made after that attempt
// began, and survives it.
func (s *Store) RequestManualRetry(ctx context.Context, accountID string, mode store.Mode, endpointID, id string, now time.Time) (store.Delivery, error) {
	var d store.Delivery
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE deliveries SET manual_retry_at = CASE
				WHEN manual_retry_at IS NULL OR manual_retry_at = lease_manual_at THEN ? ELSE manual_retry_at END
			WHERE id = ? AND endpoint_id = ? AND account_id = ? AND mode = ?`),
			now.UnixMilli(), id, endpointID, accountID, string(mode))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(store.ErrNotFound, err)
		}
		d, err = s.delivery(ctx, tx, accountID, mode, endpointID, id)
		return err
	})
	if err != nil {
		return store.Delivery{}, fmt.Errorf("store request manual retry of delivery %s: %w", id, err)
	}
	return d, nil
}

// ClaimDeliveries leases up to p.Limit due deliveries to p.Owner until now + p.Lease.
//
// One transaction: pick the deliveries (pickDue), lease them, re-checking that each is still
// due and free (on PostgreSQL under FOR UPDATE SKIP LOCKED, so a row an attempt is being
// recorded on is skipped, not waited for), and read what the dispatcher sends: the event's
// payload and the endpoint's URL and secret (decrypted).
//
// The per-endpoint cap counts leases that other claims committed, so claims must not overlap:
// on PostgreSQL a transaction-level lock makes concurrent claimers (of every process) take
// turns, on SQLite the write transaction does. Without it, two claimers whose snapshots
// differ by one committed manual retry pick different first rows and together exceed the cap.
// A claim is a few indexed statements, each reading a bounded number of rows however long the
// queue and the table are (about a millisecond on SQLite, a few on PostgreSQL, most of it the
// lease writes), so taking turns costs little next to the HTTP requests it feeds.
//
// The row locks matter even though claims take turns: a previous owner may still record an
// attempt on a delivery whose lease expired, and the locking subselect re-checks "due and
// free" on the row as that owner committed it, where a plain subselect would re-lease a
// delivery that has just succeeded. Without both, concurrent claimers on PostgreSQL were seen
// to get the same delivery.
//
// p.PerEndpoint <= 0 means no cap. p.Limit <= 0 claims nothing.
func (s *Store) ClaimDeliveries(ctx context.Context, p store.ClaimPolicy, now time.Time) ([]store.ClaimedDelivery, error) {
	if p.Owner == "" {
		return nil, errors.New("store claim deliveries: empty owner")
	}
	if p.Lease <= 0 {
		return nil, fmt.Errorf("store claim deliveries: lease %s: must be positive", p.Lease)
	}
	if p.Limit <= 0 {
		return []store.ClaimedDelivery{}, nil
	}
	at, until := now.UnixMilli(), now.Add(p.Lease).UnixMilli()
	var out []store.ClaimedDelivery
	err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, claimLockKey); err != nil {
			return err
		}
		picked, err := s.pickDue(ctx, tx, p.Limit, p.PerEndpoint, at)
		if err != nil {
			return fmt.Errorf("pick: %w", err)
		}
		if len(picked) == 0 {
			return nil
		}
		in, inArgs := inList(picked)
		args := append([]any{p.Owner, until}, inArgs...)
		args = append(args, at, at)
		leased, err := queryStrings(ctx, tx, s.rebind(`UPDATE deliveries
			SET lease_owner = ?, lease_until = ?, lease_manual_at = manual_retry_at
			WHERE id IN (SELECT id FROM deliveries WHERE id IN `+in+`
				AND (manual_retry_at IS NOT NULL OR (status = 'pending' AND next_attempt_at <= ?))
				AND (lease_until IS NULL OR lease_until <= ?)`+s.rowLock(` FOR UPDATE SKIP LOCKED`)+`)
			RETURNING id`), args...)
		if err != nil {
			return fmt.Errorf("lease: %w", err)
		}
		if len(leased) == 0 {
			return nil
		}
		out, err = s.readClaimed(ctx, tx, leased)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store claim deliveries: %w", err)
	}
	if out == nil {
		out = []store.ClaimedDelivery{}
	}
	return out, nil
}

// readClaimed reads what the dispatcher sends for the deliveries of ids, leased in tx: the
// delivery, the event's payload and the endpoint's URL and secret (decrypted), oldest due
// first.
func (s *Store) readClaimed(ctx context.Context, tx *sql.Tx, ids []string) ([]store.ClaimedDelivery, error) {
	in, inArgs := inList(ids)
	rows, err := tx.QueryContext(ctx, s.rebind(`SELECT `+claimedColumns+`
		FROM deliveries d JOIN events ev ON ev.id = d.event_id JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.id IN `+in+` ORDER BY `+dueAt+`, d.id`), inArgs...)
	if err != nil {
		return nil, fmt.Errorf("read claimed: %w", err)
	}
	return s.scanClaimed(rows)
}

// claimedColumns are what scanClaimed reads: the delivery d, the payload of its event ev and
// the URL and secret of its endpoint e.
var claimedColumns = qualify("d", deliveryColumns) + `, ev.payload, e.url, e.secret, e.secret_key_id`

// scanClaimed reads and closes rows of claimedColumns.
func (s *Store) scanClaimed(rows *sql.Rows) ([]store.ClaimedDelivery, error) {
	defer rows.Close()
	var err error
	var out []store.ClaimedDelivery
	for rows.Next() {
		var c store.ClaimedDelivery
		var storedSecret, keyID string
		c.Delivery, err = scanDelivery(rowScanner{rows, []any{&c.Payload, &c.URL, &storedSecret, &keyID}})
		if err != nil {
			return nil, fmt.Errorf("read claimed: %w", err)
		}
		// A secret that does not decrypt fails this delivery's attempt, not the claim:
		// the other endpoints' deliveries go out.
		c.Secret, c.SecretErr = s.openSecret(c.EndpointID, storedSecret, keyID)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read claimed: %w", err)
	}
	return out, nil
}

// claimWindowFactor sizes what a pick reads from the head of the queue: claimWindowFactor
// times the claim's limit, so that a few endpoints at their cap among the oldest due
// deliveries rarely leave the claim short of its limit.
const claimWindowFactor = 4

// claimCandidate is a due delivery, free of an unexpired lease, that a pick may lease. due is
// when it fell due (the dueAt expression, evaluated here).
type claimCandidate struct {
	id, endpointID string
	due            int64
}

// candidateDue evaluates dueAt: the earlier of a manual retry request and the scheduled
// attempt.
func candidateDue(next, manual sql.NullInt64) int64 {
	if manual.Valid && (!next.Valid || manual.Int64 < next.Int64) {
		return manual.Int64
	}
	return next.Int64
}

// pickDue returns the ids of the deliveries a claim of limit at `at` leases, oldest due first:
// due (pending with next_attempt_at <= at and an enabled endpoint, or with a manual retry
// outstanding, whatever the endpoint's status), free of an unexpired lease, and at most
// perEndpoint (if > 0) under unexpired lease per endpoint, counting the leases held already.
//
// Its cost depends on the claim's limit, the leases held and the number of endpoints with
// pending deliveries, never on the number of ended deliveries nor on the length of one
// endpoint's backlog. Every statement reads an index range bounded by one of those:
//
//  1. the unexpired leases, counted per endpoint from the partial index deliveries_leased,
//     which holds only leases not yet released. Endpoints at their cap are "saturated";
//  2. the outstanding manual retries (few: a user asks for each), from their partial index
//     deliveries_manual_retry, without the saturated endpoints', the oldest window;
//  3. the head of the queue: the oldest window free pending deliveries due by `at`, read in
//     order from deliveries_due (status, next_attempt_at), where the ended deliveries sit
//     apart under their own status. Deliveries of disabled or saturated endpoints are
//     dropped here, in Go, rather than in SQL: a filter in SQL would make the index scan
//     step over all of them, however many, before it found window others.
//
// Merged and ordered by due time, steps 2 and 3 decide the claim when they fill it from the
// part of the order they hold completely (before the due time of the last row read, when a
// statement was cut off at window), or when the head held every due delivery. They fail to
// when the head is crowded with deliveries the claim cannot take: a saturated endpoint's
// backlog, a disabled endpoint's waiting deliveries, or an endpoint's beyond its cap. Then
//
//  4. the pick starts from the endpoints instead: it lists the endpoints that have pending
//     deliveries (a loose scan of deliveries_endpoint_pending, one probe per endpoint), keeps
//     the enabled and unsaturated ones and reads the oldest free due deliveries of each, up to
//     as many as one endpoint may get, and merges those with step 2's.
func (s *Store) pickDue(ctx context.Context, tx *sql.Tx, limit, perEndpoint int, at int64) ([]string, error) {
	leased, err := s.liveLeases(ctx, tx, at)
	if err != nil {
		return nil, err
	}
	quota := func(endpointID string) int { return limit }
	perEndpointMax := limit
	var saturated []string
	if perEndpoint > 0 {
		quota = func(endpointID string) int { return perEndpoint - leased[endpointID] }
		perEndpointMax = min(perEndpoint, limit)
		for endpointID, n := range leased {
			if n >= perEndpoint {
				saturated = append(saturated, endpointID)
			}
		}
		slices.Sort(saturated)
	}
	window := claimWindowFactor * limit

	manual, manualKnown, err := s.manualRetryCandidates(ctx, tx, at, saturated, window)
	if err != nil {
		return nil, err
	}
	head, headKnown, err := s.dueHead(ctx, tx, at, window)
	if err != nil {
		return nil, err
	}
	picked := pickCandidates(append(head, manual...), limit, quota, min(headKnown, manualKnown))
	if len(picked) == limit || headKnown == math.MaxInt64 {
		return picked, nil
	}
	byEndpoint, err := s.dueByEndpoint(ctx, tx, at, saturated, perEndpointMax)
	if err != nil {
		return nil, err
	}
	return pickCandidates(append(byEndpoint, manual...), limit, quota, manualKnown), nil
}

// pickCandidates orders candidates by due time (then id) and takes up to limit of them, at
// most quota(endpoint) of each endpoint and none due at or after knownBefore: the candidates
// from there on are not all known. A delivery listed twice counts once.
func pickCandidates(candidates []claimCandidate, limit int, quota func(endpointID string) int, knownBefore int64) []string {
	slices.SortFunc(candidates, func(a, b claimCandidate) int {
		if c := cmp.Compare(a.due, b.due); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	var picked []string
	taken := make(map[string]int)
	for i, c := range candidates {
		if c.due >= knownBefore {
			break
		}
		if i > 0 && candidates[i-1].id == c.id {
			continue
		}
		if taken[c.endpointID] >= quota(c.endpointID) {
			continue
		}
		taken[c.endpointID]++
		picked = append(picked, c.id)
		if len(picked) == limit {
			break
		}
	}
	return picked
}

// liveLeases counts the unexpired leases of each endpoint. The range lease_until > at of the
// partial index deliveries_leased holds exactly those: a recorded attempt releases its lease
// (lease_until NULL), an expired one is below the range. The rows are counted here rather than
// with GROUP BY, which SQLite's planner would serve by scanning deliveries_endpoint_created,
// the whole table, in endpoint order.
func (s *Store) liveLeases(ctx context.Context, tx *sql.Tx, at int64) (map[string]int, error) {
	endpoints, err := queryStrings(ctx, tx, s.rebind(`SELECT endpoint_id FROM deliveries WHERE lease_until > ?`), at)
	if err != nil {
		return nil, fmt.Errorf("count leases: %w", err)
	}
	leased := make(map[string]int)
	for _, endpointID := range endpoints {
		leased[endpointID]++
	}
	return leased, nil
}

// manualRetryCandidates returns the oldest window free deliveries with a manual retry
// outstanding, except those of the saturated endpoints, and the due time before which it
// returned all of them: math.MaxInt64 if it returned all, else the due time of the last one
// (others may be due at the same time).
func (s *Store) manualRetryCandidates(ctx context.Context, tx *sql.Tx, at int64, saturated []string, window int) ([]claimCandidate, int64, error) {
	var args []any
	notSaturated := ""
	if len(saturated) > 0 {
		in, inArgs := inList(saturated)
		notSaturated, args = ` AND d.endpoint_id NOT IN `+in, inArgs
	}
	args = append(args, at, window)
	rows, err := tx.QueryContext(ctx, s.rebind(`SELECT d.id, d.endpoint_id, d.next_attempt_at, d.manual_retry_at
		FROM deliveries d
		WHERE d.manual_retry_at IS NOT NULL`+notSaturated+` AND (d.lease_until IS NULL OR d.lease_until <= ?)
		ORDER BY `+dueAt+` LIMIT ?`), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("manual retries: %w", err)
	}
	defer rows.Close()
	var out []claimCandidate
	for rows.Next() {
		var (
			c            claimCandidate
			next, manual sql.NullInt64
		)
		if err := rows.Scan(&c.id, &c.endpointID, &next, &manual); err != nil {
			return nil, 0, fmt.Errorf("manual retries: %w", err)
		}
		c.due = candidateDue(next, manual)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("manual retries: %w", err)
	}
	if len(out) < window {
		return out, math.MaxInt64, nil
	}
	return out, out[len(out)-1].due, nil
}

// dueHead reads the head of the queue: the oldest window pending deliveries due by at and
// free of an unexpired lease, in the order of deliveries_due. It returns those whose endpoint
// is enabled (or that have a manual retry outstanding), and the due time before which it read
// all pending deliveries: math.MaxInt64 if it read fewer than window, else the due time of
// the last one read (others may be due at the same time). It visits at most window rows plus
// the unexpired leases.
//
// The order is next_attempt_at alone, the index's, not (next_attempt_at, id): with a second
// sort key PostgreSQL's planner, when its statistics say that few deliveries are pending
// (taken while the queue was empty, before a burst), sorts every pending delivery rather
// than read the index in order and stop.
func (s *Store) dueHead(ctx context.Context, tx *sql.Tx, at int64, window int) ([]claimCandidate, int64, error) {
	rows, err := tx.QueryContext(ctx, s.rebind(`SELECT d.id, d.endpoint_id, d.next_attempt_at, d.manual_retry_at, e.status
		FROM deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
		ORDER BY d.next_attempt_at LIMIT ?`), at, at, window)
	if err != nil {
		return nil, 0, fmt.Errorf("due head: %w", err)
	}
	defer rows.Close()
	var (
		out  []claimCandidate
		last int64
		n    int
	)
	for rows.Next() {
		var (
			c            claimCandidate
			next, manual sql.NullInt64
			status       string
		)
		if err := rows.Scan(&c.id, &c.endpointID, &next, &manual, &status); err != nil {
			return nil, 0, fmt.Errorf("due head: %w", err)
		}
		n++
		last = next.Int64
		if status != store.EndpointEnabled && !manual.Valid {
			continue
		}
		c.due = candidateDue(next, manual)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("due head: %w", err)
	}
	if n < window {
		return out, math.MaxInt64, nil
	}
	return out, last, nil
}

// dueByEndpointChunk is how many endpoints' ranges one statement of dueByEndpoint reads,
// well within SQLite's limits on bound parameters and terms.
const dueByEndpointChunk = 100

// dueByEndpoint returns, for every enabled endpoint that is not saturated, its oldest pending
// deliveries due by at and free of an unexpired lease: at least n of them (ties on the due
// time may add a few), or all if it has fewer.
//
// The first statement lists the endpoints that have pending deliveries by a loose index scan
// of deliveries_endpoint_pending (the pending deliveries by endpoint and due time): each step
// seeks the next endpoint id, so an endpoint costs one probe however long its backlog. Of each enabled, unsaturated one that has a free due delivery, it reads the due
// time of its n-th oldest (a probe of the same index). The second reads, for each such
// endpoint, the index range up to that time. The ranges are constants in the second
// statement, rather than a join on the first's rows, because PostgreSQL's planner cannot
// estimate a range bounded by another table's column and answers such a join by hashing
// every pending delivery.
func (s *Store) dueByEndpoint(ctx context.Context, tx *sql.Tx, at int64, saturated []string, n int) ([]claimCandidate, error) {
	args := []any{at, at, n - 1, at}
	notSaturated := ""
	if len(saturated) > 0 {
		in, inArgs := inList(saturated)
		notSaturated = ` AND e.id NOT IN ` + in
		args = append(args, inArgs...)
	}
	args = append(args, at, at)
	// CROSS JOIN fixes the join order on SQLite (endpoints first), which without statistics
	// might start from deliveries; PostgreSQL plans it as any inner join.
	rows, err := tx.QueryContext(ctx, s.rebind(`WITH RECURSIVE pending_endpoints (id) AS (
			SELECT (SELECT endpoint_id FROM deliveries WHERE status = 'pending' ORDER BY endpoint_id LIMIT 1)
			UNION ALL
			SELECT (SELECT d.endpoint_id FROM deliveries d
				WHERE d.status = 'pending' AND d.endpoint_id > p.id ORDER BY d.endpoint_id LIMIT 1)
			FROM pending_endpoints p WHERE p.id IS NOT NULL
		)
		SELECT e.id, COALESCE((SELECT h.next_attempt_at FROM deliveries h
				WHERE h.status = 'pending' AND h.endpoint_id = e.id AND h.next_attempt_at <= ?
				  AND (h.lease_until IS NULL OR h.lease_until <= ?)
				ORDER BY h.next_attempt_at LIMIT 1 OFFSET ?), ?)
		FROM pending_endpoints p CROSS JOIN webhook_endpoints e
		WHERE e.id = p.id AND e.status = 'enabled'`+notSaturated+`
		  AND EXISTS (SELECT 1 FROM deliveries h
				WHERE h.status = 'pending' AND h.endpoint_id = e.id AND h.next_attempt_at <= ?
				  AND (h.lease_until IS NULL OR h.lease_until <= ?))`), args...)
	if err != nil {
		return nil, fmt.Errorf("due endpoints: %w", err)
	}
	type bound struct {
		endpointID string
		upTo       int64
	}
	var bounds []bound
	for rows.Next() {
		var b bound
		if err := rows.Scan(&b.endpointID, &b.upTo); err != nil {
			rows.Close()
			return nil, fmt.Errorf("due endpoints: %w", err)
		}
		bounds = append(bounds, b)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("due endpoints: %w", err)
	}

	var out []claimCandidate
	for chunk := range slices.Chunk(bounds, dueByEndpointChunk) {
		ranges := make([]string, len(chunk))
		args := make([]any, 0, 2*len(chunk)+1)
		for i, b := range chunk {
			// status = 'pending' stays inside each range so that SQLite serves every one
			// from the index; outside, it would read the whole of status = 'pending' once.
			ranges[i] = `(status = 'pending' AND endpoint_id = ? AND next_attempt_at <= ?)`
			args = append(args, b.endpointID, b.upTo)
		}
		args = append(args, at)
		rows, err := tx.QueryContext(ctx, s.rebind(`SELECT id, endpoint_id, next_attempt_at, manual_retry_at
			FROM deliveries WHERE (`+strings.Join(ranges, " OR ")+`) AND (lease_until IS NULL OR lease_until <= ?)`), args...)
		if err != nil {
			return nil, fmt.Errorf("due by endpoint: %w", err)
		}
		for rows.Next() {
			var (
				c            claimCandidate
				next, manual sql.NullInt64
			)
			if err := rows.Scan(&c.id, &c.endpointID, &next, &manual); err != nil {
				rows.Close()
				return nil, fmt.Errorf("due by endpoint: %w", err)
			}
			c.due = candidateDue(next, manual)
			out = append(out, c)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("due by endpoint: %w", err)
		}
	}
	return out, nil
}

// RecordAttempt applies an attempt's outcome to a delivery owner holds a lease on, releases
// the lease and returns the delivery as stored afterwards, all in one transaction.
//
// The lease belongs to owner while lease_owner says so, even past lease_until: a claim by
// another dispatcher overwrites lease_owner, and only then is the outcome refused
// (ErrLeaseLost). A delivery deleted with its endpoint meanwhile is ErrLeaseLost and
// ErrNotFound.
//
// The attempt was a manual one if the claim served a manual retry (lease_manual_at); its
// failure leaves status and schedule alone. A manual retry asked for while the attempt was in
// flight stays outstanding, unless the attempt succeeded: the delivery is then done.
//
// A success also records itself as the endpoint's last success, to within a minute
// (lastSuccessResolution).
//
// Locks are taken delivery first, then endpoint, as DeleteWebhookEndpoint takes them.
//
// On PostgreSQL the transaction commits without waiting for its WAL to reach the disk
// (Dialect.RelaxedCommit, evaluated in its first statement): about half of the database's
// time under a delivery backlog went to flushing commits. A database crash may then lose the
// last few milliseconds of outcomes. A lost outcome leaves the delivery as the claim left it, leased to owner: no other
// claim takes it, and it counts against the endpoint's cap, until the lease expires; then it
// is sent again, which at-least-once delivery allows (receivers deduplicate on X-Webhook-Id).
// An auto-disable lost with it is decided again at the next failure.
func (s *Store) RecordAttempt(ctx context.Context, owner, deliveryID string, o store.AttemptOutcome) (store.Delivery, error) {
	d, _, err := s.recordAttempt(ctx, owner, deliveryID, o, nil)
	return d, err
}

// RecordAttemptAndHandOff is RecordAttempt, and then, in the same transaction, leases to
// owner the oldest due delivery of the same endpoint: pending with next_attempt_at at or
// before the outcome's time (with a manual retry outstanding or not, which the attempt then
// serves, as a claim's would), free of an unexpired lease, its endpoint still enabled. It
// returns that delivery, claimed, or nil when none is due, when the attempt just recorded
// disabled the endpoint, or when the released lease had less than h.MinLeft to run.
//
// The hand-off needs no claim lock: the transaction releases one unexpired lease of the
// endpoint and takes one, so every other claim counts the same number of leases for the
// endpoint before and after it commits, and the cap holds. The delivery it takes is locked
// FOR UPDATE SKIP LOCKED on PostgreSQL, so a concurrent claim and the hand-off never both
// lease it (the claim re-checks under the same lock that the row is free).
//
// Unlike RecordAttempt's, the transaction waits for its commit to reach the disk, as a
// claim's does: a lease lost in a database crash would leave the delivery handed on free for
// another process to send while owner sends it, the same attempt twice, which the contract
// rules out. (The released lease would still count the attempt in flight, as h.MinLeft makes
// it outlast that attempt, so the cap would hold even then.)
func (s *Store) RecordAttemptAndHandOff(ctx context.Context, owner, deliveryID string, o store.AttemptOutcome, h store.HandOff) (store.Delivery, *store.ClaimedDelivery, error) {
	if h.Lease <= 0 {
		return store.Delivery{}, nil, fmt.Errorf("store record attempt of delivery %s: hand-off lease %s: must be positive", deliveryID, h.Lease)
	}
	if h.MinLeft < 0 {
		return store.Delivery{}, nil, fmt.Errorf("store record attempt of delivery %s: hand-off minimum %s: must not be negative", deliveryID, h.MinLeft)
	}
	if s.dialect.WritableWith && o.Succeeded && o.DisableEndpoint == "" {
		return s.recordSuccessAndHandOff(ctx, owner, deliveryID, o, h)
	}
	return s.recordAttempt(ctx, owner, deliveryID, o, &h)
}

// recordAttempt is RecordAttempt, with RecordAttemptAndHandOff's hand-off when h is not nil.
func (s *Store) recordAttempt(ctx context.Context, owner, deliveryID string, o store.AttemptOutcome, h *store.HandOff) (store.Delivery, *store.ClaimedDelivery, error) {
	at := o.At.UnixMilli()
	var (
		d    store.Delivery
		next *store.ClaimedDelivery
	)
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var (
			endpointID                   string
			leaseOwner                   sql.NullString
			leaseUntil, lastSuccess      sql.NullInt64
			manualRetryAt, leaseManualAt sql.NullInt64
			relaxed                      any
		)
		// The first statement also reads the endpoint's last success (to skip writing it
		// when it is recent) and relaxes the commit, so that neither costs a round trip.
		// A hand-off takes a lease, which must outlive a database crash: its transaction
		// commits as every other does.
		relax := "NULL"
		if s.dialect.RelaxedCommit != "" && h == nil {
			relax = s.dialect.RelaxedCommit
		}
		err := tx.QueryRowContext(ctx, s.rebind(`SELECT endpoint_id, lease_owner, lease_until, manual_retry_at, lease_manual_at,
				(SELECT last_success_at FROM webhook_endpoints WHERE id = deliveries.endpoint_id), `+relax+`
			FROM deliveries WHERE id = ?`+s.rowLock(` FOR UPDATE`)), deliveryID).
			Scan(&endpointID, &leaseOwner, &leaseUntil, &manualRetryAt, &leaseManualAt, &lastSuccess, &relaxed)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: delivery %w", store.ErrLeaseLost, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if !leaseOwner.Valid || leaseOwner.String != owner {
			return fmt.Errorf("%w (held by %q)", store.ErrLeaseLost, leaseOwner.String)
		}

		set := []string{"attempts = attempts + 1", "last_status_code = ?", "last_error = ?",
			"lease_owner = NULL", "lease_until = NULL", "lease_manual_at = NULL"}
		args := []any{o.StatusCode, o.Error}
		endedFailed := false
		switch {
		case o.Succeeded:
			set = append(set, "status = 'succeeded'", "next_attempt_at = NULL", "completed_at = ?", "manual_retry_at = NULL")
			args = append(args, at)
		case leaseManualAt.Valid:
			// The request this attempt served is done; a later one is still outstanding.
			remaining := manualRetryAt
			if manualRetryAt == leaseManualAt {
				remaining = sql.NullInt64{}
			}
			set = append(set, "manual_retry_at = ?")
			args = append(args, remaining)
		case o.NextAttemptAt != nil:
			set = append(set, "status = 'pending'", "next_attempt_at = ?", "completed_at = NULL")
			args = append(args, o.NextAttemptAt.UnixMilli())
		default:
			set = append(set, "status = 'failed'", "next_attempt_at = NULL", "completed_at = ?")
			args = append(args, at)
			endedFailed = true
		}
		args = append(args, deliveryID)
		d, err = scanDelivery(tx.QueryRowContext(ctx, s.rebind(`UPDATE deliveries SET `+strings.Join(set, ", ")+` WHERE id = ?
			RETURNING `+deliveryColumns), args...))
		if err != nil {
			return fmt.Errorf("update delivery: %w", err)
		}

		disable := o.DisableEndpoint
		if disable == "" && endedFailed && o.AutoDisableAfter > 0 {
			failing, err := s.endpointFailing(ctx, tx, endpointID, o)
			if err != nil {
				return err
			}
			if failing {
				disable = store.DisabledFailing
			}
		}
		if disable != "" {
			// An endpoint already disabled keeps the reason it was disabled for.
			if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhook_endpoints
				SET status = 'disabled', disabled_reason = ?, updated_at = ?
				WHERE id = ? AND status = 'enabled'`), disable, at, endpointID); err != nil {
				return fmt.Errorf("disable endpoint: %w", err)
			}
		}

		if o.Succeeded && (!lastSuccess.Valid || lastSuccess.Int64 < at-lastSuccessResolution.Milliseconds()) {
			// last_success_at is written only when it is unset or more than a minute older
			// than this success (the value read with the delivery skips the statement when it
			// is recent), and late in the transaction, before only the hand-off's two
			// statements. On PostgreSQL the update locks
			// the endpoint's row until commit, so writing every success made all deliveries
			// of an endpoint record their outcomes one after another, each waiting for the
			// previous commit (37 ms on average under 32 workers). An UPDATE whose WHERE
			// does not match locks nothing, so now at most one success a minute per endpoint
			// takes the lock, and holds it only for the commit. What reads the value can
			// afford a minute: the auto-disable rule works in days (a failure in the minute
			// after the last success may count as after it), and the API shows it as the
			// time of the last success. It still never moves back.
			if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhook_endpoints SET last_success_at = ?
				WHERE id = ? AND (last_success_at IS NULL OR last_success_at < ?)`),
				at, endpointID, at-lastSuccessResolution.Milliseconds()); err != nil {
				return fmt.Errorf("update endpoint last success: %w", err)
			}
		}

		if h == nil || disable != "" || !leaseUntil.Valid || leaseUntil.Int64 < at+h.MinLeft.Milliseconds() {
			return nil
		}
		next, err = s.handOff(ctx, tx, owner, endpointID, at, o.At.Add(h.Lease).UnixMilli())
		return err
	})
	if err != nil {
		return store.Delivery{}, nil, fmt.Errorf("store record attempt of delivery %s: %w", deliveryID, err)
	}
	return d, next, nil
}

// handOff leases to owner until `until` the oldest delivery of the endpoint that is due at
// `at` and free, if the endpoint is enabled, and reads it as a claim would; nil if there is
// none. The candidate comes from deliveries_endpoint_pending in next_attempt_at order (ties
// in any order: an id tie-break would sort the endpoint's whole due backlog), stepping over
// at most the endpoint's leased deliveries.
//
// Where the dialect allows it (WritableWith), the lease and the read are one statement.
func (s *Store) handOff(ctx context.Context, tx *sql.Tx, owner, endpointID string, at, until int64) (*store.ClaimedDelivery, error) {
	lease := `UPDATE deliveries
		SET lease_owner = ?, lease_until = ?, lease_manual_at = manual_retry_at
		WHERE id = (SELECT id FROM deliveries
			WHERE status = 'pending' AND endpoint_id = ? AND next_attempt_at <= ?
				AND (lease_until IS NULL OR lease_until <= ?)
			ORDER BY next_attempt_at LIMIT 1` + s.rowLock(` FOR UPDATE SKIP LOCKED`) + `)
		AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ? AND status = 'enabled')`
	args := []any{owner, until, endpointID, at, at, endpointID}
	var claimed []store.ClaimedDelivery
	if s.dialect.WritableWith {
		rows, err := tx.QueryContext(ctx, s.rebind(`WITH d AS (`+lease+` RETURNING *)
			SELECT `+claimedColumns+`
			FROM d JOIN events ev ON ev.id = d.event_id JOIN webhook_endpoints e ON e.id = d.endpoint_id`), args...)
		if err != nil {
			return nil, fmt.Errorf("hand off: %w", err)
		}
		if claimed, err = s.scanClaimed(rows); err != nil {
			return nil, fmt.Errorf("hand off: %w", err)
		}
	} else {
		leased, err := queryStrings(ctx, tx, s.rebind(lease+` RETURNING id`), args...)
		if err != nil {
			return nil, fmt.Errorf("hand off: %w", err)
		}
		if len(leased) == 0 {
			return nil, nil
		}
		if claimed, err = s.readClaimed(ctx, tx, leased); err != nil {
			return nil, fmt.Errorf("hand off: %w", err)
		}
		if len(claimed) == 0 {
			return nil, fmt.Errorf("hand off: delivery %s was leased but not read back", leased[0])
		}
	}
	if len(claimed) == 0 {
		return nil, nil
	}
	return &claimed[0], nil
}

// lastSuccessResolution is how stale an endpoint's last_success_at may be: RecordAttempt
// writes a success only if the stored one is older than that (see there).
const lastSuccessResolution = time.Minute

// endpointFailing applies the auto-disable rule of o to the endpoint, after the failure just
// recorded: no success for o.AutoDisableAfter (since its creation if it never had one), and at
// least o.AutoDisableFailures deliveries that failed since the last success.
func (s *Store) endpointFailing(ctx context.Context, tx *sql.Tx, endpointID string, o store.AttemptOutcome) (bool, error) {
	var (
		created     int64
		lastSuccess sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, s.rebind(`SELECT created_at, last_success_at FROM webhook_endpoints WHERE id = ?`),
		endpointID).Scan(&created, &lastSuccess)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // deleted meanwhile: nothing to disable
	}
	if err != nil {
		return false, fmt.Errorf("read endpoint: %w", err)
	}
	since := created
	if lastSuccess.Valid {
		since = lastSuccess.Int64
	}
	if since >= o.At.Add(-o.AutoDisableAfter).UnixMilli() {
		return false, nil
	}
	var failed int
	err = tx.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM deliveries
		WHERE endpoint_id = ? AND status = 'failed' AND completed_at > ?`), endpointID, lastSuccess.Int64).Scan(&failed)
	if err != nil {
		return false, fmt.Errorf("count failed deliveries: %w", err)
	}
	return failed >= o.AutoDisableFailures, nil
}

// PendingDeliveries counts deliveries not yet ended: pending, or with a manual retry
// outstanding.
func (s *Store) PendingDeliveries(ctx context.Context) (int64, error) {
	var n int64
	if err := s.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries
		WHERE status = 'pending' OR manual_retry_at IS NOT NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store pending deliveries: %w", err)
	}
	return n, nil
}

// delivery reads a delivery of the endpoint, account and mode; callers add the context.
func (s *Store) delivery(ctx context.Context, db rowQuerier, accountID string, mode store.Mode, endpointID, id string) (store.Delivery, error) {
	row := db.QueryRowContext(ctx, s.rebind(`SELECT `+deliveryColumns+` FROM deliveries
		WHERE id = ? AND endpoint_id = ? AND account_id = ? AND mode = ?`), id, endpointID, accountID, string(mode))
	d, err := scanDelivery(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Delivery{}, store.ErrNotFound
	}
	return d, err
}

func (s *Store) insertDelivery(ctx context.Context, tx *sql.Tx, d store.Delivery) error {
	_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO deliveries (`+deliveryColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		d.ID, d.EndpointID, d.EventID, d.EventType, d.AccountID, string(d.Mode), d.Status, d.Attempts,
		d.LastStatusCode, d.LastError, nullMillis(d.NextAttemptAt), sql.NullInt64{}, d.CreatedAt.UnixMilli(),
		nullMillis(d.CompletedAt))
	if err != nil {
		return fmt.Errorf("delivery %s to endpoint %s: %w", d.ID, d.EndpointID, err)
	}
	return nil
}

func scanDelivery(row scanner) (store.Delivery, error) {
	var (
		d                                   store.Delivery
		mode                                string
		created                             int64
		nextAttempt, manualRetry, completed sql.NullInt64
	)
	err := row.Scan(&d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.AccountID, &mode, &d.Status,
		&d.Attempts, &d.LastStatusCode, &d.LastError, &nextAttempt, &manualRetry, &created, &completed)
	if err != nil {
		return store.Delivery{}, err
	}
	d.Mode = store.Mode(mode)
	d.NextAttemptAt = fromNullMillis(nextAttempt)
	d.ManualRetry = manualRetry.Valid
	d.CreatedAt = fromMillis(created)
	d.CompletedAt = fromNullMillis(completed)
	return d, nil
}

// rowScanner scans a row whose leading columns another scan function reads and whose
// trailing columns go into extra.
type rowScanner struct {
	row   scanner
	extra []any
}

func (r rowScanner) Scan(dest ...any) error { return r.row.Scan(append(dest, r.extra...)...) }

// queryStrings runs a query returning one text column and collects it.
func queryStrings(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// inList returns "(?, ?, …)" for values and the values as arguments.
func inList(values []string) (string, []any) {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", len(values)), ", ") + ")", args
}

// qualify prefixes every column of a comma-separated list with alias.
func qualify(alias, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
