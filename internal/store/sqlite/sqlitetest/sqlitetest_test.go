package sqlitetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
)

// schema lists what the database file in dir holds: every table, index, trigger and view
// with its SQL, the number of rows of every table, and the schema version.
func schema(t *testing.T, dir string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.FileName)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	rows, err := db.Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var kind, name, text string
		if err := rows.Scan(&kind, &name, &text); err != nil {
			t.Fatal(err)
		}
		out = append(out, kind+" "+name+": "+text)
		if kind == "table" {
			tables = append(tables, name)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM "` + table + `"`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("rows of %s: %d", table, n))
	}
	var version int64
	if err := db.QueryRow(`SELECT max(version_id) FROM goose_db_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("goose version %d", version))
	return out
}

// A directory of Dir holds what Open of an empty directory makes: the same tables, indexes
// and migrations, and no data; and Open uses it as it is.
func TestDirIsWhatAFreshOpenMakes(t *testing.T) {
	fresh := t.TempDir()
	s, err := sqlite.Open(context.Background(), fresh)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	copied := sqlitetest.Dir(t)
	want, got := schema(t, fresh), schema(t, copied)
	if !slices.Equal(got, want) {
		t.Fatalf("Dir's database differs from a fresh Open's:\ngot  %q\nwant %q", got, want)
	}
	if len(want) < 10 {
		t.Fatalf("the schema read back has %d entries; the comparison sees nothing", len(want))
	}

	st := sqlitetest.Open(t)
	if err := st.Ping(context.Background()); err != nil {
		t.Fatalf("a store of Open: %v", err)
	}
	// Each call gets a database of its own.
	if a, b := sqlitetest.Dir(t), sqlitetest.Dir(t); a == b {
		t.Fatalf("two calls of Dir returned the same directory %s", a)
	}
}
