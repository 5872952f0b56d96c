package httpapi

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"riskapi/internal/contracttest"
)

// TestMain fails the package when a full run (no -run, -skip or -fuzz) leaves an operation of api/openapi.yaml
// unexercised: every documented endpoint must be seen by at least one HTTP test.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.fuzz").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		c, err := contracttest.Shared()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if missing := c.Unexercised(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "documented operations no test exercised: %v\n", missing)
			code = 1
		}
	}
	os.Exit(code)
}
