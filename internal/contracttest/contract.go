// Package contracttest checks HTTP exchanges that tests observe against the public
// contract, api/openapi.yaml, so that every response a test sees is one the document
// promises. Only tests import it.
package contracttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"riskapi/api"
)

// Contract is the loaded OpenAPI document with a router over its operations. It is safe
// for concurrent use by parallel tests.
type Contract struct {
	doc           *openapi3.T
	router        routers.Router
	errorEnvelope *openapi3.Schema
	// serverBases are the path prefixes of the servers that have a "/" path item
	// ("/v1"): a request for exactly the prefix is that operation's.
	serverBases []string
	operations  []string
	bodies      *bodySchemas

	mu        sync.Mutex
	exercised map[string]bool
}

// load parses and validates the document once per process.
var load = sync.OnceValues(func() (*Contract, error) { return newContract(api.OpenAPIYAML) })

// Load returns the contract of api/openapi.yaml, loaded once per process; it stops the
// test if the document does not load or validate.
func Load(t testing.TB) *Contract {
	t.Helper()
	c, err := load()
	if err != nil {
		t.Fatalf("contracttest: %v", err)
	}
	return c
}

// Shared returns the same process-wide contract as Load, for callers without a testing.TB
// such as a TestMain that checks Unexercised after m.Run.
func Shared() (*Contract, error) { return load() }

func newContract(yaml []byte) (*Contract, error) {
	// Protobuf bodies (the OTLP endpoint's) are opaque bytes to the document: checked as
	// a string, as kin-openapi checks application/octet-stream.
	openapi3filter.RegisterBodyDecoder("application/x-protobuf", openapi3filter.FileBodyDecoder)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(yaml)
	if err != nil {
		return nil, fmt.Errorf("load api/openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("validate api/openapi.yaml: %w", err)
	}
	// gorillamux rather than routers/legacy: legacy ignores path-level servers
	// (/healthz lives outside /v1) and matches server URLs against the request's
	// absolute URL, so a relative server URL such as /v1 never matches a client
	// request for http://127.0.0.1:port/v1/... . gorillamux turns each server into a
	// path prefix, adds no host matcher for relative URLs, and honours path-level
	// servers.
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route api/openapi.yaml: %w", err)
	}
	envelope := doc.Components.Schemas["ErrorEnvelope"]
	if envelope == nil || envelope.Value == nil {
		return nil, errors.New("api/openapi.yaml has no #/components/schemas/ErrorEnvelope")
	}
	bodies, err := newBodySchemas(doc)
	if err != nil {
		return nil, err
	}
	c := &Contract{doc: doc, router: router, errorEnvelope: envelope.Value, bodies: bodies, exercised: map[string]bool{}}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method := range item.Operations() {
			c.operations = append(c.operations, method+" "+path)
		}
		if path != "/" {
			continue
		}
		servers := doc.Servers
		if len(item.Servers) > 0 {
			servers = item.Servers
		}
		for _, s := range servers {
			if base := strings.TrimSuffix(s.URL, "/"); strings.HasPrefix(base, "/") {
				c.serverBases = append(c.serverBases, base)
			}
		}
	}
	slices.Sort(c.operations)
	return c, nil
}

// Operations lists every documented operation as "METHOD /path", with the path as the
// document writes it (relative to its server: "GET /account" is GET /v1/account),
// sorted.
func (c *Contract) Operations() []string {
	return slices.Clone(c.operations)
}

// Unexercised lists the documented operations (as Operations does) that no exchange
// given to Check or Validate has matched so far in this process. Call it after the
// tests that exercise the API, for example in TestMain after m.Run.
func (c *Contract) Unexercised() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, op := range c.operations {
		if !c.exercised[op] {
			out = append(out, op)
		}
	}
	return out
}

// bodyPrefixLen is how much of a failing response's body Check quotes.
const bodyPrefixLen = 512

// Check validates one observed exchange with Validate and reports a mismatch with
// t.Errorf, quoting the start of the body. req is the client's request (its URL's host
// does not matter); status, header and body are the response as received.
func (c *Contract) Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := c.Validate(req, status, header, body); err != nil {
		quoted := body
		if len(quoted) > bodyPrefixLen {
			quoted = quoted[:bodyPrefixLen]
		}
		t.Errorf("contract: %v\nbody (%d bytes): %s", err, len(body), quoted)
	}
}

