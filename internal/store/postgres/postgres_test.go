package postgres_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlstore"
	"riskapi/internal/store/storetest"
)

func open(t *testing.T, url string, opts ...sqlstore.Option) store.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
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
		return open(t, pgtest.NewMigratedDatabase(t, postgres.Migrate))
	})
}

// Instances starting together on one fresh database all migrate; the session advisory lock
// makes them take turns, so every Open succeeds and the schema is applied once.
func TestConcurrentOpensOfFreshDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	const n = 4
	stores := make([]store.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(ctx, url)
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
	a := store.Account{
		ID: ident.New("acct"), Name: "Lovelace Analytics", Email: "ops@lovelace.example",
		Plan: store.PlanStarter, Region: store.RegionDefault, CreatedAt: time.Now(),
	}
	if err := stores[0].CreateAccount(ctx, a); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	for i := range n {
		if _, err := stores[i].Account(ctx, a.ID); err != nil {
			t.Errorf("store %d: Account: %v", i, err)
		}
	}
}

// Bootstrap must insert once when the callers are separate instances, each with its own pool.
func TestBootstrapAcrossOpens(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	storetest.BootstrapRace(t, 8, open(t, url), open(t, url))
}

// Re-running migrations keeps the data and the version.
func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	first, err := postgres.Migrate(ctx, url)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if first < 1 {
		t.Fatalf("Migrate reported version %d on a fresh database, want at least 1", first)
	}
	s := open(t, url)
	a := store.Account{
		ID: ident.New("acct"), Name: "Lovelace Analytics", Email: "ops@lovelace.example",
		Plan: store.PlanStarter, Region: store.RegionEU, CreatedAt: time.Now(),
	}
	if err := s.CreateAccount(ctx, a); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	k := store.APIKey{
		ID: ident.New("key"), AccountID: a.ID, Type: store.KeyTest, Mode: store.ModeTest,
		Hash:   fmt.Sprintf("%x", sha256.Sum256([]byte(ident.Random(32)))),
		Prefix: "sk_test_", Last4: "wxyz", CreatedAt: time.Now(),
	}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	again, err := postgres.Migrate(ctx, url)
	if err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if again != first {
		t.Errorf("second Migrate reported version %d, want %d", again, first)
	}
	if _, err := s.APIKeyByHash(ctx, k.Hash); err != nil {
		t.Errorf("APIKeyByHash after the second Migrate: %v", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	// Port 1 on loopback refuses at once; the error must come back, not a hang or a panic.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, "postgres://riskapi:secret-password@127.0.0.1:1/riskapi?sslmode=disable")
	if err == nil {
		s.Close()
		t.Fatal("Open of an unreachable server succeeded")
	}
	if got := err.Error(); strings.Contains(got, "secret-password") {
		t.Errorf("Open error reveals the password: %s", got)
	}
}
