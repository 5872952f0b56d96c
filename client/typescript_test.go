package client_test

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestTypeScriptClient runs the compiled test-mode script of clients/typescript (a client
// generated with openapi-typescript from the served document, calling through openapi-fetch)
// with node against the real service, through a reverse proxy that checks every request and
// every response against api/openapi.yaml exactly as the Go client's are checked: a body,
// parameter or answer of the TypeScript client that the document does not allow fails the
// test. .ci/run builds the script and sets RISKAPI_TEST_TYPESCRIPT_SCRIPT to it; with it set
// the test fails, never skips, when node or the script is missing.
func TestTypeScriptClient(t *testing.T) {
	script := os.Getenv("RISKAPI_TEST_TYPESCRIPT_SCRIPT")
	if script == "" {
		t.Skip("RISKAPI_TEST_TYPESCRIPT_SCRIPT is not set (.ci/run sets it to clients/typescript's compiled script)")
	}
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("RISKAPI_TEST_TYPESCRIPT_SCRIPT: %v", err)
	}
	s := startService(t)
	target, err := url.Parse(s.http.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = s.checked()
	front := httptest.NewServer(proxy) // 127.0.0.1
	defer front.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	// An IP literal of a public host: registration needs no DNS, and this service runs no
	// dispatcher, so nothing is ever sent to it.
	cmd.Env = append(os.Environ(), "RISKAPI_URL="+front.URL, "RISKAPI_KEY="+s.testKey,
		"RISKAPI_WEBHOOK_URL=https://8.8.8.8/hook")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	t.Logf("node %s:\n%s", script, out)
}
