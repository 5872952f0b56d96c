// Package pgtest gives a test a PostgreSQL database of its own: created empty under a random
// name on the server named by RISKAPI_TEST_POSTGRES_URL and dropped when the test ends, so
// tests and concurrent test runs never see each other's data.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnvURL names the environment variable holding the admin URL of the test server, for example
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. Its role must be allowed to
// create and drop databases.
const EnvURL = "RISKAPI_TEST_POSTGRES_URL"

// adminTimeout bounds each CREATE or DROP DATABASE, including connecting; creating a database
// copies template1 and takes well under a second on an idle server.
const adminTimeout = 30 * time.Second

// NewDatabase creates an empty database named riskapi_test_<16 hex digits> and returns its URL
// (the admin URL with the database name replaced). The database is dropped, with any
// connection still open to it, when t and its subtests end.
//
// If EnvURL is unset the test is skipped: PostgreSQL tests are opt-in locally. If it is set,
// any failure to reach the server or create the database fails the test rather than skipping
// it, so a CI job that sets it cannot pass without running the tests.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvURL)
	if admin == "" {
		t.Skipf("%s is not set; skipping PostgreSQL test (set it to an admin URL such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)", EnvURL)
	}
	return newDatabase(t, admin, "")
}

// newDatabase creates riskapi_test_<16 hex digits>, a copy of template (template1 when ""),
// dropped when t ends, and returns its URL.
func newDatabase(t testing.TB, admin, template string) string {
	t.Helper()
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// url.Parse errors quote the input, password included; name the variable instead.
		t.Fatalf("%s must be a postgres:// URL", EnvURL)
	}
	// Lower-case letters, digits and "_" only, so the name needs no quoting.
	name := "riskapi_test_" + randomHex()
	if err := createDatabase(admin, name, template); err != nil {
		t.Fatalf("pgtest: create database %s on %s: %v", name, u.Redacted(), err)
	}
	t.Cleanup(func() {
		if err := adminExec(admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// randomHex returns 16 random hexadecimal digits.
func randomHex() string {
	random := make([]byte, 8)
	_, _ = rand.Read(random) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(random)
}

// createDatabase runs CREATE DATABASE name, a copy of template (template1 when ""),
// retrying while another session is connected to the template (SQLSTATE 55006), which makes
// a concurrent CREATE DATABASE fail at once rather than wait: up to 20 tries 100 ms apart.
func createDatabase(admin, name, template string) error {
	statement := "CREATE DATABASE " + name
	if template != "" {
		statement += " TEMPLATE " + template
	}
	var err error
	for range 20 {
		err = adminExec(admin, statement)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55006" {
			return err
		}
		// The wait is on the PostgreSQL server: another session (often another test
		// binary's CREATE DATABASE) holds template1, and the server announces nothing
		// when it lets go, so the statement is tried again after a pause.
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// adminExec runs one statement on a new connection to the admin URL. CREATE and DROP DATABASE
// cannot run inside a transaction, which a plain Exec on a connection is not.
func adminExec(admin, statement string) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, statement)
	return errors.Join(err, conn.Close(ctx))
}

// NewMigratedDatabase is NewDatabase with the store's migrations already applied: the
// database is a copy (CREATE DATABASE … TEMPLATE) of one that the first call of the test
// binary created and migrated with migrate (postgres.Migrate, which this package cannot
// import: the store's own tests import this package). Copying takes about a tenth of a second;
// migrating a new database took 1.0–1.2 s (thirteen migrations and River's, each with its
// catalog changes and commit), and the suites make a few hundred databases. Tests of the
// migrations themselves (a fresh database, an older schema, instances migrating together)
// use NewDatabase.
//
// The template, riskapi_test_tpl_<unix time>_<8 hex digits>, stays on the server after the
// test binary ends (no test owns it); each binary that makes one first drops those older than
// templateMaxAge, so at most the templates of the last hours' runs remain.
func NewMigratedDatabase(t testing.TB, migrate func(ctx context.Context, url string) (int64, error)) string {
	t.Helper()
	admin := os.Getenv(EnvURL)
	if admin == "" {
		t.Skipf("%s is not set; skipping PostgreSQL test (set it to an admin URL such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)", EnvURL)
	}
	name, err := migratedTemplate(admin, migrate)
	if err != nil {
		t.Fatalf("pgtest: the migrated template database: %v", err)
	}
	return newDatabase(t, admin, name)
}

// templateMaxAge is how long a template database outlives the test binary that made it.
const templateMaxAge = 6 * time.Hour

const templatePrefix = "riskapi_test_tpl_"

// template is the migrated template database of this test binary, made by its first use. The
// admin URL comes from the environment, the same for every test of the binary.
var template struct {
	once sync.Once
	name string
	err  error
}

// migratedTemplate returns the template's name, making and migrating it on the first call; a
// failure is kept too, so every test reports the same cause.
func migratedTemplate(admin string, migrate func(context.Context, string) (int64, error)) (string, error) {
	template.once.Do(func() { template.name, template.err = makeTemplate(admin, migrate) })
	return template.name, template.err
}

// makeTemplate drops stale templates, then creates and migrates a new one.
func makeTemplate(admin string, migrate func(context.Context, string) (int64, error)) (string, error) {
	if err := dropStaleTemplates(admin, time.Now().Add(-templateMaxAge)); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s%d_%s", templatePrefix, time.Now().Unix(), randomHex())
	if err := createDatabase(admin, name, ""); err != nil {
		return "", err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// postgres.Migrate closes its connections before it returns: CREATE DATABASE … TEMPLATE
	// refuses a source with sessions connected.
	if _, err := migrate(ctx, u.String()); err != nil {
		return "", errors.Join(err, adminExec(admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"))
	}
	return name, nil
}

// dropStaleTemplates drops the template databases made before cutoff (by the time in their
// names), each with any session still connected to it.
func dropStaleTemplates(admin string, cutoff time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, templatePrefix)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, name := range names {
		made, _, _ := strings.Cut(strings.TrimPrefix(name, templatePrefix), "_")
		if unix, err := strconv.ParseInt(made, 10, 64); err != nil || time.Unix(unix, 0).After(cutoff) {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return nil
}