// Validate checks one exchange against the document and returns what is wrong, or nil.
//
// When the request matches a documented operation, the status must be documented for
// it, and the headers and body must match that response's declaration. When it matches
// none (an unknown path or version, a documented path with another method, or a route
// only tests register), the status must be 4xx or 5xx and the body an ErrorEnvelope.
// In both cases X-Request-Id must be present and equal the envelope's
// metadata.request_id. A HEAD request is checked as the GET it mirrors, with an empty body.
func (c *Contract) Validate(req *http.Request, status int, header http.Header, body []byte) error {
	if req == nil || req.URL == nil {
		return errors.New("contracttest: Validate needs the request, with its URL")
	}
	var problems []string
	problems = append(problems, requestIDProblems(header, body)...)

	route, params, routeErr := c.findRoute(req)
	if routeErr == nil {
		c.markExercised(route)
		problems = append(problems, c.operationProblems(req, route, params, status, header, body)...)
	} else {
		problems = append(problems, c.unroutedProblems(req.Method, routeErr, status, header, body)...)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s → %d:\n  - %s", req.Method, req.URL.Path, status, strings.Join(problems, "\n  - "))
}

// findRoute finds the documented operation of req, independently of its host. A HEAD
// request is routed as GET.
func (c *Contract) findRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	r := req.Clone(req.Context())
	if r.Method == http.MethodHead {
		r.Method = http.MethodGet
	}
	// The document's "/" under server /v1 is, by concatenation, /v1/; the service
	// answers GET /v1 for it too. Route the bare prefix as that operation.
	if slices.Contains(c.serverBases, r.URL.Path) {
		r.URL.Path += "/"
		r.URL.RawPath = ""
	}
	return c.router.FindRoute(r)
}

func (c *Contract) markExercised(route *routers.Route) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exercised[route.Method+" "+route.Path] = true
}

// operationProblems checks a response of a documented operation.
func (c *Contract) operationProblems(req *http.Request, route *routers.Route, params map[string]string,
	status int, header http.Header, body []byte) []string {
	op := route.Method + " " + route.Path
	responses := route.Operation.Responses
	if responses.Status(status) == nil && responses.Default() == nil {
		return []string{fmt.Sprintf("status %d is not documented for %s (documented: %s)",
			status, op, strings.Join(documentedStatuses(responses), ", "))}
	}

	options := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	var problems []string
	// A JSON body is checked against its schema here, compiled once (see bodySchemas);
	// kin-openapi checks the status, the headers and any other body.
	if schema := jsonBodySchema(responses, status, header); schema != nil && req.Method != http.MethodHead {
		options.ExcludeResponseBody = true
		if err := c.bodies.validate(schema, body); err != nil {
			problems = append(problems, fmt.Sprintf("does not match the %d response of %s: response body doesn't match schema: %s", status, op, describe(err)))
		}
	}
	vreq := req
	if req.Method == http.MethodHead {
		// ValidateResponse skips HEAD entirely; check the headers as GET's, and that
		// no body came back.
		vreq = req.Clone(req.Context())
		vreq.Method = http.MethodGet
		options.ExcludeResponseBody = true
		if len(body) != 0 {
			problems = append(problems, fmt.Sprintf("a HEAD response has a %d-byte body", len(body)))
		}
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                options,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		problems = append(problems, fmt.Sprintf("does not match the %d response of %s: %s", status, op, describe(err)))
	}
	return problems
}

// jsonBodySchema returns the schema of the JSON body that the response documented for
// status declares for the Content-Type in header, or nil if there is none (no content, a
// Content-Type the response does not declare, or one that is not JSON).
func jsonBodySchema(responses *openapi3.Responses, status int, header http.Header) *openapi3.Schema {
	ref := responses.Status(status)
	if ref == nil {
		ref = responses.Default()
	}
	if ref == nil || ref.Value == nil {
		return nil
	}
	mediaType, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || (mediaType != "application/json" && !strings.HasSuffix(mediaType, "+json")) {
		return nil
	}
	content := ref.Value.Content.Get(header.Get("Content-Type"))
	if content == nil || content.Schema == nil {
		return nil
	}
	return content.Schema.Value
}

