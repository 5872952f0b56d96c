package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"riskapi/internal/auth"
	"riskapi/internal/mcptools"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// mcpTransport is the MCP client's HTTP transport in these tests: it sends the key and
// checks every answer it can read whole (not the GET event stream) against
// api/openapi.yaml, and records the statuses.
type mcpTransport struct {
	b        *bundle
	key      string
	mu       sync.Mutex
	statuses []int
}

func (t *mcpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+t.key)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.statuses = append(t.statuses, res.StatusCode)
	t.mu.Unlock()
	if req.Method == http.MethodGet && res.StatusCode == http.StatusOK {
		return res, nil // the session's stream stays open
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	t.b.contract.Check(t.b.t, req, res.StatusCode, res.Header, raw)
	res.Body = io.NopCloser(bytes.NewReader(raw))
	return res, nil
}

// connectMCP opens an MCP session at /mcp with key through the official Go SDK.
func (b *bundle) connectMCP(t *testing.T, key string) (*mcp.ClientSession, *mcpTransport) {
	t.Helper()
	tr := &mcpTransport{b: b, key: key}
	c := mcp.NewClient(&mcp.Implementation{Name: "riskapi-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: b.http.URL + "/mcp", HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, tr
}

// callTool calls a tool with arguments given as JSON.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// structured is a result's structured content as decoded JSON.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("structured content is not an object: %s", raw)
	}
	return m
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// mcpPost sends one JSON-RPC message to /mcp outside any session, with key ("" for none).
func (b *bundle) mcpPost(t *testing.T, key, body string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	return b.do(http.MethodPost, "/mcp", strings.NewReader(body), h)
}

// withoutResourceHeader drops what differs between two stored copies of one result.
func withoutResourceHeader(m map[string]any) map[string]any {
	out := maps.Clone(m)
	for _, k := range []string{"id", "created_at", "completed_at"} {
		delete(out, k)
	}
	return out
}

// generated is one test-mode request of product p from POST /v1/test/generate.
func (b *bundle) generated(t *testing.T, p product.Product, seed int) map[string]any {
	t.Helper()
	r := b.send(http.MethodPost, "/v1/test/generate", b.testKey,
		fmt.Sprintf(`{"product": %q, "scenario": %q, "count": 1, "seed": %d}`, p.Name, p.Scenarios()[0], seed))
	if r.status != http.StatusOK {
		t.Fatalf("generate %s: %d %s", p.Name, r.status, r.raw)
	}
	return r.field("data.items").([]any)[0].(map[string]any)["request"].(map[string]any)
}

// The tools are the spec's, in registry order, each with the contract's request schema (the
// $refs resolved under $defs) and, on the POST tools, idempotency_key.
func TestMCPToolsListHasTheContractsSchemas(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	cs, _ := b.connectMCP(t, b.testKey)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
	}
	want := []string{"drift_record_events", "drift_analyze", "convergence_analyze_market", "cascade_simulate",
		"meridian_quality_check", "meridian_gate", "get_analysis"}
	if registry, _ := mcptools.Names(); !slices.Equal(registry, want) {
		t.Errorf("the registry's tools are %v, want %v", registry, want)
	}
	slices.Sort(names) // the SDK lists tools by name
	if slices.Sort(want); !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	schemaOf := func(name string) map[string]any {
		raw, _ := json.Marshal(byName[name].InputSchema)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		tool    string
		members []string
		def     string
	}{
		{"drift_record_events", []string{"agent_id", "events", "idempotency_key"}, "DriftEvent"},
		{"drift_analyze", []string{"agent_id", "principal_id", "events", "window", "baseline", "sensitivity", "idempotency_key"}, "DriftEvent"},
		{"convergence_analyze_market", []string{"market_id", "idempotency_key"}, ""},
		{"cascade_simulate", []string{"network", "idempotency_key"}, ""},
		{"meridian_quality_check", []string{"source_id", "data", "checks", "idempotency_key"}, "MeridianCheck"},
		{"get_analysis", []string{"kind", "id"}, ""},
	} {
		s := schemaOf(c.tool)
		props, _ := s["properties"].(map[string]any)
		if s["type"] != "object" || props == nil {
			t.Errorf("%s: schema is not an object with properties: %v", c.tool, s)
			continue
		}
		for _, m := range c.members {
			if props[m] == nil {
				t.Errorf("%s: no member %s in %v", c.tool, m, slices.Sorted(maps.Keys(props)))
			}
		}
		if c.def != "" && s["$defs"].(map[string]any)[c.def] == nil {
			t.Errorf("%s: $defs lacks %s", c.tool, c.def)
		}
		if raw, _ := json.Marshal(s); bytes.Contains(raw, []byte("#/components/")) {
			t.Errorf("%s: a reference into the OpenAPI document is left: %s", c.tool, raw)
		}
	}
	if !reflect.DeepEqual(schemaOf("meridian_gate"), schemaOf("meridian_quality_check")) {
		t.Error("meridian_gate does not take the quality check's input")
	}
	if kinds := schemaOf("get_analysis")["properties"].(map[string]any)["kind"].(map[string]any)["enum"]; !reflect.DeepEqual(kinds, []any{"drift", "convergence", "cascade", "meridian"}) {
		t.Errorf("get_analysis kinds = %v", kinds)
	}
}

