package httpapi

import (
	"net/http"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"riskapi/internal/otlp"
)

// OTLP/HTTP endpoints answer as OTLP exporters expect, not in the envelope (the documented
// exception of docs/api-conventions.md): a success is the service's response message and an
// error a google.rpc.Status, each in the request's encoding (protobuf or JSON). Every other
// rule of a product endpoint holds: authentication, rate limits, scopes, the body limit,
// usage, X-Request-Id and the rate-limit and Retry-After headers.

// otlpEndpoint marks a product route as an OTLP/HTTP endpoint, so that routes.go mounts it
// with protectedOTLP.
type otlpEndpoint struct{ http.Handler }

// protectedOTLP is protected for an OTLP endpoint: its bodies may be protobuf, and every
// error from authentication on is a google.rpc.Status.
func (s *Server) protectedOTLP(scope string, h http.Handler) http.Handler {
	next := s.protectedBody(scope, checkOTLPContentType, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requestInfoFrom(r.Context()).otlp = true
		next.ServeHTTP(w, r)
	})
}

// checkOTLPContentType accepts OTLP/HTTP's two encodings.
func checkOTLPContentType(header string) *Error {
	if _, err := otlp.FormatOf(header); err == nil {
		return nil
	}
	return errUnsupportedMediaType(header, "application/x-protobuf or application/json",
		"Send the export as Content-Type: application/x-protobuf or application/json")
}

// otlpFormat is the encoding of the request's body, and so of the answer: JSON when the
// Content-Type is neither (only a refusal answers such a request).
func otlpFormat(r *http.Request) otlp.Format {
	f, err := otlp.FormatOf(r.Header.Get("Content-Type"))
	if err != nil {
		return otlp.JSON
	}
	return f
}

// statusDomain names the service in google.rpc.ErrorInfo.
const statusDomain = "riskapi"

// writeStatus answers an OTLP request's error as a google.rpc.Status: the gRPC code of the
// HTTP status, the message the envelope would carry, and an ErrorInfo whose reason is the
// envelope's error code (UNAUTHORIZED, RATE_LIMITED…), so no information is lost.
func writeStatus(w http.ResponseWriter, r *http.Request, status int, e *Error) {
	st := &statuspb.Status{Code: int32(grpcCode(status)), Message: e.Message}
	if info, err := anypb.New(&errdetails.ErrorInfo{Reason: e.Code, Domain: statusDomain}); err == nil {
		st.Details = []*anypb.Any{info}
	}
	writeOTLP(w, otlpFormat(r), status, st)
}

// writeOTLP answers with msg in format.
func writeOTLP(w http.ResponseWriter, format otlp.Format, status int, msg proto.Message) {
	var body []byte
	var err error
	if format == otlp.JSON {
		body, err = protojson.Marshal(msg)
	} else {
		body, err = proto.Marshal(msg)
	}
	if err != nil {
		// The messages written here always encode; should one not, the status still goes out.
		body = nil
	}
	h := w.Header()
	h.Set("Content-Type", format.ContentType())
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// grpcCodes pairs the HTTP statuses the API answers with gRPC codes, as gRPC's HTTP mapping
// does; any other status is codes.Internal.
var grpcCodes = map[int]codes.Code{
	http.StatusBadRequest: codes.InvalidArgument, http.StatusRequestEntityTooLarge: codes.InvalidArgument,
	http.StatusUnsupportedMediaType: codes.InvalidArgument, http.StatusUnauthorized: codes.Unauthenticated,
	http.StatusForbidden: codes.PermissionDenied, http.StatusNotFound: codes.NotFound,
	http.StatusConflict: codes.Aborted, http.StatusUnprocessableEntity: codes.FailedPrecondition,
	http.StatusTooManyRequests: codes.ResourceExhausted, http.StatusServiceUnavailable: codes.Unavailable,
}

// grpcCode is the gRPC code of an HTTP status.
func grpcCode(status int) codes.Code {
	if c, ok := grpcCodes[status]; ok {
		return c
	}
	return codes.Internal
}
