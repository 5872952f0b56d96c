package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"riskapi/client"
	"riskapi/internal/httpapi"
	"riskapi/internal/mcptools"
)

// mcpUsage is `riskapi mcp --help`.
const mcpUsage = `Usage: riskapi mcp

Serves riskapi's products as MCP tools on stdin and stdout (JSON-RPC, one message a line),
for agent hosts that launch tools as processes. Each tool call is forwarded, through the Go
client package, to the deployment at RISKAPI_BASE_URL with the key RISKAPI_API_KEY: the
key's scopes, rate limits, usage and Idempotency-Key apply as to the REST request. Logs go
to stderr. See docs/mcp.md.

Environment:
  RISKAPI_BASE_URL   the deployment's base URL (default ` + client.DefaultBaseURL + `)
  RISKAPI_API_KEY    the API key, sk_… (required)
`

// runMCP is `riskapi mcp`: the tool set (internal/mcptools) over stdio until in ends or ctx
// is cancelled.
func runMCP(ctx context.Context, args []string, getenv func(string) string, in io.Reader, out, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, mcpUsage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("mcp takes no arguments (got %q)", fs.Args())
	}
	key := getenv("RISKAPI_API_KEY")
	if key == "" {
		return usagef("mcp needs RISKAPI_API_KEY (and RISKAPI_BASE_URL unless the service is at %s)", client.DefaultBaseURL)
	}
	opts := []client.Option{client.WithAPIKey(key), client.WithUserAgent("riskapi-mcp/" + buildVersion())}
	if base := getenv("RISKAPI_BASE_URL"); base != "" {
		opts = append(opts, client.WithBaseURL(base))
	}
	c, err := client.New(opts...)
	if err != nil {
		return usagef("%v", err)
	}
	server, err := mcptools.NewServer(mcptools.ClientBackend{Client: c}, buildVersion())
	if err != nil {
		return err
	}
	// A line holds a whole request: allow the API's default body limit (64 MiB).
	err = server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}, MaxLineLength: httpapi.DefaultMaxBodyBytes})
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF)) {
		return nil // the host closed stdin or the process was told to stop: a normal end
	}
	return err
}

// nopWriteCloser leaves stdout open when the transport closes: run's caller owns it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
