package otlp

import (
	"fmt"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Every span looks up about ten attributes, most of them absent, falling back to its
// resource's. A resource of 100,000 attributes over 20,000 spans made about 2·10¹⁰ key
// comparisons when each lookup scanned the resource's list (tens of seconds); indexed once,
// the mapping takes about 0.13 s. The bound leaves a tenfold margin on either side.
func TestEventsOfAHeavyResourceIsLinear(t *testing.T) {
	if raceDetector {
		t.Skip("timing is not measurable under the race detector")
	}
	if testing.Short() {
		t.Skip("maps 20,000 spans under a resource of 100,000 attributes")
	}
	resource := make([]*commonpb.KeyValue, 100_000)
	for i := range resource {
		resource[i] = str(fmt.Sprintf("r.%d", i), "v")
	}
	spans := make([]*tracepb.Span, 20_000)
	for i := range spans {
		s := newSpan(1, 0, str(attrOperation, opExecuteTool))
		s.SpanId = []byte{0, 0, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)}
		spans[i] = s
	}
	req := request(append(resource, str(attrAgentID, "a")), nil, spans...)
	start := time.Now()
	b := Events(req)
	took := time.Since(start)
	if b.Events != len(spans) {
		t.Fatalf("%d events of %d spans: %s", b.Events, len(spans), b.Message())
	}
	t.Logf("20,000 spans under 100,000 resource attributes: %v", took)
	if bound := 2 * time.Second; took > bound {
		t.Errorf("mapping took %v, want under %v (scanning the resource per lookup takes tens of seconds)", took, bound)
	}
}
