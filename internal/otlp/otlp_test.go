package otlp

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"regexp"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The helpers build requests with the official types, as an SDK exporter does.

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func dbl(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

func integer(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func boolean(k string, v bool) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}}
}

var traceID = mustHex("5b8efff798038103d269b633813fc60c")

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// spanID is the 8-byte id 00…0n.
func spanID(n byte) []byte { return []byte{0, 0, 0, 0, 0, 0, 0, n} }

// newSpan is span n of the test trace, child of parent (0: a root), started n seconds into 2026.
func newSpan(n, parent byte, attrs ...*commonpb.KeyValue) *tracepb.Span {
	s := &tracepb.Span{TraceId: traceID, SpanId: spanID(n), Name: "span", StartTimeUnixNano: 1767225600_000000000 + uint64(n)*1e9, Attributes: attrs}
	if parent != 0 {
		s.ParentSpanId = spanID(parent)
	}
	return s
}

// request puts spans under one resource and one scope with the given attributes.
func request(resource, scope []*commonpb.KeyValue, spans ...*tracepb.Span) *coltracepb.ExportTraceServiceRequest {
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: resource},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "agent", Attributes: scope}, Spans: spans}},
	}}}
}

// base64IDs matches the id members protojson writes in base64.
var base64IDs = regexp.MustCompile(`"(traceId|spanId|parentSpanId)":"([A-Za-z0-9+/=]*)"`)

// exporterJSONOf encodes req as OTLP exporters write JSON: protojson, with the ids in hex.
func exporterJSONOf(t testing.TB, req *coltracepb.ExportTraceServiceRequest) []byte {
	t.Helper()
	js, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return base64IDs.ReplaceAllFunc(js, func(m []byte) []byte {
		parts := base64IDs.FindSubmatch(m)
		raw, err := base64.StdEncoding.DecodeString(string(parts[2]))
		if err != nil {
			t.Fatal(err)
		}
		return []byte(`"` + string(parts[1]) + `":"` + hex.EncodeToString(raw) + `"`)
	})
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeProtobufPlainAndGzip(t *testing.T) {
	want := request([]*commonpb.KeyValue{str("service.name", "agent")}, nil,
		newSpan(1, 0, str(attrOperation, opInvokeAgent), str(attrAgentID, "agent_1")))
	body, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		body     []byte
		encoding string
	}{
		"plain": {body, ""}, "identity": {body, "identity"}, "gzip": {gzipped(t, body), "gzip"}, "GZIP": {gzipped(t, body), "GZIP"},
	} {
		got, err := Decode(tc.body, Protobuf, tc.encoding, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s: decoded %v, want %v", name, got, want)
		}
	}
}

