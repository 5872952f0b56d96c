package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"riskapi/internal/auth"
	"riskapi/internal/store"
)

const tracesPath = "/v1/drift/traces"

func otlpString(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// agentExport is an export as an SDK writes it for one trace of agent_a and agent_b: an
// invoke_agent span, two execute_tool spans, an HTTP span (ignored) and a tool span with
// no agent id (rejected).
func agentExport() *coltracepb.ExportTraceServiceRequest {
	trace := bytes.Repeat([]byte{0xab}, 16)
	span := func(n byte, parent byte, attrs ...*commonpb.KeyValue) *tracepb.Span {
		s := &tracepb.Span{TraceId: trace, SpanId: []byte{1, 2, 3, 4, 5, 6, 7, n}, Name: "s",
			StartTimeUnixNano: 1795343430_000000000 + uint64(n), Attributes: attrs}
		if parent != 0 {
			s.ParentSpanId = []byte{1, 2, 3, 4, 5, 6, 7, parent}
		}
		return s
	}
	op := func(name string) *commonpb.KeyValue { return otlpString("gen_ai.operation.name", name) }
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{otlpString("service.name", "agents")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "agents"}, Spans: []*tracepb.Span{
			span(1, 0, op("invoke_agent"), otlpString("gen_ai.agent.id", "agent_a")),
			span(2, 1, op("execute_tool"), otlpString("gen_ai.agent.id", "agent_a"), otlpString("gen_ai.tool.name", "search")),
			span(3, 1, op("execute_tool"), otlpString("gen_ai.agent.name", "agent_b"), otlpString("gen_ai.tool.name", "book")),
			span(4, 2, otlpString("http.method", "GET")),
			span(5, 1, op("execute_tool"), otlpString("gen_ai.tool.name", "pay")),
		}}},
	}}}
}

// exporterJSON is the same kind of export in OTLP JSON as the exporters write it: hex ids,
// int64 as strings, enums as integers.
const exporterJSON = `{"resourceSpans":[{"resource":{"attributes":[{"key":"gen_ai.agent.id","value":{"stringValue":"agent_json"}}]},
"scopeSpans":[{"scope":{"name":"agents"},"spans":[
{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"invoke_agent","kind":1,"startTimeUnixNano":"1795343430000000000","endTimeUnixNano":"1795343431000000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}}],"status":{}},
{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b173","parentSpanId":"eee19b7ec3c1b174","name":"execute_tool","kind":3,"startTimeUnixNano":"1795343430500000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"book_hotel"}},{"key":"riskapi.principal_value","value":{"doubleValue":80.5}}],
 "events":[{"timeUnixNano":"1795343430600000000","name":"riskapi.beneficiary","attributes":[{"key":"riskapi.party","value":{"stringValue":"hotel"}},{"key":"riskapi.value","value":{"intValue":"14"}}]}]}
]}]}]}`

// postTraces sends an export with the key, Content-Type and Content-Encoding given ("" for none).
func (b *bundle) postTraces(key, contentType, encoding string, body []byte) response {
	b.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key}
	if contentType != "" {
		h["Content-Type"] = contentType
	}
	if encoding != "" {
		h["Content-Encoding"] = encoding
	}
	return b.do(http.MethodPost, tracesPath, bytes.NewReader(body), h)
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b) // a bytes.Buffer takes every write
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exportResponse decodes a 200 in the content type it came in.
func exportResponse(t *testing.T, r response) *coltracepb.ExportTraceServiceResponse {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	resp := &coltracepb.ExportTraceServiceResponse{}
	var err error
	if strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		err = protojson.Unmarshal(r.raw, resp)
	} else {
		err = proto.Unmarshal(r.raw, resp)
	}
	if err != nil {
		t.Fatalf("not an ExportTraceServiceResponse (%s): %v", r.header.Get("Content-Type"), err)
	}
	return resp
}

