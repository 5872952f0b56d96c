// Package sqlitetest gives a test an embedded store of its own, in a fresh directory, without
// migrating it again: every directory it hands out starts as a copy of one database that the
// first call of the test binary migrated.
//
// The reason is the race detector. It instruments SQLite too (modernc.org/sqlite is SQLite
// compiled from C to Go), and under it migrating an empty database takes about 0.6 s of CPU,
// opening an already migrated one about 26 ms; the suites open some five hundred stores.
// The copy is the same file a fresh Open would make: the migrations run on it through
// sqlite.Migrate, and the tests that check migrations themselves (on an empty directory, on
// an older schema, in concurrent processes) open their own directories.
package sqlitetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlstore"
)

// migrated holds the files of the migrated, empty database (riskapi.db and, if the last
// connection left one, its write-ahead log), read once per test binary.
var migrated = sync.OnceValues(func() (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "riskapi-sqlitetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if _, err := sqlite.Migrate(context.Background(), dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		name := e.Name()
		// The shared-memory index is rebuilt from the log by the next open; the migration
		// lock file is made by every Open.
		if !strings.HasPrefix(name, sqlite.FileName) || strings.HasSuffix(name, "-shm") {
			continue
		}
		if files[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	if _, ok := files[sqlite.FileName]; !ok {
		return nil, fmt.Errorf("sqlite.Migrate left no %s in %s", sqlite.FileName, dir)
	}
	return files, nil
})

// Dir returns a new directory, removed when the test ends, that holds a migrated, empty
// embedded store: what sqlite.Open of an empty directory leaves behind, before any data.
func Dir(t testing.TB) string {
	t.Helper()
	files, err := migrated()
	if err != nil {
		t.Fatalf("sqlitetest: migrate the template database: %v", err)
	}
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatalf("sqlitetest: %v", err)
		}
	}
	return dir
}

// Open opens an embedded store in a new Dir, closed when the test ends; opts are sqlstore's.
func Open(t testing.TB, opts ...sqlstore.Option) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), Dir(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close the store: %v", err)
		}
	})
	return s
}
