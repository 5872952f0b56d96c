// Package postgres is the PostgreSQL store, selected by a postgres:// database URL. It shares
// its implementation with the embedded store (package sqlstore) and lets several service
// instances use one database.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"

	"riskapi/internal/jobs"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Pool limits. 20 connections per instance leaves room for several instances under
// PostgreSQL's default max_connections of 100. As many may stay idle as may be open: with
// fewer, a busy webhook dispatcher (32 workers) opened and closed some 170 sessions a second.
// Idle connections are closed after 5 minutes and every connection is replaced after 30 so
// that a failover or a changed DNS name is picked up.
const (
	maxOpenConns    = 20
	maxIdleConns    = maxOpenConns
	connMaxIdleTime = 5 * time.Minute
	connMaxLifetime = 30 * time.Minute
)

// connectTimeout applies when the URL sets no connect_timeout: long enough for a TLS handshake
// across regions, short enough that a wrong host fails `riskapi serve` promptly.
const connectTimeout = 10 * time.Second

// Advisory lock keys. Advisory locks are scoped to one database, so these only need to differ
// from each other and from any other application's keys in the same database.
const (
	// migrationLockID is held for a session while goose migrates: the 64-bit FNV-1a hash of
	// "riskapi.migrate" (goose's own default key, 4097083626, is shared by every goose user).
	migrationLockID int64 = 0x193dc3cf749aaecd
	// bootstrapLockID is held for Bootstrap's transaction: FNV-1a of "riskapi.bootstrap".
	bootstrapLockID int64 = 0x4e30d95248e2a266
	// jobsMigrationLockID is held for a session while River's migrations run: the
	// FNV-1a hash of "riskapi.jobs.migrate", its top bit cleared to fit a signed bigint.
	jobsMigrationLockID int64 = 0x7ccdfd0592ba56cb
	// keyLockClass is the first key of the two-key advisory locks the store takes through
	// Dialect.LockKey (the second is hashtext of the store's key): the 32-bit FNV-1a hash of
	// "riskapi.lockkey". Two-key locks are a space apart from the one-key locks above.
	keyLockClass int32 = 0x49c95e3e
)

// SQLSTATE codes, https://www.postgresql.org/docs/current/errcodes-appendix.html.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
)

var dialect = sqlstore.Dialect{
	Name:                  "postgres",
	NumberedPlaceholders:  true,
	IsUniqueViolation:     func(err error) bool { return sqlState(err) == uniqueViolation },
	IsForeignKeyViolation: func(err error) bool { return sqlState(err) == foreignKeyViolation },
	// Two instances on one empty database could both see "no account" under READ COMMITTED
	// and both insert; the transaction-level advisory lock makes the second wait for the
	// first's commit. It is released by the commit or rollback.
	LockBootstrap: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, bootstrapLockID)
		return err
	},
	// The same kind of lock, one per key. Keys whose hashes collide share a lock, which only
	// makes their transactions take turns.
	LockKey: func(ctx context.Context, tx *sql.Tx, key string) error {
		_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, keyLockClass, key)
		return err
	},
	RowLocks:    true,
	ArrayParams: true,
	// Delivery outcomes only: a lost one is a delivery sent again (RecordAttempt).
	WritableWith:  true,
	RelaxedCommit: `set_config('synchronous_commit', 'off', true)`,
	// River's database/sql driver over the store's pgx pool.
	Jobs: func(db *sql.DB) jobs.Driver { return riverdatabasesql.New(db) },
}

// Open connects to the database at url (postgres://user:pass@host:port/db?sslmode=…), applies
// pending migrations and returns the store; opts are sqlstore's (sqlstore.WithSecretKeys).
// Every Open migrates; that is idempotent, and instances starting together on one database
// take turns under a session advisory lock.
func Open(ctx context.Context, url string, opts ...sqlstore.Option) (store.Store, error) {
	db, err := openDB(url)
	if err != nil {
		return nil, err
	}
	if _, err := migrate(ctx, db); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	s, err := sqlstore.New(db, db, dialect, opts...)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return s, nil
}

// Migrate applies pending migrations to the database at url without keeping the store open
// (the `riskapi migrate` command) and returns the schema version it is at afterwards.
func Migrate(ctx context.Context, url string) (version int64, err error) {
	db, err := openDB(url)
	if err != nil {
		return 0, err
	}
	version, err = migrate(ctx, db)
	if cerr := db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("postgres migrate: close: %w", cerr)
	}
	return version, err
}

// openDB parses url and returns a pool on it. The URL's password never appears in errors:
// pgx's parse errors redact it.
func openDB(url string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres open: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	db.SetConnMaxLifetime(connMaxLifetime)
	return db, nil
}

// migrate applies the embedded migrations under a session advisory lock. goose retries the
// lock every second for up to 300 tries (5 minutes), so a second instance waits for the first
// one's migration instead of failing; goose's default retry period, 5 s, would make every
// contended start take at least that long.
func migrate(ctx context.Context, db *sql.DB) (int64, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return 0, fmt.Errorf("postgres migrate: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return 0, fmt.Errorf("postgres migrate: %w", err)
	}
	version, err := sqlstore.Migrate(ctx, db, goose.DialectPostgres, fsys, goose.WithSessionLocker(locker))
	if err != nil {
		return 0, err
	}
	return version, migrateJobs(ctx, db)
}

// migrateJobs applies River's migrations while holding a session advisory lock on one
// connection of the pool, so instances starting together take turns and each finds River's
// schema untouched or complete. The lock is released when the connection goes back (or, if
// the process dies, when PostgreSQL closes its session).
func migrateJobs(ctx context.Context, db *sql.DB) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres migrate jobs: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, jobsMigrationLockID); err != nil {
		return fmt.Errorf("postgres migrate jobs: lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, jobsMigrationLockID); uerr != nil && err == nil {
			err = fmt.Errorf("postgres migrate jobs: unlock: %w", uerr)
		}
	}()
	if err := jobs.Migrate(ctx, riverdatabasesql.New(db)); err != nil {
		return fmt.Errorf("postgres %w", err)
	}
	return nil
}

// sqlState returns the SQLSTATE carried by err, or "".
func sqlState(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