// wantStatus asserts an OTLP error: the HTTP status, a google.rpc.Status in contentType with
// the gRPC code and the envelope's error code as ErrorInfo.reason, and X-Request-Id.
func wantStatus(t *testing.T, r response, status int, contentType string, code int32, reason string) *statuspb.Status {
	t.Helper()
	if r.status != status || r.header.Get("Content-Type") != contentType {
		t.Fatalf("got %d %s, want %d %s: %s", r.status, r.header.Get("Content-Type"), status, contentType, r.raw)
	}
	st := &statuspb.Status{}
	var err error
	if contentType == "application/json" {
		err = protojson.Unmarshal(r.raw, st)
	} else {
		err = proto.Unmarshal(r.raw, st)
	}
	if err != nil {
		t.Fatalf("not a google.rpc.Status: %v: %s", err, r.raw)
	}
	info := &errdetails.ErrorInfo{}
	if st.Code != code || len(st.Details) != 1 || st.Details[0].UnmarshalTo(info) != nil || info.Reason != reason {
		t.Fatalf("status %v, want code %d and reason %s", st, code, reason)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
	return st
}

func (b *bundle) storedCount(mode store.Mode, agent string) int64 {
	b.t.Helper()
	n, err := b.store.CountDriftEvents(context.Background(), b.account.ID, mode, agent)
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

// storedPayloads are the agent's stored test-mode events as JSON, in insertion order.
func (b *bundle) storedPayloads(agent string) []string {
	b.t.Helper()
	events, err := b.store.DriftEvents(context.Background(), b.account.ID, store.ModeTest, agent, nil, nil, 100)
	if err != nil {
		b.t.Fatal(err)
	}
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = string(ev.Payload)
	}
	return out
}

// An export in protobuf stores each agent's spans as events, reports the span without an
// agent id in partial_success, ignores the HTTP span, and a re-sent export adds nothing.
func TestDriftTracesProtobuf(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	body := mustMarshal(t, agentExport())
	for range 2 {
		r := b.postTraces(b.testKey, "application/x-protobuf", "", body)
		if ct := r.header.Get("Content-Type"); ct != "application/x-protobuf" {
			t.Fatalf("Content-Type %q", ct)
		}
		ps := exportResponse(t, r).GetPartialSuccess()
		if ps.GetRejectedSpans() != 1 || ps.GetErrorMessage() != "1 span had no gen_ai.agent.id (nor gen_ai.agent.name)" {
			t.Fatalf("partial success %v", ps)
		}
	}
	if a, bb := b.storedCount(store.ModeTest, "agent_a"), b.storedCount(store.ModeTest, "agent_b"); a != 2 || bb != 1 {
		t.Fatalf("stored %d events of agent_a and %d of agent_b, want 2 and 1 after sending the export twice", a, bb)
	}
	if n := b.storedCount(store.ModeLive, "agent_a"); n != 0 {
		t.Fatalf("a test-mode export stored %d live events", n)
	}
	payload := b.storedPayloads("agent_b")[0]
	for _, want := range []string{`"id":"abababababababababababababababab:0102030405060703"`, `"action":"book"`, `"delegation_depth":1`} {
		if !strings.Contains(payload, want) {
			t.Errorf("stored event %s lacks %s", payload, want)
		}
	}
}

// OTLP JSON as exporters write it, plain and gzipped, answered in JSON; nothing rejected
// means no partialSuccess. The stored events can then be analysed like any others.
func TestDriftTracesJSONAndGzip(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.postTraces(b.testKey, "application/json", "", []byte(exporterJSON))
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if resp := exportResponse(t, r); resp.PartialSuccess != nil {
		t.Fatalf("partial success %v for an export with nothing rejected", resp.PartialSuccess)
	}
	if string(bytes.TrimSpace(r.raw)) != "{}" {
		t.Errorf("body %s, want {}", r.raw)
	}
	exportResponse(t, b.postTraces(b.testKey, "application/json", "gzip", gzipBytes(t, []byte(exporterJSON))))
	exportResponse(t, b.postTraces(b.testKey, "application/x-protobuf", "gzip", gzipBytes(t, mustMarshal(t, agentExport()))))
	if n := b.storedCount(store.ModeTest, "agent_json"); n != 2 {
		t.Fatalf("stored %d events, want 2 (the gzipped copy is the same spans)", n)
	}
	if n := b.storedCount(store.ModeTest, "agent_a"); n != 2 {
		t.Fatalf("stored %d events of agent_a from the gzipped protobuf export, want 2", n)
	}
	tool := b.storedPayloads("agent_json")[1]
	for _, want := range []string{`"id":"5b8efff798038103d269b633813fc60c:eee19b7ec3c1b173"`, `"action":"book_hotel"`,
		`"principal_value":80.5`, `"beneficiaries":[{"party":"hotel","value":14}]`, `"delegation_depth":1`} {
		if !strings.Contains(tool, want) {
			t.Errorf("stored event %s lacks %s", tool, want)
		}
	}
}

func TestDriftTracesRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxBodyBytes = 64 << 10 }, nil)
	body := mustMarshal(t, agentExport())

	st := wantStatus(t, b.postTraces(b.testKey, "application/x-protobuf", "", []byte{0x0a, 0xff, 0xff}), 400, "application/x-protobuf", 3, CodeBadRequest)
	if !strings.Contains(st.Message, "ExportTraceServiceRequest") {
		t.Errorf("message %q", st.Message)
	}
	wantStatus(t, b.postTraces(b.testKey, "application/json", "", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"not hex"}]}]}]}`)), 400, "application/json", 3, CodeBadRequest)
	wantStatus(t, b.postTraces(b.testKey, "application/json", "", []byte(`{"resourceSpans":`)), 400, "application/json", 3, CodeBadRequest)
	wantStatus(t, b.postTraces(b.testKey, "application/x-protobuf", "gzip", body), 400, "application/x-protobuf", 3, CodeBadRequest)
	wantStatus(t, b.postTraces(b.testKey, "text/plain", "", body), 415, "application/json", 3, CodeUnsupportedMediaType)
	wantStatus(t, b.postTraces(b.testKey, "", "", nil), 400, "application/json", 3, CodeBadRequest)

	// The body limit holds for the bytes sent and for what they decompress to.
	wantStatus(t, b.postTraces(b.testKey, "application/x-protobuf", "", make([]byte, 65<<10)), 413, "application/x-protobuf", 3, CodePayloadTooLarge)
	bomb := gzipBytes(t, bytes.Repeat([]byte{0x0a, 0x00}, 1<<20)) // 2 MiB of empty ResourceSpans, a few KiB sent
	wantStatus(t, b.postTraces(b.testKey, "application/x-protobuf", "gzip", bomb), 413, "application/x-protobuf", 3, CodePayloadTooLarge)

	r := b.postTraces("sk_test_wrong", "application/json", "", []byte(exporterJSON))
	wantStatus(t, r, 401, "application/json", 16, CodeUnauthorized)
	reader := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"drift:read"}})
	wantStatus(t, b.postTraces(reader, "application/x-protobuf", "", body), 403, "application/x-protobuf", 7, CodeForbidden)
	if n := b.storedCount(store.ModeTest, "agent_a"); n != 0 {
		t.Fatalf("refused exports stored %d events", n)
	}
}

// A 429 carries Retry-After, which OTLP exporters wait for; each request counts one unit
// against the drift limit and in usage.
func TestDriftTracesRateLimitAndUsage(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	_, key := b.newAccount(store.PlanFreeTrial, nil) // drift: 100 requests an hour
	body := mustMarshal(t, agentExport())
	for i := range 100 {
		if r := b.postTraces(key, "application/x-protobuf", "", body); r.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.status, r.raw)
		}
	}
	r := b.postTraces(key, "application/x-protobuf", "", body)
	wantStatus(t, r, 429, "application/x-protobuf", 8, CodeRateLimited)
	if r.header.Get("Retry-After") == "" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("429 headers %v", r.header)
	}

	for range 3 {
		exportResponse(t, b.postTraces(b.liveKey, "application/x-protobuf", "", body))
	}
	if err := b.meter.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	u := b.get("/v1/usage", b.liveKey)
	if got := u.field("data.totals.drift"); got != 3.0 {
		t.Fatalf("billed drift units %v, want 3 (one a request): %s", got, u.raw)
	}
}

// More agent spans than POST /v1/drift/events takes in one call are refused whole.
func TestDriftTracesEventLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	req := agentExport()
	spans := &req.ResourceSpans[0].ScopeSpans[0].Spans
	template := (*spans)[1]
	for i := range 10_001 {
		s := proto.Clone(template).(*tracepb.Span)
		s.SpanId = []byte{9, 9, 9, 9, byte(i >> 16), byte(i >> 8), byte(i), 0}
		*spans = append(*spans, s)
	}
	st := wantStatus(t, b.postTraces(b.testKey, "application/x-protobuf", "", mustMarshal(t, req)), 400, "application/x-protobuf", 3, CodeBadRequest)
	if !strings.Contains(st.Message, "at most 10000") {
		t.Errorf("message %q", st.Message)
	}
}

// An export whose decoded spans could never fit the memory budget is refused before it is
// decoded (a few KiB of gzip that expand to 2 MiB need about 28 MiB decoded).
func TestDriftTracesMemoryBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Bounds.MemoryLimit = 16 << 20 }, nil)
	body := gzipBytes(t, bytes.Repeat([]byte{0x0a, 0x00}, 1<<20))
	st := wantStatus(t, b.postTraces(b.testKey, "application/x-protobuf", "gzip", body), 400, "application/x-protobuf", 3, "WORK_LIMIT_EXCEEDED")
	if !strings.Contains(st.Message, "memory") {
		t.Errorf("message %q", st.Message)
	}
	exportResponse(t, b.postTraces(b.testKey, "application/x-protobuf", "gzip", gzipBytes(t, mustMarshal(t, agentExport()))))
}

// With the store gone the export is 503 with Retry-After, which exporters wait for and retry.
func TestDriftTracesStoreOutage(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	b.store.Close()
	r := b.postTraces(b.testKey, "application/x-protobuf", "", mustMarshal(t, agentExport()))
	wantStatus(t, r, 503, "application/x-protobuf", 14, CodeServiceUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}
