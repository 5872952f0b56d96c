package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"riskapi/cascade"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/internal/auth"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// productRequests makes one object of every product with key and returns the paths that GET
// each one, the events they produced being counted by the caller.
func productObjects(t *testing.T, b *bundle, key string) []string {
	t.Helper()
	var paths []string
	post := func(path, body, getPrefix string) {
		t.Helper()
		r := b.send(http.MethodPost, path, key, body)
		if r.status != http.StatusOK && r.status != http.StatusAccepted && r.status != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, r.status, r.raw)
		}
		paths = append(paths, getPrefix+r.field("data.id").(string))
	}
	shadow, _ := drift.Generate(drift.ScenarioShadow, 31, drift.GenParams{Events: 800})
	post("/v1/drift/analyze", driftBody(t, "agent_box", shadow.Events, ""), "/v1/drift/analyses/")
	market, _ := convergence.Generate(convergence.ScenarioCartel, 32, convergence.GenParams{})
	post("/v1/convergence/analyze-market", string(mustJSON(t, market)), "/v1/convergence/analyses/")
	net, _ := cascade.Generate(cascade.ScenarioFragileNetwork, 33, cascade.GenParams{})
	post("/v1/cascade/simulate", string(mustJSON(t, net)), "/v1/cascade/simulations/")
	post("/v1/meridian/quality-check", `{"source_id": "box", "data": {"records": [{"a": null}]}, "checks": [{"type": "not_null", "column": "a"}]}`, "/v1/meridian/quality-checks/")
	post("/v1/webhooks", fmt.Sprintf(`{"url": "https://127.0.0.1:9/%s", "events": ["*"], "secret": %q}`, key[:7], testSecret), "/v1/webhooks/")
	return paths
}

// Test-mode objects are livemode false and invisible to live keys, and the reverse; a test
// endpoint receives only test events; test requests are never billed.
func TestSandboxSeparation(t *testing.T) {
	t.Parallel()
	b := setup(t, allowLoopback, nil)
	live := b.newKey(auth.KeyParams{Type: store.KeyLive}) // the bundle's live key may be rate limited elsewhere
	testPaths := productObjects(t, b, b.testKey)
	livePaths := productObjects(t, b, live)
	for _, c := range []struct {
		owner, other string
		paths        []string
		livemode     bool
	}{{b.testKey, live, testPaths, false}, {live, b.testKey, livePaths, true}} {
		for _, path := range c.paths {
			own := b.get(path, c.owner)
			if own.status != http.StatusOK || own.field("data.livemode") != c.livemode {
				t.Fatalf("GET %s by its owner: %d livemode %v, want %v", path, own.status, own.field("data.livemode"), c.livemode)
			}
			b.get(path, c.other).wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
		}
	}
	// Every list shows only the key's own mode.
	for _, list := range []string{"/v1/drift/analyses", "/v1/convergence/analyses", "/v1/cascade/simulations", "/v1/meridian/quality-checks", "/v1/webhooks"} {
		for _, key := range []string{b.testKey, live} {
			if n := b.get(list, key).field("pagination.total_count"); n != 1.0 {
				t.Fatalf("%s lists %v items for one mode, want 1", list, n)
			}
		}
	}
	// Events: each mode has its own four (drift, convergence, cascade, meridian), and each
	// endpoint's deliveries are of its own mode's events only.
	for _, key := range []string{b.testKey, live} {
		events := b.get("/v1/events?limit=100", key)
		if events.field("pagination.total_count") != 4.0 {
			t.Fatalf("events of one mode = %v, want 4", events.field("pagination.total_count"))
		}
		ids := map[string]bool{}
		for _, ev := range events.body["data"].([]any) {
			ids[ev.(map[string]any)["id"].(string)] = true
		}
		hooks := b.get("/v1/webhooks", key).body["data"].([]any)
		hook := hooks[0].(map[string]any)["id"].(string)
		ds := b.get("/v1/webhooks/"+hook+"/deliveries?limit=100", key).body["data"].([]any)
		for _, d := range ds {
			if evID := d.(map[string]any)["event_id"].(string); !ids[evID] {
				t.Fatalf("endpoint %s got event %s of the other mode", hook, evID)
			}
		}
	}
	// Usage: the live key's product requests are billed (its POST, its GET and its list of
	// each product), the test key's never.
	if err := b.meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	u := b.get("/v1/usage", live)
	for _, p := range product.All {
		if u.field("data.totals."+p.Name) != 3.0 {
			t.Fatalf("live %s units = %v, want 3 (the test key's requests must not count): %s", p.Name, u.field("data.totals."+p.Name), u.raw)
		}
	}
	tu := b.get("/v1/usage", b.testKey)
	for _, p := range product.All {
		if tu.field("data.totals."+p.Name) != 0.0 {
			t.Fatalf("test-mode usage shows units for %s: %s", p.Name, tu.raw)
		}
	}
}

// The test-mode quota is 1,000 requests a UTC day across every endpoint: the 1,001st is 429.
func TestTestModeDailyQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	lists := []string{"/v1/drift/analyses", "/v1/convergence/analyses", "/v1/cascade/simulations", "/v1/meridian/quality-checks"}
	for i := range 999 {
		if r := b.get(lists[i%len(lists)], b.testKey); r.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.status, r.raw)
		}
	}
	r := b.send(http.MethodPost, "/v1/test/generate", b.testKey, `{"product": "meridian", "scenario": "clean"}`)
	if r.status != http.StatusOK || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("request 1,000: %d remaining %q", r.status, r.header.Get("X-RateLimit-Remaining"))
	}
	r = b.send(http.MethodPost, "/v1/test/generate", b.testKey, `{"product": "meridian", "scenario": "clean"}`)
	r.wantError(t, http.StatusTooManyRequests, "rate_limit_error", "RATE_LIMITED")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	b.get("/v1/drift/analyses", b.testKey).wantError(t, http.StatusTooManyRequests, "rate_limit_error", "RATE_LIMITED")
}
