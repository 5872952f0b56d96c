package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"riskapi/internal/store"
)

// endpointColumns is the column list scanEndpoint reads, in its order.
const endpointColumns = `id, account_id, mode, url, events, secret, secret_key_id, description, status, disabled_reason,
	created_at, updated_at, last_success_at`

// CreateWebhookEndpoint inserts e unless its account and mode already have max endpoints.
// The count and the insert are atomic: on PostgreSQL a transaction-level lock on the account
// and mode makes concurrent creates take turns (each counts what the previous one committed);
// on SQLite the write transaction itself excludes every other writer.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint, max int, done *store.IdempotencyCompletion) error {
	events, err := joinEvents(e.Events)
	if err != nil {
		return fmt.Errorf("store create webhook endpoint %s: %w", e.ID, err)
	}
	err = s.inTx(ctx, s.lockedTxOptions(), func(tx *sql.Tx) error {
		if err := s.lockKey(ctx, tx, "webhook_endpoints "+e.AccountID+" "+string(e.Mode)); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM webhook_endpoints
			WHERE account_id = ? AND mode = ?`), e.AccountID, string(e.Mode)).Scan(&n); err != nil {
			return fmt.Errorf("count endpoints: %w", err)
		}
		if n >= max {
			return fmt.Errorf("account %s has %d %s endpoints, at most %d: %w", e.AccountID, n, e.Mode, max, store.ErrLimitReached)
		}
		secret, keyID := s.sealSecret(e.ID, e.Secret)
		_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO webhook_endpoints (`+endpointColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			e.ID, e.AccountID, string(e.Mode), e.URL, events, secret, keyID, e.Description, e.Status,
			e.DisabledReason, e.CreatedAt.UnixMilli(), e.UpdatedAt.UnixMilli(), nullMillis(e.LastSuccessAt))
		if err != nil && s.dialect.IsUniqueViolation(err) {
			return fmt.Errorf("%w (%v)", store.ErrConflict, err)
		}
		if err != nil {
			return err
		}
		return s.completeIn(ctx, tx, done)
	})
	if err != nil {
		return fmt.Errorf("store create webhook endpoint %s: %w", e.ID, err)
	}
	return nil
}

// WebhookEndpoint returns the endpoint of that account and mode, or ErrNotFound.
func (s *Store) WebhookEndpoint(ctx context.Context, accountID string, mode store.Mode, id string) (store.WebhookEndpoint, error) {
	row := s.reader.QueryRowContext(ctx, s.rebind(`SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE id = ? AND account_id = ? AND mode = ?`), id, accountID, string(mode))
	e, err := s.scanEndpoint(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.WebhookEndpoint{}, fmt.Errorf("store webhook endpoint %s: %w", id, err)
	}
	return e, nil
}

// ListWebhookEndpoints pages through an account's endpoints of one mode, newest first.
func (s *Store) ListWebhookEndpoints(ctx context.Context, accountID string, mode store.Mode, q store.PageQuery) (store.Page[store.WebhookEndpoint], error) {
	page, err := listPage(ctx, s, "webhook_endpoints", endpointColumns, "account_id = ? AND mode = ?",
		[]any{accountID, string(mode)}, q, s.scanEndpoint)
	if err != nil {
		return store.Page[store.WebhookEndpoint]{}, fmt.Errorf("store list webhook endpoints: %w", err)
	}
	return page, nil
}

// UpdateWebhookEndpoint stores the mutable fields of e; ErrNotFound if the endpoint is not
// one of e's account and mode.
func (s *Store) UpdateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint) error {
	events, err := joinEvents(e.Events)
	if err != nil {
		return fmt.Errorf("store update webhook endpoint %s: %w", e.ID, err)
	}
	secret, keyID := s.sealSecret(e.ID, e.Secret)
	res, err := s.writer.ExecContext(ctx, s.rebind(`UPDATE webhook_endpoints
		SET url = ?, events = ?, secret = ?, secret_key_id = ?, description = ?, status = ?, disabled_reason = ?, updated_at = ?
		WHERE id = ? AND account_id = ? AND mode = ?`),
		e.URL, events, secret, keyID, e.Description, e.Status, e.DisabledReason, e.UpdatedAt.UnixMilli(),
		e.ID, e.AccountID, string(e.Mode))
	if err != nil {
		return fmt.Errorf("store update webhook endpoint %s: %w", e.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("store update webhook endpoint %s: %w", e.ID, errors.Join(store.ErrNotFound, err))
	}
	return nil
}

// SetWebhookEndpointStatus changes only the status columns of the endpoint.
func (s *Store) SetWebhookEndpointStatus(ctx context.Context, accountID string, mode store.Mode, id, status, reason string, at time.Time) error {
	res, err := s.writer.ExecContext(ctx, s.rebind(`UPDATE webhook_endpoints SET status = ?, disabled_reason = ?, updated_at = ?
		WHERE id = ? AND account_id = ? AND mode = ?`), status, reason, at.UnixMilli(), id, accountID, string(mode))
	if err == nil {
		err = matchedOr(res, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store set webhook endpoint %s status: %w", id, err)
	}
	return nil
}

// DeleteWebhookEndpoint deletes the endpoint and its deliveries; ErrNotFound if absent.
//
// The deliveries are deleted before the endpoint (the foreign key's ON DELETE CASCADE is only
// the backstop) so that on PostgreSQL this takes its locks in the order RecordAttempt does,
// delivery rows first and then the endpoint row; the cascade's order, endpoint first, could
// deadlock with an attempt being recorded.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, accountID string, mode store.Mode, id string) error {
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM deliveries
			WHERE endpoint_id = ? AND account_id = ? AND mode = ?`), id, accountID, string(mode)); err != nil {
			return fmt.Errorf("delete deliveries: %w", err)
		}
		res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM webhook_endpoints
			WHERE id = ? AND account_id = ? AND mode = ?`), id, accountID, string(mode))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(store.ErrNotFound, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store delete webhook endpoint %s: %w", id, err)
	}
	return nil
}

// joinEvents encodes an endpoint's event kinds as stored: space-separated. A kind that is
// empty or holds whitespace would come back as a different list, so it is refused.
func joinEvents(events []string) (string, error) {
	for _, kind := range events {
		if kind == "" || strings.ContainsAny(kind, " \t\r\n") {
			return "", fmt.Errorf("event kind %q is empty or contains whitespace", kind)
		}
	}
	return strings.Join(events, " "), nil
}

// scanEndpoint reads the endpointColumns of a row, decrypting the secret; a secret that does
// not decrypt is an error (wrapping store.ErrSecretUnavailable), since a caller that wrote
// the endpoint back would otherwise overwrite it.
func (s *Store) scanEndpoint(row scanner) (store.WebhookEndpoint, error) {
	var (
		e                   store.WebhookEndpoint
		mode, events        string
		storedSecret, keyID string
		created, updated    int64
		lastSuccess         sql.NullInt64
	)
	err := row.Scan(&e.ID, &e.AccountID, &mode, &e.URL, &events, &storedSecret, &keyID, &e.Description,
		&e.Status, &e.DisabledReason, &created, &updated, &lastSuccess)
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	if e.Secret, err = s.openSecret(e.ID, storedSecret, keyID); err != nil {
		return store.WebhookEndpoint{}, err
	}
	e.Mode = store.Mode(mode)
	if events != "" {
		e.Events = strings.Split(events, " ")
	}
	e.CreatedAt = fromMillis(created)
	e.UpdatedAt = fromMillis(updated)
	e.LastSuccessAt = fromNullMillis(lastSuccess)
	return e, nil
}
