// Package sqlstore implements store.Store once, on database/sql, for both the embedded SQLite
// store and PostgreSQL. The few differences between the two (placeholders, how a driver reports
// a constraint violation, how Bootstrap serialises) are carried by a Dialect.
//
// Schema conventions shared by both migrations: times are BIGINT Unix milliseconds UTC, so both
// databases compare and order them identically and keyset pagination compares plain integers;
// scopes are one TEXT column of space-separated scopes; custom limits are a TEXT JSON object;
// key hashes are lower-case hex TEXT under a UNIQUE index.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"riskapi/internal/jobs"
	"riskapi/internal/store"
	"riskapi/internal/store/keyring"
)

// Dialect describes what differs between the databases sqlstore runs on.
type Dialect struct {
	// Name identifies the database in messages ("sqlite", "postgres").
	Name string
	// NumberedPlaceholders makes the store rewrite the ? placeholders its queries are written
	// with into $1, $2, … (PostgreSQL). The queries hold no string literal containing "?", so
	// the rewrite is a plain scan.
	NumberedPlaceholders bool
	// IsUniqueViolation reports whether err is a primary-key or unique-index violation.
	IsUniqueViolation func(err error) bool
	// IsForeignKeyViolation reports whether err is a foreign-key violation.
	IsForeignKeyViolation func(err error) bool
	// LockBootstrap, when set, runs first inside Bootstrap's transaction and must block until
	// every other Bootstrap transaction on the same database has ended, so that the "no account
	// exists" check and the inserts are atomic (PostgreSQL: a transaction-level advisory lock).
	// Leave it nil when beginning a write transaction already excludes every other writer
	// (SQLite with BEGIN IMMEDIATE).
	LockBootstrap func(ctx context.Context, tx *sql.Tx) error
	// LockKey, when set, runs inside a transaction and blocks until every other transaction
	// that locked the same key has ended; the lock is held until this transaction ends. The
	// store takes it where a check and a write must be atomic across processes: the endpoint
	// limit of an account and mode, and ClaimDeliveries' per-endpoint cap (PostgreSQL: a
	// transaction-level advisory lock on a hash of key). Leave it nil when beginning a write
	// transaction already excludes every other writer (SQLite with BEGIN IMMEDIATE).
	LockKey func(ctx context.Context, tx *sql.Tx, key string) error
	// ArrayParams makes the store pass a batch's rows as one array parameter a column and
	// unnest them (PostgreSQL, where binding thousands of scalar parameters cost more than
	// the insert); without it, batches are multi-row VALUES lists.
	ArrayParams bool
	// RowLocks makes the store add row-locking clauses (FOR UPDATE, FOR KEY SHARE,
	// SKIP LOCKED) to the selects of its write transactions (PostgreSQL). SQLite has no such
	// clauses and needs none: its single writer excludes every other writer.
	RowLocks bool
	// RelaxedCommit, when set, is an SQL expression that, evaluated in a transaction, makes
	// it commit without waiting for its log to reach the disk (PostgreSQL:
	// set_config('synchronous_commit', 'off', true), SET LOCAL as a function, so that it
	// rides on a query the transaction makes anyway rather than costing a round trip of its
	// own). The store evaluates it only in the transactions that record a delivery attempt
	// without taking a lease, whose loss in a database crash means a delivery sent again
	// (see RecordAttempt); never where a crash would lose what a client was told is stored,
	// nor a lease. Leave it empty where a commit is already cheap (SQLite's write-ahead log
	// in synchronous=NORMAL mode).
	RelaxedCommit string
	// WritableWith: a WITH clause may hold an UPDATE … RETURNING whose rows the main query
	// joins (PostgreSQL), saving a round trip over reading the updated rows back. SQLite
	// allows only SELECT in WITH.
	WritableWith bool
	// Scrub, when set, runs through the writer after RotateWebhookSecrets has rewritten
	// secrets, and removes the old forms of rewritten rows from the database files where the
	// database allows it; it reports whether it could (SQLite: checkpoint and truncate the
	// write-ahead log). Leave it nil where the database keeps old row versions until its own
	// vacuuming (PostgreSQL).
	Scrub func(ctx context.Context, db *sql.DB) (bool, error)
	// Jobs returns River's driver over the writer pool: the background jobs live in the same
	// database, inserted in the store's own transactions.
	Jobs func(writer *sql.DB) jobs.Driver
}

