package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"riskapi/internal/auth"
	"riskapi/internal/mcptools"
)

// mcpSessionTimeout closes an MCP session that has had no request for this long: an agent
// host keeps one per connection, and a session holds only a little memory, so half an hour
// outlasts a pause of the agent without keeping abandoned sessions for long.
const mcpSessionTimeout = 30 * time.Minute

// handleMCP is /mcp: the products as MCP tools over Streamable HTTP (agents spec §3). POST
// carries JSON-RPC messages, GET opens the session's stream and DELETE ends the session.
// The caller is authenticated as on every endpoint, and a 401, 403 or 429 of that step
// answers as a JSON-RPC error with the HTTP status (markMCP); each tool call is then its
// REST request, dispatched through the whole API with the caller's Authorization
// (mcpDispatch), so scopes, rate limits, usage, idempotency, test mode, events and webhooks
// apply to it as to that request. Sessions live in this process's memory: behind several
// processes, route a session's requests to one (its Mcp-Session-Id header).
func (s *Server) handleMCP() http.Handler {
	tools, err := mcptools.NewServer(mcpDispatch{s}, serviceVersion)
	if err != nil {
		panic(err) // the embedded contract lacks a tool's schema: every test fails at once
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return tools }, &mcp.StreamableHTTPOptions{
		// Plain JSON answers to POST: tool calls send no progress, and JSON is what the
		// contract and every client read most simply.
		JSONResponse:   true,
		SessionTimeout: mcpSessionTimeout,
		Logger:         s.cfg.Logger,
		// Every request carries an API key, which a DNS-rebinding page cannot send; and a
		// reverse proxy on the same host reaches the server on a loopback address with the
		// public Host, which the SDK's protection would refuse.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        s.cfg.MaxBodyBytes,
	})
	// The SDK binds a session to the key that opened it (TokenInfo.UserID): another key
	// cannot use a session id it learnt.
	bind := mcpauth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*mcpauth.TokenInfo, error) {
		p := principalFrom(r.Context())
		return &mcpauth.TokenInfo{UserID: p.Key.ID, Scopes: p.Key.Scopes}, nil
	}, &mcpauth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return markMCP(s.authenticate(s.requireToolScope(bind(s.endWithServer(h)))))
}

// endWithServer ends a GET stream when the server ends its streams (EndStreams).
func (s *Server) endWithServer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(s.streams, cancel)()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// serviceVersion is the version the MCP server reports: the API's.
const serviceVersion = "v1"

// requireToolScope answers 403 to a tools/call whose tool needs a scope the key lacks,
// before the call runs (the call would be refused with 403 by its REST request anyway;
// refusing here gives the JSON-RPC error the HTTP status the spec asks for).
func (s *Server) requireToolScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, r, errPayloadTooLarge(s.cfg.MaxBodyBytes))
			return
		}
		if err != nil {
			writeError(w, r, newError(CodeBadRequest, "The request body could not be read: the connection failed while it was sent."))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		requestInfoFrom(r.Context()).mcpID = requestIDOf(body)
		p := principalFrom(r.Context())
		for _, call := range toolCalls(body) {
			scope, ok := mcptools.Scope(call.Params.Name, call.Params.Arguments)
			if ok && !auth.Grants(p.Key.Scopes, scope) {
				e := newError(CodeForbidden, "This API key does not have the %s scope the tool %s needs.", scope, call.Params.Name)
				e.Details["required_scope"] = scope
				writeError(w, r, e)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// jsonRPCCall is the part of a JSON-RPC message the scope check reads.
type jsonRPCCall struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// toolCalls finds the tools/call requests of a POST body: one message, or a batch.
func toolCalls(body []byte) []jsonRPCCall {
	var msgs []jsonRPCCall
	var one jsonRPCCall
	if json.Unmarshal(body, &one) == nil {
		msgs = []jsonRPCCall{one}
	} else if json.Unmarshal(body, &msgs) != nil {
		return nil // not JSON-RPC: the SDK answers it
	}
	var out []jsonRPCCall
	for _, m := range msgs {
		if m.Method == "tools/call" {
			out = append(out, m)
		}
	}
	return out
}

// markMCP makes the refusals of the steps before the MCP handler (authentication, the
// failed-authentication limit, the tool's scope) JSON-RPC errors with the HTTP status and
// headers they have as envelopes (writeJSONRPCError): an MCP client reads JSON-RPC.
// It also records the client's address in mcpClientAddr, overwriting whatever the client
// sent, for the tool calls' dispatched requests (mcpDispatch).
func markMCP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requestInfoFrom(r.Context()).mcp = true
		r.Header.Set(mcpClientAddr, r.RemoteAddr)
		next.ServeHTTP(w, r)
	})
}

