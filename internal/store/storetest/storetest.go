// Package storetest is the conformance suite every store.Store implementation must pass, so
// that the embedded SQLite store and the PostgreSQL store behave the same for every caller.
// Each implementation's own test calls Run with a function that opens a fresh store.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// Run runs the suite. open must return an empty, migrated store that no other test uses, and
// close it when t ends (t.Cleanup); it is called once per subtest, and subtests run in
// parallel.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"Ping", testPing},
		{"AccountRoundTrip", testAccountRoundTrip},
		{"AccountNotFound", testAccountNotFound},
		{"AccountDuplicateID", testAccountDuplicateID},
		{"APIKeyRoundTrip", testAPIKeyRoundTrip},
		{"APIKeyNotFound", testAPIKeyNotFound},
		{"APIKeyDuplicate", testAPIKeyDuplicate},
		{"APIKeyUnknownAccount", testAPIKeyUnknownAccount},
		{"APIKeyScopeWithSpace", testAPIKeyScopeWithSpace},
		{"ListAPIKeys", testListAPIKeys},
		{"RevokeAPIKey", testRevokeAPIKey},
		{"TouchAPIKeys", testTouchAPIKeys},
		{"Bootstrap", testBootstrap},
		{"BootstrapAfterCreateAccount", testBootstrapAfterCreateAccount},
		{"BootstrapAllOrNothing", testBootstrapAllOrNothing},
		{"BootstrapConcurrent", testBootstrapConcurrent},
		{"ListAPIKeysPages", testListAPIKeysPages},
		{"PagingUnderConcurrentInserts", testPagingUnderConcurrentInserts},
		{"IdempotencyLifecycle", testIdempotencyLifecycle},
		{"IdempotencyScope", testIdempotencyScope},
		{"IdempotencyReclaimAndExpiry", testIdempotencyReclaimAndExpiry},
		{"IdempotencyConcurrentBegin", testIdempotencyConcurrentBegin},
		{"IdempotencyPurge", testIdempotencyPurge},
		{"IdempotencyCompletedInWrite", testIdempotencyCompletedInWrite},
		{"IdempotencyLease", testIdempotencyLease},
		{"Usage", testUsage},
		{"Secret", testSecret},
		{"EventFanOut", testEventFanOut},
		{"EventOutboxAtomic", testEventOutboxAtomic},
		{"CreateEventFor", testCreateEventFor},
		{"ListEvents", testListEvents},
		{"PurgeEvents", testPurgeEvents},
		{"DriftMonitorRoundTrip", testDriftMonitorRoundTrip},
		{"DriftMonitorLook", testDriftMonitorLook},
		{"EndpointRoundTrip", testEndpointRoundTrip},
		{"EndpointDeleteCascades", testEndpointDeleteCascades},
		{"EndpointStatusOnly", testEndpointStatusOnly},
		{"EndpointLimitConcurrent", testEndpointLimitConcurrent},
		{"DeliveryScope", testDeliveryScope},
		{"ClaimDue", testClaimDue},
		{"ClaimPerEndpointCap", testClaimPerEndpointCap},
		{"ClaimDisabledEndpoint", testClaimDisabledEndpoint},
		{"ClaimConcurrent", testClaimConcurrent},
		{"ClaimPolicyBounds", testClaimPolicyBounds},
		{"ClaimMatchesModel", testClaimMatchesModel},
		{"ClaimTies", testClaimTies},
		{"RecordAttemptOutcomes", testRecordAttemptOutcomes},
		{"LastSuccessAt", testLastSuccessAt},
		{"ManualRetry", testManualRetry},
		{"ManualRetryDuringAttempt", testManualRetryDuringAttempt},
		{"RecordAttemptGone", testRecordAttemptGone},
		{"AutoDisable", testAutoDisable},
		{"LeaseLost", testLeaseLost},
		{"HandOff", testHandOff},
		{"HandOffRace", testHandOffRace},
		{"AnalysisRoundTrip", testAnalysisRoundTrip},
		{"AnalysisOutboxAtomic", testAnalysisOutboxAtomic},
		{"ListAnalyses", testListAnalyses},
		{"DriftEvents", testDriftEvents},
		{"DriftEventsConcurrent", testDriftEventsConcurrent},
		{"DriftEventsLargeBatch", testDriftEventsLargeBatch},
		{"SimulationLifecycle", testSimulationLifecycle},
		{"SimulationDispatch", testSimulationDispatch},
		{"ListSimulations", testListSimulations},
		{"SimulationChunkConcurrent", testSimulationChunkConcurrent},
		{"SimulationQueueLimit", testSimulationQueueLimit},
		{"SimulationCancel", testSimulationCancel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

// BootstrapRace has callers Bootstrap concurrently, each with its own account and key, and
// checks that exactly one of them inserted and that only its account and key exist. stores
// are used round-robin, so passing two stores opened on one database checks that processes,
// not only goroutines, are serialised.
func BootstrapRace(t *testing.T, callers int, stores ...store.Store) {
	t.Helper()
	ctx := context.Background()
	accounts := make([]store.Account, callers)
	keys := make([]store.APIKey, callers)
	inserted := make([]bool, callers)
	errs := make([]error, callers)
	for i := range callers {
		accounts[i] = newAccount()
		keys[i] = newKey(accounts[i].ID)
	}
	// Warm up with as many concurrent reads as there will be callers, so that a pooled store
	// holds that many open connections: otherwise the Bootstraps queue behind connection
	// set-up, run one after another, and a store without serialisation would pass.
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			_, _ = stores[i%len(stores)].Account(ctx, accounts[i].ID)
		})
	}
	wg.Wait()

	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			inserted[i], errs[i] = stores[i%len(stores)].Bootstrap(ctx, accounts[i], keys[i])
		})
	}
	close(start) // release every caller at once to maximise the overlap
	wg.Wait()

	winners := 0
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: Bootstrap: %v", i, errs[i])
		}
		s := stores[0]
		_, accErr := s.Account(ctx, accounts[i].ID)
		_, keyErr := s.APIKey(ctx, keys[i].ID)
		if inserted[i] {
			winners++
			if accErr != nil || keyErr != nil {
				t.Errorf("caller %d reported an insert, but Account: %v, APIKey: %v", i, accErr, keyErr)
			}
			continue
		}
		if !errors.Is(accErr, store.ErrNotFound) || !errors.Is(keyErr, store.ErrNotFound) {
			t.Errorf("caller %d reported no insert, but Account: %v, APIKey: %v (want ErrNotFound for both)", i, accErr, keyErr)
		}
	}
	if winners != 1 {
		t.Errorf("%d of %d concurrent Bootstrap calls inserted, want exactly 1", winners, callers)
	}
}