// Store is the database/sql implementation of store.Store. It owns its connection pools.
type Store struct {
	// writer takes every write and every read that must see the latest committed state inside
	// a write transaction. For SQLite it is a single connection, the one writer SQLite allows.
	writer *sql.DB
	// reader serves plain reads; for PostgreSQL it is the same pool as writer.
	reader  *sql.DB
	dialect Dialect
	// secrets encrypts webhook secrets at rest; nil stores them in plaintext (see secrets.go).
	secrets *keyring.Ring
	// jobDriver is River's driver over the writer; inserter inserts jobs in the store's
	// transactions (background simulations' chunks).
	jobDriver jobs.Driver
	inserter  *jobs.Client
	// driftInsert is the prepared INSERT of a full statement of Drift events
	// (driftInsertStmt), made on first use.
	driftInsert struct {
		mu   sync.Mutex
		stmt *sql.Stmt
	}
	// background is the work Go started, stopped by Close before the pools close.
	background struct {
		ctx      context.Context
		stop     context.CancelFunc
		done     sync.WaitGroup
		cleanups []func() error
	}
}

// Option configures a Store in New.
type Option func(*Store)

var _ store.Store = (*Store)(nil)

// New returns a Store that writes through writer and reads through reader (pass the same
// *sql.DB twice when the database has no single-writer constraint). The Store takes ownership
// of both: Close closes them. The schema, River's included, must already be migrated.
func New(writer, reader *sql.DB, d Dialect, opts ...Option) (*Store, error) {
	if d.IsUniqueViolation == nil {
		d.IsUniqueViolation = func(error) bool { return false }
	}
	if d.IsForeignKeyViolation == nil {
		d.IsForeignKeyViolation = func(error) bool { return false }
	}
	if d.Jobs == nil {
		return nil, fmt.Errorf("store %s: the dialect has no job driver", d.Name)
	}
	s := &Store{writer: writer, reader: reader, dialect: d, jobDriver: d.Jobs(writer)}
	inserter, err := jobs.NewInserter(s.jobDriver)
	if err != nil {
		return nil, err
	}
	s.inserter = inserter
	for _, opt := range opts {
		opt(s)
	}
	return s, nil
}

// JobDriver is River's driver over the store's database, for the process's job worker.
func (s *Store) JobDriver() jobs.Driver { return s.jobDriver }

// Ping checks that both pools answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.writer.PingContext(ctx); err != nil {
		return fmt.Errorf("store ping %s: %w", s.dialect.Name, err)
	}
	if s.reader != s.writer {
		if err := s.reader.PingContext(ctx); err != nil {
			return fmt.Errorf("store ping %s reader: %w", s.dialect.Name, err)
		}
	}
	return nil
}

// Go runs fn beside the store until Close, which cancels fn's context, waits for it to
// return and then calls cleanup (when set) before closing the pools: work the database needs
// done in the background, such as SQLite's checkpoints. Call it before the store is shared.
func (s *Store) Go(fn func(ctx context.Context), cleanup func() error) {
	if s.background.stop == nil {
		var ctx context.Context
		ctx, s.background.stop = context.WithCancel(context.Background())
		s.background.ctx = ctx
	}
	if cleanup != nil {
		s.background.cleanups = append(s.background.cleanups, cleanup)
	}
	s.background.done.Add(1)
	go func() {
		defer s.background.done.Done()
		fn(s.background.ctx)
	}()
}