// The OTLP JSON an exporter writes has hex ids, int64 as strings and enum integers;
// protojson alone would read the ids as base64 and fail or misread them.
func TestDecodeExporterJSON(t *testing.T) {
	body, err := os.ReadFile("testdata/exporter.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, encoding := range []string{"", "gzip"} {
		b := body
		if encoding == "gzip" {
			b = gzipped(t, body)
		}
		req, err := Decode(b, JSON, encoding, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		spans := req.ResourceSpans[0].ScopeSpans[0].Spans
		if got := hex.EncodeToString(spans[1].TraceId); got != "5b8efff798038103d269b633813fc60c" {
			t.Errorf("trace id %s", got)
		}
		if got := hex.EncodeToString(spans[1].ParentSpanId); got != "eee19b7ec3c1b174" {
			t.Errorf("parent span id %s", got)
		}
		if spans[1].Kind != tracepb.Span_SPAN_KIND_CLIENT || spans[1].StartTimeUnixNano != 1767225600500000000 {
			t.Errorf("kind %v, start %d", spans[1].Kind, spans[1].StartTimeUnixNano)
		}
		b2 := Events(req)
		if b2.Events != 2 || len(b2.Agents) != 1 || b2.Agents[0].AgentID != "agent_travel" {
			t.Fatalf("batch %+v", b2)
		}
		tool := b2.Agents[0].Events[1]
		if tool.ID != "5b8efff798038103d269b633813fc60c:eee19b7ec3c1b173" || tool.Action != "book_hotel" || *tool.DelegationDepth != 1 ||
			len(tool.Beneficiaries) != 1 || tool.Beneficiaries[0].Value != 14.5 || *tool.BestAlternativeValue != 95 {
			t.Errorf("execute_tool event %+v", tool)
		}
	}
}

func TestDecodeRefusesMalformedBodies(t *testing.T) {
	valid, _ := proto.Marshal(request(nil, nil, newSpan(1, 0)))
	for name, tc := range map[string]struct {
		body     []byte
		format   Format
		encoding string
	}{
		"protobuf garbage":        {[]byte{0xff, 0xff, 0xff}, Protobuf, ""},
		"JSON syntax":             {[]byte(`{"resourceSpans":[`), JSON, ""},
		"JSON wrong type":         {[]byte(`{"resourceSpans":{}}`), JSON, ""},
		"JSON id not hex":         {[]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"W46/95gDgQPSabYzgT/GDA=="}]}]}]}`), JSON, ""},
		"gzip declared, not sent": {valid, Protobuf, "gzip"},
		"gzip cut short":          {gzipped(t, valid)[:10], Protobuf, "gzip"},
		"unknown encoding":        {valid, Protobuf, "br"},
	} {
		_, err := Decode(tc.body, tc.format, tc.encoding, 1<<20)
		var malformed *MalformedError
		if !errors.As(err, &malformed) {
			t.Errorf("%s: error %v, want a MalformedError", name, err)
		}
	}
}

// A small gzip body that expands past the limit is refused once the limit is read, not
// decompressed whole.
func TestDecodeBoundsDecompressedSize(t *testing.T) {
	bomb := gzipped(t, make([]byte, 8<<20)) // 8 MiB of zeros: about 8 KiB compressed
	_, err := Decode(bomb, Protobuf, "gzip", 1<<20)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 1<<20 {
		t.Fatalf("error %v, want TooLargeError at 1 MiB", err)
	}
	if _, err := Decode(make([]byte, 100), Protobuf, "", 99); !errors.As(err, &tooLarge) {
		t.Fatalf("uncompressed: error %v, want TooLargeError", err)
	}
}

func TestFormatOf(t *testing.T) {
	for header, want := range map[string]Format{
		"application/x-protobuf": Protobuf, "application/json": JSON, "application/json; charset=utf-8": JSON,
	} {
		if got, err := FormatOf(header); err != nil || got != want {
			t.Errorf("%q: %v, %v", header, got, err)
		}
	}
	for _, header := range []string{"", "text/plain", "application/protobuf;", "application/json; charset=latin1"} {
		if _, err := FormatOf(header); !errors.Is(err, ErrUnsupportedMediaType) {
			t.Errorf("%q: %v, want ErrUnsupportedMediaType", header, err)
		}
	}
}

func TestHexIDsLeaveOtherMembersAlone(t *testing.T) {
	// An attribute whose key is "traceId" is a value of "key", not a member name.
	doc := `{"a":{"traceId":"00ff","key":"traceId","value":{"stringValue":"zz"}},"spanId":""}`
	got, err := hexIDsToBase64([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"traceId":"AP8=","key":"traceId","value":{"stringValue":"zz"}},"spanId":""}`
	if string(bytes.TrimSpace(got)) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// An export built with the official types and written as exporters write OTLP JSON decodes
// to the same message.
func TestDecodeJSONOfOfficialTypes(t *testing.T) {
	want := request([]*commonpb.KeyValue{str("service.name", "agent")}, []*commonpb.KeyValue{integer("scope.n", 7)},
		newSpan(1, 0, str(attrOperation, opInvokeAgent), str(attrAgentID, "agent_1")),
		newSpan(2, 1, str(attrOperation, opExecuteTool), dbl(attrPrincipalValue, 2.5), boolean(attrOverridden, true)))
	got, err := Decode(gzipped(t, exporterJSONOf(t, want)), JSON, "gzip", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("decoded %v, want %v", got, want)
	}
}
