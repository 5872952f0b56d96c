package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"riskapi/internal/mcptools"
	"riskapi/internal/resource"
	"riskapi/internal/store"

	"github.com/go-json-experiment/json"
)

type successEnvelope struct {
	Success    bool            `json:"success"`
	Data       any             `json:"data"`
	Pagination *pagination     `json:"pagination,omitempty"`
	Metadata   successMetadata `json:"metadata"`
}

type successMetadata struct {
	RequestID        string `json:"request_id"`
	Timestamp        string `json:"timestamp"`
	ProcessingTimeMS int64  `json:"processing_time_ms"`
}

type pagination struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
	TotalCount int64   `json:"total_count"`
}

type errorEnvelope struct {
	Success  bool          `json:"success"`
	Error    errorBody     `json:"error"`
	Metadata errorMetadata `json:"metadata"`
}

type errorBody struct {
	Type    string         `json:"type"`
	Message string         `json:"message"`
	Code    string         `json:"code"`
	Details map[string]any `json:"details"`
}

type errorMetadata struct {
	RequestID string `json:"request_id"`
	Timestamp string `json:"timestamp"`
}

// writeData answers with the success envelope around data.
func writeData(w http.ResponseWriter, r *http.Request, status int, data any) {
	writeSuccess(w, r, status, data, nil)
}

// writeList answers with a list envelope: data is the page, p the pagination block.
func writeList(w http.ResponseWriter, r *http.Request, data any, p pagination) {
	writeSuccess(w, r, http.StatusOK, data, &p)
}

func writeSuccess(w http.ResponseWriter, r *http.Request, status int, data any, p *pagination) {
	body, err := encodeSuccess(r, data, p)
	if err != nil {
		writeError(w, r, fmtInternal(r.Context(), "encode response", err))
		return
	}
	writeJSONBytes(w, status, body)
}

// encodeSuccess encodes the success envelope around data as it would be sent now.
func encodeSuccess(r *http.Request, data any, p *pagination) ([]byte, error) {
	info := requestInfoFrom(r.Context())
	now := time.Now()
	env := successEnvelope{
		Success:    true,
		Data:       data,
		Pagination: p,
		Metadata: successMetadata{
			RequestID:        info.id,
			Timestamp:        resource.FormatTime(now),
			ProcessingTimeMS: now.Sub(info.start).Milliseconds(),
		},
	}
	var buf bytes.Buffer
	if err := json.MarshalWrite(&buf, env, resource.EncodeOptions); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeError answers with the error envelope. An *Error is sent as it is; any other error
// is logged with the request id and answered as a 500 that reveals nothing of it.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	apiErr := apiError(r.Context(), err)
	status, typ := errorStatus(apiErr.Code)
	if apiErr.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(apiErr.retryAfter))
	}
	details := apiErr.Details
	if details == nil {
		details = map[string]any{}
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	info := requestInfoFrom(r.Context())
	if info.otlp {
		writeStatus(w, r, status, apiErr)
		return
	}
	if info.mcp {
		writeJSONRPCError(w, r, status, mcptools.ErrorObject{Type: typ, Code: apiErr.Code, Message: apiErr.Message, Details: details})
		return
	}
	env := errorEnvelope{
		Error:    errorBody{Type: typ, Message: apiErr.Message, Code: apiErr.Code, Details: details},
		Metadata: errorMetadata{RequestID: info.id, Timestamp: resource.FormatTime(time.Now())},
	}
	body, encErr := json.Marshal(env, resource.EncodeOptions)
	if encErr != nil {
		// Details held something unencodable; send the envelope without them.
		env.Error.Details = map[string]any{}
		body, _ = json.Marshal(env, resource.EncodeOptions)
	}
	writeJSONBytes(w, status, body)
}

// fmtInternal logs an unexpected error with the request id and returns the opaque 500. Once
// the request's context has ended, the failure is the context's: apiError's 503, not logged;
// when the error says the store could not be reached (store.Unreachable), or the store does
// not answer a ping now, the outage's: 503 with Retry-After, logged as a warning. The error
// is asked first: a call that failed just before the store came back pings fine afterwards.
func fmtInternal(ctx context.Context, what string, err error) *Error {
	if ctx.Err() != nil {
		return apiError(ctx, err) // the client left or the server is stopping: 503, not a fault
	}
	if info := requestInfoFrom(ctx); store.Unreachable(err) || info.storeDown != nil && info.storeDown(ctx) {
		// A store outage cut the work short (a connection dropped mid-transaction): the
		// documented 503, not a fault of the service's.
		info.log.WarnContext(ctx, "store unreachable", "what", what, "err", err)
		e := newError(CodeServiceUnavailable, "The store is not reachable right now. Retry after the time in the Retry-After header.")
		e.retryAfter = 1
		return e
	}
	requestInfoFrom(ctx).log.ErrorContext(ctx, "internal error", "what", what, "err", err)
	return errInternal
}

func writeJSONBytes(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