// Each product tool, given a test-mode request, answers what the REST endpoint answers for
// the same input and seed (less id and timestamps), with a text summary; get_analysis reads
// back what the tool stored; meridian_gate is the quality check's gate.
func TestMCPToolsAnswerAsTheRESTEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	cs, _ := b.connectMCP(t, b.testKey)
	for _, p := range product.All {
		for _, spec := range p.Tools {
			if spec.Gate {
				continue
			}
			t.Run(spec.Name, func(t *testing.T) {
				req := b.generated(t, p, 11)
				if spec.Name == "drift_record_events" {
					req = map[string]any{"agent_id": "agent-mcp-rest", "events": req["events"]}
				}
				if spec.Name == "drift_analyze" {
					req["agent_id"] = "agent-mcp-analyze"
				}
				res := callTool(t, cs, spec.Name, req)
				if res.IsError {
					t.Fatalf("isError: %s", textOf(res))
				}
				got := structured(t, res)
				if spec.Name == "drift_record_events" {
					req["agent_id"] = "agent-mcp-rest-2"
				}
				rest := b.send(http.MethodPost, strings.TrimPrefix(spec.Endpoint, "POST "), b.testKey, string(mustJSON(t, req)))
				if rest.status != http.StatusOK {
					t.Fatalf("REST: %d %s", rest.status, rest.raw)
				}
				want := rest.body["data"].(map[string]any)
				if spec.Name == "drift_record_events" {
					got["agent_id"], want["agent_id"] = "", ""
				}
				if !reflect.DeepEqual(withoutResourceHeader(got), withoutResourceHeader(want)) {
					t.Fatalf("tool and REST differ:\n tool: %v\n REST: %v", withoutResourceHeader(got), withoutResourceHeader(want))
				}
				if text := textOf(res); len(text) < 40 || strings.Contains(text, "unknown") {
					t.Errorf("summary %q", text)
				}
				if id, ok := got["id"].(string); ok {
					read := callTool(t, cs, mcptools.GetAnalysis, map[string]any{"kind": p.Name, "id": id})
					stored := b.get(p.Results.Path+"/"+id, b.testKey)
					if read.IsError || !reflect.DeepEqual(structured(t, read), stored.body["data"]) {
						t.Fatalf("get_analysis %s = %v, REST %s", id, structured(t, read), stored.raw)
					}
				}
			})
		}
	}

	// The tool's drift_analyze and the REST one each found the planted shadow principal and
	// emitted its event, as the REST request does.
	events := b.get("/v1/events?type=drift.shadow_detected", b.testKey)
	if n := len(events.field("data").([]any)); n != 2 {
		t.Errorf("drift.shadow_detected events = %d, want 2 (the tool's and REST's): %s", n, events.raw)
	}

	t.Run("meridian_gate", func(t *testing.T) {
		req := b.generated(t, product.Meridian, 5)
		res := callTool(t, cs, "meridian_gate", req)
		if res.IsError {
			t.Fatalf("isError: %s", textOf(res))
		}
		gate := structured(t, res)
		rest := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, string(mustJSON(t, req)))
		q := rest.body["data"].(map[string]any)
		var failed []any
		for _, c := range q["checks"].([]any) {
			if c.(map[string]any)["success"] != true {
				failed = append(failed, c.(map[string]any)["id"])
			}
		}
		var gotFailed []any
		for _, c := range gate["failed_checks"].([]any) {
			gotFailed = append(gotFailed, c.(map[string]any)["id"])
		}
		if gate["gating"] != q["gating"] || gate["score"] != q["score"] || gate["tier"] != q["tier"] || !reflect.DeepEqual(gotFailed, failed) {
			t.Fatalf("gate %v, quality check gating %v score %v tier %v failed %v", gate, q["gating"], q["score"], q["tier"], failed)
		}
		if !strings.Contains(textOf(res), q["gating"].(string)) {
			t.Errorf("summary does not state the gating: %q", textOf(res))
		}
	})
}

