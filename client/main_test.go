package client_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"riskapi/internal/contracttest"
)

// TestMain fails the package when a full run leaves an operation of api/openapi.yaml that
// the client covers unexercised: every method must have been called against the real
// service at least once. GET /metrics is the operators' Prometheus endpoint, not the API's,
// and has no method; /mcp speaks the Model Context Protocol, for MCP clients (the client's Do
// serves `riskapi mcp`, which forwards each tool call as its REST request).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		c, err := contracttest.Shared()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		missing := slices.DeleteFunc(c.Unexercised(), func(op string) bool { return op == "GET /metrics" || strings.HasSuffix(op, " /mcp") })
		if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "operations the client never called against the service: %v\n", missing)
			code = 1
		}
	}
	os.Exit(code)
}
