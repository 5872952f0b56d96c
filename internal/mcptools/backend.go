package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Request is one REST request a tool call makes.
type Request struct {
	Method string // "POST" or "GET"
	Path   string // under the host: "/v1/drift/analyze"
	Body   []byte // the JSON body; nil for GET
	// IdempotencyKey is sent as the Idempotency-Key header; "" sends none.
	IdempotencyKey string
	// Header is the header of the HTTP request that carried the tool call (Streamable HTTP,
	// where it holds the caller's Authorization); nil on stdio.
	Header http.Header
}

// Backend sends the REST requests of tool calls, each with the caller's key, through the
// same path as any request of the API: authentication, scope, rate limit, usage, idempotency,
// test mode, events and webhooks all apply.
type Backend interface {
	// Do returns the data of the success envelope, as sent; an *APIError for an answer other
	// than 2xx; another error when no answer came.
	Do(ctx context.Context, req Request) (json.RawMessage, error)
}

// APIError is an answer other than 2xx: the error envelope's object, the HTTP status and
// what the answer said about retrying.
type APIError struct {
	Status    int
	Object    ErrorObject
	RequestID string
	// RetryAfter is the Retry-After the service sent (429, 503), zero when none.
	RetryAfter time.Duration
}

// ErrorObject is the envelope's error member, the same on every endpoint.
type ErrorObject struct {
	Type    string         `json:"type"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("riskapi: %d %s: %s", e.Status, e.Object.Code, e.Object.Message)
}