// t0 is the suite's reference time: a whole millisecond, so that stored and expected values
// compare exactly.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

func newAccount() store.Account {
	return store.Account{
		ID:        ident.New("acct"),
		Name:      "Lovelace Analytics",
		Email:     "ops@lovelace.example",
		Plan:      store.PlanStarter,
		Region:    store.RegionDefault,
		CreatedAt: t0,
	}
}

func newKey(accountID string) store.APIKey {
	return store.APIKey{
		ID:        ident.New("key"),
		AccountID: accountID,
		Type:      store.KeyTest,
		Mode:      store.ModeTest,
		Name:      "ci",
		Hash:      randomHash(),
		Prefix:    "sk_test_",
		Last4:     "wxyz",
		CreatedAt: t0,
	}
}

// randomHash returns the lower-case hex SHA-256 of random bytes, the shape of a real key hash.
func randomHash() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead on Go 1.24+)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func ptr(t time.Time) *time.Time { return &t }

func mustCreateAccount(t *testing.T, s store.Store, a store.Account) {
	t.Helper()
	if err := s.CreateAccount(context.Background(), a); err != nil {
		t.Fatalf("CreateAccount(%s): %v", a.ID, err)
	}
}

func mustCreateKey(t *testing.T, s store.Store, k store.APIKey) {
	t.Helper()
	if err := s.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatalf("CreateAPIKey(%s): %v", k.ID, err)
	}
}

func mustKey(t *testing.T, s store.Store, id string) store.APIKey {
	t.Helper()
	k, err := s.APIKey(context.Background(), id)
	if err != nil {
		t.Fatalf("APIKey(%s): %v", id, err)
	}
	return k
}

// sameTime reports whether got is want, in UTC (the store's promise), and describes the
// difference otherwise.
func sameTime(got, want time.Time) string {
	if !got.Equal(want) {
		return fmt.Sprintf("%s, want %s", got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
	if got.Location() != time.UTC {
		return fmt.Sprintf("%s is in %s, want UTC", got.Format(time.RFC3339Nano), got.Location())
	}
	return ""
}

func sameOptionalTime(got, want *time.Time) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil:
		return fmt.Sprintf("nil, want %s", want.Format(time.RFC3339Nano))
	case want == nil:
		return fmt.Sprintf("%s, want nil", got.Format(time.RFC3339Nano))
	}
	return sameTime(*got, *want)
}

