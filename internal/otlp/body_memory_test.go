package otlp

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"riskapi/engine"
	"riskapi/internal/enginetest"
)

// largeExport is an export of n agent spans as an instrumented agent writes them: eight
// attributes and a beneficiary event each.
func largeExport(n int) *coltracepb.ExportTraceServiceRequest {
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		s := newSpan(1, 0, str(attrOperation, opExecuteTool), str(attrAgentID, fmt.Sprintf("agent_%d", i%10)),
			str(attrToolName, "search_flights"), dbl(attrPrincipalValue, float64(i)), dbl(attrBestAlternative, float64(i+3)),
			str(attrInstructedBy, "partner"), str("http.url", "https://example.com/api/v2/flights?from=ZRH&to=LIS"), integer("retries", 2))
		s.SpanId = []byte{0, 0, 0, 0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}
		s.Events = []*tracepb.Span_Event{{Name: eventBeneficiary, Attributes: []*commonpb.KeyValue{str(attrParty, "partner"), dbl(attrValue, 3)}}}
		spans[i] = s
	}
	return request(nil, nil, spans...)
}

// TestBodyMemoryCoversDecoding reads, decodes and maps large exports as the API does and
// checks that BodyMemory covers the measured peak of the heap within the engines' factor.
func TestBodyMemoryCoversDecoding(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes bodies of tens of megabytes")
	}
	req := largeExport(40_000)
	pb, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	js := exporterJSONOf(t, req)
	t.Logf("%d spans: %d bytes of protobuf, %d of JSON", len(req.ResourceSpans[0].ScopeSpans[0].Spans), len(pb), len(js))
	for _, c := range []struct {
		name   string
		format Format
		body   []byte
	}{{"protobuf", Protobuf, pb}, {"JSON", JSON, js}} {
		var held any
		enginetest.MemoryEstimateHolds(t, c.name, engine.Cost{Memory: BodyMemory(int64(len(c.body)))}, func() {
			read, err := io.ReadAll(struct{ io.Reader }{bytes.NewReader(c.body)})
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := Unmarshal(read, c.format)
			if err != nil {
				t.Fatal(err)
			}
			held = []any{read, decoded, Events(decoded)}
		})
		_ = held
	}
}
