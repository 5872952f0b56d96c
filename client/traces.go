package client

import (
	"context"
	"fmt"
	"mime"
	"net/http"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Content types of an OTLP/HTTP export (ExportDriftTraces).
const (
	ContentTypeProtobuf = "application/x-protobuf"
	ContentTypeJSON     = "application/json"
)

// DriftTracesExport is the answer to an OTLP trace export: the spans refused and why. Both
// are zero when every span became an event or was not an agent span.
type DriftTracesExport struct {
	RejectedSpans int64
	// ErrorMessage counts each reason, for example "2 spans had no gen_ai.agent.id (nor
	// gen_ai.agent.name)".
	ErrorMessage string
}

// ExportDriftTraces sends an OTLP/HTTP trace export (POST /v1/drift/traces): body is an
// opentelemetry ExportTraceServiceRequest encoded as contentType, ContentTypeProtobuf or
// ContentTypeJSON (OTLP JSON, hex ids). Agent spans become Drift events of their agents;
// re-sending an export adds nothing. An OpenTelemetry SDK exporter pointed at the same URL
// does the same; this method is for programs that hold exports already encoded (a
// collector's, or recorded ones). Errors are *Error, with Code the service's error code.
func (c *Client) ExportDriftTraces(ctx context.Context, body []byte, contentType string, opts ...RequestOption) (*DriftTracesExport, error) {
	raw, err := c.do(ctx, http.MethodPost, "/v1/drift/traces", nil, encodedBody{data: body, contentType: contentType}, opts)
	if err != nil {
		return nil, err
	}
	resp := &coltracepb.ExportTraceServiceResponse{}
	if contentType == ContentTypeJSON {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(raw, resp)
	} else {
		err = proto.Unmarshal(raw, resp)
	}
	if err != nil {
		return nil, fmt.Errorf("riskapi: POST /v1/drift/traces: the answer is not an ExportTraceServiceResponse: %w", err)
	}
	return &DriftTracesExport{RejectedSpans: resp.GetPartialSuccess().GetRejectedSpans(), ErrorMessage: resp.GetPartialSuccess().GetErrorMessage()}, nil
}

// parseStatus reads an OTLP endpoint's error, a google.rpc.Status, into e: its message, and
// as Code the reason of its google.rpc.ErrorInfo (the error code the envelope would carry).
// It reports false when raw is not one.
func parseStatus(res *http.Response, raw []byte, e *Error) bool {
	mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	st := &statuspb.Status{}
	var err error
	switch mediaType {
	case ContentTypeProtobuf:
		err = proto.Unmarshal(raw, st)
	case ContentTypeJSON:
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(raw, st)
	default:
		return false
	}
	if err != nil || st.GetMessage() == "" {
		return false
	}
	e.Message = st.GetMessage()
	for _, d := range st.GetDetails() {
		info := &errdetails.ErrorInfo{}
		if d.UnmarshalTo(info) == nil {
			e.Code = info.GetReason()
		}
	}
	return true
}
