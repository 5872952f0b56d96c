package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"riskapi/api"
)

func load(t *testing.T, data []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("load document: %v", err)
	}
	return doc
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc := load(t, api.OpenAPIYAML)
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	// Validate switches to 3.1 rules (JSON Schema 2020-12 keywords, examples checked with
	// the 2020-12 validator) by itself; the option is passed to say so explicitly.
	if err := doc.Validate(context.Background(), openapi3.IsOpenAPI31OrLater(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("validate: %v", err)
	}
}

// The examples are part of the contract's documentation; Validate must check them, or a
// stale example would go unnoticed.
func TestValidateRejectsAnExampleThatBreaksItsSchema(t *testing.T) {
	broken := bytes.Replace(api.OpenAPIYAML, []byte("plan: professional"), []byte("plan: platinum"), 1)
	if bytes.Equal(broken, api.OpenAPIYAML) {
		t.Fatal("the GET /account example no longer has plan: professional; update this test")
	}
	doc := load(t, broken)
	err := doc.Validate(context.Background())
	if err == nil || !strings.Contains(err.Error(), "platinum") {
		t.Fatalf("validate with plan platinum in an example: err = %v, want a complaint about it", err)
	}
}

func TestOpenAPIJSONRoundTrips(t *testing.T) {
	js, err := api.OpenAPIJSON()
	if err != nil {
		t.Fatalf("OpenAPIJSON: %v", err)
	}
	if !json.Valid(js) {
		t.Fatalf("OpenAPIJSON is not valid JSON: %.200s", js)
	}
	fromYAML := load(t, api.OpenAPIYAML)
	fromJSON := load(t, js)
	if err := fromJSON.Validate(context.Background()); err != nil {
		t.Fatalf("validate the JSON form: %v", err)
	}
	if !reflect.DeepEqual(generic(t, fromYAML), generic(t, fromJSON)) {
		a, _ := json.MarshalIndent(fromYAML, "", " ")
		b, _ := json.MarshalIndent(fromJSON, "", " ")
		t.Fatalf("the JSON form differs from the YAML form:\nYAML: %.2000s\nJSON: %.2000s", a, b)
	}

	again, err := api.OpenAPIJSON()
	if err != nil {
		t.Fatalf("OpenAPIJSON again: %v", err)
	}
	if !bytes.Equal(js, again) {
		t.Fatal("OpenAPIJSON returned different bytes on the second call")
	}
	js[0] = 'x'
	if again[0] == 'x' {
		t.Fatal("OpenAPIJSON handed out its cached slice: a caller's write changed another's bytes")
	}
}

// generic is doc as plain JSON values, so two documents compare whatever their key order.
func generic(t *testing.T, doc *openapi3.T) any {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("marshal document: %v", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("unmarshal document: %v", err)
	}
	return v
}

func TestServers(t *testing.T) {
	doc := load(t, api.OpenAPIYAML)
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/v1" {
		t.Errorf("document servers = %v, want exactly /v1", serverURLs(doc.Servers))
	}
	// /mcp is outside /v1 too: an agent host is configured with one URL (docs/mcp.md).
	rootLevel := []string{"/healthz", "/readyz", "/metrics", "/mcp"}
	for path, item := range doc.Paths.Map() {
		got := serverURLs(item.Servers)
		if slices.Contains(rootLevel, path) {
			if !slices.Equal(got, []string{"/"}) {
				t.Errorf("%s: servers = %v, want [/] (it lives outside /v1)", path, got)
			}
		} else if len(got) != 0 {
			t.Errorf("%s: servers = %v, want none (it inherits /v1)", path, got)
		}
	}
}

func serverURLs(servers openapi3.Servers) []string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.URL)
	}
	return urls
}

var rateLimitHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"}

