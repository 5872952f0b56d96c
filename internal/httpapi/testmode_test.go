package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"riskapi/internal/auth"
	"riskapi/internal/enginetest"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// Every scenario of every product: each generated item, posted as it is to its analysis
// endpoint with the same test key, reaches the verdict its expected truth states.
func TestGeneratedItemsReachTheirExpectedVerdicts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	// Two items a scenario; one under the race detector, which makes each full-size analysis
	// 10–15 times slower (30 s for the two) and has no concurrency to look at here.
	count := 2
	if enginetest.RaceEnabled {
		count = 1
	}
	for _, p := range product.All {
		endpoint := struct{ path, verdict string }{strings.TrimPrefix(p.Analyze, "POST "), p.Results.Verdict}
		for _, scenario := range p.Scenarios() {
			t.Run(p.Name+"/"+scenario, func(t *testing.T) {
				r := b.send(http.MethodPost, "/v1/test/generate", b.testKey,
					fmt.Sprintf(`{"product": %q, "scenario": %q, "count": %d, "seed": 7}`, p.Name, scenario, count))
				if r.status != http.StatusOK {
					t.Fatalf("generate: %d %s", r.status, r.raw)
				}
				items := r.body["data"].(map[string]any)["items"].([]any)
				if len(items) != count {
					t.Fatalf("%d items, want %d", len(items), count)
				}
				for i, it := range items {
					item := it.(map[string]any)
					want, ok := item["expected"].(map[string]any)[endpoint.verdict].(bool)
					if !ok {
						t.Fatalf("item %d: expected has no %s: %v", i, endpoint.verdict, item["expected"])
					}
					a := b.send(http.MethodPost, endpoint.path, b.testKey, string(mustJSON(t, item["request"])))
					if a.status != http.StatusOK || a.field("data."+endpoint.verdict) != want {
						t.Fatalf("item %d: %s = %v, expected %v (%d)", i, endpoint.verdict, a.field("data."+endpoint.verdict), want, a.status)
					}
				}
			})
		}
	}
}

// The same seed gives the same items, another seed other data; a missing seed is reported.
func TestGenerateIsDeterministicPerSeed(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	gen := func(body string) response {
		r := b.send(http.MethodPost, "/v1/test/generate", b.testKey, body)
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		return r
	}
	a := gen(`{"product": "drift", "scenario": "aligned", "count": 2, "seed": 5}`)
	again := gen(`{"product": "drift", "scenario": "aligned", "count": 2, "seed": 5}`)
	other := gen(`{"product": "drift", "scenario": "aligned", "count": 2, "seed": 6}`)
	if !bytes.Equal(rawData(t, a.raw), rawData(t, again.raw)) {
		t.Fatal("the same seed gave different items")
	}
	items := func(r response) any { return r.body["data"].(map[string]any)["items"] }
	if reflect.DeepEqual(items(a), items(other)) {
		t.Fatal("different seeds gave the same items")
	}
	first := items(a).([]any)
	if reflect.DeepEqual(first[0], first[1]) {
		t.Fatal("two items of one request are equal")
	}
	noSeed := gen(`{"product": "drift", "scenario": "aligned"}`)
	if _, ok := noSeed.field("data.seed").(float64); !ok || noSeed.field("data.count") != 1.0 {
		t.Fatalf("without seed/count: %v %v", noSeed.field("data.seed"), noSeed.field("data.count"))
	}
	// Generating the same seed twice stores the agent's events once: analysing by agent_id
	// sees exactly the generated events.
	req := first[0].(map[string]any)["request"].(map[string]any)
	r := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, fmt.Sprintf(`{"agent_id": %q}`, req["agent_id"]))
	if r.status != http.StatusOK || r.field("data.events_analyzed") != float64(len(req["events"].([]any))) {
		t.Fatalf("analyse stored generated agent: %d events_analyzed %v, want %d", r.status, r.field("data.events_analyzed"), len(req["events"].([]any)))
	}
}

func TestGenerateValidationAndKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	cases := []struct{ body, code, field string }{
		{`{"scenario": "aligned"}`, "INVALID_PRODUCT", "product"},
		{`{"product": "weather", "scenario": "aligned"}`, "INVALID_PRODUCT", "product"},
		{`{"product": "drift"}`, "INVALID_SCENARIO", "scenario"},
		{`{"product": "drift", "scenario": "collusion_found"}`, "INVALID_SCENARIO", "scenario"},
		{`{"product": "drift", "scenario": "aligned", "count": 0}`, "INVALID_COUNT", "count"},
		{`{"product": "drift", "scenario": "aligned", "count": 101}`, "INVALID_COUNT", "count"},
		{`{"product": "drift", "scenario": "aligned", "count": "3"}`, "INVALID_COUNT", "count"},
		{`{"product": "drift", "scenario": "aligned", "seed": 1.5}`, "INVALID_SEED", "seed"},
	}
	for _, c := range cases {
		r := b.send(http.MethodPost, "/v1/test/generate", b.testKey, c.body)
		r.wantError(t, http.StatusBadRequest, "validation_error", c.code)
		if r.field("error.details.field") != c.field {
			t.Fatalf("%s: field %v, want %s", c.body, r.field("error.details.field"), c.field)
		}
	}
	// The message lists the scenarios.
	r := b.send(http.MethodPost, "/v1/test/generate", b.testKey, `{"product": "drift", "scenario": "nope"}`)
	if msg := r.field("error.message").(string); !bytes.Contains([]byte(msg), []byte("prompt_injection")) {
		t.Fatalf("message does not list the scenarios: %s", msg)
	}
	// Live keys are refused before the body is looked at; so are live-mode restricted keys.
	b.send(http.MethodPost, "/v1/test/generate", b.liveKey, `{"product": "drift", "scenario": "aligned"}`).
		wantError(t, http.StatusForbidden, "permission_error", "FORBIDDEN")
	liveRestricted := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeLive, Scopes: []string{"drift:*"}})
	b.send(http.MethodPost, "/v1/test/generate", liveRestricted, `{}`).wantError(t, http.StatusForbidden, "permission_error", "FORBIDDEN")
	// A test-mode restricted key needs the product's write scope.
	reader := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"drift:read"}})
	b.send(http.MethodPost, "/v1/test/generate", reader, `{"product": "drift", "scenario": "aligned"}`).
		wantError(t, http.StatusForbidden, "permission_error", "FORBIDDEN")
	writer := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"drift:write"}})
	if r := b.send(http.MethodPost, "/v1/test/generate", writer, `{"product": "drift", "scenario": "aligned"}`); r.status != http.StatusOK {
		t.Fatalf("drift:write test key: %d %s", r.status, r.raw)
	}
}
