package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// BeginIdempotent claims an Idempotency-Key. Each step is one atomic statement, so no
// transaction is held while the request executes:
//  1. insert an in-flight record unless one exists (ON CONFLICT DO NOTHING: of concurrent
//     inserts exactly one succeeds, the others wait for it and then do nothing);
//  2. otherwise take over the record if it expired, or if it is an in-flight record of the
//     same request whose process died (locked before now − ReclaimAfter);
//  3. otherwise read it: same fingerprint and done → replay; same and in flight → in flight;
//     another fingerprint → mismatch.
//
// A purge can delete the record between steps; the loop then starts over (three rounds
// always suffice in practice, since a record just purged cannot be purged again).
func (s *Store) BeginIdempotent(ctx context.Context, k store.IdempotencyKey, p store.IdempotencyPolicy, now time.Time) (store.IdempotencyState, string, store.StoredResponse, error) {
	token := ident.Random(16)
	at := now.UnixMilli()
	for range 3 {
		res, err := s.writer.ExecContext(ctx, s.rebind(`INSERT INTO idempotency_keys
			(account_id, mode, key, fingerprint, token, state, created_at, locked_at)
			VALUES (?, ?, ?, ?, ?, 'in_flight', ?, ?) ON CONFLICT DO NOTHING`),
			k.AccountID, string(k.Mode), k.Key, k.Fingerprint, token, at, at)
		if err != nil {
			return 0, "", store.StoredResponse{}, fmt.Errorf("store begin idempotent: insert: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return store.IdempotencyStarted, token, store.StoredResponse{}, nil
		}
		res, err = s.writer.ExecContext(ctx, s.rebind(`UPDATE idempotency_keys
			SET fingerprint = ?, token = ?, state = 'in_flight', status = 0, body = NULL,
			    created_at = ?, locked_at = ?, completed_at = NULL
			WHERE account_id = ? AND mode = ? AND key = ?
			  AND (created_at < ? OR (state = 'in_flight' AND fingerprint = ? AND locked_at < ?))`),
			k.Fingerprint, token, at, at, k.AccountID, string(k.Mode), k.Key,
			now.Add(-p.ExpireAfter).UnixMilli(), k.Fingerprint, now.Add(-p.ReclaimAfter).UnixMilli())
		if err != nil {
			return 0, "", store.StoredResponse{}, fmt.Errorf("store begin idempotent: reclaim: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return store.IdempotencyStarted, token, store.StoredResponse{}, nil
		}
		var (
			fingerprint, state string
			resp               store.StoredResponse
		)
		err = s.writer.QueryRowContext(ctx, s.rebind(`SELECT fingerprint, state, status, body
			FROM idempotency_keys WHERE account_id = ? AND mode = ? AND key = ?`),
			k.AccountID, string(k.Mode), k.Key).Scan(&fingerprint, &state, &resp.Status, &resp.Body)
		if errors.Is(err, sql.ErrNoRows) {
			continue // purged between the steps: start over
		}
		if err != nil {
			return 0, "", store.StoredResponse{}, fmt.Errorf("store begin idempotent: read: %w", err)
		}
		switch {
		case fingerprint != k.Fingerprint:
			return store.IdempotencyMismatch, "", store.StoredResponse{}, nil
		case state == "done":
			return store.IdempotencyCompleted, "", resp, nil
		default:
			return store.IdempotencyInFlight, "", store.StoredResponse{}, nil
		}
	}
	return 0, "", store.StoredResponse{}, errors.New("store begin idempotent: record kept disappearing")
}

// CompleteIdempotent stores the response of the execution holding token.
func (s *Store) CompleteIdempotent(ctx context.Context, k store.IdempotencyKey, token string, resp store.StoredResponse, now time.Time) error {
	err := s.completeIdempotent(ctx, s.writer, store.IdempotencyCompletion{Key: k, Token: token, Response: resp, At: now})
	if errors.Is(err, store.ErrIdempotencyLost) {
		return fmt.Errorf("store complete idempotent: %w (the record was reclaimed, purged or already complete)", store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store complete idempotent: %w", err)
	}
	return nil
}

// completeIdempotent marks the in-flight record held by c.Token done with c.Response, on db:
// the writer, or the transaction of the write whose answer it is. ErrIdempotencyLost when
// the token holds no in-flight record of the key.
func (s *Store) completeIdempotent(ctx context.Context, db execer, c store.IdempotencyCompletion) error {
	k := c.Key
	res, err := db.ExecContext(ctx, s.rebind(`UPDATE idempotency_keys
		SET state = 'done', status = ?, body = ?, completed_at = ?
		WHERE account_id = ? AND mode = ? AND key = ? AND token = ? AND state = 'in_flight'`),
		c.Response.Status, c.Response.Body, c.At.UnixMilli(), k.AccountID, string(k.Mode), k.Key, c.Token)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return store.ErrIdempotencyLost
	}
	return nil
}

// completeIn completes c, when it is not nil, in the transaction tx of the write whose answer
// it holds.
func (s *Store) completeIn(ctx context.Context, tx execer, c *store.IdempotencyCompletion) error {
	if c == nil {
		return nil
	}
	return s.completeIdempotent(ctx, tx, *c)
}

// answerIn completes, in the transaction tx, the completion that answer builds from the
// write's result, for writes whose answer depends on it (AddDriftEvents' counts,
// CreateEventFor's delivery). A nil answer, or one that returns nil, completes nothing.
func answerIn[R any](ctx context.Context, s *Store, tx execer, answer func(R) (*store.IdempotencyCompletion, error), result R) error {
	if answer == nil {
		return nil
	}
	done, err := answer(result)
	if err != nil {
		return fmt.Errorf("answer of the write: %w", err)
	}
	return s.completeIn(ctx, tx, done)
}

// RenewIdempotent moves the lock time of the in-flight record held by token to now, which
// keeps BeginIdempotent from reclaiming it for another lease.
func (s *Store) RenewIdempotent(ctx context.Context, k store.IdempotencyKey, token string, now time.Time) error {
	res, err := s.writer.ExecContext(ctx, s.rebind(`UPDATE idempotency_keys SET locked_at = ?
		WHERE account_id = ? AND mode = ? AND key = ? AND token = ? AND state = 'in_flight'`),
		now.UnixMilli(), k.AccountID, string(k.Mode), k.Key, token)
	if err != nil {
		return fmt.Errorf("store renew idempotent: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("store renew idempotent: %w", store.ErrIdempotencyLost)
	}
	return nil
}

// ReleaseIdempotent deletes the in-flight record held by token.
func (s *Store) ReleaseIdempotent(ctx context.Context, k store.IdempotencyKey, token string) error {
	_, err := s.writer.ExecContext(ctx, s.rebind(`DELETE FROM idempotency_keys
		WHERE account_id = ? AND mode = ? AND key = ? AND token = ? AND state = 'in_flight'`),
		k.AccountID, string(k.Mode), k.Key, token)
	if err != nil {
		return fmt.Errorf("store release idempotent: %w", err)
	}
	return nil
}

// PurgeIdempotency deletes records created before before.
func (s *Store) PurgeIdempotency(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.writer.ExecContext(ctx, s.rebind(`DELETE FROM idempotency_keys WHERE created_at < ?`), before.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("store purge idempotency: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