// Every response carries X-Request-Id; every response of an authenticated operation
// carries the rate-limit headers, except a 500 or 503, which can happen before the
// request was counted (a store failure while checking the key). A 431 is net/http's own
// plain-text refusal of an oversized header section, written before any handler runs, so
// it carries neither. /mcp is not counted itself: each tool call it carries is counted as
// its REST request, whose rate-limit state the JSON-RPC answer does not carry in headers.
func TestResponseHeaders(t *testing.T) {
	doc := load(t, api.OpenAPIYAML)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			security := doc.Security
			if op.Security != nil {
				security = *op.Security
			}
			authenticated := len(security) > 0
			for status, resp := range op.Responses.Map() {
				where := method + " " + path + " " + status
				if status == "431" {
					continue
				}
				h := resp.Value.Headers
				if id := h["X-Request-Id"]; id == nil || !id.Value.Required {
					t.Errorf("%s: X-Request-Id is not declared as a required header", where)
				}
				if !authenticated || path == "/mcp" || status == "405" || status == "500" || status == "503" {
					continue
				}
				for _, name := range rateLimitHeaders {
					if hdr := h[name]; hdr == nil || !hdr.Value.Required {
						t.Errorf("%s: authenticated operation does not declare %s as a required header", where, name)
					}
				}
			}
		}
	}
}

// Every reusable error response is the ErrorEnvelope, narrowed to its status's codes.
func TestErrorResponsesUseTheErrorEnvelope(t *testing.T) {
	doc := load(t, api.OpenAPIYAML)
	want := []string{"BadRequest", "Unauthorized", "Forbidden", "NotFound", "MethodNotAllowed", "Conflict",
		"PayloadTooLarge", "UnsupportedMediaType", "UnprocessableEntity", "TooManyRequests", "InternalError", "ServiceUnavailable"}
	for _, name := range want {
		resp := doc.Components.Responses[name]
		if resp == nil {
			t.Errorf("components/responses/%s is missing", name)
			continue
		}
		mt := resp.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || len(mt.Schema.Value.AllOf) == 0 ||
			mt.Schema.Value.AllOf[0].Ref != "#/components/schemas/ErrorEnvelope" {
			t.Errorf("components/responses/%s does not build on #/components/schemas/ErrorEnvelope", name)
		}
	}
}

