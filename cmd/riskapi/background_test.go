package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/monitor"
	"riskapi/internal/simulation"
	"riskapi/internal/store"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/testlog"
)

// purgeCounter counts the purges made through a store.
type purgeCounter struct {
	store.Store
	purges *atomic.Int64
}

func (p purgeCounter) PurgeIdempotency(ctx context.Context, before time.Time) (int64, error) {
	p.purges.Add(1)
	return p.Store.PurgeIdempotency(ctx, before)
}

// The purge is a River periodic job that only the elected leader inserts: two processes (two
// job clients, each over its own store on one database) start, and exactly one purge runs —
// the leader's, at its start — not one per process. On SQLite, and on PostgreSQL when
// RISKAPI_TEST_POSTGRES_URL is set.
func TestPurgeRunsOnTheLeaderOnly(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) func() store.Store{
		"sqlite": func(t *testing.T) func() store.Store {
			dir := sqlitetest.Dir(t)
			return func() store.Store {
				st, err := sqlite.Open(context.Background(), dir)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
		"postgres": func(t *testing.T) func() store.Store {
			url := pgtest.NewMigratedDatabase(t, postgres.Migrate)
			return func() store.Store {
				st, err := postgres.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			openStore := open(t)
			var purges atomic.Int64
			logger := slog.New(slog.NewJSONHandler(&testlog.Buffer{}, nil))
			for i := range 2 {
				st := openStore()
				t.Cleanup(func() { st.Close() })
				counted := purgeCounter{Store: st, purges: &purges}
				sims, err := simulation.NewRunner(simulation.RunnerConfig{Store: st, Logger: logger, Owner: "process"})
				if err != nil {
					t.Fatal(err)
				}
				c, err := newJobClient(counted, sims, &monitor.Looker{Store: st, Now: time.Now, Logger: logger}, serveConfig{simulationWorkers: 1}, "process-"+string(rune('a'+i)), logger)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { stopJobs(c, logger) })
			}
			deadline := time.Now().Add(30 * time.Second)
			for purges.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no purge within 30 s of the processes' start")
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Both processes have long been running for leadership: a second purge would be a
			// second leader's.
			time.Sleep(3 * time.Second)
			if n := purges.Load(); n != 1 {
				t.Fatalf("%d purges, want 1 (the leader's)", n)
			}
		})
	}
}
