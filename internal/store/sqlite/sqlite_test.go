package sqlite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"riskapi/internal/ident"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/store/sqlstore"
	"riskapi/internal/store/storetest"
)

func open(t *testing.T, dir string, opts ...sqlstore.Option) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), dir, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, sqlitetest.Dir(t))
	})
}

// A command such as `riskapi keys create` opens the directory a running server has open; each
// must see the other's writes at once.
func TestTwoOpensShareData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := sqlitetest.Dir(t)
	server, cli := open(t, dir), open(t, dir)

	a := account()
	if err := cli.CreateAccount(ctx, a); err != nil {
		t.Fatalf("CreateAccount through the second store: %v", err)
	}
	if _, err := server.Account(ctx, a.ID); err != nil {
		t.Fatalf("first store does not see the second's account: %v", err)
	}
	k := key(a.ID)
	if err := server.CreateAPIKey(ctx, k); err != nil {
		t.Fatalf("CreateAPIKey through the first store: %v", err)
	}
	if _, err := cli.RevokeAPIKey(ctx, k.ID, time.Now()); err != nil {
		t.Fatalf("RevokeAPIKey through the second store: %v", err)
	}
	got, err := server.APIKeyByHash(ctx, k.Hash)
	if err != nil {
		t.Fatalf("APIKeyByHash through the first store: %v", err)
	}
	if got.RevokedAt == nil {
		t.Fatalf("first store does not see the second's revocation")
	}
}

// Bootstrap must insert once even when the callers are different processes (here: two stores,
// each with its own writer connection) on one file.
func TestBootstrapAcrossOpens(t *testing.T) {
	t.Parallel()
	dir := sqlitetest.Dir(t)
	storetest.BootstrapRace(t, 8, open(t, dir), open(t, dir))
}

// Re-opening a directory must keep its data and report the same schema version: migrations
// that have run are not run again.
func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	first, err := sqlite.Migrate(ctx, dir)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if first < 1 {
		t.Fatalf("Migrate reported version %d on a fresh directory, want at least 1", first)
	}

	s, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	a := account()
	k := key(a.ID)
	if err := s.CreateAccount(ctx, a); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	again, err := sqlite.Migrate(ctx, dir)
	if err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if again != first {
		t.Errorf("second Migrate reported version %d, want %d", again, first)
	}
	s = open(t, dir)
	if _, err := s.Account(ctx, a.ID); err != nil {
		t.Errorf("Account after re-open: %v", err)
	}
	if _, err := s.APIKeyByHash(ctx, k.Hash); err != nil {
		t.Errorf("APIKeyByHash after re-open: %v", err)
	}

	// Each migration is recorded once; a re-run would have added rows to goose's table.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.FileName)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var applied, distinct int
	if err := db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT version_id) FROM goose_db_version`).
		Scan(&applied, &distinct); err != nil {
		t.Fatalf("read goose_db_version: %v", err)
	}
	if applied != distinct {
		t.Errorf("goose_db_version holds %d rows for %d versions: a migration ran twice", applied, distinct)
	}
}

// A server and a command starting together on a fresh directory both migrate; the migration
// lock makes one wait for the other instead of both creating the tables.
func TestConcurrentOpensOfFreshDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	const n = 8
	stores := make([]store.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = sqlite.Open(ctx, dir)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open %d: %v", i, errs[i])
			continue
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if t.Failed() {
		return
	}
	a := account()
	if err := stores[0].CreateAccount(ctx, a); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	for i := range n {
		if _, err := stores[i].Account(ctx, a.ID); err != nil {
			t.Errorf("store %d: Account: %v", i, err)
		}
	}
}

func TestOpenCreatesDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data dir?#%")
	s := open(t, dir)
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if _, err := s.Account(context.Background(), "acct_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Account on a new store: error = %v, want ErrNotFound", err)
	}
	// The characters a URI would misread must reach the file system as they are.
	if _, err := os.Stat(filepath.Join(dir, sqlite.FileName)); err != nil {
		t.Fatalf("database file: %v", err)
	}
}

func account() store.Account {
	return store.Account{
		ID:        ident.New("acct"),
		Name:      "Lovelace Analytics",
		Email:     "ops@lovelace.example",
		Plan:      store.PlanProfessional,
		Region:    store.RegionDefault,
		CreatedAt: time.Now(),
	}
}

func key(accountID string) store.APIKey {
	return store.APIKey{
		ID:        ident.New("key"),
		AccountID: accountID,
		Type:      store.KeyLive,
		Mode:      store.ModeLive,
		Name:      "server",
		Hash:      fmt.Sprintf("%x", sha256.Sum256([]byte(ident.Random(32)))),
		Prefix:    "sk_live_",
		Last4:     "wxyz",
		CreatedAt: time.Now(),
	}
}
