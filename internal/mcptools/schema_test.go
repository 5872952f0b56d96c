package mcptools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"riskapi/internal/product"
)

// Every tool's input schema stands alone as JSON Schema 2020-12 (no reference into the
// OpenAPI document is left) and accepts the requests the test-mode generator makes, with
// idempotency_key added; it refuses a member the contract does not have.
func TestToolSchemasAreStandaloneAndAcceptGeneratedRequests(t *testing.T) {
	set, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range set {
		raw, err := json.Marshal(tl.def.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("#/components/")) {
			t.Errorf("%s: a reference into the OpenAPI document is left", tl.def.Name)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		url := "https://riskapi.test/tools/" + tl.def.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		schema, err := c.Compile(url)
		if err != nil {
			t.Fatalf("%s: the schema does not compile: %v", tl.def.Name, err)
		}
		if tl.def.Name == GetAnalysis {
			continue
		}
		for _, scenario := range tl.product.Scenarios() {
			request, _ := tl.product.Generate(scenario, 3)
			args := asArguments(t, request)
			if tl.spec.Endpoint == "POST /v1/drift/events" {
				args = map[string]any{"agent_id": args["agent_id"], "events": args["events"]}
			}
			args[IdempotencyKeyMember] = "key-1"
			if err := schema.Validate(args); err != nil {
				t.Errorf("%s: a generated %s request does not validate: %v", tl.def.Name, scenario, err)
			}
			args["no_such_member"] = true
			if schema.Validate(args) == nil {
				t.Errorf("%s: a member the contract does not have was accepted", tl.def.Name)
			}
		}
	}
}

// asArguments is a request as the decoded JSON arguments of a tool call.
func asArguments(t *testing.T, request any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatal(fmt.Sprintf("request is %T", v))
	}
	return m
}

// Every product tool of the registry is in the set, and get_analysis reads every product.
func TestToolSetFollowsTheRegistry(t *testing.T) {
	names, err := Names()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range product.All {
		for _, tl := range p.Tools {
			want = append(want, tl.Name)
		}
	}
	want = append(want, GetAnalysis)
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, p := range product.All {
		if scope, ok := Scope(GetAnalysis, json.RawMessage(`{"kind":"`+p.Name+`","id":"x"}`)); !ok || scope != p.ReadScope() {
			t.Errorf("get_analysis of %s needs %q, want %s", p.Name, scope, p.ReadScope())
		}
	}
	if scope, ok := Scope("meridian_gate", nil); !ok || scope != "meridian:write" {
		t.Errorf("meridian_gate needs %q", scope)
	}
}