// fieldDiffs collects the fields in which a stored object differs from the one expected,
// so a check reports every difference at once.
type fieldDiffs []string

// field records name when got and want print differently.
func (d *fieldDiffs) field(name string, got, want any) {
	if fmt.Sprint(got) != fmt.Sprint(want) {
		*d = append(*d, fmt.Sprintf("%s = %v, want %v", name, got, want))
	}
}

func checkAccount(t *testing.T, got, want store.Account) {
	t.Helper()
	var diffs fieldDiffs
	diffs.field("ID", got.ID, want.ID)
	diffs.field("Name", got.Name, want.Name)
	diffs.field("Email", got.Email, want.Email)
	diffs.field("Plan", got.Plan, want.Plan)
	diffs.field("Region", got.Region, want.Region)
	// fmt prints maps sorted by key, so equal maps print equally.
	diffs.field("CustomLimits", got.CustomLimits, want.CustomLimits)
	if (got.CustomLimits == nil) != (want.CustomLimits == nil) {
		diffs = append(diffs, fmt.Sprintf("CustomLimits = %#v, want %#v", got.CustomLimits, want.CustomLimits))
	}
	if d := sameTime(got.CreatedAt, want.CreatedAt); d != "" {
		diffs = append(diffs, "CreatedAt = "+d)
	}
	if len(diffs) > 0 {
		t.Errorf("account %s:\n\t%s", want.ID, strings.Join(diffs, "\n\t"))
	}
}

func checkKey(t *testing.T, got, want store.APIKey) {
	t.Helper()
	var diffs fieldDiffs
	diffs.field("ID", got.ID, want.ID)
	diffs.field("AccountID", got.AccountID, want.AccountID)
	diffs.field("Type", got.Type, want.Type)
	diffs.field("Mode", got.Mode, want.Mode)
	diffs.field("Name", got.Name, want.Name)
	if !slices.Equal(got.Scopes, want.Scopes) || (got.Scopes == nil) != (want.Scopes == nil) {
		diffs = append(diffs, fmt.Sprintf("Scopes = %#v, want %#v", got.Scopes, want.Scopes))
	}
	diffs.field("RateLimit", got.RateLimit, want.RateLimit)
	diffs.field("Hash", got.Hash, want.Hash)
	diffs.field("Prefix", got.Prefix, want.Prefix)
	diffs.field("Last4", got.Last4, want.Last4)
	if d := sameTime(got.CreatedAt, want.CreatedAt); d != "" {
		diffs = append(diffs, "CreatedAt = "+d)
	}
	if d := sameOptionalTime(got.LastUsedAt, want.LastUsedAt); d != "" {
		diffs = append(diffs, "LastUsedAt = "+d)
	}
	if d := sameOptionalTime(got.RevokedAt, want.RevokedAt); d != "" {
		diffs = append(diffs, "RevokedAt = "+d)
	}
	if d := sameOptionalTime(got.ExpiresAt, want.ExpiresAt); d != "" {
		diffs = append(diffs, "ExpiresAt = "+d)
	}
	if len(diffs) > 0 {
		t.Errorf("key %s:\n\t%s", want.ID, strings.Join(diffs, "\n\t"))
	}
}

func testPing(t *testing.T, s store.Store) {
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testAccountRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	cet := time.FixedZone("CET", 3600)

	full := store.Account{
		ID:           ident.New("acct"),
		Name:         "Müller & Söhne GmbH",
		Email:        "billing@mueller.example",
		Plan:         store.PlanEnterprise,
		Region:       store.RegionEU,
		CustomLimits: map[string]int64{"cascade": 10000, "drift": 250, "meridian": 1 << 40},
		// Nanoseconds and a zone other than UTC: the store keeps milliseconds, in UTC.
		CreatedAt: time.Date(2025, 3, 14, 16, 9, 26, 535_897_932, cet),
	}
	plain := newAccount() // no custom limits
	mustCreateAccount(t, s, full)
	mustCreateAccount(t, s, plain)

	wantFull := full
	wantFull.CreatedAt = t0 // 16:09:26.535897932 CET is 15:09:26.535 UTC, truncated to the millisecond
	for _, want := range []store.Account{wantFull, plain} {
		got, err := s.Account(ctx, want.ID)
		if err != nil {
			t.Fatalf("Account(%s): %v", want.ID, err)
		}
		checkAccount(t, got, want)
	}
}

