package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/storetest"
)

// go test -run '^$' -bench ClaimDeliveries ./internal/store/sqlite/
func BenchmarkClaimDeliveries(b *testing.B) {
	storetest.BenchmarkClaimDeliveries(b, func(tb testing.TB) storetest.BenchDB {
		dir := tb.TempDir()
		s, err := sqlite.Open(context.Background(), dir)
		if err != nil {
			tb.Fatalf("Open: %v", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		// A second connection to the file, for seeding; the store's writer is idle meanwhile.
		raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.FileName)+
			fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", 5000))
		if err != nil {
			tb.Fatalf("open seeding connection: %v", err)
		}
		raw.SetMaxOpenConns(1)
		tb.Cleanup(func() { _ = raw.Close() })
		return storetest.BenchDB{
			Store: s,
			Exec: func(ctx context.Context, query string, args ...any) error {
				_, err := raw.ExecContext(ctx, query, args...)
				return err
			},
			Blob: "BLOB",
		}
	})
}
