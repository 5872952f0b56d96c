package client

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
)

// Error is an answer other than 2xx: the error envelope's members, the HTTP status and the
// request id. Test for it with errors.As:
//
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == client.CodeNotFound { … }
type Error struct {
	// StatusCode is the HTTP status, such as 400 or 429.
	StatusCode int
	// Type is error.type, the category: validation_error, rate_limit_error, … (the Type*
	// constants). Empty when the answer was not the service's envelope (a proxy's page).
	Type string
	// Code is error.code, the machine-readable reason: INVALID_AGENT_ID, NOT_FOUND, … .
	Code string
	// Message is error.message, in plain words.
	Message string
	// Details is error.details: for a validation error field (the path of the offending
	// value), expected and received; other codes add their own members. Never nil.
	Details map[string]any
	// RequestID is metadata.request_id (or the X-Request-Id header): quote it when asking
	// about the request.
	RequestID string
	// RetryAfter is the Retry-After the service sent (429, 503, 409), zero when none.
	RetryAfter time.Duration
}

// Error types (error.type).
const (
	TypeInvalidRequest     = "invalid_request_error"
	TypeValidation         = "validation_error"
	TypeAuthentication     = "authentication_error"
	TypePermission         = "permission_error"
	TypeNotFound           = "not_found_error"
	TypeIdempotency        = "idempotency_error"
	TypeRateLimit          = "rate_limit_error"
	TypeAPI                = "api_error"
	TypeServiceUnavailable = "service_unavailable_error"
)

// Error codes (error.code) that are not INVALID_<FIELD> validation codes.
const (
	CodeBadRequest           = "BAD_REQUEST"
	CodeUnknownField         = "UNKNOWN_FIELD"
	CodeWorkLimitExceeded    = "WORK_LIMIT_EXCEEDED"
	CodeUnauthorized         = "UNAUTHORIZED"
	CodeForbidden            = "FORBIDDEN"
	CodeNotFound             = "NOT_FOUND"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeIdempotencyKeyInUse  = "IDEMPOTENCY_KEY_IN_USE"
	CodePayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	CodeRateLimited          = "RATE_LIMITED"
	CodeInternalError        = "INTERNAL_ERROR"
	CodeServiceUnavailable   = "SERVICE_UNAVAILABLE"
)

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "riskapi: %d", e.StatusCode)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if f, ok := e.Details["field"].(string); ok && f != "" {
		fmt.Fprintf(&b, " (field %s", f)
		if exp, ok := e.Details["expected"].(string); ok {
			fmt.Fprintf(&b, ", expected %s", exp)
		}
		if got, ok := e.Details["received"].(string); ok {
			fmt.Fprintf(&b, ", received %s", got)
		}
		b.WriteByte(')')
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Field is details.field of a validation error: the path of the offending value, such as
// events[3].timestamp; empty otherwise.
func (e *Error) Field() string {
	f, _ := e.Details["field"].(string)
	return f
}

// parseError reads an answer other than 2xx. A body that is not the error envelope (a
// proxy's HTML page, an empty 502) still gives an *Error with the status and a message.
func parseError(res *http.Response, raw []byte) *Error {
	e := &Error{StatusCode: res.StatusCode, RequestID: res.Header.Get("X-Request-Id"), RetryAfter: parseRetryAfter(res.Header)}
	var env errorEnvelope
	if json.Unmarshal(raw, &env) == nil && env.Error != nil {
		e.Type, e.Code, e.Message, e.Details = env.Error.Type, env.Error.Code, env.Error.Message, env.Error.Details
		if env.Metadata.RequestID != "" {
			e.RequestID = env.Metadata.RequestID
		}
	} else if !parseStatus(res, raw, e) {
		snippet := strings.TrimSpace(string(raw))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "…"
		}
		e.Message = http.StatusText(res.StatusCode)
		if snippet != "" {
			e.Message += ": " + snippet
		}
	}
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	return e
}
