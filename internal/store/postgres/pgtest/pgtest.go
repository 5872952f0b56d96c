// Package pgtest gives a test a PostgreSQL database of its own: created empty under a random
// name on the server named by RISKAPI_TEST_POSTGRES_URL and dropped when the test ends, so
// tests and concurrent test runs never see each other's data.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
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
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// url.Parse errors quote the input, password included; name the variable instead.
		t.Fatalf("%s must be a postgres:// URL", EnvURL)
	}
	random := make([]byte, 8)
	if _, err := rand.Read(random); err != nil {
		t.Fatalf("pgtest: random database name: %v", err)
	}
	// Lower-case letters, digits and "_" only, so the name needs no quoting.
	name := "riskapi_test_" + hex.EncodeToString(random)

	if err := createDatabase(admin, name); err != nil {
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

// createDatabase runs CREATE DATABASE, retrying while another session is connected to
// template1 (SQLSTATE 55006), which makes a concurrent CREATE DATABASE fail at once rather
// than wait: up to 20 tries 100 ms apart.
func createDatabase(admin, name string) error {
	var err error
	for range 20 {
		err = adminExec(admin, "CREATE DATABASE "+name)
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
