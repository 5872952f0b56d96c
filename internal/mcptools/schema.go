package mcptools

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"riskapi/api"
)

// IdempotencyKeyMember is the input member every POST tool adds to its request schema: it is
// sent as the request's Idempotency-Key header, not in the body (agents spec §3: the JSON-RPC
// request id does not replace it).
const IdempotencyKeyMember = "idempotency_key"

// idempotencyKeySchema describes IdempotencyKeyMember, with the rule of the header.
var idempotencyKeySchema = map[string]any{
	"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7e]+$",
	"description": "Optional. Sent as the Idempotency-Key header: a repeat of the same call with the same key " +
		"returns the first answer (for 24 hours) instead of running and storing a second analysis.",
}

// contract is api/openapi.yaml as JSON values, decoded once per process.
var contract = sync.OnceValues(func() (map[string]any, error) {
	raw, err := api.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("mcptools: decode the contract: %w", err)
	}
	return doc, nil
})

// openAPIOnly are the OpenAPI keywords of a schema that JSON Schema does not have: they are
// dropped from tool schemas (discriminator's mapping names OpenAPI components, and the oneOf
// of const types it annotates already says the same).
var openAPIOnly = map[string]bool{"discriminator": true, "xml": true, "externalDocs": true, "example": true}

// componentPrefix is how the contract refers to its schemas.
const componentPrefix = "#/components/schemas/"

// requestSchema is the JSON Schema of the JSON request body of endpoint ("POST /v1/drift/
// analyze") as api/openapi.yaml declares it: the operation's schema, with every schema it
// refers to (transitively) copied under $defs and the references rewritten to point there,
// so the result stands alone. OpenAPI 3.1 schemas are JSON Schema 2020-12, so nothing else
// changes but the OpenAPI-only keywords (openAPIOnly), which are dropped. The contract stays the one source of truth: no tool schema is written by hand.
func requestSchema(endpoint string) (map[string]any, error) {
	doc, err := contract()
	if err != nil {
		return nil, err
	}
	method, path, ok := strings.Cut(endpoint, " ")
	if !ok || !strings.HasPrefix(path, "/v1/") {
		return nil, fmt.Errorf("mcptools: endpoint %q is not \"METHOD /v1/path\"", endpoint)
	}
	schema, ok := dig(doc, "paths", strings.TrimPrefix(path, "/v1"), strings.ToLower(method),
		"requestBody", "content", "application/json", "schema").(map[string]any)
	if !ok {
		return nil, fmt.Errorf("mcptools: api/openapi.yaml has no JSON request body for %s", endpoint)
	}
	components, _ := dig(doc, "components", "schemas").(map[string]any)
	defs := map[string]any{}
	var resolveErr error
	var rewrite func(v any) any
	var rewriteMembers func(v any) any // a properties object: its keys are member names
	rewrite = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, member := range v {
				if openAPIOnly[k] {
					continue
				}
				if k == "properties" || k == "patternProperties" || k == "$defs" {
					out[k] = rewriteMembers(member)
					continue
				}
				if ref, isRef := member.(string); k == "$ref" && isRef {
					name, ok := strings.CutPrefix(ref, componentPrefix)
					target, found := components[name]
					if !ok || !found {
						resolveErr = fmt.Errorf("mcptools: %s: unresolvable $ref %q", endpoint, ref)
						continue
					}
					out[k] = "#/$defs/" + name
					if _, done := defs[name]; !done {
						defs[name] = nil // placed before the walk, so a cycle ends here
						defs[name] = rewrite(target)
					}
					continue
				}
				out[k] = rewrite(member)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, item := range v {
				out[i] = rewrite(item)
			}
			return out
		default:
			return v
		}
	}
	rewriteMembers = func(v any) any {
		m, ok := v.(map[string]any)
		if !ok {
			return rewrite(v)
		}
		out := make(map[string]any, len(m))
		for name, schema := range m {
			out[name] = rewrite(schema)
		}
		return out
	}
	// The operation's schema is a reference to a component: take that component itself as
	// the top level, which MCP needs to be of type object.
	if ref, ok := schema["$ref"].(string); ok && len(schema) == 1 {
		name, _ := strings.CutPrefix(ref, componentPrefix)
		target, found := components[name].(map[string]any)
		if !found {
			return nil, fmt.Errorf("mcptools: %s: unresolvable $ref %q", endpoint, ref)
		}
		schema = target
	}
	top, _ := rewrite(schema).(map[string]any)
	if resolveErr != nil {
		return nil, resolveErr
	}
	if top["type"] != "object" {
		return nil, fmt.Errorf("mcptools: the request schema of %s is not of type object", endpoint)
	}
	if len(defs) > 0 {
		top["$defs"] = defs
	}
	return top, nil
}

// withIdempotencyKey is schema (a tool's input) with IdempotencyKeyMember added.
func withIdempotencyKey(schema map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	withKey := make(map[string]any, len(props)+1)
	for k, v := range props {
		withKey[k] = v
	}
	withKey[IdempotencyKeyMember] = idempotencyKeySchema
	out := make(map[string]any, len(schema))
	for k, v := range schema {
		out[k] = v
	}
	out["properties"] = withKey
	return out
}

// dig follows keys through nested objects; nil when one is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
