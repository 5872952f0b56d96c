// Package sqlite is the embedded store, the default: one SQLite file, <dir>/riskapi.db, opened
// with the pure-Go modernc.org/sqlite driver, so the binary needs no C toolchain and no server.
// A server and any number of command-line processes may use the same directory at once.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"riskapi/internal/jobs"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlstore"
)

// FileName is the database file inside the data directory. SQLite keeps FileName-wal and
// FileName-shm beside it while connections are open.
const FileName = "riskapi.db"

// migrationLockName is an empty SQLite database in the data directory used only for its file
// lock: holding an exclusive transaction on it serialises migrations between processes.
const migrationLockName = "migrate.lock"

// busyTimeoutMS is how long a statement waits for another connection's lock before failing
// with SQLITE_BUSY: 5000 ms covers any write transaction of this service many times over,
// while a stuck process still surfaces as an error rather than a hang.
const busyTimeoutMS = 5000

// migrationLockWait bounds how long Open waits for another process's migration to finish.
const migrationLockWait = 2 * time.Minute

//go:embed migrations/*.sql
var migrations embed.FS

// dialect: placeholders stay "?"; constraint violations are recognised by SQLite's extended
// result codes, which modernc.org/sqlite enables on every connection.
var dialect = sqlstore.Dialect{
	Name: "sqlite",
	IsUniqueViolation: func(err error) bool {
		code := errorCode(err)
		return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	},
	IsForeignKeyViolation: func(err error) bool {
		return errorCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	},
	// No LockBootstrap: the writer begins every transaction with BEGIN IMMEDIATE, which takes
	// the database's write lock at once, so no other connection, in this process or another,
	// can insert an account between Bootstrap's check and its inserts.
	Scrub: scrub,
	// River's SQLite driver over the single writer connection, which it asks for: SQLite
	// allows one writer, and River's fetches and completions are writes.
	Jobs: func(writer *sql.DB) jobs.Driver { return riversqlite.New(writer) },
}

// scrub removes the old forms of rows a secret rotation rewrote from the database files. The
// writer runs with secure_delete, so the main file's pages hold no deleted content once the
// write-ahead log is checkpointed into it; the log itself, which keeps the old page images,
// is then truncated to zero bytes. The checkpoint cannot finish while another connection
// (a running server's reader) reads an older snapshot, nor while another checkpoint runs (a
// store's checkpointer, every 250 ms, in this process or a server's): it is tried again for
// up to scrubWait, then reports false, and the old images go with a later checkpoint.
func scrub(ctx context.Context, db *sql.DB) (bool, error) {
	deadline := time.Now().Add(scrubWait)
	for {
		var busy, logFrames, checkpointed int
		if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed); err != nil {
			return false, fmt.Errorf("sqlite checkpoint: %w", err)
		}
		if busy == 0 || time.Now().After(deadline) {
			return busy == 0, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// scrubWait is how long scrub tries its checkpoint: a checkpointer's PASSIVE checkpoint
// takes milliseconds, a reader's snapshot as long as its query.
const scrubWait = 5 * time.Second

// Open creates dir if needed, opens <dir>/riskapi.db, applies pending migrations and returns
// the store; opts are sqlstore's (sqlstore.WithSecretKeys). Every Open migrates; that is
// idempotent, and concurrent Opens of one directory (a server starting while a command runs)
// take turns on a lock file, so each finds the schema either untouched or complete.
//
// Writes go through one connection, because SQLite allows one writer at a time and a pool of
// writers would only queue on SQLITE_BUSY; its transactions begin IMMEDIATE so they never have
// to upgrade a read lock, the upgrade that fails with SQLITE_BUSY without waiting. Reads use a
// pool of max(4, GOMAXPROCS) read-only connections, which WAL lets run beside the writer.
func Open(ctx context.Context, dir string, opts ...sqlstore.Option) (store.Store, error) {
	path, err := databasePath(dir)
	if err != nil {
		return nil, err
	}
	writer, err := openWriter(path)
	if err != nil {
		return nil, err
	}
	if _, err := migrate(ctx, dir, writer); err != nil {
		return nil, errors.Join(err, writer.Close())
	}
	reader, err := openReader(path)
	if err != nil {
		return nil, errors.Join(err, writer.Close())
	}
	s, err := sqlstore.New(writer, reader, dialect, opts...)
	if err != nil {
		return nil, errors.Join(err, writer.Close(), reader.Close())
	}
	checkpointer, err := openCheckpointer(path)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.Go(func(ctx context.Context) { checkpointLoop(ctx, checkpointer) }, checkpointer.Close)
	if err := s.Ping(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite open %s: %w", path, err), s.Close())
	}
	return s, nil
}

// Migrate creates dir if needed and applies pending migrations to <dir>/riskapi.db without
// keeping the store open (the `riskapi migrate` command). It returns the schema version the
// database is at afterwards.
func Migrate(ctx context.Context, dir string) (version int64, err error) {
	path, err := databasePath(dir)
	if err != nil {
		return 0, err
	}
	writer, err := openWriter(path)
	if err != nil {
		return 0, err
	}
	version, err = migrate(ctx, dir, writer)
	if cerr := writer.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("sqlite migrate %s: close: %w", path, cerr)
	}
	return version, err
}

// databasePath creates dir (owner-only: the database holds key hashes and customer data) and
// returns the absolute path of the database file.
func databasePath(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("sqlite open: empty data directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("sqlite open: create data directory: %w", err)
	}
	abs, err := filepath.Abs(filepath.Join(dir, FileName))
	if err != nil {
		return "", fmt.Errorf("sqlite open: %w", err)
	}
	return abs, nil
}

// dsn builds a file: URI for path with the given pragmas and driver options. The pragmas are
// DSN parameters, not statements run once, because the driver runs them on every connection
// it opens, and database/sql opens connections whenever it likes.
func dsn(path string, pragmas []string, options url.Values) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	for k, vs := range options {
		q[k] = vs
	}
	// EscapedPath percent-encodes "?", "#" and "%" in the path, which SQLite's URI parser decodes.
	return "file:" + (&url.URL{Path: filepath.ToSlash(path)}).EscapedPath() + "?" + q.Encode()
}

