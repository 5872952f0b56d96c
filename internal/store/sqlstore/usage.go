package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"riskapi/internal/store"
)

// dayLayout is how usage_daily keeps its day: YYYY-MM-DD sorts as text in date order.
const dayLayout = "2006-01-02"

// AddUsage adds units to the daily totals in one transaction; rows are upserted in the order
// given, which the caller keeps sorted so concurrent flushes lock rows in one order.
func (s *Store) AddUsage(ctx context.Context, units []store.UsageUnits) error {
	if len(units) == 0 {
		return nil
	}
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO usage_daily (account_id, day, product, endpoint, units)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (account_id, day, product, endpoint) DO UPDATE SET units = usage_daily.units + excluded.units`))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, u := range units {
			if _, err := stmt.ExecContext(ctx, u.AccountID, u.Day.UTC().Format(dayLayout), u.Product, u.Endpoint, u.Units); err != nil {
				return fmt.Errorf("account %s: %w", u.AccountID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store add usage: %w", err)
	}
	return nil
}

// Usage returns an account's daily totals for the UTC days from..to inclusive.
func (s *Store) Usage(ctx context.Context, accountID string, from, to time.Time) ([]store.UsageUnits, error) {
	rows, err := s.reader.QueryContext(ctx, s.rebind(`SELECT day, product, endpoint, units FROM usage_daily
		WHERE account_id = ? AND day >= ? AND day <= ? ORDER BY day, product, endpoint`),
		accountID, from.UTC().Format(dayLayout), to.UTC().Format(dayLayout))
	if err != nil {
		return nil, fmt.Errorf("store usage: %w", err)
	}
	defer rows.Close()
	out := []store.UsageUnits{}
	for rows.Next() {
		u := store.UsageUnits{AccountID: accountID}
		var day string
		if err := rows.Scan(&day, &u.Product, &u.Endpoint, &u.Units); err != nil {
			return nil, fmt.Errorf("store usage: %w", err)
		}
		if u.Day, err = time.Parse(dayLayout, day); err != nil {
			return nil, fmt.Errorf("store usage: day %q: %w", day, err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store usage: %w", err)
	}
	return out, nil
}

// Secret returns the secret stored under name, storing candidate first if there is none.
// Of concurrent first callers one insert wins and all read its value.
func (s *Store) Secret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if _, err := s.writer.ExecContext(ctx, s.rebind(`INSERT INTO secrets (name, value, created_at)
		VALUES (?, ?, ?) ON CONFLICT DO NOTHING`), name, candidate, time.Now().UnixMilli()); err != nil {
		return nil, fmt.Errorf("store secret %s: %w", name, err)
	}
	var value []byte
	if err := s.writer.QueryRowContext(ctx, s.rebind(`SELECT value FROM secrets WHERE name = ?`), name).Scan(&value); err != nil {
		return nil, fmt.Errorf("store secret %s: %w", name, err)
	}
	return value, nil
}
