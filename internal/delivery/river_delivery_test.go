package delivery

// The River-based delivery this file builds is the peer BenchmarkDispatchRiver and the River
// tests measure the dispatcher against (docs/operations.md, "Webhook delivery: dispatcher or
// River"). It is test code: one River job per delivery, worked by riverDeliveryWorker, on the
// store's own database through a second pool, as the background jobs use River.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" for River's pool on PostgreSQL
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"riskapi/internal/store"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
)

// riverCapSnooze is how long a job waits when its endpoint already has MaxPerEndpoint attempts
// in flight: about the time a loopback attempt takes, so that a freed slot is not left idle
// for long, while each refused try costs a transaction and a job update.
const riverCapSnooze = 10 * time.Millisecond

// riverFetchPollInterval replaces River's 1 s default: neither database/sql driver listens
// for inserts (riverdatabasesql has no LISTEN, riversqlite polls a table), so snoozed and
// retried jobs are found by this poll. 20 ms, the harness dispatchers' poll interval.
const riverFetchPollInterval = 20 * time.Millisecond

// riverDB is a store's database as River sees it: a pool of River's own on the same SQLite
// file or PostgreSQL database, with River's tables migrated in.
type riverDB struct {
	*sql.DB
	driver riverdriver.Driver[*sql.Tx]
	// postgres: advisory locks serialise the lease per endpoint; SQLite has one writer at a
	// time. Both read the $1, $2, … placeholders of the worker's statements.
	postgres bool
}

// riverStore is a store under test that River can share: open gives a fresh store and where
// its database is (SQLite: the data directory; PostgreSQL: the URL); pool opens a River pool
// there, with River's tables, closed when the test ends. Each process of a test has a pool.
type riverStore struct {
	name string
	open func(tb testing.TB) (s store.Store, where string)
	pool func(tb testing.TB, where string) riverDB
}

var riverStores = []riverStore{
	{"sqlite", func(tb testing.TB) (store.Store, string) {
		dir := sqlitetest.Dir(tb)
		return openSQLiteIn(tb, dir), dir
	}, openRiverSQLite},
	{"postgres", func(tb testing.TB) (store.Store, string) {
		dbURL := pgtest.NewMigratedDatabase(tb, postgres.Migrate)
		return openPostgresAt(tb, dbURL), dbURL
	}, openRiverPostgres},
}

// openRiverSQLite opens a River pool on the SQLite database in dir. The pool has one
// connection, as riversqlite advises (SQLite has one writer; more connections would only
// fail with SQLITE_BUSY), the store's busy timeout and WAL, and begins its transactions
// IMMEDIATE like the store's writer, so that none has to upgrade a read lock.
func openRiverSQLite(tb testing.TB, dir string) riverDB {
	tb.Helper()
	q := url.Values{"_txlock": {"immediate"}}
	for _, p := range []string{"busy_timeout(5000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	path := (&url.URL{Path: filepath.ToSlash(filepath.Join(dir, sqlite.FileName))}).EscapedPath()
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		tb.Fatalf("open River's SQLite pool: %v", err)
	}
	db.SetMaxOpenConns(1)
	return migrateRiver(tb, riverDB{DB: db, driver: riversqlite.New(db)})
}

// openRiverPostgres opens a River pool of 40 connections (32 workers' leases, River's
// fetches, completions and maintenance) on the PostgreSQL database at dbURL, all kept open
// as the store keeps its own: with database/sql's default of 2 idle connections, most leases
// opened a new connection, and the benchmark measured that (25 events/s instead of 260).
func openRiverPostgres(tb testing.TB, dbURL string) riverDB {
	tb.Helper()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		tb.Fatalf("open River's PostgreSQL pool: %v", err)
	}
	db.SetMaxOpenConns(40)
	db.SetMaxIdleConns(40)
	return migrateRiver(tb, riverDB{DB: db, driver: riverdatabasesql.New(db), postgres: true})
}

// migrateRiver creates River's tables with rivermigrate and closes the pool when the test ends.
func migrateRiver(tb testing.TB, rdb riverDB) riverDB {
	tb.Helper()
	tb.Cleanup(func() { _ = rdb.Close() })
	migrator, err := rivermigrate.New(rdb.driver, nil)
	if err != nil {
		tb.Fatalf("River migrator: %v", err)
	}
	if _, err := migrator.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		tb.Fatalf("River migrations: %v", err)
	}
	return rdb
}

