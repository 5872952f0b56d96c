package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"riskapi/internal/store"
)

// successHandOffSQL is RecordAttemptAndHandOff for the common case of a delivery backlog, a
// success, as one statement where the dialect allows writes in WITH (PostgreSQL): the lease
// check, the recorded outcome, the endpoint's last success when it is stale, and the lease of
// the endpoint's next due delivery, read back with its event and endpoint. A statement
// outside a transaction is its own transaction, so what the general path does in five round
// trips (BEGIN, the locked read, the update, the hand-off, COMMIT) takes one; its commit
// still waits for the WAL flush, as a hand-off's must (see RecordAttemptAndHandOff).
//
// The locks and their order are the general path's: the delivery recorded (FOR UPDATE, in
// old, which the other parts read and so run after), the endpoint's row only when its last
// success is written (at most once a minute; an UPDATE whose WHERE does not match locks
// nothing), and the delivery handed on (FOR UPDATE SKIP LOCKED, never waiting).
//
// The candidate excludes the delivery recorded: every part of one statement sees the rows as
// they were before it, where the recorded delivery may look due and free.
var successHandOffSQL = `WITH old AS (
		SELECT id, endpoint_id, lease_until
		FROM deliveries WHERE id = ? AND lease_owner = ? FOR UPDATE
	), done AS (
		UPDATE deliveries d SET attempts = d.attempts + 1, last_status_code = ?, last_error = ?,
			lease_owner = NULL, lease_until = NULL, lease_manual_at = NULL,
			status = 'succeeded', next_attempt_at = NULL, completed_at = ?, manual_retry_at = NULL
		FROM old WHERE d.id = old.id
		RETURNING ` + qualify("d", deliveryColumns) + `
	), last_success AS (
		UPDATE webhook_endpoints SET last_success_at = ?
		WHERE id = (SELECT endpoint_id FROM old) AND (last_success_at IS NULL OR last_success_at < ?)
	), next AS (
		UPDATE deliveries SET lease_owner = ?, lease_until = ?, lease_manual_at = manual_retry_at
		WHERE id = (SELECT id FROM deliveries
				WHERE status = 'pending' AND endpoint_id = (SELECT endpoint_id FROM old) AND next_attempt_at <= ?
					AND (lease_until IS NULL OR lease_until <= ?) AND id <> ?
				ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
			AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = (SELECT endpoint_id FROM old) AND status = 'enabled')
			AND (SELECT lease_until FROM old) >= ?
		RETURNING *
	)
	SELECT 'next' AS kind, ` + claimedColumns + `
		FROM next d JOIN events ev ON ev.id = d.event_id JOIN webhook_endpoints e ON e.id = d.endpoint_id
	UNION ALL
	SELECT 'done', ` + deliveryColumns + `, NULL, NULL, NULL, NULL FROM done`

// recordSuccessAndHandOff runs successHandOffSQL; the arguments are RecordAttemptAndHandOff's,
// o a success that disables nothing.
func (s *Store) recordSuccessAndHandOff(ctx context.Context, owner, deliveryID string, o store.AttemptOutcome, h store.HandOff) (store.Delivery, *store.ClaimedDelivery, error) {
	at := o.At.UnixMilli()
	rows, err := s.writer.QueryContext(ctx, s.rebind(successHandOffSQL),
		deliveryID, owner, // old
		o.StatusCode, o.Error, at, // done
		at, at-lastSuccessResolution.Milliseconds(), // last_success
		owner, o.At.Add(h.Lease).UnixMilli(), at, at, deliveryID, at+h.MinLeft.Milliseconds()) // next
	if err != nil {
		return store.Delivery{}, nil, fmt.Errorf("store record attempt of delivery %s: %w", deliveryID, err)
	}
	var (
		d        store.Delivery
		recorded bool
		next     *store.ClaimedDelivery
	)
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var (
				kind                  string
				payload               []byte
				url, secret, secretID sql.NullString
			)
			delivery, err := scanDelivery(rowScanner{prefixScanner{rows, &kind}, []any{&payload, &url, &secret, &secretID}})
			if err != nil {
				return err
			}
			if kind == "done" {
				d, recorded = delivery, true
				continue
			}
			c := store.ClaimedDelivery{Delivery: delivery, Payload: payload, URL: url.String}
			// As scanClaimed: a secret that does not decrypt fails this delivery's attempt.
			c.Secret, c.SecretErr = s.openSecret(c.EndpointID, secret.String, secretID.String)
			next = &c
		}
		return rows.Err()
	}()
	if err != nil {
		return store.Delivery{}, nil, fmt.Errorf("store record attempt of delivery %s: %w", deliveryID, err)
	}
	if !recorded {
		return store.Delivery{}, nil, fmt.Errorf("store record attempt of delivery %s: %w", deliveryID, s.whyNotLeased(ctx, deliveryID))
	}
	return d, next, nil
}

// whyNotLeased tells why a delivery's lease check found no row: the delivery is gone, or
// another owner (or none) holds it.
func (s *Store) whyNotLeased(ctx context.Context, deliveryID string) error {
	var leaseOwner sql.NullString
	err := s.writer.QueryRowContext(ctx, s.rebind(`SELECT lease_owner FROM deliveries WHERE id = ?`), deliveryID).Scan(&leaseOwner)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: delivery %w", store.ErrLeaseLost, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return fmt.Errorf("%w (held by %q)", store.ErrLeaseLost, leaseOwner.String)
}

// prefixScanner scans a row whose first column goes into first and the rest into the next
// scan function's destinations.
type prefixScanner struct {
	rows  *sql.Rows
	first any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.rows.Scan(append([]any{p.first}, dest...)...)
}