// The schemas use JSON Schema 2020-12 keywords (const, type arrays, if/then/else,
// propertyNames); these cases prove kin-openapi enforces them rather than ignoring them.
func TestSchemas(t *testing.T) {
	doc := load(t, api.OpenAPIYAML)
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	meta := `"metadata":{"request_id":"req_4Xb9TqLm2RvY7sKe1NwPz8Ha","timestamp":"2026-11-21T10:00:00.123Z"}`
	apiKey := `{"id":"key_1","object":"api_key","type":"restricted","mode":"live","name":"ci","display":"sk_rstr_…ab12",
		"scopes":["drift:read","cascade:*"],"rate_limit":50,"created_at":"2026-11-01T09:30:00Z",
		"last_used_at":null,"expires_at":"2027-01-01T00:00:00Z","revoked_at":null}`
	account := func(key string) string {
		return `{"id":"acct_1","object":"account","name":"A","email":"a@example.com","plan":"enterprise",
			"region":"eu","livemode":true,"custom_limits":{"cascade":20000},"created_at":"2026-11-01T09:30:00Z","api_key":` + key + `}`
	}
	cases := []struct {
		name, schema, value string
		ok                  bool
	}{
		{"pagination with more pages", "Pagination", `{"has_more":true,"next_cursor":"abc","total_count":31}`, true},
		{"pagination on the last page", "Pagination", `{"has_more":false,"next_cursor":null,"total_count":31}`, true},
		{"pagination with more pages but no cursor", "Pagination", `{"has_more":true,"next_cursor":null,"total_count":31}`, false},
		{"pagination on the last page with a cursor", "Pagination", `{"has_more":false,"next_cursor":"abc","total_count":31}`, false},
		{"pagination with a negative total", "Pagination", `{"has_more":false,"next_cursor":null,"total_count":-1}`, false},

		{"error envelope", "ErrorEnvelope", `{"success":false,"error":{"type":"not_found_error","message":"No such route.","code":"NOT_FOUND","details":{}},` + meta + `}`, true},
		{"error envelope with success true", "ErrorEnvelope", `{"success":true,"error":{"type":"not_found_error","message":"No such route.","code":"NOT_FOUND","details":{}},` + meta + `}`, false},
		{"error envelope with processing_time_ms", "ErrorEnvelope", `{"success":false,"error":{"type":"api_error","message":"Internal error.","code":"INTERNAL_ERROR","details":{}},"metadata":{"request_id":"req_4Xb9TqLm2RvY7sKe1NwPz8Ha","timestamp":"2026-11-21T10:00:00.123Z","processing_time_ms":1}}`, false},
		{"error envelope with an unknown type", "ErrorEnvelope", `{"success":false,"error":{"type":"oops_error","message":"x","code":"X","details":{}},` + meta + `}`, false},
		{"error envelope with a lower-case code", "ErrorEnvelope", `{"success":false,"error":{"type":"api_error","message":"x","code":"internal","details":{}},` + meta + `}`, false},
		{"error envelope with null details", "ErrorEnvelope", `{"success":false,"error":{"type":"api_error","message":"x","code":"INTERNAL_ERROR","details":null},` + meta + `}`, false},
		{"validation error with its details", "ErrorEnvelope", `{"success":false,"error":{"type":"validation_error","message":"agent_id must be a string.","code":"INVALID_AGENT_ID","details":{"field":"agent_id","expected":"string","received":"number"}},` + meta + `}`, true},
		{"validation error without details", "ErrorEnvelope", `{"success":false,"error":{"type":"validation_error","message":"agent_id must be a string.","code":"INVALID_AGENT_ID","details":{}},` + meta + `}`, false},
		{"validation error receiving an integer", "ErrorEnvelope", `{"success":false,"error":{"type":"validation_error","message":"m","code":"INVALID_AGENT_ID","details":{"field":"agent_id","expected":"string","received":"integer"}},` + meta + `}`, false},
		{"timestamp without milliseconds", "ErrorMetadata", `{"request_id":"req_4Xb9TqLm2RvY7sKe1NwPz8Ha","timestamp":"2026-11-21T10:00:00Z"}`, false},
		{"timestamp with an offset", "ErrorMetadata", `{"request_id":"req_4Xb9TqLm2RvY7sKe1NwPz8Ha","timestamp":"2026-11-21T10:00:00.123+01:00"}`, false},
		{"short request id", "ErrorMetadata", `{"request_id":"req_short","timestamp":"2026-11-21T10:00:00.123Z"}`, false},
		{"invalid date in a timestamp", "ErrorMetadata", `{"request_id":"req_4Xb9TqLm2RvY7sKe1NwPz8Ha","timestamp":"2026-13-21T10:00:00.123Z"}`, false},

		{"account", "Account", account(apiKey), true},
		{"account with an unknown product limit", "Account", strings.Replace(account(apiKey), `"cascade":20000`, `"billing":5`, 1), false},
		{"account with a fractional limit", "Account", strings.Replace(account(apiKey), `20000`, `1.5`, 1), false},
		{"account with an extra field", "Account", strings.Replace(account(apiKey), `"name":"A"`, `"name":"A","owner":"x"`, 1), false},
		{"key showing the whole secret", "ApiKey", strings.Replace(apiKey, `sk_rstr_…ab12`, `sk_rstr_0123456789abcdefghijABCDEFGHIJ0123456789`, 1), false},
		{"key without expiry", "ApiKey", strings.Replace(apiKey, `"expires_at":"2027-01-01T00:00:00Z"`, `"expires_at":null`, 1), true},
		{"key with a string rate limit", "ApiKey", strings.Replace(apiKey, `"rate_limit":50`, `"rate_limit":"50"`, 1), false},
		{"key with a bad date", "ApiKey", strings.Replace(apiKey, `"last_used_at":null`, `"last_used_at":"yesterday"`, 1), false},
		{"key missing last_used_at", "ApiKey", strings.Replace(apiKey, `"last_used_at":null,`, ``, 1), false},

		{"service info", "ServiceInfo", `{"object":"service","version":"v1","region":"default","base_urls":{"default":"http://127.0.0.1:8080","eu":null},"openapi_url":"/v1/openapi.json","supported_versions":["v1"]}`, true},
		{"service info of another object", "ServiceInfo", `{"object":"account","version":"v1","region":"default","base_urls":{"default":"http://127.0.0.1:8080","eu":null},"openapi_url":"/v1/openapi.json","supported_versions":["v1"]}`, false},
		{"service info without the eu url", "ServiceInfo", `{"object":"service","version":"v1","region":"default","base_urls":{"default":"http://127.0.0.1:8080"},"openapi_url":"/v1/openapi.json","supported_versions":["v1"]}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var value any
			if err := json.Unmarshal([]byte(tc.value), &value); err != nil {
				t.Fatalf("test value is not JSON: %v", err)
			}
			schema := doc.Components.Schemas[tc.schema]
			if schema == nil {
				t.Fatalf("no schema %s", tc.schema)
			}
			err := schema.Value.VisitJSON(value, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors())
			if tc.ok && err != nil {
				t.Errorf("%s rejected a valid value: %v", tc.schema, err)
			}
			if !tc.ok && err == nil {
				t.Errorf("%s accepted an invalid value: %s", tc.schema, tc.value)
			}
		})
	}
}

// ListEnvelope is meant to be composed with allOf for the list endpoints to come; this
// proves the recipe in its description works before any operation uses it.
func TestListEnvelopeComposes(t *testing.T) {
	doc := load(t, api.OpenAPIYAML)
	schemas := doc.Components.Schemas
	data := openapi3.NewArraySchema()
	data.Items = openapi3.NewSchemaRef("#/components/schemas/ApiKey", schemas["ApiKey"].Value)
	itemsOfKeys := openapi3.NewSchema()
	itemsOfKeys.Properties = openapi3.Schemas{"data": data.NewRef()}
	list := openapi3.NewAllOfSchema()
	list.AllOf = openapi3.SchemaRefs{
		openapi3.NewSchemaRef("#/components/schemas/ListEnvelope", schemas["ListEnvelope"].Value),
		itemsOfKeys.NewRef(),
	}

	key := `{"id":"key_1","object":"api_key","type":"live","mode":"live","name":"","display":"sk_live_…wxyz",
		"scopes":[],"rate_limit":null,"created_at":"2026-11-01T09:30:00Z","last_used_at":null,"expires_at":null,"revoked_at":null}`
	meta := `"metadata":{"request_id":"req_4Xb9TqLm2RvY7sKe1NwPz8Ha","timestamp":"2026-11-21T10:00:00.123Z","processing_time_ms":4}`
	page := `"pagination":{"has_more":true,"next_cursor":"c2","total_count":12}`
	cases := []struct {
		name, value string
		ok          bool
	}{
		{"a page of keys", `{"success":true,"data":[` + key + `,` + key + `],` + page + `,` + meta + `}`, true},
		{"an empty last page", `{"success":true,"data":[],"pagination":{"has_more":false,"next_cursor":null,"total_count":0},` + meta + `}`, true},
		{"a page with a bad item", `{"success":true,"data":[` + strings.Replace(key, `"type":"live"`, `"type":"gold"`, 1) + `],` + page + `,` + meta + `}`, false},
		{"a page without pagination", `{"success":true,"data":[` + key + `],` + meta + `}`, false},
		{"an object instead of a page", `{"success":true,"data":` + key + `,` + page + `,` + meta + `}`, false},
	}
	for _, tc := range cases {
		var value any
		if err := json.Unmarshal([]byte(tc.value), &value); err != nil {
			t.Fatalf("%s: test value is not JSON: %v", tc.name, err)
		}
		err := list.VisitJSON(value, openapi3.EnableJSONSchema2020())
		if tc.ok && err != nil {
			t.Errorf("%s: rejected: %v", tc.name, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