// riverDeliveryArgs is one delivery's job: the delivery id, nothing else, so that the attempt
// always sends the endpoint's URL and secret as they are when it starts.
type riverDeliveryArgs struct {
	DeliveryID string `json:"delivery_id"`
}

func (riverDeliveryArgs) Kind() string { return "webhook_delivery" }

// scheduleRetryPolicy is River's retry policy following a delivery Schedule: after the n-th
// failed attempt (River has recorded n-1 errors when it asks) the wait is Delays[n-1].
type scheduleRetryPolicy struct{ schedule Schedule }

func (p scheduleRetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	now := time.Now()
	if next, ok := p.schedule.Next(len(job.Errors)+1, now, nil); ok {
		return next
	}
	return now // unreachable: MaxAttempts is 1+len(Delays), so River discards the job first
}

// riverDeliveryWorker makes a delivery's attempt as the dispatcher does: the same send (POST,
// both signatures), the same outcome (schedule, Retry-After, 410, auto-disable) recorded
// through the store's RecordAttempt. d supplies those steps, its client, clock and the owner
// the worker's leases are taken under; its Run is never called.
//
// RecordAttempt records only for the holder of the delivery's lease, so the worker first
// takes one, for d's lease, in a transaction on River's pool; the lease also carries the
// per-endpoint cap when perEndpoint > 0, as River's open-source version has none: the
// transaction counts the endpoint's unexpired leases (serialised per endpoint by an advisory
// lock on PostgreSQL, by the single writer on SQLite) and snoozes the job when there are
// perEndpoint already.
type riverDeliveryWorker struct {
	river.WorkerDefaults[riverDeliveryArgs]
	d           *Dispatcher
	db          riverDB
	perEndpoint int
}

// errAttemptFailed makes River retry a delivery whose attempt failed with time left in its
// schedule; the attempt's own error is in the delivery log.
var errAttemptFailed = errors.New("webhook attempt failed")

func (w *riverDeliveryWorker) Work(ctx context.Context, job *river.Job[riverDeliveryArgs]) error {
	c, wait, err := w.lease(ctx, job.Args.DeliveryID)
	switch {
	case err != nil:
		return err
	case wait > 0:
		return river.JobSnooze(wait)
	case c.ID == "":
		return nil // ended, or deleted with its endpoint: nothing to send
	}
	result := attemptResult{errText: secretUnavailableText}
	if c.SecretErr == nil {
		result = send(ctx, w.d.client, w.d.timeout, w.d.now, c)
	}
	o := w.d.outcome(c, result, w.d.now())
	w.d.record(ctx, c, o, false)
	if o.NextAttemptAt != nil {
		return fmt.Errorf("%w: %s", errAttemptFailed, o.Error)
	}
	return nil
}

