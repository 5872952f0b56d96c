package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"riskapi/internal/mcptools"
	"riskapi/internal/resource"
	"riskapi/internal/store"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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
//
// The envelope's own fields are written directly and only data (and the pagination block)
// goes through the JSON encoder, on an encoder kept for reuse: encoding the envelope struct
// around data with json.MarshalWrite took 15-18 µs of GET /v1/account's 35 µs, most of it
// setting up an encoder with the options and reflecting on the envelope and its interface
// field, against 6-8 µs for data alone on a reused encoder (BenchmarkEncodeSuccess). The
// bytes are the same: TestEncodeSuccessMatchesEnvelope compares them with the envelope
// struct's encoding.
func encodeSuccess(r *http.Request, data any, p *pagination) ([]byte, error) {
	info := requestInfoFrom(r.Context())
	now := time.Now()
	e := envelopeEncoders.Get().(*envelopeEncoder)
	defer e.release()
	e.buf.Reset()
	e.buf.WriteString(`{"success":true,"data":`)
	if err := e.value(data); err != nil {
		return nil, err
	}
	if p != nil {
		e.buf.WriteString(`,"pagination":`)
		if err := e.value(p); err != nil {
			return nil, err
		}
	}
	b := e.buf.AvailableBuffer()
	b = append(b, `,"metadata":{"request_id":`...)
	b, err := jsontext.AppendQuote(b, info.id)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"timestamp":`...)
	if b, err = jsontext.AppendQuote(b, resource.FormatTime(now)); err != nil {
		return nil, err
	}
	b = append(b, `,"processing_time_ms":`...)
	b = strconv.AppendInt(b, now.Sub(info.start).Milliseconds(), 10)
	b = append(b, "}}"...)
	e.buf.Write(b)
	return bytes.Clone(e.buf.Bytes()), nil
}

// encodeValue encodes v as json.Marshal(v, resource.EncodeOptions) does, on a reused
// encoder: the error envelope of every 401 and 429 goes through it.
func encodeValue(v any) ([]byte, error) {
	e := envelopeEncoders.Get().(*envelopeEncoder)
	defer e.release()
	e.buf.Reset()
	if err := e.value(v); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// envelopeEncoder is a buffer with an encoder writing to it, reused across responses
// (envelopeEncoders) so that each response does not set up a new one.
type envelopeEncoder struct {
	buf bytes.Buffer
	enc *jsontext.Encoder
}

var envelopeEncoders = sync.Pool{New: func() any {
	e := &envelopeEncoder{}
	e.enc = jsontext.NewEncoder(&e.buf, resource.EncodeOptions)
	return e
}}

// release returns e to envelopeEncoders, unless a large response grew its buffer: a pool
// must not keep megabytes alive for the small responses that make up most of the traffic.
func (e *envelopeEncoder) release() {
	if e.buf.Cap() <= 64<<10 {
		envelopeEncoders.Put(e)
	}
}

// value appends v to the buffer as the envelope struct would encode it in place: with
// resource.EncodeOptions, and without the newline the encoder ends a top-level value with.
func (e *envelopeEncoder) value(v any) error {
	e.enc.Reset(&e.buf, resource.EncodeOptions)
	if err := json.MarshalEncode(e.enc, v); err != nil {
		return err
	}
	if n := e.buf.Len(); n > 0 && e.buf.Bytes()[n-1] == '\n' {
		e.buf.Truncate(n - 1)
	}
	return nil
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
	body, encErr := encodeError(env)
	if encErr != nil {
		// Details held something unencodable; send the envelope without them.
		env.Error.Details = map[string]any{}
		body, _ = encodeValue(env)
	}
	writeJSONBytes(w, status, body)
}

// encodeError encodes env as encodeValue does, the bytes the same (TestEncodeErrorMatchesEnvelope),
// with the envelope's own fields written directly and details, when they are a flat map of
// strings, integers and booleans under ASCII keys (a rate limit's, a validation error's), too:
// the reflection over the envelope and its map took half of a 429's answer (wrk on
// GET /v1/account, where nearly every answer is a 429: 1.1 of the 5.0 s the handler ran in a
// 10 s profile). Other details go through the encoder.
func encodeError(env errorEnvelope) ([]byte, error) {
	e := envelopeEncoders.Get().(*envelopeEncoder)
	defer e.release()
	e.buf.Reset()
	b := append(e.buf.AvailableBuffer(), `{"success":false,"error":{"type":`...)
	b, err := appendQuoted(b, env.Error.Type, `,"message":`, env.Error.Message, `,"code":`, env.Error.Code)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"details":`...)
	if flat, ok := appendFlatDetails(b, env.Error.Details); ok {
		e.buf.Write(flat)
	} else {
		e.buf.Write(b)
		if err := e.value(env.Error.Details); err != nil {
			return nil, err
		}
	}
	b = append(e.buf.AvailableBuffer(), `},"metadata":{"request_id":`...)
	if b, err = appendQuoted(b, env.Metadata.RequestID, `,"timestamp":`, env.Metadata.Timestamp); err != nil {
		return nil, err
	}
	e.buf.Write(append(b, "}}"...))
	return bytes.Clone(e.buf.Bytes()), nil
}

// appendQuoted appends the JSON string of first, then each pair of raw text and string that
// follows: appendQuoted(b, "x", `,"y":`, "z") appends "x","y":"z".
func appendQuoted(b []byte, first string, rest ...string) ([]byte, error) {
	b, err := jsontext.AppendQuote(b, first)
	for i := 0; err == nil && i+1 < len(rest); i += 2 {
		b = append(b, rest[i]...)
		b, err = jsontext.AppendQuote(b, rest[i+1])
	}
	return b, err
}

// appendFlatDetails appends details as the encoder would (keys sorted) when every key is
// ASCII, so that byte order is the encoder's order, and every value a string, an int, an
// int64 or a bool; ok is false, and b unusable, otherwise.
func appendFlatDetails(b []byte, details map[string]any) (_ []byte, ok bool) {
	var keys [8]string
	sorted := keys[:0]
	for k, v := range details {
		for i := 0; i < len(k); i++ {
			if k[i] >= utf8.RuneSelf {
				return nil, false
			}
		}
		switch v.(type) {
		case string, int, int64, bool:
		default:
			return nil, false
		}
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	b = append(b, '{')
	var err error
	for i, k := range sorted {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = jsontext.AppendQuote(b, k); err != nil {
			return nil, false
		}
		b = append(b, ':')
		switch v := details[k].(type) {
		case string:
			if b, err = jsontext.AppendQuote(b, v); err != nil {
				return nil, false
			}
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case bool:
			b = strconv.AppendBool(b, v)
		}
	}
	return append(b, '}'), true
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
		info.logger().WarnContext(ctx, "store unreachable", "what", what, "err", err)
		e := newError(CodeServiceUnavailable, "The store is not reachable right now. Retry after the time in the Retry-After header.")
		e.retryAfter = 1
		return e
	}
	requestInfoFrom(ctx).logger().ErrorContext(ctx, "internal error", "what", what, "err", err)
	return errInternal
}

func writeJSONBytes(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h[headerContentType] = []string{"application/json; charset=utf-8"}
	h[headerContentLength] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
