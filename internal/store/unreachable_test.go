package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"riskapi/internal/store"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestUnreachableKnowsTheDriversOutageErrors takes the errors the PostgreSQL driver really
// returns when the server is cut off (a refused connect, a connection closed during the
// handshake, as the fault scenarios' proxy does) and the SQLSTATEs of a shutting-down server,
// and checks that each reads as unreachable while errors of the service's own do not.
func TestUnreachableKnowsTheDriversOutageErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := closed.Addr().String()
	closed.Close() // nothing listens there now: connection refused

	cutting, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cutting.Close()
	go func() {
		for {
			c, err := cutting.Accept()
			if err != nil {
				return
			}
			c.Close() // accepted and dropped, as a partition drops it
		}
	}()

	for _, addr := range []string{refusedAddr, cutting.Addr().String()} {
		_, err := pgconn.Connect(ctx, "postgres://u@"+addr+"/db?sslmode=disable&connect_timeout=5")
		if err == nil {
			t.Fatalf("connect to %s succeeded", addr)
		}
		if !store.Unreachable(err) || !store.Unreachable(fmt.Errorf("store: insert: %w", err)) {
			t.Errorf("connect to %s: %v (%T) is not read as unreachable", addr, err, err)
		}
	}
	for _, state := range []string{"08006", "08003", "57P01", "57P03"} {
		if !store.Unreachable(&pgconn.PgError{Code: state}) {
			t.Errorf("SQLSTATE %s is not read as unreachable", state)
		}
	}
	for _, err := range []error{nil, errors.New("disk full"), store.ErrConflict, &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "57014"}} {
		if store.Unreachable(err) {
			t.Errorf("%v is read as unreachable", err)
		}
	}
}