// lease takes the delivery's lease and reads what the attempt sends. It returns a zero
// ClaimedDelivery if the delivery has ended or is gone, and a wait instead when it cannot be
// sent now: its endpoint is at the cap or disabled, or another attempt holds it.
func (w *riverDeliveryWorker) lease(ctx context.Context, id string) (store.ClaimedDelivery, time.Duration, error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return store.ClaimedDelivery{}, 0, err
	}
	defer func() { _ = tx.Rollback() }()

	var (
		c                                   store.ClaimedDelivery
		mode, secret, keyID, endpointStatus string
		manual, leaseUntil                  sql.NullInt64
		now                                 = w.d.now()
		nowMillis                           = now.UnixMilli()
	)
	err = tx.QueryRowContext(ctx, `SELECT d.endpoint_id, d.event_id, d.event_type, d.account_id, d.mode,
			d.status, d.attempts, d.manual_retry_at, d.lease_until, ev.payload, e.url, e.secret, e.secret_key_id, e.status
		FROM deliveries d JOIN events ev ON ev.id = d.event_id JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.id = $1`, id).Scan(&c.EndpointID, &c.EventID, &c.EventType, &c.AccountID, &mode, &c.Status, &c.Attempts,
		&manual, &leaseUntil, &c.Payload, &c.URL, &secret, &keyID, &endpointStatus)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ClaimedDelivery{}, 0, nil
	}
	if err != nil {
		return store.ClaimedDelivery{}, 0, fmt.Errorf("read delivery %s: %w", id, err)
	}
	switch {
	case c.Status != store.DeliveryPending && !manual.Valid:
		return store.ClaimedDelivery{}, 0, nil
	case endpointStatus != store.EndpointEnabled && !manual.Valid:
		// The dispatcher leaves it pending until the endpoint is enabled again.
		return store.ClaimedDelivery{}, time.Minute, nil
	case leaseUntil.Valid && leaseUntil.Int64 > nowMillis:
		return store.ClaimedDelivery{}, riverCapSnooze, nil
	}
	if w.perEndpoint > 0 {
		if w.db.postgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, c.EndpointID); err != nil {
				return store.ClaimedDelivery{}, 0, fmt.Errorf("lock endpoint %s: %w", c.EndpointID, err)
			}
		}
		var inFlight int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries WHERE endpoint_id = $1 AND lease_until > $2`,
			c.EndpointID, nowMillis).Scan(&inFlight); err != nil {
			return store.ClaimedDelivery{}, 0, fmt.Errorf("count leases of endpoint %s: %w", c.EndpointID, err)
		}
		if inFlight >= w.perEndpoint {
			return store.ClaimedDelivery{}, riverCapSnooze, nil
		}
	}
	res, err := tx.ExecContext(ctx, `UPDATE deliveries SET lease_owner = $1, lease_until = $2, lease_manual_at = manual_retry_at
		WHERE id = $3 AND (lease_until IS NULL OR lease_until <= $4)`, w.d.owner, now.Add(w.d.lease).UnixMilli(), id, nowMillis)
	if err != nil {
		return store.ClaimedDelivery{}, 0, fmt.Errorf("lease delivery %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return store.ClaimedDelivery{}, riverCapSnooze, err
	}
	if err := tx.Commit(); err != nil {
		return store.ClaimedDelivery{}, 0, fmt.Errorf("lease delivery %s: %w", id, err)
	}
	c.ID, c.Mode, c.ManualRetry = id, store.Mode(mode), manual.Valid
	c.Secret = secret
	if keyID != "" {
		// The stores under test are opened without keys, so none is encrypted.
		c.Secret, c.SecretErr = "", fmt.Errorf("%w: encrypted under key %s", store.ErrSecretUnavailable, keyID)
	}
	return c, 0, nil
}

// riverDeliveryConfig is one River-based delivery process.
type riverDeliveryConfig struct {
	// Dispatcher gives the attempt's client, schedule, clock and lease owner (Run unused).
	Dispatcher *Dispatcher
	// Workers is the queue's MaxWorkers, the dispatcher's Workers.
	Workers int
	// PerEndpoint is the cap on attempts in flight to one endpoint across processes; 0 none.
	PerEndpoint int
}

// newRiverDelivery returns a River client that delivers the jobs of rdb's default queue. Its
// settings follow the dispatcher's: MaxAttempts is the schedule's 1+len(Delays), the fetch
// cooldown the dispatcher's 5 ms between claims (River's default is 100 ms), the poll
// riverFetchPollInterval. JobTimeout and RescueStuckJobsAfter keep River's defaults (1 min,
// 1 h). Logs are discarded. The caller starts and stops it.
func newRiverDelivery(tb testing.TB, rdb riverDB, cfg riverDeliveryConfig) *river.Client[*sql.Tx] {
	tb.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverDeliveryWorker{d: cfg.Dispatcher, db: rdb, perEndpoint: cfg.PerEndpoint})
	client, err := river.NewClient(rdb.driver, &river.Config{
		Logger:            slog.New(slog.DiscardHandler),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}},
		Workers:           workers,
		RetryPolicy:       scheduleRetryPolicy{cfg.Dispatcher.schedule},
		MaxAttempts:       1 + len(cfg.Dispatcher.schedule.Delays),
		FetchCooldown:     claimCooldown,
		FetchPollInterval: riverFetchPollInterval,
	})
	if err != nil {
		tb.Fatalf("River client: %v", err)
	}
	return client
}

// enqueueDeliveries inserts one job per delivery, as the store would in the transaction that
// creates them if River carried deliveries.
func enqueueDeliveries(tb testing.TB, client *river.Client[*sql.Tx], deliveries []store.Delivery) {
	tb.Helper()
	params := make([]river.InsertManyParams, len(deliveries))
	for i, d := range deliveries {
		params[i] = river.InsertManyParams{Args: riverDeliveryArgs{DeliveryID: d.ID}}
	}
	if _, err := client.InsertMany(context.Background(), params); err != nil {
		tb.Fatalf("insert delivery jobs: %v", err)
	}
}
