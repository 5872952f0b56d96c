//go:build !unix

package delivery

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// refusedURL returns a loopback URL at which connections are refused: a closed server's.
// (On Unix the port stays reserved; see refused_unix_test.go.)
func refusedURL(t testing.TB) string {
	t.Helper()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	return closed.URL
}
