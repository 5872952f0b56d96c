// Package otlp reads OTLP/HTTP trace exports (ExportTraceServiceRequest, protobuf or OTLP
// JSON, gzip or not) with the official generated types and turns their agent spans into
// Drift events (shared/spec/agents.md §1), so that a stock OpenTelemetry exporter can feed
// POST /v1/drift/traces.
package otlp

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Format is how a body is encoded, and how its answer is: OTLP/HTTP answers in the
// request's content type.
type Format int

const (
	Protobuf Format = iota // application/x-protobuf
	JSON                   // application/json (OTLP's JSON mapping, hex ids)
)

// ContentType is the media type of f.
func (f Format) ContentType() string {
	if f == JSON {
		return "application/json"
	}
	return "application/x-protobuf"
}

// ErrUnsupportedMediaType is FormatOf's answer to a content type OTLP/HTTP does not define.
var ErrUnsupportedMediaType = errors.New("otlp: Content-Type must be application/x-protobuf or application/json")

// FormatOf reads a Content-Type header: application/x-protobuf or application/json, the
// latter with no charset or UTF-8 (the OTLP/HTTP specification's two encodings).
func FormatOf(contentType string) (Format, error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return 0, ErrUnsupportedMediaType
	case mediaType == "application/x-protobuf":
		return Protobuf, nil
	case mediaType == "application/json":
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return JSON, nil
		}
	}
	return 0, ErrUnsupportedMediaType
}

// MalformedError is a body that is not an ExportTraceServiceRequest in its declared
// encoding: the 400 of OTLP/HTTP, which exporters do not retry.
type MalformedError struct{ Reason string }

func (e *MalformedError) Error() string { return "otlp: malformed request: " + e.Reason }

// TooLargeError is a body whose decompressed size is over the limit: a few kilobytes of gzip
// can expand to gigabytes, so the limit applies to what is decoded, not to what was sent.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("otlp: the decompressed body is over the %d-byte limit", e.Limit)
}

// Decode reads a whole request body as sent with Content-Encoding encoding: Decompress,
// then Unmarshal.
func Decode(body []byte, format Format, encoding string, limit int64) (*coltracepb.ExportTraceServiceRequest, error) {
	raw, err := Decompress(body, encoding, limit)
	if err != nil {
		return nil, err
	}
	return Unmarshal(raw, format)
}

// Unmarshal reads an ExportTraceServiceRequest in format; anything that is not the format's
// form of the message is a *MalformedError. Unknown fields are ignored, as OTLP receivers
// must.
func Unmarshal(raw []byte, format Format) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	if format == JSON {
		converted, err := hexIDsToBase64(raw)
		if err != nil {
			return nil, &MalformedError{Reason: err.Error()}
		}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(converted, req); err != nil {
			return nil, &MalformedError{Reason: "not OTLP JSON: " + err.Error()}
		}
		return req, nil
	}
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, req); err != nil {
		return nil, &MalformedError{Reason: "not an ExportTraceServiceRequest in protobuf: " + err.Error()}
	}
	return req, nil
}

// Decompress undoes the Content-Encoding ("" or "identity", or "gzip"), reading at most
// limit decompressed bytes (*TooLargeError beyond); an encoding it does not know, or a body
// that is not in it, is a *MalformedError.
func Decompress(body []byte, encoding string, limit int64) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		if int64(len(body)) > limit {
			return nil, &TooLargeError{Limit: limit}
		}
		return body, nil
	case "gzip":
	default:
		return nil, &MalformedError{Reason: fmt.Sprintf("Content-Encoding %q is not supported; send gzip or none", encoding)}
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, &MalformedError{Reason: "Content-Encoding is gzip but the body is not: " + err.Error()}
	}
	raw, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, &MalformedError{Reason: "the gzip body is corrupt: " + err.Error()}
	}
	if int64(len(raw)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return raw, nil
}

// BodyMemory bounds the heap an export of n bytes (decompressed) takes while it is read,
// decoded and mapped to events: what the API reserves against its memory budget. Decoded
// spans are pointer-rich (every attribute is a KeyValue holding an AnyValue), so they take
// several times their wire size: measured peaks of 8.2–8.5× for a 17 MB protobuf export of
// 40,000 spans and 6.1–6.4× for the same spans as 35 MB of JSON (TestBodyMemoryCoversDecoding,
// two runs); 12× and 4 MiB cover them with room for heavier attributes.
func BodyMemory(n int64) int64 { return 12*n + 4<<20 }
