package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"riskapi/internal/mcptools"
	"riskapi/internal/store/sqlite/sqlitetest"
)

// stdioMCP runs `riskapi mcp` in-process with pipes for stdin and stdout, forwarding to
// baseURL with key, and connects the official Go SDK's client to it.
func stdioMCP(t *testing.T, baseURL, key string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	e := env{"RISKAPI_BASE_URL": baseURL, "RISKAPI_API_KEY": key}
	go func() {
		done <- runMCP(ctx, nil, e.get, inR, outW, &stderr)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "riskapi-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect to riskapi mcp: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("riskapi mcp: %v\n%s", err, stderr.String())
		}
	})
	return cs
}

// call sends one tool call and returns the result and its structured content.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: structured content %s", name, raw)
	}
	return res, m
}

var accountIDPattern = regexp.MustCompile(`acct_[0-9A-Za-z]+`)

// `riskapi mcp` on stdio serves the tool set through the Go client: its answers are the
// REST endpoint's, a validation error is an error result with the error object, and a key
// without the scope, or no valid key, is a JSON-RPC error.
func TestMCPOnStdioForwardsToTheService(t *testing.T) {
	t.Parallel()
	e := env{"RISKAPI_DATA_DIR": sqlitetest.Dir(t)}
	svc := startServe(t, e)
	key := testKeyPattern.FindString(svc.stdout.String())
	cs := stdioMCP(t, svc.url, key)

	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 7 {
		t.Fatalf("tools/list: %v, %d tools", err, len(list.Tools))
	}

	status, gen := svc.call(t, http.MethodPost, "/v1/test/generate", "Bearer "+key,
		strings.NewReader(`{"product": "meridian", "scenario": "clean", "count": 1, "seed": 9}`))
	wantStatus(t, "generate", status, gen, http.StatusOK, "")
	req := dig(gen, "data.items").([]any)[0].(map[string]any)["request"].(map[string]any)
	res, got := call(t, cs, "meridian_quality_check", req)
	if res.IsError {
		t.Fatalf("isError: %v", got)
	}
	body, _ := json.Marshal(req)
	status, rest := svc.call(t, http.MethodPost, "/v1/meridian/quality-check", "Bearer "+key, bytes.NewReader(body))
	wantStatus(t, "REST quality check", status, rest, http.StatusOK, "")
	want := rest["data"].(map[string]any)
	for _, m := range []map[string]any{got, want} {
		delete(m, "id")
		delete(m, "created_at")
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tool and REST differ:\n tool: %v\n REST: %v", got, want)
	}

	res, got = call(t, cs, "drift_analyze", map[string]any{"agent_id": "a b"})
	if !res.IsError || dig(got, "error.code") != "INVALID_AGENT_ID" || dig(got, "error.type") != "validation_error" {
		t.Fatalf("invalid agent_id: isError %v, %v", res.IsError, got)
	}

	// A restricted key without convergence:write.
	status, account := svc.call(t, http.MethodGet, "/v1/account", "Bearer "+key, nil)
	wantStatus(t, "account", status, account, http.StatusOK, "")
	out := cli(t, e, "keys", "create", "--account", accountIDPattern.FindString(dig(account, "data.id").(string)),
		"--type", "restricted", "--mode", "test", "--scopes", "meridian:read")
	restricted := regexp.MustCompile(`sk_[a-z]+_[0-9A-Za-z]+`).FindString(out)
	if restricted == "" {
		t.Fatalf("keys create printed no key: %s", out)
	}
	for _, c := range []struct {
		key  string
		code int64
	}{{restricted, mcptools.CodeForbidden}, {"sk_test_notakey", mcptools.CodeUnauthorized}} {
		refused := stdioMCP(t, svc.url, c.key)
		_, err := refused.CallTool(context.Background(), &mcp.CallToolParams{Name: "convergence_analyze_market", Arguments: map[string]any{"market_id": "m"}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != c.code {
			t.Fatalf("key %.12s…: %v, want JSON-RPC error %d", c.key, err, c.code)
		}
	}
}

// Without a key `riskapi mcp` says what it needs, as a usage error.
func TestMCPNeedsAnAPIKey(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"riskapi", "mcp"}, env{}.get, io.Discard, &stderr)
	var usage *usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "RISKAPI_API_KEY") {
		t.Fatalf("err = %v", err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"riskapi", "mcp", "--help"}, env{}.get, &out, &out); err != nil || !strings.Contains(out.String(), "RISKAPI_BASE_URL") {
		t.Fatalf("--help: %v %s", err, out.String())
	}
}
