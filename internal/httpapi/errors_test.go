package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
)

// TestErrorsAfterTheClientLeftAre503 pins the mapping of failures that follow a cancelled
// request: a store driver reports an interrupted query in its own words (not as
// context.Canceled), and that must not be answered or logged as an internal error.
func TestErrorsAfterTheClientLeftAre503(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{context.Canceled, errors.New("interrupted (9)")} {
		if got := apiError(ctx, err); got.Code != CodeServiceUnavailable {
			t.Errorf("%v after the client left: %s, want %s", err, got.Code, CodeServiceUnavailable)
		}
	}
	if got := apiError(context.Background(), errors.New("disk full")); got.Code != CodeInternal {
		t.Errorf("a failure of a live request: %s, want %s", got.Code, CodeInternal)
	}
}

// TestFailuresDuringAStoreOutageAre503: an error a store outage caused (a connection dropped
// mid-transaction) is the documented 503 with Retry-After, found by pinging the store; the same
// error with the store reachable is an internal error.
func TestFailuresDuringAStoreOutageAre503(t *testing.T) {
	down := true
	info := &requestInfo{log: slog.New(slog.DiscardHandler), storeDown: func(context.Context) bool { return down }}
	ctx := withRequestInfo(context.Background(), info)
	got := apiError(ctx, errors.New("conn closed"))
	if got.Code != CodeServiceUnavailable || got.retryAfter != 1 {
		t.Fatalf("during an outage: %s (Retry-After %d), want 503 with Retry-After 1", got.Code, got.retryAfter)
	}
	down = false
	if got := apiError(ctx, errors.New("conn closed")); got.Code != CodeInternal {
		t.Fatalf("with the store up: %s, want %s", got.Code, CodeInternal)
	}
}

// TestOutageErrorsAre503AfterTheStoreCameBack: an error that itself says the store could not
// be reached is the outage's 503 even when the store answers the ping that follows, as it does
// for a call that failed in the last moment of an outage (the race the database-outage fault
// scenario hit once in 2,414 requests).
func TestOutageErrorsAre503AfterTheStoreCameBack(t *testing.T) {
	info := &requestInfo{log: slog.New(slog.DiscardHandler), storeDown: func(context.Context) bool { return false }}
	ctx := withRequestInfo(context.Background(), info)
	refused := fmt.Errorf("store: insert analysis: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	for _, err := range []error{refused, fmt.Errorf("read: %w", io.ErrUnexpectedEOF)} {
		got := apiError(ctx, err)
		if got.Code != CodeServiceUnavailable || got.retryAfter != 1 {
			t.Errorf("%v: %s (Retry-After %d), want 503 with Retry-After 1", err, got.Code, got.retryAfter)
		}
	}
}
