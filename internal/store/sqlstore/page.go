package sqlstore

import (
	"context"
	"fmt"

	"riskapi/internal/store"
)

// listPage reads one page of table in newest-first order (created_at DESC, id DESC): the rows
// matching where (a condition with ? placeholders, bound to args) that come strictly after
// q.After, at most q.Limit of them, plus the total number of matching rows. Every list of
// the service pages through here, so keyset pagination behaves the same everywhere:
// fetching Limit+1 rows tells whether more follow without a second query, and the keyset
// condition lets an index on (filter columns, created_at DESC, id DESC) serve every page.
func listPage[T any](ctx context.Context, s *Store, table, columns, where string, args []any, q store.PageQuery, scan func(scanner) (T, error)) (store.Page[T], error) {
	if q.Limit < 1 {
		return store.Page[T]{}, fmt.Errorf("page limit %d: must be at least 1", q.Limit)
	}
	var total int64
	if err := s.reader.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM `+table+` WHERE `+where), args...).Scan(&total); err != nil {
		return store.Page[T]{}, fmt.Errorf("count: %w", err)
	}
	query := `SELECT ` + columns + ` FROM ` + table + ` WHERE ` + where
	pageArgs := append([]any(nil), args...)
	if q.After != nil {
		at := q.After.CreatedAt.UnixMilli()
		query += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		pageArgs = append(pageArgs, at, at, q.After.ID)
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	pageArgs = append(pageArgs, q.Limit+1)
	rows, err := s.reader.QueryContext(ctx, s.rebind(query), pageArgs...)
	if err != nil {
		return store.Page[T]{}, fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	items := make([]T, 0, q.Limit+1)
	for rows.Next() {
		item, err := scan(rows)
		if err != nil {
			return store.Page[T]{}, fmt.Errorf("scan: %w", err)
		}
		items = append(items, item)
	}
	if err := rows.Err(); err != nil {
		return store.Page[T]{}, fmt.Errorf("rows: %w", err)
	}
	page := store.Page[T]{Items: items, TotalCount: total}
	if len(items) > q.Limit {
		page.Items, page.HasMore = items[:q.Limit], true
	}
	return page, nil
}