// A validation error is a tool result with isError whose structured content and text carry
// the API's error object, the one the REST endpoint answers; not a protocol error.
func TestMCPValidationErrorIsAnErrorResult(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	cs, _ := b.connectMCP(t, b.testKey)
	args := map[string]any{"agent_id": "agent-1", "events": []any{map[string]any{"id": "e1"}}}
	res := callTool(t, cs, "drift_analyze", args)
	if !res.IsError {
		t.Fatalf("not an error result: %v", res.StructuredContent)
	}
	got := structured(t, res)["error"].(map[string]any)
	rest := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, string(mustJSON(t, args)))
	want := rest.body["error"].(map[string]any)
	if rest.status != http.StatusBadRequest || !reflect.DeepEqual(got, want) {
		t.Fatalf("tool error %v, REST %d %v", got, rest.status, want)
	}
	if text := textOf(res); !strings.Contains(text, want["code"].(string)) || !strings.Contains(text, want["message"].(string)) {
		t.Errorf("text %q lacks the code or message", text)
	}

	// An unknown member, a bad idempotency_key and a bad kind: each an error result too.
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"meridian_gate", map[string]any{"source_id": "s", "colour": 1}, "UNKNOWN_FIELD"},
		{"convergence_analyze_market", map[string]any{"market_id": "m", "idempotency_key": 7}, "INVALID_IDEMPOTENCY_KEY"},
		{"get_analysis", map[string]any{"kind": "beacon", "id": "x"}, "INVALID_KIND"},
		{"get_analysis", map[string]any{"kind": "drift", "id": 7}, "INVALID_ID"},
		{"get_analysis", map[string]any{"kind": "drift", "id": "dra_1", "colour": 1}, "UNKNOWN_FIELD"},
		{"get_analysis", map[string]any{"kind": "drift", "id": "dra_nope"}, "NOT_FOUND"},
	} {
		res := callTool(t, cs, c.tool, c.args)
		if !res.IsError || structured(t, res)["error"].(map[string]any)["code"] != c.code {
			t.Errorf("%s %v: isError %v, %v; want %s", c.tool, c.args, res.IsError, res.StructuredContent, c.code)
		}
	}
}

// A restricted key without the tool's scope is refused with a JSON-RPC error and HTTP 403;
// with it, the call runs. A missing or wrong key is 401, as a JSON-RPC error too.
func TestMCPRefusesKeysWithoutTheScope(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	restricted := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"meridian:write"}})
	cs, tr := b.connectMCP(t, restricted)
	req := b.generated(t, product.Convergence, 3)
	// The Go SDK's client takes an HTTP 403 as the transport refusing the request and ends
	// the session, so each refusal is tried on a session of its own.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "convergence_analyze_market", Arguments: req})
	if err == nil || !strings.Contains(err.Error(), "does not have the convergence:write scope") {
		t.Fatalf("call without the scope: %v", err)
	}
	if tr.statuses[len(tr.statuses)-1] != http.StatusForbidden {
		t.Fatalf("HTTP statuses %v, want the last 403", tr.statuses)
	}
	// The refusal as sent: a JSON-RPC error to the call's id, with the status and scope.
	raw := b.mcpPost(t, restricted, `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"get_analysis","arguments":{"kind":"drift","id":"dra_1"}}}`)
	if raw.status != http.StatusForbidden || raw.field("id") != "c-1" || raw.field("error.code") != float64(mcptools.CodeForbidden) ||
		raw.field("error.data.status") != 403.0 || raw.field("error.data.error.details.required_scope") != "drift:read" {
		t.Fatalf("get_analysis without drift:read: %d %s", raw.status, raw.raw)
	}
	cs, _ = b.connectMCP(t, restricted)
	if res := callTool(t, cs, "meridian_gate", b.generated(t, product.Meridian, 3)); res.IsError {
		t.Fatalf("call with the scope: %s", textOf(res))
	}

	for _, key := range []string{"", "sk_test_notakey"} {
		r := b.mcpPost(t, key, `{"jsonrpc":"2.0","id":42,"method":"tools/list"}`)
		if r.status != http.StatusUnauthorized || r.field("id") != 42.0 || r.field("error.code") != float64(mcptools.CodeUnauthorized) ||
			r.field("error.data.status") != 401.0 || r.field("error.data.error.code") != "UNAUTHORIZED" {
			t.Fatalf("key %q: %d %s", key, r.status, r.raw)
		}
	}
	if r := b.get("/mcp", ""); r.status != http.StatusUnauthorized || r.field("id") != nil || r.field("error.code") != float64(mcptools.CodeUnauthorized) {
		t.Fatalf("GET without a key: %d %s", r.status, r.raw)
	}
	if r := b.get("/mcp", b.testKey); r.status != http.StatusBadRequest && r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET without a session: %d %s", r.status, r.raw)
	}
}

