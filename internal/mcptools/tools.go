// Package mcptools is riskapi's products as Model Context Protocol tools (agents spec §3):
// one tool set, served over Streamable HTTP at /mcp (internal/httpapi) and over stdio by
// `riskapi mcp` (cmd/riskapi). The tools follow the product registry (product.Product.Tools)
// and their input schemas are the request schemas of api/openapi.yaml. A tool call is the
// REST request of its endpoint, sent through a Backend with the caller's key, so it is
// authenticated, scoped, rate limited, metered and idempotent exactly as that request.
package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"riskapi/internal/product"
)

// JSON-RPC error codes of the answers that refuse the caller rather than the input (agents
// spec §3: 401 and 403 are JSON-RPC errors carrying the HTTP status). JSON-RPC leaves -32000
// to -32099 to implementations; the codes the SDKs already give a meaning there (-32000 to
// -32005 and -32042) are avoided, and the last two digits echo the HTTP status.
const (
	CodeUnauthorized = -32041 // HTTP 401: no valid API key
	CodeForbidden    = -32043 // HTTP 403: the key lacks the scope, or test-mode only
	CodeRefused      = -32040 // any other refusal of the HTTP request itself (413, 429, 5xx)
)

// GetAnalysis is the tool that reads a stored result of any product.
const GetAnalysis = "get_analysis"

// tool is one tool of the set, with what its calls need.
type tool struct {
	def     *mcp.Tool
	product product.Product
	spec    product.Tool // zero for get_analysis
}

// tools builds the set once per process: it reads the contract, which never changes.
var tools = sync.OnceValues(func() ([]tool, error) {
	var out []tool
	for _, p := range product.All {
		for _, spec := range p.Tools {
			schema, err := requestSchema(spec.Endpoint)
			if err != nil {
				return nil, err
			}
			if method, _, _ := strings.Cut(spec.Endpoint, " "); method == http.MethodPost {
				schema = withIdempotencyKey(schema)
			}
			out = append(out, tool{product: p, spec: spec, def: &mcp.Tool{
				Name: spec.Name, Title: p.Title + ": " + strings.ReplaceAll(spec.Name, "_", " "),
				Description: spec.Description, InputSchema: schema,
				Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
			}})
		}
	}
	out = append(out, tool{def: &mcp.Tool{
		Name: GetAnalysis, Title: "Get a stored analysis",
		Description: "Read a stored result by its id: a Drift or Convergence analysis, a Cascade simulation " +
			"(poll a queued one until its status is completed) or a Meridian quality check.",
		InputSchema: map[string]any{
			"type": "object", "required": []string{"kind", "id"}, "additionalProperties": false,
			"properties": map[string]any{
				"kind": map[string]any{"type": "string", "enum": product.Names(), "description": "The product whose result it is."},
				"id":   map[string]any{"type": "string", "minLength": 1, "maxLength": 255, "description": "The result's id, such as dra_…, cva_…, csm_… or mqc_…."},
			},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}})
	return out, nil
})

func ptr[T any](v T) *T { return &v }

// Names lists the tools in the order tools/list gives them.
func Names() ([]string, error) {
	set, err := tools()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(set))
	for i, t := range set {
		out[i] = t.def.Name
	}
	return out, nil
}

// NewServer is the tool set as an MCP server whose calls b sends.
func NewServer(b Backend, version string) (*mcp.Server, error) {
	set, err := tools()
	if err != nil {
		return nil, err
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "riskapi", Title: "riskapi", Version: version}, &mcp.ServerOptions{
		Instructions: "riskapi's four risk-analytics products as tools. Every call is an API request with your key: " +
			"it needs the product's scope, counts against its rate limit and usage, and is stored like the REST request. " +
			"Before using a data feed, call meridian_gate and follow its gating (allow, review, block).",
	})
	for _, t := range set {
		s.AddTool(t.def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return t.call(ctx, b, req)
		})
	}
	return s, nil
}

// Scope is the scope a call of the tool called name with arguments args needs: /mcp
// refuses a key without it with 403 before the call runs. ok is false for another
// method's name or arguments that name no product (the call then answers the error).
func Scope(name string, args json.RawMessage) (scope string, ok bool) {
	set, err := tools()
	if err != nil {
		return "", false
	}
	i := slices.IndexFunc(set, func(t tool) bool { return t.def.Name == name })
	if i < 0 {
		return "", false
	}
	if name != GetAnalysis {
		return set[i].product.WriteScope(), true
	}
	var in struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(args, &in) != nil {
		return "", false
	}
	p, found := product.Lookup(in.Kind)
	if !found {
		return "", false
	}
	return p.ReadScope(), true
}

