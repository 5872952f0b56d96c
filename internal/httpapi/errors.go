package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"riskapi/engine"
)

// Error is the one error type the HTTP layer answers with. Handlers and middleware return
// or write *Error values; errorStatus maps the code to the HTTP status and error.type in one
// place, so a code can never appear with two different statuses.
type Error struct {
	Code    string
	Message string
	// Details is always sent as an object; for validation errors it carries field,
	// expected and received.
	Details map[string]any
	// retryAfter, when positive, is sent as the Retry-After header (seconds).
	retryAfter int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Error codes of the platform contract §2. Validation codes are INVALID_<TOP-LEVEL FIELD>,
// built by invalidField.
const (
	CodeBadRequest           = "BAD_REQUEST"
	CodeUnknownField         = "UNKNOWN_FIELD"
	CodeUnauthorized         = "UNAUTHORIZED"
	CodeForbidden            = "FORBIDDEN"
	CodeNotFound             = "NOT_FOUND"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeIdempotencyKeyInUse  = "IDEMPOTENCY_KEY_IN_USE"
	CodeConflict             = "CONFLICT"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	CodeRateLimited          = "RATE_LIMITED"
	CodeInternal             = "INTERNAL_ERROR"
	CodeServiceUnavailable   = "SERVICE_UNAVAILABLE"
)

// errorStatus maps an error code to its HTTP status and error.type (platform contract §2).
func errorStatus(code string) (int, string) {
	switch code {
	case CodeBadRequest:
		return http.StatusBadRequest, "invalid_request_error"
	case CodeUnknownField:
		return http.StatusBadRequest, "validation_error"
	case CodeUnauthorized:
		return http.StatusUnauthorized, "authentication_error"
	case CodeForbidden:
		return http.StatusForbidden, "permission_error"
	case CodeNotFound:
		return http.StatusNotFound, "not_found_error"
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed, "invalid_request_error"
	case CodeIdempotencyKeyInUse:
		return http.StatusConflict, "idempotency_error"
	case CodeConflict:
		return http.StatusConflict, "invalid_request_error"
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge, "invalid_request_error"
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType, "invalid_request_error"
	case CodeIdempotencyKeyReused:
		return http.StatusUnprocessableEntity, "idempotency_error"
	case CodeRateLimited:
		return http.StatusTooManyRequests, "rate_limit_error"
	case CodeServiceUnavailable:
		return http.StatusServiceUnavailable, "service_unavailable_error"
	}
	if strings.HasPrefix(code, "INVALID_") || code == engine.CodeWorkLimitExceeded {
		return http.StatusBadRequest, "validation_error"
	}
	return http.StatusInternalServerError, "api_error"
}

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Details: map[string]any{}}
}

// apiError maps any error a handler meets to the envelope's error, in this one place:
//   - an *Error is sent as it is;
//   - an engine's *engine.InputError is a validation error (400) carrying its code, field,
//     expected and received;
//   - any error once the request's context has ended (the client went away, or the server is
//     stopping) is 503: nothing was stored, and an Idempotency-Key is released so that a retry runs
//     the work again;
//   - anything else while the store is unreachable (an outage cut the work short) is 503;
//   - anything else is logged with the request id and answered with the opaque 500.
func apiError(ctx context.Context, err error) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var invalid *engine.InputError
	if errors.As(err, &invalid) {
		code := invalid.Code
		if code == "" {
			code = engine.CodeFor(invalid.Field)
		}
		return &Error{Code: code, Message: invalid.Message,
			Details: map[string]any{"field": invalid.Field, "expected": invalid.Expected, "received": invalid.Received}}
	}
	if ctx.Err() != nil {
		// Whatever failed once the request's context ended failed because of it: the store
		// drivers report an interrupted query in their own words (SQLite's "interrupted"),
		// not as context.Canceled, and that is no fault of the service's to log as a 500.
		return newError(CodeServiceUnavailable, "The request was cancelled before it finished. Retry.")
	}
	return fmtInternal(ctx, "handler", err)
}

// asValidation is an engine's verdict on a request in the envelope's form, for the
// validate methods of request types; nil stays nil.
func asValidation(err error) *Error {
	if err == nil {
		return nil
	}
	return apiError(context.Background(), err)
}

// invalidField reports a validation failure of the value at path (for example
// "events[3].timestamp"). The code is INVALID_ + the upper-cased top-level field name, as the
// seed's INVALID_AGENT_ID; expected is the JSON type, optionally with the constraint in
// parentheses; received is the JSON type that arrived, or "missing".
func invalidField(path, expected, received, format string, args ...any) *Error {
	return &Error{
		Code:    engine.CodeFor(path),
		Message: fmt.Sprintf(format, args...),
		Details: map[string]any{"field": path, "expected": expected, "received": received},
	}
}

// errInternal is the one answer to every unexpected error: it says nothing of the cause,
// which is logged with the request id instead.
var errInternal = newError(CodeInternal, "An internal error occurred. It has been logged with this request's id; retry later or contact support quoting it.")