func testAccountNotFound(t *testing.T, s store.Store) {
	mustCreateAccount(t, s, newAccount())
	_, err := s.Account(context.Background(), ident.New("acct"))
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Account(unknown id) error = %v, want ErrNotFound", err)
	}
}

func testAccountDuplicateID(t *testing.T, s store.Store) {
	ctx := context.Background()
	first := newAccount()
	mustCreateAccount(t, s, first)

	second := first
	second.Name = "Someone Else"
	second.Plan = store.PlanFreeTrial
	if err := s.CreateAccount(ctx, second); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateAccount(existing id) error = %v, want ErrConflict", err)
	}
	got, err := s.Account(ctx, first.ID)
	if err != nil {
		t.Fatalf("Account: %v", err)
	}
	checkAccount(t, got, first)
}

func testAPIKeyRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	mustCreateAccount(t, s, a)

	full := store.APIKey{
		ID:         ident.New("key"),
		AccountID:  a.ID,
		Type:       store.KeyRestricted,
		Mode:       store.ModeLive,
		Name:       "nightly export",
		Scopes:     []string{"drift:read", "cascade:*", "usage:read"},
		RateLimit:  500,
		Hash:       randomHash(),
		Prefix:     "sk_rstr_",
		Last4:      "a1B9",
		CreatedAt:  time.Date(2025, 3, 14, 15, 9, 26, 535_999_999, time.UTC),
		LastUsedAt: ptr(time.Date(2025, 3, 15, 8, 0, 0, 1_000_000, time.UTC)),
		RevokedAt:  ptr(time.Date(2025, 3, 16, 9, 30, 0, 999_999, time.UTC)),
		ExpiresAt:  ptr(time.Date(2026, 3, 14, 0, 0, 0, 0, time.FixedZone("EST", -5*3600))),
	}
	wantFull := full
	wantFull.CreatedAt = t0
	wantFull.LastUsedAt = ptr(time.Date(2025, 3, 15, 8, 0, 0, 1_000_000, time.UTC))
	wantFull.RevokedAt = ptr(time.Date(2025, 3, 16, 9, 30, 0, 0, time.UTC))
	wantFull.ExpiresAt = ptr(time.Date(2026, 3, 14, 5, 0, 0, 0, time.UTC))

	plain := newKey(a.ID) // no scopes, no rate limit, no optional times
	plain.Type, plain.Mode, plain.Prefix = store.KeyLive, store.ModeLive, "sk_live_"

	mustCreateKey(t, s, full)
	mustCreateKey(t, s, plain)
	for _, want := range []store.APIKey{wantFull, plain} {
		byID, err := s.APIKey(ctx, want.ID)
		if err != nil {
			t.Fatalf("APIKey(%s): %v", want.ID, err)
		}
		checkKey(t, byID, want)
		byHash, err := s.APIKeyByHash(ctx, want.Hash)
		if err != nil {
			t.Fatalf("APIKeyByHash(%s): %v", want.Hash, err)
		}
		checkKey(t, byHash, want) // a revoked key is still found by hash
	}
}

func testAPIKeyNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	mustCreateAccount(t, s, a)
	k := newKey(a.ID)
	mustCreateKey(t, s, k)

	if _, err := s.APIKey(ctx, ident.New("key")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("APIKey(unknown id) error = %v, want ErrNotFound", err)
	}
	if _, err := s.APIKeyByHash(ctx, randomHash()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("APIKeyByHash(unknown hash) error = %v, want ErrNotFound", err)
	}
	// Hashes are lower-case hex; the upper-case spelling of a stored hash is another hash.
	if _, err := s.APIKeyByHash(ctx, strings.ToUpper(k.Hash)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("APIKeyByHash(upper-case hash) error = %v, want ErrNotFound", err)
	}
}

func testAPIKeyDuplicate(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	mustCreateAccount(t, s, a)
	k := newKey(a.ID)
	mustCreateKey(t, s, k)

	sameHash := newKey(a.ID)
	sameHash.Hash = k.Hash
	if err := s.CreateAPIKey(ctx, sameHash); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateAPIKey(existing hash) error = %v, want ErrConflict", err)
	}
	sameID := newKey(a.ID)
	sameID.ID = k.ID
	if err := s.CreateAPIKey(ctx, sameID); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateAPIKey(existing id) error = %v, want ErrConflict", err)
	}
	keys, err := listAllKeys(ctx, s, a.ID)
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	if len(keys) != 1 {
		t.Fatalf("ListAPIKeys returned %d keys after two rejected inserts, want 1", len(keys))
	}
	checkKey(t, keys[0], k)
}