// call runs one tool call as its REST request.
func (t tool) call(ctx context.Context, b Backend, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var header http.Header
	if req.Extra != nil {
		header = req.Extra.Header
	}
	var args json.RawMessage
	if req.Params != nil {
		args = req.Params.Arguments
	}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage(`{}`)
	}
	if t.def.Name == GetAnalysis {
		return t.getAnalysis(ctx, b, args, header)
	}
	body, key, invalid := splitArguments(args)
	if invalid != nil {
		return errorResult(&APIError{Status: http.StatusBadRequest, Object: *invalid}), nil
	}
	method, path, _ := strings.Cut(t.spec.Endpoint, " ")
	data, err := b.Do(ctx, Request{Method: method, Path: path, Body: body, IdempotencyKey: key, Header: header})
	if err != nil {
		return failure(err)
	}
	obj, err := decodeObject(data)
	if err != nil {
		return failure(err)
	}
	if t.spec.Gate {
		gate := gateOf(obj)
		raw, err := json.Marshal(gate)
		if err != nil {
			return failure(err)
		}
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(raw),
			Content: []mcp.Content{&mcp.TextContent{Text: summarizeGate(gate, obj)}}}, nil
	}
	return &mcp.CallToolResult{StructuredContent: data,
		Content: []mcp.Content{&mcp.TextContent{Text: summarize(t.spec.Endpoint, obj)}}}, nil
}

// getAnalysis is get_analysis: GET <the kind's results path>/{id}.
func (t tool) getAnalysis(ctx context.Context, b Backend, args json.RawMessage, header http.Header) (*mcp.CallToolResult, error) {
	var in struct {
		Kind *string `json:"kind"`
		ID   *string `json:"id"`
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(args, &members); err != nil {
		return errorResult(&APIError{Status: http.StatusBadRequest, Object: ErrorObject{Type: "invalid_request_error", Code: "BAD_REQUEST",
			Message: "get_analysis takes an object {kind, id}.", Details: map[string]any{}}}), nil
	}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if name != "kind" && name != "id" {
			e := invalidArgument(name, "no such field", jsonType(members[name]), "get_analysis takes only kind and id, not %s.", name)
			e.Object.Code = "UNKNOWN_FIELD"
			return errorResult(e), nil
		}
	}
	for name, raw := range members {
		if err := json.Unmarshal(raw, map[string]any{"kind": &in.Kind, "id": &in.ID}[name]); err != nil {
			return errorResult(invalidArgument(name, "string", jsonType(raw), "%s must be a string.", name)), nil
		}
	}
	kinds := strings.Join(product.Names(), ", ")
	if in.Kind == nil {
		return errorResult(invalidArgument("kind", "one of "+kinds, "null", "kind is required: one of %s.", kinds)), nil
	}
	p, ok := product.Lookup(*in.Kind)
	if !ok {
		return errorResult(invalidArgument("kind", "one of "+kinds, *in.Kind, "Unknown kind %q: one of %s.", *in.Kind, kinds)), nil
	}
	if in.ID == nil || *in.ID == "" {
		return errorResult(invalidArgument("id", "string (the result's id)", "null", "id is required: the id of the %s.", p.Results.Noun)), nil
	}
	data, err := b.Do(ctx, Request{Method: http.MethodGet, Path: p.Results.Path + "/" + url.PathEscape(*in.ID), Header: header})
	if err != nil {
		return failure(err)
	}
	obj, err := decodeObject(data)
	if err != nil {
		return failure(err)
	}
	return &mcp.CallToolResult{StructuredContent: data,
		Content: []mcp.Content{&mcp.TextContent{Text: summarize(p.Analyze, obj)}}}, nil
}