// Close stops the background work (Go) and closes both pools.
func (s *Store) Close() error {
	var err error
	if s.background.stop != nil {
		s.background.stop()
		s.background.done.Wait()
		for _, c := range s.background.cleanups {
			err = errors.Join(err, c())
		}
	}
	s.driftInsert.mu.Lock()
	if s.driftInsert.stmt != nil {
		err = s.driftInsert.stmt.Close()
	}
	s.driftInsert.mu.Unlock()
	err = errors.Join(err, s.writer.Close())
	if s.reader != s.writer {
		err = errors.Join(err, s.reader.Close())
	}
	if err != nil {
		return fmt.Errorf("store close %s: %w", s.dialect.Name, err)
	}
	return nil
}

// execer is what the insert helpers need from either a pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// rowQuerier is what the single-row readers need from either a pool or a transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// CreateAccount inserts a; ErrConflict if its id exists.
func (s *Store) CreateAccount(ctx context.Context, a store.Account) error {
	if err := s.insertAccount(ctx, s.writer, a); err != nil {
		return fmt.Errorf("store create account: %w", err)
	}
	return nil
}

// Account returns the account with that id, or ErrNotFound.
func (s *Store) Account(ctx context.Context, id string) (store.Account, error) {
	a, err := s.account(ctx, s.reader, id)
	if err != nil {
		return store.Account{}, fmt.Errorf("store account %s: %w", id, err)
	}
	return a, nil
}

// Bootstrap inserts a and k in one transaction if the store holds no account yet, and reports
// whether it did.
func (s *Store) Bootstrap(ctx context.Context, a store.Account, k store.APIKey) (inserted bool, err error) {
	var opts *sql.TxOptions
	if s.dialect.LockBootstrap != nil {
		// Under READ COMMITTED every statement takes a fresh snapshot, so the check below sees
		// an account committed by the Bootstrap that held the lock before us. REPEATABLE READ
		// would take the snapshot at the lock statement, before the wait, and insert twice.
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	err = s.inTx(ctx, opts, func(tx *sql.Tx) error {
		if s.dialect.LockBootstrap != nil {
			if err := s.dialect.LockBootstrap(ctx, tx); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM accounts)`).Scan(&exists); err != nil {
			return fmt.Errorf("check accounts: %w", err)
		}
		if exists {
			return nil
		}
		if err := s.insertAccount(ctx, tx, a); err != nil {
			return err
		}
		if err := s.insertAPIKey(ctx, tx, k); err != nil {
			return err
		}
		inserted = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store bootstrap: %w", err)
	}
	return inserted, nil
}

// CreateAPIKey inserts k; ErrNotFound if its account does not exist, ErrConflict if its id or
// hash exists.
func (s *Store) CreateAPIKey(ctx context.Context, k store.APIKey) error {
	if err := s.insertAPIKey(ctx, s.writer, k); err != nil {
		return fmt.Errorf("store create api key: %w", err)
	}
	return nil
}

// APIKey returns the key with that id, or ErrNotFound.
func (s *Store) APIKey(ctx context.Context, id string) (store.APIKey, error) {
	k, err := s.apiKey(ctx, s.reader, "id", id)
	if err != nil {
		return store.APIKey{}, fmt.Errorf("store api key %s: %w", id, err)
	}
	return k, nil
}

// APIKeyByHash returns the key with that hash, revoked or not, or ErrNotFound.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (store.APIKey, error) {
	k, err := s.apiKey(ctx, s.reader, "hash", hash)
	if err != nil {
		// The hash stays out of the message: it identifies a secret, and failed lookups of
		// presented keys are routine and end up in logs.
		return store.APIKey{}, fmt.Errorf("store api key by hash: %w", err)
	}
	return k, nil
}

// ListAPIKeys returns a page of an account's keys, newest first; an unknown account has none.
// The order is the one of the api_keys_account_created index, so the query reads the index
// from the cursor on and sorts nothing.
func (s *Store) ListAPIKeys(ctx context.Context, accountID string, q store.PageQuery) (store.Page[store.APIKey], error) {
	page, err := listPage(ctx, s, "api_keys", keyColumns, "account_id = ?", []any{accountID}, q, scanAPIKey)
	if err != nil {
		return store.Page[store.APIKey]{}, fmt.Errorf("store list api keys: %w", err)
	}
	return page, nil
}

// RevokeAPIKey sets the key's revoked_at to at unless it is already set, and returns the key as
// stored afterwards; ErrNotFound if absent. The update and the read share one transaction, so
// the key returned is the one the update left.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, at time.Time) (store.APIKey, error) {
	var k store.APIKey
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE api_keys SET revoked_at = ?
			WHERE id = ? AND revoked_at IS NULL`), at.UnixMilli(), id); err != nil {
			return err
		}
		var err error
		k, err = s.apiKey(ctx, tx, "id", id)
		return err
	})
	if err != nil {
		return store.APIKey{}, fmt.Errorf("store revoke api key %s: %w", id, err)
	}
	return k, nil
}