// mcpClientAddr carries the address of the client of /mcp, as the server saw it, to the
// requests its tool calls dispatch: the failed-authentication limit (a key revoked while a
// session is open) counts against that client, not against every MCP client at once.
const mcpClientAddr = "X-Riskapi-Mcp-Client-Addr"

// writeJSONRPCError answers a refused /mcp request: a JSON-RPC error response to the
// request's id (null when it is not known), whose data carries the HTTP status, the API's
// error object and the request id (mcptools.RPCError).
func writeJSONRPCError(w http.ResponseWriter, r *http.Request, status int, obj mcptools.ErrorObject) {
	info := requestInfoFrom(r.Context())
	id := json.RawMessage(info.mcpID)
	if id == nil && r.Method == http.MethodPost && status != http.StatusRequestEntityTooLarge {
		// Refused before the body was read (a bad key): its id is in the first bytes.
		head, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		id = requestIDOf(head)
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	apiErr := &mcptools.APIError{Status: status, Object: obj, RequestID: info.id}
	if secs, err := strconv.Atoi(w.Header().Get("Retry-After")); err == nil {
		apiErr.RetryAfter = time.Duration(secs) * time.Second
	}
	rpcErr := mcptools.RPCError(apiErr)
	out, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": rpcErr.Code, "message": rpcErr.Message, "data": json.RawMessage(rpcErr.Data)}})
	if err != nil {
		out = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	writeJSONBytes(w, status, out)
}

// requestIDOf is the id of a single JSON-RPC request, nil when there is none.
func requestIDOf(body []byte) json.RawMessage {
	var m jsonRPCCall
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	return m.ID
}

// mcpDispatch sends a tool call's REST request through the server's own handler chain, as
// if the caller had sent it: same key, same middleware, same handler, its own request id and
// access log line.
type mcpDispatch struct{ s *Server }

// Do implements mcptools.Backend.
func (d mcpDispatch) Do(ctx context.Context, req mcptools.Request) (json.RawMessage, error) {
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	r, err := http.NewRequestWithContext(ctx, req.Method, req.Path, body)
	if err != nil {
		return nil, err
	}
	r.RequestURI = req.Path
	r.RemoteAddr = req.Header.Get(mcpClientAddr)
	r.Header.Set("Authorization", req.Header.Get("Authorization"))
	if fwd := req.Header.Values("X-Forwarded-For"); len(fwd) > 0 {
		r.Header["X-Forwarded-For"] = fwd // believed only from the configured trusted proxies
	}
	r.Header.Set("User-Agent", "riskapi-mcp (via /mcp) "+req.Header.Get("User-Agent"))
	if req.Body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if req.IdempotencyKey != "" {
		r.Header.Set("Idempotency-Key", req.IdempotencyKey)
	}
	rec := &bufferedResponse{header: http.Header{}}
	d.s.ServeHTTP(rec, r)
	return decodeAnswer(rec.status(), rec.header, rec.body.Bytes())
}

// decodeAnswer reads an envelope: the data of a 2xx, else an *mcptools.APIError.
func decodeAnswer(status int, header http.Header, raw []byte) (json.RawMessage, error) {
	var env struct {
		Data     json.RawMessage      `json:"data"`
		Error    mcptools.ErrorObject `json:"error"`
		Metadata struct {
			RequestID string `json:"request_id"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		env.Error = mcptools.ErrorObject{Type: "api_error", Code: string(CodeInternal), Message: "The answer was not the API's envelope."}
	}
	if status >= 200 && status < 300 {
		return env.Data, nil
	}
	e := &mcptools.APIError{Status: status, Object: env.Error, RequestID: env.Metadata.RequestID}
	if secs, err := strconv.Atoi(header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	return nil, e
}

// bufferedResponse is the ResponseWriter of a dispatched request: the answer in memory.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}
func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *bufferedResponse) status() int {
	if b.code == 0 {
		return http.StatusOK
	}
	return b.code
}
