package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"

	"riskapi/internal/store"
	"riskapi/internal/store/keyring"
)

// WithSecretKeys makes the store keep webhook secrets encrypted under ring's current key
// (AES-256-GCM): the secret column holds the base64 of nonce, ciphertext and tag, and
// secret_key_id the key's id. Secrets stored in plaintext before, or under a previous key on
// the ring, are still read; RotateWebhookSecrets moves them under the current key. A nil ring
// stores plaintext, as without the option.
func WithSecretKeys(ring *keyring.Ring) Option {
	return func(s *Store) { s.secrets = ring }
}

// rotateBatch is how many endpoints one rotation transaction re-encrypts: a few hundred
// AES-GCM operations and updates take milliseconds, so the transaction holds SQLite's single
// writer (or PostgreSQL's row locks) only briefly while the service keeps running.
const rotateBatch = 200

// secretAAD binds an encrypted webhook secret to its endpoint: a ciphertext copied into
// another row does not decrypt there.
func secretAAD(endpointID string) []byte {
	return []byte("riskapi webhook_endpoints.secret " + endpointID)
}

// sealSecret returns what the secret and secret_key_id columns hold for an endpoint's
// secret: the encrypted secret and the current key's id, or the plaintext and "" when the
// store has no keys.
func (s *Store) sealSecret(endpointID, secret string) (stored, keyID string) {
	if s.secrets == nil {
		return secret, ""
	}
	keyID, sealed := s.secrets.Seal([]byte(secret), secretAAD(endpointID))
	return base64.StdEncoding.EncodeToString(sealed), keyID
}

// openSecret is the plaintext of a stored secret; an error wraps store.ErrSecretUnavailable.
func (s *Store) openSecret(endpointID, stored, keyID string) (string, error) {
	if keyID == "" {
		return stored, nil
	}
	if s.secrets == nil {
		return "", fmt.Errorf("%w: endpoint %s: encrypted under key %s, and no key is configured", store.ErrSecretUnavailable, endpointID, keyID)
	}
	sealed, err := base64.StdEncoding.DecodeString(stored)
	if err != nil {
		return "", fmt.Errorf("%w: endpoint %s: ciphertext is not base64", store.ErrSecretUnavailable, endpointID)
	}
	plaintext, err := s.secrets.Open(keyID, sealed, secretAAD(endpointID))
	if err != nil {
		return "", fmt.Errorf("%w: endpoint %s: %w", store.ErrSecretUnavailable, endpointID, err)
	}
	return string(plaintext), nil
}

// WebhookSecretKeyIDs counts the stored webhook secrets by the id of their key ("" for
// plaintext).
func (s *Store) WebhookSecretKeyIDs(ctx context.Context) (map[string]int64, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT secret_key_id, COUNT(*) FROM webhook_endpoints GROUP BY secret_key_id`)
	if err != nil {
		return nil, fmt.Errorf("store webhook secret key ids: %w", err)
	}
	defer rows.Close()
	counts := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("store webhook secret key ids: %w", err)
		}
		counts[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store webhook secret key ids: %w", err)
	}
	return counts, nil
}

// storedSecret is one endpoint's secret columns, as a rotation batch reads them.
type storedSecret struct{ endpointID, stored, keyID string }

// RotateWebhookSecrets re-encrypts every webhook secret that is not under the current key, in
// batches of rotateBatch endpoints taken in id order, one transaction each; then it lets the
// dialect scrub the old forms from the database files.
func (s *Store) RotateWebhookSecrets(ctx context.Context) (store.SecretRotation, error) {
	if s.secrets == nil {
		return store.SecretRotation{}, errors.New("store rotate webhook secrets: no current key (set RISKAPI_SECRET_KEY)")
	}
	current := s.secrets.CurrentID()
	r := store.SecretRotation{KeyID: current, Unopened: map[string]int64{}}
	if err := s.reader.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM webhook_endpoints WHERE secret_key_id = ?`), current).
		Scan(&r.AlreadyCurrent); err != nil {
		return r, fmt.Errorf("store rotate webhook secrets: count: %w", err)
	}
	after := ""
	for {
		var batch store.SecretRotation
		var last string
		var n int
		err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
			batch = store.SecretRotation{Unopened: map[string]int64{}}
			secrets, err := s.secretsNotUnder(ctx, tx, current, after)
			if err != nil {
				return err
			}
			n = len(secrets)
			for _, sec := range secrets {
				last = sec.endpointID
				plaintext, err := s.openSecret(sec.endpointID, sec.stored, sec.keyID)
				if err != nil {
					batch.Unopened[sec.keyID]++
					continue
				}
				stored, keyID := s.sealSecret(sec.endpointID, plaintext)
				if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhook_endpoints SET secret = ?, secret_key_id = ? WHERE id = ?`),
					stored, keyID, sec.endpointID); err != nil {
					return fmt.Errorf("update endpoint %s: %w", sec.endpointID, err)
				}
				batch.Reencrypted++
				if sec.keyID == "" {
					batch.FromPlaintext++
				}
			}
			return nil
		})
		if err != nil {
			return r, fmt.Errorf("store rotate webhook secrets: %w", err)
		}
		r.Reencrypted += batch.Reencrypted
		r.FromPlaintext += batch.FromPlaintext
		for id, c := range batch.Unopened {
			r.Unopened[id] += c
		}
		if n < rotateBatch {
			break
		}
		after = last
	}
	if s.dialect.Scrub != nil && r.Reencrypted > 0 {
		scrubbed, err := s.dialect.Scrub(ctx, s.writer)
		if err != nil {
			return r, fmt.Errorf("store rotate webhook secrets: scrub: %w", err)
		}
		r.Scrubbed = scrubbed
	}
	return r, nil
}

// secretsNotUnder reads, locked for update, the next rotateBatch endpoints after the id
// after whose secret is not under the key current.
func (s *Store) secretsNotUnder(ctx context.Context, tx *sql.Tx, current, after string) ([]storedSecret, error) {
	rows, err := tx.QueryContext(ctx, s.rebind(`SELECT id, secret, secret_key_id FROM webhook_endpoints
		WHERE secret_key_id <> ? AND id > ? ORDER BY id LIMIT ?`+s.rowLock(` FOR UPDATE`)), current, after, rotateBatch)
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", err)
	}
	defer rows.Close()
	var out []storedSecret
	for rows.Next() {
		var sec storedSecret
		if err := rows.Scan(&sec.endpointID, &sec.stored, &sec.keyID); err != nil {
			return nil, fmt.Errorf("read secrets: %w", err)
		}
		out = append(out, sec)
	}
	return out, rows.Err()
}
