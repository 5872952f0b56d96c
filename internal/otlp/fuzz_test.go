package otlp

import (
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
)

// maxFuzzBody caps inputs as the other decoders' targets do (docs/operations.md, "Fuzzing"):
// each stays a matter of milliseconds. Decompressed bodies are capped at 1 MiB, so a small
// gzip input still exercises the limit.
const maxFuzzBody = 64 << 10

// FuzzDecode feeds untrusted bytes through what POST /v1/drift/traces does with a body:
// decode (protobuf or OTLP JSON, gzip or not) and map the spans. Neither may panic, and
// every span read is accepted, rejected or ignored exactly once.
func FuzzDecode(f *testing.F) {
	exporterJSON, err := os.ReadFile("testdata/exporter.json")
	if err != nil {
		f.Fatal(err)
	}
	req := request(nil, nil, newSpan(1, 0, str(attrOperation, opInvokeAgent), str(attrAgentID, "a")), newSpan(2, 1, str(attrOperation, opExecuteTool), str(attrAgentID, "a")))
	pb, err := proto.Marshal(req)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(exporterJSON, true, false)
	f.Add(gzipped(f, exporterJSON), true, true)
	f.Add(pb, false, false)
	f.Add(gzipped(f, pb), false, true)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","parentSpanId":"00"}]}]}]}`), true, false)
	f.Fuzz(func(t *testing.T, body []byte, asJSON, gz bool) {
		if len(body) > maxFuzzBody {
			return
		}
		format, encoding := Protobuf, ""
		if asJSON {
			format = JSON
		}
		if gz {
			encoding = "gzip"
		}
		req, err := Decode(body, format, encoding, 1<<20)
		if err != nil {
			return
		}
		spans := 0
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					if s != nil {
						spans++
					}
				}
			}
		}
		b := Events(req)
		if got := int64(b.Events+b.Ignored) + b.RejectedSpans(); got != int64(spans) {
			t.Fatalf("%d spans read, %d accounted for (%d events, %d ignored, %d rejected)", spans, got, b.Events, b.Ignored, b.RejectedSpans())
		}
	})
}
