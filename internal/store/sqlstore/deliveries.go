package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
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
// One transaction, three statements:
//  1. pick: rank the due, unleased deliveries of each endpoint by due time (dueAt), keep those
//     whose rank plus the endpoint's unexpired leases stays within p.PerEndpoint, and take
//     the oldest p.Limit;
//  2. lease them, re-checking that each is still due and free (on PostgreSQL under
//     FOR UPDATE SKIP LOCKED, so a row an attempt is being recorded on is skipped, not
//     waited for);
//  3. read what the dispatcher sends: the event's payload and the endpoint's URL and secret.
//
// The per-endpoint cap counts leases that other claims committed, so claims must not overlap:
// on PostgreSQL a transaction-level lock makes concurrent claimers (of every process) take
// turns, on SQLite the write transaction does. Without it, two claimers whose snapshots
// differ by one committed manual retry pick different first rows and together exceed the cap.
// A claim is three indexed statements, a few milliseconds, so taking turns costs little next
// to the HTTP requests it feeds.
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
	perEndpoint := int64(p.PerEndpoint)
	if perEndpoint <= 0 {
		perEndpoint = math.MaxInt32
	}
	at, until := now.UnixMilli(), now.Add(p.Lease).UnixMilli()
	var out []store.ClaimedDelivery
	err := s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, claimLockKey); err != nil {
			return err
		}
		picked, err := queryStrings(ctx, tx, s.rebind(`WITH due AS (
				SELECT d.id, d.endpoint_id, `+dueAt+` AS due_at
				FROM deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
				WHERE (d.manual_retry_at IS NOT NULL
				       OR (d.status = 'pending' AND d.next_attempt_at <= ? AND e.status = 'enabled'))
				  AND (d.lease_until IS NULL OR d.lease_until <= ?)
			), ranked AS (
				SELECT id, endpoint_id, due_at,
				       ROW_NUMBER() OVER (PARTITION BY endpoint_id ORDER BY due_at, id) AS rank
				FROM due
			), leased AS (
				SELECT endpoint_id, COUNT(*) AS n FROM deliveries WHERE lease_until > ? GROUP BY endpoint_id
			)
			SELECT r.id FROM ranked r LEFT JOIN leased l ON l.endpoint_id = r.endpoint_id
			WHERE r.rank + COALESCE(l.n, 0) <= ?
			ORDER BY r.due_at, r.id LIMIT ?`), at, at, at, perEndpoint, p.Limit)
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
		in, inArgs = inList(leased)
		rows, err := tx.QueryContext(ctx, s.rebind(`SELECT `+qualify("d", deliveryColumns)+`, ev.payload, e.url, e.secret
			FROM deliveries d JOIN events ev ON ev.id = d.event_id JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.id IN `+in+` ORDER BY `+dueAt+`, d.id`), inArgs...)
		if err != nil {
			return fmt.Errorf("read claimed: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var c store.ClaimedDelivery
			c.Delivery, err = scanDelivery(rowScanner{rows, []any{&c.Payload, &c.URL, &c.Secret}})
			if err != nil {
				return fmt.Errorf("read claimed: %w", err)
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store claim deliveries: %w", err)
	}
	if out == nil {
		out = []store.ClaimedDelivery{}
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
// Locks are taken delivery first, then endpoint, as DeleteWebhookEndpoint takes them.
func (s *Store) RecordAttempt(ctx context.Context, owner, deliveryID string, o store.AttemptOutcome) (store.Delivery, error) {
	at := o.At.UnixMilli()
	var d store.Delivery
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var (
			endpointID                   string
			leaseOwner                   sql.NullString
			manualRetryAt, leaseManualAt sql.NullInt64
		)
		err := tx.QueryRowContext(ctx, s.rebind(`SELECT endpoint_id, lease_owner, manual_retry_at, lease_manual_at
			FROM deliveries WHERE id = ?`+s.rowLock(` FOR UPDATE`)), deliveryID).
			Scan(&endpointID, &leaseOwner, &manualRetryAt, &leaseManualAt)
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
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE deliveries SET `+strings.Join(set, ", ")+` WHERE id = ?`), args...); err != nil {
			return fmt.Errorf("update delivery: %w", err)
		}

		if o.Succeeded {
			if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhook_endpoints SET last_success_at = ?
				WHERE id = ? AND (last_success_at IS NULL OR last_success_at < ?)`), at, endpointID, at); err != nil {
				return fmt.Errorf("update endpoint last success: %w", err)
			}
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

		d, err = scanDelivery(tx.QueryRowContext(ctx, s.rebind(`SELECT `+deliveryColumns+` FROM deliveries WHERE id = ?`), deliveryID))
		return err
	})
	if err != nil {
		return store.Delivery{}, fmt.Errorf("store record attempt of delivery %s: %w", deliveryID, err)
	}
	return d, nil
}

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