// splitArguments takes IdempotencyKeyMember out of a call's arguments: the body is the rest,
// byte for byte when the member is absent. A key that is not a string is refused as the
// Idempotency-Key header would be.
func splitArguments(args json.RawMessage) (body []byte, key string, invalid *ErrorObject) {
	var members map[string]json.RawMessage
	if json.Unmarshal(args, &members) != nil {
		return args, "", nil // not an object: the endpoint's decoder says what is wrong
	}
	raw, ok := members[IdempotencyKeyMember]
	if !ok {
		return args, "", nil
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		e := invalidArgument(IdempotencyKeyMember, "string (1-255 printable ASCII characters)", jsonType(raw),
			"idempotency_key must be a string of 1 to 255 printable ASCII characters.")
		return nil, "", &e.Object
	}
	delete(members, IdempotencyKeyMember)
	body, err := json.Marshal(members)
	if err != nil {
		return args, "", nil
	}
	return body, key, nil
}

// invalidArgument is a validation error of the API's shape for a tool's own argument.
func invalidArgument(field, expected, received, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Object: ErrorObject{
		Type: "validation_error", Code: "INVALID_" + strings.ToUpper(field), Message: fmt.Sprintf(format, args...),
		Details: map[string]any{"field": field, "expected": expected, "received": received},
	}}
}

// jsonType names the JSON type of a raw value, as the API's errors do in "received".
func jsonType(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '"':
		return "string"
	case t[0] == '{':
		return "object"
	case t[0] == '[':
		return "array"
	case t[0] == 't' || t[0] == 'f':
		return "boolean"
	case t[0] == 'n':
		return "null"
	default:
		return "number"
	}
}

// decodeObject decodes a result object for its summary.
func decodeObject(data json.RawMessage) (map[string]any, error) {
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("mcptools: the answer is not an object: %w", err)
	}
	return obj, nil
}

// failure turns a failed request into the call's answer. A refusal of the caller (401, 403)
// is a JSON-RPC error carrying the HTTP status; every other answer of the API — validation
// errors above all, so a model can correct its input — is a tool result with isError and the
// error object; a request that got no answer is an isError result too.
func failure(err error) (*mcp.CallToolResult, error) {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return errorResult(&APIError{Status: http.StatusServiceUnavailable, Object: ErrorObject{
			Type: "service_unavailable_error", Code: "SERVICE_UNAVAILABLE",
			Message: fmt.Sprintf("The riskapi service did not answer (%v). Retry shortly.", err), Details: map[string]any{}}}), nil
	}
	if apiErr.Status == http.StatusUnauthorized || apiErr.Status == http.StatusForbidden {
		return nil, RPCError(apiErr)
	}
	return errorResult(apiErr), nil
}

// RPCError is the JSON-RPC error of an answer that refuses the caller: its data carries the
// HTTP status, the error object and the request id.
func RPCError(e *APIError) *jsonrpc.Error {
	code := int64(CodeRefused)
	switch e.Status {
	case http.StatusUnauthorized:
		code = CodeUnauthorized
	case http.StatusForbidden:
		code = CodeForbidden
	}
	data := map[string]any{"status": e.Status, "error": e.Object}
	if e.RequestID != "" {
		data["request_id"] = e.RequestID
	}
	if e.RetryAfter > 0 {
		data["retry_after_seconds"] = int64(math.Ceil(e.RetryAfter.Seconds()))
	}
	raw, _ := json.Marshal(data)
	return &jsonrpc.Error{Code: code, Message: e.Object.Message, Data: raw}
}

// errorResult is an isError tool result whose text and structured content carry the error
// object; a 429's also say when to retry.
func errorResult(e *APIError) *mcp.CallToolResult {
	if e.Object.Details == nil {
		e.Object.Details = map[string]any{}
	}
	structured := map[string]any{"error": e.Object}
	if e.RequestID != "" {
		structured["request_id"] = e.RequestID
	}
	text := fmt.Sprintf("Error %s (%s, HTTP %d): %s", e.Object.Code, e.Object.Type, e.Status, e.Object.Message)
	if f, ok := e.Object.Details["field"].(string); ok && f != "" {
		text += fmt.Sprintf(" Field %s: expected %v, received %v.", f, e.Object.Details["expected"], e.Object.Details["received"])
	}
	if e.RetryAfter > 0 {
		secs := int64(math.Ceil(e.RetryAfter.Seconds()))
		structured["retry_after_seconds"] = secs
		text += fmt.Sprintf(" Retry after %d seconds (at %s).", secs, time.Now().Add(e.RetryAfter).UTC().Format(time.RFC3339))
	} else if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		text += " Retry later."
	} else if e.Status < 500 {
		text += " Correct the input and call the tool again."
	}
	raw, _ := json.Marshal(structured)
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(raw),
		Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