func openWriter(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, []string{
		fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS),
		// WAL lets readers run beside the writer and is persistent in the file; every
		// process's writer asks for it, so whichever creates the file sets it.
		"journal_mode(WAL)",
		"foreign_keys(1)",
		// NORMAL is durable in WAL mode except for the last transactions before a power
		// loss (never corrupting), and saves an fsync per commit.
		"synchronous(NORMAL)",
		// FAST zeroes deleted and overwritten content inside the pages it writes anyway (no
		// extra I/O), so an old webhook secret or deleted customer data does not linger in
		// the file's free space.
		"secure_delete(FAST)",
		// No checkpoint inside a commit: the store's checkpointer copies the log into the
		// database beside the writer (checkpointLoop). Run by the committing write, as SQLite
		// does by default every 1,000 pages, the copy took 40 % of the single writer's time
		// while Drift events were ingested, and capped their rate.
		"wal_autocheckpoint(0)",
		// A 64 MiB page cache for the writer (the default is 2 MiB): the indexes an insert
		// walks stay in memory as the tables grow (the Drift events' rate halved past two
		// million stored events with the default).
		"cache_size(-65536)",
		// Statement journals in memory: a multi-row INSERT … ON CONFLICT inside a transaction
		// keeps the pages it changes in a statement journal (to undo the statement alone),
		// which spills to a temporary file past 64 KiB, a system call a page. That was a
		// quarter of the writes of a Drift event batch. In memory it holds the pages one
		// statement changes (a 500-event insert: a few MiB) and goes with the statement.
		// Migrations run with temporary files on disk (migrate).
		"temp_store(MEMORY)",
	}, url.Values{"_txlock": {"immediate"}}))
	if err != nil {
		return nil, fmt.Errorf("sqlite open writer %s: %w", path, err)
	}
	oneConnection(db)
	return db, nil
}

// oneConnection keeps db to one connection for the life of the store: reopening costs a
// file open and the pragmas, and an idle connection holds no lock.
func oneConnection(db *sql.DB) {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
}

// checkpointEvery is how often the checkpointer copies the write-ahead log into the
// database: at 50,000 Drift events a second the log grows by about 10 MB meanwhile.
const checkpointEvery = 250 * time.Millisecond

