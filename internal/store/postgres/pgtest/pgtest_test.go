package pgtest_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
)

// catalog lists the tables, columns and indexes of the public schema of the database at url.
func catalog(t *testing.T, url string) []string {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT table_name || '.' || column_name || ' ' || data_type FROM information_schema.columns WHERE table_schema = 'public'
		UNION ALL SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
		UNION ALL SELECT 'goose ' || max(version_id) FROM goose_db_version
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A database of NewMigratedDatabase has the schema Migrate gives a new database, and each
// call makes a database of its own.
func TestMigratedDatabaseIsWhatMigrateMakes(t *testing.T) {
	fresh := pgtest.NewDatabase(t)
	if _, err := postgres.Migrate(context.Background(), fresh); err != nil {
		t.Fatal(err)
	}
	copied := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	want, got := catalog(t, fresh), catalog(t, copied)
	if !slices.Equal(got, want) {
		t.Fatalf("the copied database's schema differs from a migrated one:\ngot  %q\nwant %q", got, want)
	}
	if len(want) < 50 {
		t.Fatalf("the catalog read back has %d entries; the comparison sees nothing", len(want))
	}
	if again := pgtest.NewMigratedDatabase(t, postgres.Migrate); again == copied {
		t.Fatalf("two calls returned the same database %s", again)
	}
	st, err := postgres.Open(context.Background(), copied)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}