// bodySchemas compiles each response body schema once, on first use, with the JSON Schema
// 2020-12 validator that kin-openapi uses for OpenAPI 3.1 documents. kin-openapi compiles
// the schema afresh on every validation, which made contract checks about half the CPU
// time of the tests that call the API. The formats are enforced as kin-openapi enforces
// them: with its validators, where it has one.
type bodySchemas struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[*openapi3.Schema]*jsonschema.Schema
}

// componentsURL names the resource holding the document's components; the body schemas'
// references to #/components/... are made absolute against it.
const componentsURL = "https://riskapi.test/contracttest/components.json"

func newBodySchemas(doc *openapi3.T) (*bodySchemas, error) {
	var components any
	raw, err := json.Marshal(map[string]any{"components": map[string]any{"schemas": doc.Components.Schemas}})
	if err == nil {
		components, err = jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	}
	if err != nil {
		return nil, fmt.Errorf("contracttest: prepare the document's schemas: %w", err)
	}
	whole, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("contracttest: prepare the document's schemas: %w", err)
	}
	var all any
	if err := json.Unmarshal(whole, &all); err != nil {
		return nil, fmt.Errorf("contracttest: prepare the document's schemas: %w", err)
	}
	compiler := jsonschema.NewCompiler()
	compiler.DefaultDraft(jsonschema.Draft2020)
	formats := map[string]bool{}
	collectFormats(all, formats)
	for name := range formats {
		compiler.RegisterFormat(&jsonschema.Format{Name: name, Validate: kinFormat(name)})
	}
	compiler.AssertFormat()
	if err := compiler.AddResource(componentsURL, components); err != nil {
		return nil, fmt.Errorf("contracttest: add the document's schemas: %w", err)
	}
	return &bodySchemas{compiler: compiler, compiled: map[*openapi3.Schema]*jsonschema.Schema{}}, nil
}

// collectFormats adds every "format" named in node to formats.
func collectFormats(node any, formats map[string]bool) {
	switch node := node.(type) {
	case map[string]any:
		if format, ok := node["format"].(string); ok && format != "" {
			formats[format] = true
		}
		for _, v := range node {
			collectFormats(v, formats)
		}
	case []any:
		for _, v := range node {
			collectFormats(v, formats)
		}
	}
}

// kinFormat checks a value against format as kin-openapi does: strings with its string
// format validators, whole numbers with its integer ones; anything else passes.
func kinFormat(format string) func(any) error {
	return func(value any) error {
		switch v := value.(type) {
		case string:
			if f, ok := openapi3.SchemaStringFormats[format]; ok {
				return f.Validate(v)
			}
		case json.Number:
			if f, ok := openapi3.SchemaIntegerFormats[format]; ok {
				if n, err := v.Int64(); err == nil {
					return f.Validate(n)
				}
			}
		}
		return nil
	}
}

// validate checks a JSON body against schema.
func (b *bodySchemas) validate(schema *openapi3.Schema, body []byte) error {
	compiled, err := b.compile(schema)
	if err != nil {
		return err
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	return compiled.Validate(value)
}

// compile returns schema compiled, compiling it on first use.
func (b *bodySchemas) compile(schema *openapi3.Schema) (*jsonschema.Schema, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if compiled, ok := b.compiled[schema]; ok {
		return compiled, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("contracttest: marshal a response schema: %w", err)
	}
	raw = bytes.ReplaceAll(raw, []byte(`"$ref":"#/components/`), []byte(`"$ref":"`+componentsURL+`#/components/`))
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("contracttest: read a response schema: %w", err)
	}
	url := fmt.Sprintf("https://riskapi.test/contracttest/body-%d.json", len(b.compiled))
	if err := b.compiler.AddResource(url, value); err != nil {
		return nil, fmt.Errorf("contracttest: add a response schema: %w", err)
	}
	compiled, err := b.compiler.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("contracttest: compile a response schema: %w", err)
	}
	b.compiled[schema] = compiled
	return compiled, nil
}

func documentedStatuses(responses *openapi3.Responses) []string {
	var out []string
	for status := range responses.Map() {
		out = append(out, status)
	}
	slices.Sort(out)
	return out
}

