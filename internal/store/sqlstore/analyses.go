package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"riskapi/internal/store"
)

// analysisColumns is the column list scanAnalysis reads, in its order.
const analysisColumns = `id, account_id, mode, product, subject, payload, created_at`

// CreateAnalysis inserts a and, when ev is not nil, the event about it with its deliveries, in
// one transaction (the outbox: an analysis is never stored without its event, nor an event
// without its analysis), and completes done's Idempotency-Key in it when done is not nil.
func (s *Store) CreateAnalysis(ctx context.Context, a store.Analysis, ev *store.Event, done *store.IdempotencyCompletion) error {
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		payload := a.Payload
		if payload == nil {
			payload = []byte{}
		}
		_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO analyses (`+analysisColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			a.ID, a.AccountID, string(a.Mode), a.Product, a.Subject, payload, a.CreatedAt.UnixMilli())
		if err != nil {
			return s.constraintError("analysis "+a.ID, err)
		}
		if ev != nil {
			if _, err := s.createEvent(ctx, tx, *ev); err != nil {
				return err
			}
		}
		return s.completeIn(ctx, tx, done)
	})
	if err != nil {
		return fmt.Errorf("store create %s analysis: %w", a.Product, err)
	}
	return nil
}

// Analysis returns the analysis of that account, mode and product, or ErrNotFound.
func (s *Store) Analysis(ctx context.Context, accountID string, mode store.Mode, product, id string) (store.Analysis, error) {
	row := s.reader.QueryRowContext(ctx, s.rebind(`SELECT `+analysisColumns+` FROM analyses
		WHERE id = ? AND account_id = ? AND mode = ? AND product = ?`), id, accountID, string(mode), product)
	a, err := scanAnalysis(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Analysis{}, fmt.Errorf("store %s analysis %s: %w", product, id, err)
	}
	return a, nil
}

// ListAnalyses pages through an account's analyses of one product and mode, newest first,
// of one subject unless subject is "". Each form reads one of the analyses_account_* indexes.
func (s *Store) ListAnalyses(ctx context.Context, accountID string, mode store.Mode, product, subject string, q store.PageQuery) (store.Page[store.Analysis], error) {
	where, args := "account_id = ? AND mode = ? AND product = ?", []any{accountID, string(mode), product}
	if subject != "" {
		where += " AND subject = ?"
		args = append(args, subject)
	}
	page, err := listPage(ctx, s, "analyses", analysisColumns, where, args, q, scanAnalysis)
	if err != nil {
		return store.Page[store.Analysis]{}, fmt.Errorf("store list %s analyses: %w", product, err)
	}
	return page, nil
}

func scanAnalysis(row scanner) (store.Analysis, error) {
	var (
		a       store.Analysis
		mode    string
		created int64
	)
	if err := row.Scan(&a.ID, &a.AccountID, &mode, &a.Product, &a.Subject, &a.Payload, &created); err != nil {
		return store.Analysis{}, err
	}
	a.Mode = store.Mode(mode)
	a.CreatedAt = fromMillis(created)
	return a, nil
}