func testAPIKeyUnknownAccount(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAccount(t, s, newAccount())
	k := newKey(ident.New("acct"))
	if err := s.CreateAPIKey(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateAPIKey(unknown account) error = %v, want ErrNotFound", err)
	}
	if _, err := s.APIKey(ctx, k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("APIKey after a rejected insert: error = %v, want ErrNotFound", err)
	}
}

// Scopes are stored space-separated; a scope holding a space would read back as two scopes,
// silently granting a different set, so the store refuses it.
func testAPIKeyScopeWithSpace(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	mustCreateAccount(t, s, a)
	k := newKey(a.ID)
	k.Type, k.Scopes = store.KeyRestricted, []string{"drift:read usage:read"}
	if err := s.CreateAPIKey(ctx, k); err == nil {
		t.Fatalf("CreateAPIKey accepted the scope %q", k.Scopes[0])
	}
	if _, err := s.APIKey(ctx, k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("APIKey after a rejected insert: error = %v, want ErrNotFound", err)
	}
}

func testListAPIKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, other := newAccount(), newAccount()
	mustCreateAccount(t, s, a)
	mustCreateAccount(t, s, other)

	oldest := newKey(a.ID)
	oldest.CreatedAt = t0.Add(-time.Hour)
	middle := newKey(a.ID)
	// Two keys created in the same millisecond are ordered by id, descending.
	stem := ident.New("key")
	tieLow, tieHigh := newKey(a.ID), newKey(a.ID)
	tieLow.ID, tieHigh.ID = stem+"A", stem+"B"
	tieLow.CreatedAt, tieHigh.CreatedAt = t0.Add(time.Millisecond), t0.Add(time.Millisecond)
	newest := newKey(a.ID)
	newest.CreatedAt = t0.Add(24 * time.Hour)
	foreign := newKey(other.ID)
	foreign.CreatedAt = t0.Add(time.Minute)

	for _, k := range []store.APIKey{middle, tieLow, foreign, newest, oldest, tieHigh} {
		mustCreateKey(t, s, k)
	}

	got, err := listAllKeys(ctx, s, a.ID)
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	want := []store.APIKey{newest, tieHigh, tieLow, middle, oldest}
	ids := func(keys []store.APIKey) []string {
		var out []string
		for _, k := range keys {
			out = append(out, k.ID)
		}
		return out
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("ListAPIKeys order:\n\tgot  %v\n\twant %v", ids(got), ids(want))
	}
	for i := range want {
		checkKey(t, got[i], want[i])
	}

	gotOther, err := listAllKeys(ctx, s, other.ID)
	if err != nil {
		t.Fatalf("ListAPIKeys(other): %v", err)
	}
	if !slices.Equal(ids(gotOther), []string{foreign.ID}) {
		t.Errorf("ListAPIKeys(other) = %v, want only %s", ids(gotOther), foreign.ID)
	}

	none, err := listAllKeys(ctx, s, ident.New("acct"))
	if err != nil || len(none) != 0 {
		t.Errorf("ListAPIKeys(unknown account) = %v, %v; want no keys and no error", ids(none), err)
	}
}

