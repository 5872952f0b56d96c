package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// BenchDB is a store opened for BenchmarkClaimDeliveries, with direct access to its database
// so that the benchmark can seed tens of thousands of deliveries in a few statements rather
// than one transaction each.
type BenchDB struct {
	Store store.Store
	// Exec runs one statement on the store's database, outside the store. Placeholders are
	// written "?".
	Exec func(ctx context.Context, query string, args ...any) error
	// Blob is the SQL type of an event payload: "BLOB" (SQLite) or "BYTEA" (PostgreSQL).
	Blob string
	// Settle, if set, runs after seeding: on PostgreSQL VACUUM ANALYZE, which autovacuum
	// would have done to a table that grew over days. SQLite's store never runs ANALYZE, so
	// its benchmark plans without statistics, as the service does.
	Settle func(ctx context.Context) error
}

// Claim benchmark policy: the dispatcher's defaults (32 workers, 8 per endpoint).
const (
	benchLimit       = 32
	benchPerEndpoint = 8
	benchFinished    = 20_000
)

// claimScenario is one queue shape of BenchmarkClaimDeliveries. Every scenario also holds
// benchFinished deliveries that ended (succeeded) before, as 30 days of retention leave.
type claimScenario struct {
	name string
	// seed fills the queue and returns the endpoint every claim must take all of its
	// deliveries from ("" for any) and how many each claim must take.
	seed func(ctx context.Context, db BenchDB, now time.Time) (only string, want int, err error)
}