// TouchAPIKeys records last-use times in one transaction. A time not later than the stored one
// is ignored and unknown ids match no row. Ids are updated in sorted order so that two
// instances flushing overlapping batches into one PostgreSQL database lock rows in the same
// order and cannot deadlock.
func (s *Store) TouchAPIKeys(ctx context.Context, lastUsed map[string]time.Time) error {
	if len(lastUsed) == 0 {
		return nil
	}
	ids := make([]string, 0, len(lastUsed))
	for id := range lastUsed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, s.rebind(`UPDATE api_keys SET last_used_at = ?
			WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, id := range ids {
			ms := lastUsed[id].UnixMilli()
			if _, err := stmt.ExecContext(ctx, ms, id, ms); err != nil {
				return fmt.Errorf("key %s: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store touch api keys: %w", err)
	}
	return nil
}

// inTx runs fn in a transaction on the writer, committing if fn returns nil. opts may be nil.
func (s *Store) inTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		// The rollback error adds nothing: the transaction is abandoned either way.
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (s *Store) insertAccount(ctx context.Context, db execer, a store.Account) error {
	limits := "{}"
	if len(a.CustomLimits) > 0 {
		b, err := json.Marshal(a.CustomLimits)
		if err != nil {
			return fmt.Errorf("account %s: encode custom limits: %w", a.ID, err)
		}
		limits = string(b)
	}
	_, err := db.ExecContext(ctx, s.rebind(`INSERT INTO accounts
		(id, name, email, plan, region, custom_limits, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		a.ID, a.Name, a.Email, string(a.Plan), a.Region, limits, a.CreatedAt.UnixMilli())
	if err != nil {
		return s.constraintError("account "+a.ID, err)
	}
	return nil
}

// account reads the account with that id; callers add the context to errors.
func (s *Store) account(ctx context.Context, db rowQuerier, id string) (store.Account, error) {
	var (
		a       store.Account
		plan    string
		limits  string
		created int64
	)
	err := db.QueryRowContext(ctx, s.rebind(`SELECT id, name, email, plan, region, custom_limits, created_at
		FROM accounts WHERE id = ?`), id).
		Scan(&a.ID, &a.Name, &a.Email, &plan, &a.Region, &limits, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Account{}, store.ErrNotFound
	}
	if err != nil {
		return store.Account{}, err
	}
	a.Plan = store.Plan(plan)
	a.CreatedAt = fromMillis(created)
	if limits != "" && limits != "{}" {
		if err := json.Unmarshal([]byte(limits), &a.CustomLimits); err != nil {
			return store.Account{}, fmt.Errorf("decode custom limits: %w", err)
		}
	}
	return a, nil
}

// keyColumns is the column list scanAPIKey reads, in its order.
const keyColumns = `id, account_id, type, mode, name, scopes, rate_limit, hash, prefix, last4,
	created_at, last_used_at, revoked_at, expires_at`

func (s *Store) insertAPIKey(ctx context.Context, db execer, k store.APIKey) error {
	for _, scope := range k.Scopes {
		// Scopes are stored space-separated, so a scope that is empty or holds whitespace
		// would come back as a different list.
		if scope == "" || strings.ContainsAny(scope, " \t\r\n") {
			return fmt.Errorf("api key %s: scope %q is empty or contains whitespace", k.ID, scope)
		}
	}
	_, err := db.ExecContext(ctx, s.rebind(`INSERT INTO api_keys (`+keyColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		k.ID, k.AccountID, string(k.Type), string(k.Mode), k.Name, strings.Join(k.Scopes, " "),
		k.RateLimit, k.Hash, k.Prefix, k.Last4, k.CreatedAt.UnixMilli(),
		nullMillis(k.LastUsedAt), nullMillis(k.RevokedAt), nullMillis(k.ExpiresAt))
	if err != nil {
		return s.constraintError("api key "+k.ID, err)
	}
	return nil
}

// apiKey reads the key whose column (a constant: "id" or "hash") equals value; callers add
// the context to errors.
func (s *Store) apiKey(ctx context.Context, db rowQuerier, column, value string) (store.APIKey, error) {
	row := db.QueryRowContext(ctx, s.rebind(`SELECT `+keyColumns+` FROM api_keys WHERE `+column+` = ?`), value)
	k, err := scanAPIKey(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.APIKey{}, store.ErrNotFound
	}
	return k, err
}

// scanner is satisfied by *sql.Row and *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

func scanAPIKey(row scanner) (store.APIKey, error) {
	var (
		k                          store.APIKey
		keyType, mode, scopes      string
		created                    int64
		lastUsed, revoked, expires sql.NullInt64
	)
	err := row.Scan(&k.ID, &k.AccountID, &keyType, &mode, &k.Name, &scopes, &k.RateLimit,
		&k.Hash, &k.Prefix, &k.Last4, &created, &lastUsed, &revoked, &expires)
	if err != nil {
		return store.APIKey{}, err
	}
	k.Type = store.KeyType(keyType)
	k.Mode = store.Mode(mode)
	if scopes != "" {
		k.Scopes = strings.Split(scopes, " ")
	}
	k.CreatedAt = fromMillis(created)
	k.LastUsedAt = fromNullMillis(lastUsed)
	k.RevokedAt = fromNullMillis(revoked)
	k.ExpiresAt = fromNullMillis(expires)
	return k, nil
}

// constraintError maps a driver's constraint violation on an insert to the store's errors;
// the driver's message stays in the text (it names the constraint) but not in the chain, so
// callers match on store errors only.
func (s *Store) constraintError(what string, err error) error {
	switch {
	case s.dialect.IsUniqueViolation(err):
		return fmt.Errorf("%s: %w (%v)", what, store.ErrConflict, err)
	case s.dialect.IsForeignKeyViolation(err):
		return fmt.Errorf("%s: account: %w (%v)", what, store.ErrNotFound, err)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// rowLock returns clause (such as " FOR UPDATE") when the dialect locks rows, else "".
func (s *Store) rowLock(clause string) string {
	if !s.dialect.RowLocks {
		return ""
	}
	return clause
}

// lockKey takes the dialect's transaction-level lock on key, if it has one.
func (s *Store) lockKey(ctx context.Context, tx *sql.Tx, key string) error {
	if s.dialect.LockKey == nil {
		return nil
	}
	if err := s.dialect.LockKey(ctx, tx, key); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	return nil
}

// lockedTxOptions are the options of a transaction that takes lockKey before it checks what
// it is about to change. Under READ COMMITTED every statement takes a fresh snapshot, so the
// statements after the lock see what the previous holder committed; REPEATABLE READ would
// take the snapshot before the wait. nil when the dialect has no LockKey (SQLite, whose
// BEGIN IMMEDIATE serialises instead).
func (s *Store) lockedTxOptions() *sql.TxOptions {
	if s.dialect.LockKey == nil {
		return nil
	}
	return &sql.TxOptions{Isolation: sql.LevelReadCommitted}
}

// rebind rewrites ? placeholders into $1, $2, … when the dialect numbers them.
func (s *Store) rebind(query string) string {
	if !s.dialect.NumberedPlaceholders || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func nullMillis(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromNullMillis(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMillis(n.Int64)
	return &t
}