// Tool calls are the REST requests: in live mode they are billed in GET /v1/usage under
// the endpoint, listed among the product's analyses, and a repeated idempotency_key answers
// the first analysis without storing a second.
func TestMCPCallsAreMeteredListedAndIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	cs, _ := b.connectMCP(t, b.liveKey)
	req := b.generated(t, product.Convergence, 21)
	req["idempotency_key"] = "mcp-once-1"
	first := structured(t, callTool(t, cs, "convergence_analyze_market", req))
	second := structured(t, callTool(t, cs, "convergence_analyze_market", req))
	if first["id"] == nil || first["id"] != second["id"] || first["livemode"] != true {
		t.Fatalf("repeat with one idempotency_key: %v then %v", first["id"], second["id"])
	}
	list := b.get("/v1/convergence/analyses", b.liveKey)
	items := list.field("data").([]any)
	if len(items) != 1 || items[0].(map[string]any)["id"] != first["id"] {
		t.Fatalf("analyses list = %s, want exactly %v", list.raw, first["id"])
	}
	delete(req, "idempotency_key")
	third := structured(t, callTool(t, cs, "convergence_analyze_market", req))
	if third["id"] == first["id"] {
		t.Fatal("a call without the key replayed the first answer")
	}

	if err := b.meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	usage := b.get("/v1/usage", b.liveKey)
	// Two executions, and the list above; the replay is not billed again.
	if got := usage.field("data.totals.convergence"); got != 3.0 {
		t.Fatalf("usage totals.convergence = %v, want 3: %s", got, usage.raw)
	}
	days := usage.field("data.days").([]any)
	if e := days[0].(map[string]any)["endpoints"].(map[string]any)["POST /v1/convergence/analyze-market"]; e != 2.0 {
		t.Fatalf("usage by endpoint = %v", days[0])
	}
}

// A tool call over the key's rate limit is an error result that says when to retry.
func TestMCPRateLimitedCallSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	limited := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"meridian:*"}, RateLimit: 1})
	cs, _ := b.connectMCP(t, limited)
	req := b.generated(t, product.Meridian, 4)
	if res := callTool(t, cs, "meridian_quality_check", req); res.IsError {
		t.Fatalf("first call: %s", textOf(res))
	}
	res := callTool(t, cs, "meridian_quality_check", req)
	s := structured(t, res)
	if !res.IsError || s["error"].(map[string]any)["code"] != "RATE_LIMITED" || s["retry_after_seconds"] == nil ||
		!strings.Contains(textOf(res), "Retry after") {
		t.Fatalf("second call: isError %v %v %q", res.IsError, s, textOf(res))
	}
}

// A session's GET stream ends when the server ends its streams (at shutdown), instead of
// holding the graceful shutdown until the client leaves.
func TestMCPStreamEndsWithTheServer(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, b.http.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+b.testKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	session := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", init.StatusCode, session)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	req, _ := http.NewRequest(http.MethodGet, b.http.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+b.testKey)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /mcp: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ended := make(chan struct{})
	go func() {
		io.Copy(io.Discard, res.Body)
		close(ended)
	}()
	b.server.EndStreams()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream was still open 10 s after EndStreams")
	}
}