// checkpointLoop checkpoints the log through db every checkpointEvery until ctx ends. A
// PASSIVE checkpoint copies what no reader still needs and waits for no one, so neither the
// writer nor a reader ever waits for it; what it leaves goes with a later one, and the log is
// written again from its start once a checkpoint has copied all of it. Whatever the last
// checkpoint left is copied when the last connection to the database closes.
func checkpointLoop(ctx context.Context, db *sql.DB) {
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// An error (another process checkpointing, a disk error the next write will also
		// meet) leaves the log to the next tick.
		_, _ = db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}

// openCheckpointer opens the connection checkpointLoop uses: its own, so that a checkpoint
// never waits for the writer's connection.
func openCheckpointer(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, []string{fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS)}, nil))
	if err != nil {
		return nil, fmt.Errorf("sqlite open checkpointer %s: %w", path, err)
	}
	oneConnection(db)
	return db, nil
}

func openReader(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, []string{
		fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS),
		"foreign_keys(1)",
		// query_only rather than mode=ro: a read-only open cannot create the WAL index
		// (riskapi.db-shm) when it is missing, query_only just refuses writes.
		"query_only(1)",
	}, nil))
	if err != nil {
		return nil, fmt.Errorf("sqlite open reader %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	return db, nil
}

// migrate applies the embedded migrations through db while holding the migration lock of dir.
//
// goose has no lock for SQLite, and its Up reads the applied versions before it applies the
// missing ones, each in its own transaction; two processes migrating a fresh directory at once
// would both try to create the tables, and one would fail. The lock makes the second wait and
// then find nothing to do.
func migrate(ctx context.Context, dir string, db *sql.DB) (int64, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return 0, fmt.Errorf("sqlite migrate: %w", err)
	}
	unlock, err := lockMigrations(ctx, filepath.Join(dir, migrationLockName))
	if err != nil {
		return 0, err
	}
	// Temporary files on disk while migrating (the writer keeps its temporary storage in
	// memory, for the statement journals of its inserts): a migration that sorts a large
	// table, as building an index does, would otherwise hold the whole sort in memory. db is
	// the writer's one connection, so the pragma applies to every statement of the migration.
	if _, err := db.ExecContext(ctx, `PRAGMA temp_store = FILE`); err != nil {
		return 0, errors.Join(fmt.Errorf("sqlite migrate: %w", err), unlock())
	}
	version, err := sqlstore.Migrate(ctx, db, goose.DialectSQLite3, fsys)
	if _, perr := db.ExecContext(ctx, `PRAGMA temp_store = MEMORY`); perr != nil && err == nil {
		err = fmt.Errorf("sqlite migrate: %w", perr)
	}
	if err == nil {
		// River's tables, under the same lock.
		if err = jobs.Migrate(ctx, riversqlite.New(db)); err != nil {
			err = fmt.Errorf("sqlite %w", err)
		}
	}
	return version, errors.Join(err, unlock())
}

// lockMigrations takes an exclusive transaction on the SQLite database at path and returns the
// function that releases it. SQLite's lock is an operating-system file lock, so it works
// wherever SQLite does and is released by the operating system if the process dies mid-way:
// a crash never leaves a stale lock behind.
func lockMigrations(ctx context.Context, path string) (unlock func() error, err error) {
	db, err := sql.Open("sqlite", dsn(path, []string{fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS)},
		url.Values{"_txlock": {"exclusive"}}))
	if err != nil {
		return nil, fmt.Errorf("sqlite migration lock: %w", err)
	}
	db.SetMaxOpenConns(1)
	deadline := time.Now().Add(migrationLockWait)
	for {
		// BEGIN EXCLUSIVE waits busy_timeout for the lock, then fails with SQLITE_BUSY; try
		// again until ctx ends or migrationLockWait is over. The transaction must outlive ctx
		// (database/sql rolls a transaction back when its context ends), hence WithoutCancel.
		tx, err := db.BeginTx(context.WithoutCancel(ctx), nil)
		if err == nil {
			return func() error {
				return errors.Join(tx.Rollback(), db.Close())
			}, nil
		}
		if errorCode(err)&0xff != sqlite3.SQLITE_BUSY || ctx.Err() != nil || time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("sqlite migration lock %s: %w", path, err), ctx.Err(), db.Close())
		}
	}
}

// errorCode returns the SQLite extended result code carried by err, or 0.
func errorCode(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}
