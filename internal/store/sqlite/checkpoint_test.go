package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"riskapi/internal/store/sqlite"
)

// Commits never checkpoint (wal_autocheckpoint is off on the writer): the store's own
// checkpointer copies the log into the database file beside them, while the store stays
// open. Without it the file would not grow until the last connection closed.
func TestCheckpointerCopiesTheLogWhileOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	db := filepath.Join(dir, sqlite.FileName)
	size := func(path string) int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size(db)
	for range 200 {
		if err := s.CreateAccount(ctx, account()); err != nil {
			t.Fatal(err)
		}
	}
	if size(db+"-wal") == 0 {
		t.Fatal("the writes did not go through the write-ahead log")
	}
	deadline := time.Now().Add(10 * time.Second)
	for size(db) <= before {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes for 10 s after 200 commits: nothing checkpointed the log", before)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