// BenchmarkClaimDeliveries measures one ClaimDeliveries call (limit 32, 8 per endpoint) on
// queues of several shapes. Each iteration claims at the same instant and then, untimed,
// releases what it took, so every iteration sees the same queue. open is called once per
// scenario; the store must be empty and migrated and stay open until tb ends.
func BenchmarkClaimDeliveries(b *testing.B, open func(tb testing.TB) BenchDB) {
	scenarios := []claimScenario{
		{"empty+20000finished", func(ctx context.Context, db BenchDB, now time.Time) (string, int, error) {
			return "", 0, nil
		}},
		{"due=5000/endpoints=1", func(ctx context.Context, db BenchDB, now time.Time) (string, int, error) {
			_, err := seedDue(ctx, db, 1, 5000, now, store.EndpointEnabled)
			return "", benchPerEndpoint, err
		}},
		{"due=5000/endpoints=8", func(ctx context.Context, db BenchDB, now time.Time) (string, int, error) {
			_, err := seedDue(ctx, db, 8, 5000/8, now, store.EndpointEnabled)
			return "", benchLimit, err
		}},
		{"due=160000/endpoints=8", func(ctx context.Context, db BenchDB, now time.Time) (string, int, error) {
			_, err := seedDue(ctx, db, 8, 160_000/8, now, store.EndpointEnabled)
			return "", benchLimit, err
		}},
		// One endpoint at its cap (8 unexpired leases of another dispatcher) with a backlog
		// of 5000 older deliveries; the other endpoint's newer 10 must be claimed all the same,
		// as many as its cap allows (8).
		{"saturated=1+5000backlog/other=10", func(ctx context.Context, db BenchDB, now time.Time) (string, int, error) {
			busy, err := seedDue(ctx, db, 1, 5000+benchPerEndpoint, now.Add(-time.Hour), store.EndpointEnabled)
			if err != nil {
				return "", 0, err
			}
			held, err := db.Store.ClaimDeliveries(ctx, store.ClaimPolicy{Owner: "holder", Lease: 365 * 24 * time.Hour,
				Limit: benchPerEndpoint, PerEndpoint: benchPerEndpoint}, now)
			if err != nil {
				return "", 0, err
			}
			for _, c := range held {
				if c.EndpointID != busy[0] {
					return "", 0, fmt.Errorf("holder claimed a delivery of %s, want only %s", c.EndpointID, busy[0])
				}
			}
			other, err := seedDue(ctx, db, 1, 10, now, store.EndpointEnabled)
			return other[0], min(10, benchPerEndpoint), err
		}},
		// A disabled endpoint's 5000 old pending deliveries wait; the enabled one's newer 10
		// go, as many as its cap allows.
		{"disabled=5000/enabled=10", func(ctx context.Context, db BenchDB, now time.Time) (string, int, error) {
			if _, err := seedDue(ctx, db, 1, 5000, now.Add(-time.Hour), store.EndpointDisabled); err != nil {
				return "", 0, err
			}
			other, err := seedDue(ctx, db, 1, 10, now, store.EndpointEnabled)
			return other[0], min(10, benchPerEndpoint), err
		}},
	}

	now := t0.Add(30 * 24 * time.Hour)
	for _, sc := range scenarios {
		db := open(b)
		seeded := false
		var (
			only string
			want int
		)
		b.Run(sc.name, func(b *testing.B) {
			ctx := context.Background()
			if !seeded {
				if err := seedFinished(ctx, db, benchFinished, now.Add(-7*24*time.Hour)); err != nil {
					b.Fatalf("seed finished deliveries: %v", err)
				}
				var err error
				if only, want, err = sc.seed(ctx, db, now.Add(-24*time.Hour)); err != nil {
					b.Fatalf("seed: %v", err)
				}
				if db.Settle != nil {
					if err := db.Settle(ctx); err != nil {
						b.Fatalf("settle: %v", err)
					}
				}
				seeded = true
			}
			p := store.ClaimPolicy{Owner: "bench", Lease: time.Minute, Limit: benchLimit, PerEndpoint: benchPerEndpoint}
			b.ResetTimer()
			for range b.N {
				cs, err := db.Store.ClaimDeliveries(ctx, p, now)
				if err != nil {
					b.Fatalf("ClaimDeliveries: %v", err)
				}
				b.StopTimer()
				if len(cs) != want {
					b.Fatalf("claimed %d deliveries, want %d", len(cs), want)
				}
				ids := make([]any, len(cs))
				for i, c := range cs {
					if only != "" && c.EndpointID != only {
						b.Fatalf("claimed a delivery of endpoint %s, want only %s's", c.EndpointID, only)
					}
					ids[i] = c.ID
				}
				if len(ids) > 0 {
					// Release the leases so that the next iteration finds the same queue.
					if err := db.Exec(ctx, `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL, lease_manual_at = NULL
						WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, ids...); err != nil {
						b.Fatalf("release: %v", err)
					}
				}
				b.StartTimer()
			}
		})
	}
}

// seedDue creates endpoints endpoints (in one account, live mode, with the given status),
// each with n pending deliveries due from `from` on, one a millisecond, interleaved across
// the endpoints, and returns the endpoints' ids.
func seedDue(ctx context.Context, db BenchDB, endpoints, n int, from time.Time, status string) ([]string, error) {
	acct := ident.New("acct")
	var ids []string
	for k := range endpoints {
		e := newEndpoint(acct, store.ModeLive, store.AllEvents)
		if status == store.EndpointDisabled {
			e.Status, e.DisabledReason = store.EndpointDisabled, store.DisabledByUser
		}
		if err := db.Store.CreateWebhookEndpoint(ctx, e, store.MaxEndpointsPerMode, nil); err != nil {
			return nil, err
		}
		first := from.UnixMilli() + int64(k)
		if err := insertDeliveries(ctx, db, e, n, "pending", first, int64(endpoints)); err != nil {
			return nil, err
		}
		ids = append(ids, e.ID)
	}
	return ids, nil
}

// seedFinished creates one endpoint with n deliveries that succeeded, one a millisecond from
// `from` on.
func seedFinished(ctx context.Context, db BenchDB, n int, from time.Time) error {
	e := newEndpoint(ident.New("acct"), store.ModeLive, store.AllEvents)
	if err := db.Store.CreateWebhookEndpoint(ctx, e, store.MaxEndpointsPerMode, nil); err != nil {
		return err
	}
	return insertDeliveries(ctx, db, e, n, "succeeded", from.UnixMilli(), 1)
}

// insertDeliveries inserts n events of e's account and one delivery of each to e, the i-th
// created (and, if pending, due) at first + i*step ms. Ids and numbers are generated here,
// so they are written into the statements as literals.
func insertDeliveries(ctx context.Context, db BenchDB, e store.WebhookEndpoint, n int, status string, first, step int64) error {
	prefix := strings.ToLower(ident.Random(12))
	series := fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < %d) `, n)
	at := fmt.Sprintf(`%d + i * %d`, first, step)
	if err := db.Exec(ctx, series+fmt.Sprintf(`INSERT INTO events (id, account_id, mode, type, payload, created_at)
		SELECT 'evt_%s_' || i, '%s', 'live', '%s', CAST('{"object":"event","data":{}}' AS %s), %s FROM n`,
		prefix, e.AccountID, kindDrift, db.Blob, at)); err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	next, completed, attempts, code := at, "CAST(NULL AS BIGINT)", 0, 0
	if status != "pending" {
		next, completed, attempts, code = completed, at, 1, 200
	}
	if err := db.Exec(ctx, series+fmt.Sprintf(`INSERT INTO deliveries (id, endpoint_id, event_id, event_type, account_id,
			mode, status, attempts, last_status_code, next_attempt_at, created_at, completed_at)
		SELECT 'dlv_%s_' || i, '%s', 'evt_%s_' || i, '%s', '%s', 'live', '%s', %d, %d, %s, %s, %s FROM n`,
		prefix, e.ID, prefix, kindDrift, e.AccountID, status, attempts, code, next, at, completed)); err != nil {
		return fmt.Errorf("insert deliveries: %w", err)
	}
	return nil
}
