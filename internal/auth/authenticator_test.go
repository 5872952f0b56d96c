package auth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/testclock"
)

// countingStore is the real SQLite store, counting the key lookups that reach it.
type countingStore struct {
	store.Store
	lookups atomic.Int64
	touches atomic.Int64
}

func (c *countingStore) APIKeyByHash(ctx context.Context, hash string) (store.APIKey, error) {
	c.lookups.Add(1)
	return c.Store.APIKeyByHash(ctx, hash)
}

func (c *countingStore) TouchAPIKeys(ctx context.Context, m map[string]time.Time) error {
	c.touches.Add(1)
	return c.Store.TouchAPIKeys(ctx, m)
}

func setupAuth(t *testing.T) (*Authenticator, *countingStore, *testclock.Clock, string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlitetest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countingStore{Store: st}
	clk := testclock.New(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	acct := store.Account{ID: "acct_1", Name: "A", Email: "a@b.test", Plan: store.PlanStarter, Region: store.RegionDefault, CreatedAt: clk.Now()}
	if err := st.CreateAccount(context.Background(), acct); err != nil {
		t.Fatal(err)
	}
	k, secret, err := NewAPIKey(KeyParams{AccountID: acct.ID, Type: store.KeyTest}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return NewAuthenticator(cs, clk.Now, slog.New(slog.NewTextHandler(io.Discard, nil))), cs, clk, secret
}

func TestMalformedKeysNeverReachTheStore(t *testing.T) {
	a, cs, _, secret := setupAuth(t)
	typo := []byte(secret)
	typo[10] ^= 1
	for _, h := range []string{"", "Bearer", "Basic " + secret, "Bearer " + string(typo), "Bearer sk_test_short", "Bearer pk_test_" + secret[8:]} {
		_, err := a.Authenticate(context.Background(), h)
		var rejected *RejectedError
		if !errors.As(err, &rejected) {
			t.Fatalf("%q: err = %v, want a RejectedError", h, err)
		}
	}
	if n := cs.lookups.Load(); n != 0 {
		t.Fatalf("malformed keys caused %d store lookups, want 0", n)
	}
}

func TestCacheHoldsForOneSecond(t *testing.T) {
	a, cs, clk, secret := setupAuth(t)
	for range 100 {
		if _, err := a.Authenticate(context.Background(), "Bearer "+secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := cs.lookups.Load(); n != 1 {
		t.Fatalf("100 requests within a second made %d lookups, want 1", n)
	}
	clk.Advance(time.Second)
	if _, err := a.Authenticate(context.Background(), "Bearer "+secret); err != nil {
		t.Fatal(err)
	}
	if n := cs.lookups.Load(); n != 2 {
		t.Fatalf("after 1 s: %d lookups, want 2 (the entry must expire)", n)
	}
}

func TestFlushWritesOneBatchAndRetriesOnFailure(t *testing.T) {
	a, cs, clk, secret := setupAuth(t)
	for range 10 {
		clk.Advance(time.Millisecond)
		if _, err := a.Authenticate(context.Background(), "Bearer "+secret); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := cs.touches.Load(); n != 1 {
		t.Fatalf("%d touch batches, want 1", n)
	}
	k, _ := cs.APIKeyByHash(context.Background(), HashKey(secret))
	if k.LastUsedAt == nil || !k.LastUsedAt.Equal(clk.Now()) {
		t.Fatalf("last_used_at = %v, want the latest use %v", k.LastUsedAt, clk.Now())
	}
	// An empty flush writes nothing.
	if err := a.Flush(context.Background()); err != nil || cs.touches.Load() != 1 {
		t.Fatalf("empty flush: err %v, %d batches", err, cs.touches.Load())
	}
	// A failed flush keeps the times for the next one.
	clk.Advance(time.Minute)
	if _, err := a.Authenticate(context.Background(), "Bearer "+secret); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Flush(cancelled); err == nil {
		t.Fatal("flush with a cancelled context succeeded")
	}
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	k, _ = cs.APIKeyByHash(context.Background(), HashKey(secret))
	if !k.LastUsedAt.Equal(clk.Now()) {
		t.Fatalf("after retry last_used_at = %v, want %v", k.LastUsedAt, clk.Now())
	}
}

func TestRunFlushesOnStop(t *testing.T) {
	a, cs, _, secret := setupAuth(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx, time.Hour); close(done) }()
	if _, err := a.Authenticate(context.Background(), "Bearer "+secret); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	k, _ := cs.APIKeyByHash(context.Background(), HashKey(secret))
	if k.LastUsedAt == nil {
		t.Fatal("stopping Run lost the pending last-use time")
	}
}
