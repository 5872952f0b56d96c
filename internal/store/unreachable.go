package store

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Unreachable reports whether err says the store could not be reached: a connection refused,
// reset or cut mid-query, a failed connect, or a server that is shutting down or starting.
// The HTTP layer answers such a failure with the documented 503 and Retry-After from the
// error alone. Asking the store afterwards (a ping) is not enough on its own: a call that
// failed in the last moments of an outage and pinged just after the database came back read
// as a 500 (1 request in 2,414 of the database-outage fault scenario).
//
// The checks are by behaviour, so this package needs no driver: net and io errors, the
// driver errors that say a retry is safe (pgconn's connect and "conn closed" errors carry
// SafeToRetry), and PostgreSQL's SQLSTATE classes 08 (connection exception) and 57P01–57P03
// (administrator shutdown, crash shutdown, cannot connect now).
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var retry interface{ SafeToRetry() bool }
	if errors.As(err, &retry) && retry.SafeToRetry() {
		return true
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		state := coded.SQLState()
		return strings.HasPrefix(state, "08") || state == "57P01" || state == "57P02" || state == "57P03"
	}
	return false
}
