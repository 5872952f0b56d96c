package mcptools

import (
	"context"
	"encoding/json"
	"errors"

	"riskapi/client"
)

// ClientBackend sends tool calls through the Go client package to a riskapi deployment, with
// the client's key: what `riskapi mcp` on stdio uses. The client retries 429 and 503 after a
// Retry-After of up to its maximum (60 s by default) before the call answers; a longer one
// comes back as the tool's error, saying when to retry.
type ClientBackend struct {
	Client *client.Client
}

// Do implements Backend.
func (b ClientBackend) Do(ctx context.Context, req Request) (json.RawMessage, error) {
	var opts []client.RequestOption
	if req.IdempotencyKey != "" {
		opts = append(opts, client.WithIdempotencyKey(req.IdempotencyKey))
	}
	data, err := b.Client.Do(ctx, req.Method, req.Path, req.Body, opts...)
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		details := apiErr.Details
		if details == nil {
			details = map[string]any{}
		}
		return nil, &APIError{Status: apiErr.StatusCode, RequestID: apiErr.RequestID, RetryAfter: apiErr.RetryAfter,
			Object: ErrorObject{Type: apiErr.Type, Code: apiErr.Code, Message: apiErr.Message, Details: details}}
	}
	if err != nil {
		return nil, err
	}
	return json.RawMessage(data), nil
}