func testRevokeAPIKey(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	mustCreateAccount(t, s, a)
	k := newKey(a.ID)
	bystander := newKey(a.ID)
	mustCreateKey(t, s, k)
	mustCreateKey(t, s, bystander)

	first := t0.Add(time.Hour + 123*time.Microsecond) // stored as t0 + 1h, to the millisecond
	want := k
	want.RevokedAt = ptr(t0.Add(time.Hour))

	got, err := s.RevokeAPIKey(ctx, k.ID, first)
	if err != nil {
		t.Fatalf("RevokeAPIKey: %v", err)
	}
	checkKey(t, got, want)

	// Revoking again, later or earlier, keeps the first revocation time.
	for _, at := range []time.Time{t0.Add(2 * time.Hour), t0} {
		got, err := s.RevokeAPIKey(ctx, k.ID, at)
		if err != nil {
			t.Fatalf("RevokeAPIKey again at %s: %v", at, err)
		}
		checkKey(t, got, want)
	}
	checkKey(t, mustKey(t, s, k.ID), want)
	checkKey(t, mustKey(t, s, bystander.ID), bystander)

	if _, err := s.RevokeAPIKey(ctx, ident.New("key"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RevokeAPIKey(unknown id) error = %v, want ErrNotFound", err)
	}
}

func testTouchAPIKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := newAccount()
	mustCreateAccount(t, s, acct)
	a, b, untouched := newKey(acct.ID), newKey(acct.ID), newKey(acct.ID)
	for _, k := range []store.APIKey{a, b, untouched} {
		mustCreateKey(t, s, k)
	}
	t1, t2, t3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)

	check := func(step string, want map[string]*time.Time) {
		t.Helper()
		for id, w := range want {
			if d := sameOptionalTime(mustKey(t, s, id).LastUsedAt, w); d != "" {
				t.Errorf("%s: key %s LastUsedAt = %s", step, id, d)
			}
		}
	}

	if err := s.TouchAPIKeys(ctx, map[string]time.Time{a.ID: t1, b.ID: t2, ident.New("key"): t3}); err != nil {
		t.Fatalf("TouchAPIKeys with an unknown id: %v", err)
	}
	check("first batch", map[string]*time.Time{a.ID: &t1, b.ID: &t2, untouched.ID: nil})

	// An older flush arriving late, and one carrying the same time, change nothing.
	if err := s.TouchAPIKeys(ctx, map[string]time.Time{a.ID: t0, b.ID: t2}); err != nil {
		t.Fatalf("TouchAPIKeys: %v", err)
	}
	check("older batch", map[string]*time.Time{a.ID: &t1, b.ID: &t2, untouched.ID: nil})

	if err := s.TouchAPIKeys(ctx, map[string]time.Time{a.ID: t3.Add(456 * time.Microsecond), b.ID: t1}); err != nil {
		t.Fatalf("TouchAPIKeys: %v", err)
	}
	check("newer batch", map[string]*time.Time{a.ID: &t3, b.ID: &t2, untouched.ID: nil})

	if err := s.TouchAPIKeys(ctx, nil); err != nil {
		t.Fatalf("TouchAPIKeys(empty): %v", err)
	}
}

func testBootstrap(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	k := newKey(a.ID)
	inserted, err := s.Bootstrap(ctx, a, k)
	if err != nil || !inserted {
		t.Fatalf("Bootstrap on an empty store = %v, %v; want true, nil", inserted, err)
	}
	gotA, err := s.Account(ctx, a.ID)
	if err != nil {
		t.Fatalf("Account after Bootstrap: %v", err)
	}
	checkAccount(t, gotA, a)
	gotK, err := s.APIKeyByHash(ctx, k.Hash)
	if err != nil {
		t.Fatalf("APIKeyByHash after Bootstrap: %v", err)
	}
	checkKey(t, gotK, k)

	a2 := newAccount()
	k2 := newKey(a2.ID)
	inserted, err = s.Bootstrap(ctx, a2, k2)
	if err != nil || inserted {
		t.Fatalf("second Bootstrap = %v, %v; want false, nil", inserted, err)
	}
	if _, err := s.Account(ctx, a2.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Account of the second Bootstrap: error = %v, want ErrNotFound", err)
	}
	if _, err := s.APIKeyByHash(ctx, k2.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("key of the second Bootstrap: error = %v, want ErrNotFound", err)
	}
}

func testBootstrapAfterCreateAccount(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustCreateAccount(t, s, newAccount())
	a := newAccount()
	inserted, err := s.Bootstrap(ctx, a, newKey(a.ID))
	if err != nil || inserted {
		t.Fatalf("Bootstrap on a store with an account = %v, %v; want false, nil", inserted, err)
	}
	if _, err := s.Account(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Account of the refused Bootstrap: error = %v, want ErrNotFound", err)
	}
}

// A Bootstrap whose key cannot be inserted leaves no account behind; otherwise the store would
// hold an account without a key and never bootstrap again.
func testBootstrapAllOrNothing(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	orphan := newKey(ident.New("acct")) // belongs to an account that does not exist
	if _, err := s.Bootstrap(ctx, a, orphan); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Bootstrap with a key of an unknown account: error = %v, want ErrNotFound", err)
	}
	if _, err := s.Account(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Account after a failed Bootstrap: error = %v, want ErrNotFound", err)
	}
	inserted, err := s.Bootstrap(ctx, a, newKey(a.ID))
	if err != nil || !inserted {
		t.Fatalf("Bootstrap after a failed one = %v, %v; want true, nil", inserted, err)
	}
}

func testBootstrapConcurrent(t *testing.T, s store.Store) {
	BootstrapRace(t, 8, s)
}
