package client_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"riskapi/client"
	"riskapi/drift"
	"riskapi/internal/auth"
	"riskapi/internal/store"
)

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// toolExport is an export of n execute_tool spans of agent_otel, one a second, and one
// span without an agent id.
func toolExport(t *testing.T, n int) []byte {
	t.Helper()
	var spans []*tracepb.Span
	for i := range n + 1 {
		attrs := []*commonpb.KeyValue{kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", "quote")}
		if i < n {
			attrs = append(attrs, kv("gen_ai.agent.id", "agent_otel"))
		}
		spans = append(spans, &tracepb.Span{TraceId: []byte("0123456789abcdef"), SpanId: []byte{0, 0, 0, 0, 0, 0, 1, byte(i)},
			Name: "execute_tool quote", StartTimeUnixNano: uint64(1795343430+i) * 1e9, Attributes: attrs})
	}
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func TestExportDriftTraces(t *testing.T) {
	t.Parallel()
	s := startService(t)
	c := s.client(s.testKey)
	ctx := t.Context()
	body := toolExport(t, drift.MinEvents)
	for range 2 {
		res, err := c.ExportDriftTraces(ctx, body, client.ContentTypeProtobuf)
		if err != nil {
			t.Fatal(err)
		}
		if res.RejectedSpans != 1 || !strings.Contains(res.ErrorMessage, "1 span had no gen_ai.agent.id") {
			t.Fatalf("export answered %+v", res)
		}
	}
	// The spans are the agent's stored events, once each although sent twice.
	a, err := c.AnalyzeDrift(ctx, &drift.Input{AgentID: "agent_otel"})
	if err != nil {
		t.Fatal(err)
	}
	if a.EventsAnalyzed != drift.MinEvents {
		t.Fatalf("analysed %d stored events, want %d", a.EventsAnalyzed, drift.MinEvents)
	}

	json := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",` +
		`"startTimeUnixNano":"1795343430000000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}},` +
		`{"key":"gen_ai.agent.id","value":{"stringValue":"agent_json"}}]}]}]}]}`
	res, err := c.ExportDriftTraces(ctx, []byte(json), client.ContentTypeJSON)
	if err != nil || res.RejectedSpans != 0 || res.ErrorMessage != "" {
		t.Fatalf("JSON export: %+v, %v", res, err)
	}

	reader, err := s.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"drift:read"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.client(reader).ExportDriftTraces(ctx, body, client.ContentTypeProtobuf)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden || apiErr.Code != client.CodeForbidden || !strings.Contains(apiErr.Message, "drift:write") {
		t.Fatalf("export without drift:write: %v", err)
	}
}