// unroutedProblems checks a response to a request that no documented operation matches.
func (c *Contract) unroutedProblems(method string, routeErr error, status int, header http.Header, body []byte) []string {
	var problems []string
	if status < 400 {
		problems = append(problems, fmt.Sprintf("no documented operation matches (%v), yet the status is not an error", routeErr))
	}
	if method == http.MethodHead {
		if len(body) != 0 {
			problems = append(problems, fmt.Sprintf("a HEAD response has a %d-byte body", len(body)))
		}
		return problems
	}
	if mt, _, err := mime.ParseMediaType(header.Get("Content-Type")); err != nil || mt != "application/json" {
		problems = append(problems, fmt.Sprintf("Content-Type %q of an error response is not application/json", header.Get("Content-Type")))
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return append(problems, fmt.Sprintf("the body of an error response is not JSON: %v", err))
	}
	if err := c.bodies.validate(c.errorEnvelope, body); err != nil {
		problems = append(problems, "the body is not an ErrorEnvelope: "+describe(err))
	}
	return problems
}

// requestIDProblems checks that X-Request-Id is present and, on an envelope, equals
// metadata.request_id.
func requestIDProblems(header http.Header, body []byte) []string {
	id := header.Get("X-Request-Id")
	var problems []string
	if id == "" {
		problems = append(problems, "X-Request-Id header is missing or empty")
	}
	var envelope struct {
		Success  *bool `json:"success"`
		Metadata *struct {
			RequestID *string `json:"request_id"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &envelope) != nil || envelope.Success == nil {
		return problems // not an envelope; the schema checks say what it should be
	}
	switch {
	case envelope.Metadata == nil || envelope.Metadata.RequestID == nil:
		problems = append(problems, "the envelope has no metadata.request_id to match X-Request-Id")
	case *envelope.Metadata.RequestID != id && id != "":
		problems = append(problems, fmt.Sprintf("X-Request-Id %q differs from metadata.request_id %q", id, *envelope.Metadata.RequestID))
	}
	return problems
}

// describe renders a kin-openapi validation error as its failing leaves, one per
// line, without the schema and value dumps kin-openapi appends to each.
func describe(err error) string {
	var leaves []string
	collectLeaves(err, &leaves)
	if len(leaves) == 0 {
		return err.Error()
	}
	if len(leaves) == 1 {
		return leaves[0]
	}
	return "\n      * " + strings.Join(leaves, "\n      * ")
}

func collectLeaves(err error, leaves *[]string) {
	switch e := err.(type) {
	case nil:
		return
	case *openapi3filter.ResponseError:
		if e.Err == nil {
			*leaves = append(*leaves, e.Reason)
			return
		}
		var inner []string
		collectLeaves(e.Err, &inner)
		for _, leaf := range inner {
			*leaves = append(*leaves, e.Reason+": "+leaf)
		}
		return
	case openapi3.MultiError:
		for _, sub := range e {
			collectLeaves(sub, leaves)
		}
		return
	case *jsonschema.ValidationError:
		collectValidationLeaves(e, leaves)
		return
	case *openapi3.SchemaError:
		if e.Origin != nil && hasSchemaError(e.Origin) {
			collectLeaves(e.Origin, leaves)
			return
		}
		*leaves = append(*leaves, schemaLeaf(e))
		return
	}
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		for _, sub := range multi.Unwrap() {
			collectLeaves(sub, leaves)
		}
		return
	}
	if inner := errors.Unwrap(err); inner != nil && hasSchemaError(inner) {
		collectLeaves(inner, leaves)
		return
	}
	*leaves = append(*leaves, err.Error())
}

// collectValidationLeaves adds the failing checks of a JSON Schema validation error, the
// leaves of its tree of causes: "at '/data/plan': value must be one of ...".
func collectValidationLeaves(e *jsonschema.ValidationError, leaves *[]string) {
	if len(e.Causes) > 0 {
		for _, cause := range e.Causes {
			collectValidationLeaves(cause, leaves)
		}
		return
	}
	leaf := fmt.Sprintf("at '%s': %s", jsonPointer(e.InstanceLocation), e.ErrorKind.LocalizedString(english))
	if !slices.Contains(*leaves, leaf) {
		*leaves = append(*leaves, leaf)
	}
}

var english = message.NewPrinter(language.English)

// jsonPointer joins unescaped tokens into a JSON pointer.
func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/")
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

func hasSchemaError(err error) bool {
	var se *openapi3.SchemaError
	var me openapi3.MultiError
	return errors.As(err, &se) || errors.As(err, &me)
}

// schemaLeaf is one failing check. Errors of the JSON Schema 2020-12 validator (used for
// 3.1 documents) read `error at "<path kin-openapi built>": at '<true path>': <reason>`,
// and kin-openapi's path can repeat segments, so the validator's own part is kept.
// Errors of kin-openapi's own validator (which it still uses for subschemas without
// 2020-12 keywords) carry the path separately.
func schemaLeaf(e *openapi3.SchemaError) string {
	reason := e.Reason
	if reason == "" {
		reason = fmt.Sprintf("does not satisfy %q", e.SchemaField)
	}
	if rest, ok := strings.CutPrefix(reason, `error at "`); ok {
		if _, msg, ok := strings.Cut(rest, `": `); ok {
			return msg
		}
	}
	if strings.HasPrefix(reason, "at '") {
		return reason
	}
	return "at '/" + strings.Join(e.JSONPointer(), "/") + "': " + reason
}

// RequestMembers lists the top-level members of the JSON request body of an operation, given
// as Operations writes it ("POST /drift/analyze"), sorted.
func (c *Contract) RequestMembers(op string) ([]string, error) {
	o, err := c.operation(op)
	if err != nil {
		return nil, err
	}
	if o.RequestBody == nil || o.RequestBody.Value == nil || o.RequestBody.Value.Content.Get("application/json") == nil {
		return nil, fmt.Errorf("%s has no JSON request body", op)
	}
	return schemaMembers(o.RequestBody.Value.Content.Get("application/json").Schema), nil
}

// DataMembers lists the top-level members of data in an operation's response of status
// ("200"), sorted.
func (c *Contract) DataMembers(op, status string) ([]string, error) {
	o, err := c.operation(op)
	if err != nil {
		return nil, err
	}
	resp := o.Responses.Value(status)
	if resp == nil || resp.Value == nil || resp.Value.Content.Get("application/json") == nil {
		return nil, fmt.Errorf("%s has no JSON %s response", op, status)
	}
	var members []string
	for _, data := range findProperty(resp.Value.Content.Get("application/json").Schema, "data") {
		members = append(members, schemaMembers(data)...)
	}
	if members == nil {
		return nil, fmt.Errorf("%s's %s response has no data members", op, status)
	}
	slices.Sort(members)
	return slices.Compact(members), nil
}

func (c *Contract) operation(op string) (*openapi3.Operation, error) {
	method, path, _ := strings.Cut(op, " ")
	item := c.doc.Paths.Value(path)
	if item == nil || item.GetOperation(method) == nil {
		return nil, fmt.Errorf("api/openapi.yaml has no operation %s", op)
	}
	return item.GetOperation(method), nil
}

// schemaMembers lists the properties of a schema, those of its allOf parts and of its
// oneOf and anyOf variants included (a body by product or type has the members of every
// variant), sorted.
func schemaMembers(ref *openapi3.SchemaRef) []string {
	if ref == nil || ref.Value == nil {
		return nil
	}
	var out []string
	for name := range ref.Value.Properties {
		out = append(out, name)
	}
	for _, parts := range [][]*openapi3.SchemaRef{ref.Value.AllOf, ref.Value.OneOf, ref.Value.AnyOf} {
		for _, part := range parts {
			out = append(out, schemaMembers(part)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// findProperty returns the schemas of property name of a schema and of its allOf parts (an
// envelope's generic data and the operation's own).
func findProperty(ref *openapi3.SchemaRef, name string) []*openapi3.SchemaRef {
	if ref == nil || ref.Value == nil {
		return nil
	}
	var out []*openapi3.SchemaRef
	if p := ref.Value.Properties[name]; p != nil {
		out = append(out, p)
	}
	for _, part := range ref.Value.AllOf {
		out = append(out, findProperty(part, name)...)
	}
	return out
}
