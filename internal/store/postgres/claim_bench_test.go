package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/storetest"
)

// RISKAPI_TEST_POSTGRES_URL=… go test -run '^$' -bench ClaimDeliveries ./internal/store/postgres/
func BenchmarkClaimDeliveries(b *testing.B) {
	if os.Getenv(pgtest.EnvURL) == "" {
		b.Skipf("%s is not set", pgtest.EnvURL)
	}
	storetest.BenchmarkClaimDeliveries(b, func(tb testing.TB) storetest.BenchDB {
		url := pgtest.NewDatabase(tb)
		s, err := postgres.Open(context.Background(), url)
		if err != nil {
			tb.Fatalf("Open: %v", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		raw, err := sql.Open("pgx", url)
		if err != nil {
			tb.Fatalf("open seeding connection: %v", err)
		}
		tb.Cleanup(func() { _ = raw.Close() })
		return storetest.BenchDB{
			Store: s,
			Exec: func(ctx context.Context, query string, args ...any) error {
				_, err := raw.ExecContext(ctx, numbered(query), args...)
				return err
			},
			Blob: "BYTEA",
			Settle: func(ctx context.Context) error {
				_, err := raw.ExecContext(ctx, `VACUUM ANALYZE deliveries, events, webhook_endpoints`)
				return err
			},
		}
	})
}

// numbered rewrites the ? placeholders of query into $1, $2, …
func numbered(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
