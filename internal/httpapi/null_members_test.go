package httpapi

import (
	"cmp"
	"net/http"
	"strings"
	"testing"
)

// freeForm names the members whose values are the caller's own data, where null is a value
// like any other (Drift attributes, Meridian rows, Great Expectations kwargs and meta): they
// are not request options and are not probed.
var freeForm = map[string]bool{"attributes": true, "records": true, "kwargs": true, "meta": true, "expectation_suite": true}

// nullProbe is one request body with one member removed, and the same body with that member
// sent as null.
type nullProbe struct {
	path           string
	absent, asNull []byte
}

// nullProbes walks a valid request body and makes a probe of every object member, at every
// depth (the first element of each array), outside free-form values.
func nullProbes(t *testing.T, body map[string]any) []nullProbe {
	t.Helper()
	var probes []nullProbe
	var walk func(obj map[string]any, path string)
	walk = func(obj map[string]any, path string) {
		for k, v := range obj {
			if freeForm[k] {
				continue
			}
			at := strings.TrimPrefix(path+"."+k, ".")
			obj[k] = nil
			asNull := mustJSON(t, body)
			delete(obj, k)
			absent := mustJSON(t, body)
			obj[k] = v
			probes = append(probes, nullProbe{at, absent, asNull})
			switch inner := v.(type) {
			case map[string]any:
				walk(inner, at)
			case []any:
				if len(inner) > 0 {
					if first, ok := inner[0].(map[string]any); ok {
						walk(first, at+"[0]")
					}
				}
			}
		}
	}
	walk(body, "")
	return probes
}

// TestNullReadsAsAbsentEverywhere: a member sent as null is answered exactly as the same
// request without it, on every endpoint that takes a body and at every depth — an optional
// member is left at its default (and the document declares it nullable: the accepted
// requests are validated against it by the harness), a required one is refused with the same
// code and field as when it is missing (docs/api-conventions.md, "Null").
func TestNullReadsAsAbsentEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t, allowLoopback, nil)
	type sample struct {
		path string
		body map[string]any
		// method is POST unless set.
		method string
	}
	var samples []sample
	for _, g := range []struct{ product, scenario, path string }{
		{"drift", "shadow_principal_detected", "/v1/drift/analyze"},
		{"convergence", "collusion_found", "/v1/convergence/analyze-market"},
		{"convergence", "bid_rigging", "/v1/convergence/analyze-market"},
		{"cascade", "fragile_network", "/v1/cascade/simulate"},
		{"meridian", "dirty", "/v1/meridian/quality-check"},
	} {
		r := b.send(http.MethodPost, "/v1/test/generate", b.testKey, `{"product": "`+g.product+`", "scenario": "`+g.scenario+`", "seed": 5}`)
		items, _ := r.field("data.items").([]any)
		if r.status != http.StatusOK || len(items) == 0 {
			t.Fatalf("generate %s: %d %s", g.product, r.status, r.raw)
		}
		request := items[0].(map[string]any)["request"].(map[string]any)
		samples = append(samples, sample{path: g.path, body: request})
		if g.product == "drift" {
			events := request["events"].([]any)
			samples = append(samples, sample{path: "/v1/drift/events", body: map[string]any{"agent_id": request["agent_id"], "events": events[:30]}})
		}
	}
	endpoint := b.createWebhook(b.testKey, "http://127.0.0.1:9/kept", `["*"]`)
	if endpoint.status != http.StatusCreated {
		t.Fatalf("endpoint: %d %s", endpoint.status, endpoint.raw)
	}
	samples = append(samples,
		sample{path: "/v1/test/generate", body: map[string]any{"product": "drift", "scenario": "aligned", "count": 1, "seed": 3}},
		sample{path: "/v1/webhooks", body: map[string]any{"url": "http://127.0.0.1:9/hook", "events": []any{"*"}, "secret": testSecret, "description": "ci"}},
		sample{path: "/v1/webhooks/" + endpoint.field("data.id").(string), method: http.MethodPatch,
			body: map[string]any{"url": "http://127.0.0.1:9/kept", "events": []any{"*"}, "description": "ci", "status": "enabled"}},
	)
	probes := 0
	for _, s := range samples {
		method := cmp.Or(s.method, http.MethodPost)
		for _, p := range nullProbes(t, s.body) {
			probes++
			absent := b.send(method, s.path, b.testKey, string(p.absent))
			asNull := b.send(method, s.path, b.testKey, string(p.asNull))
			if absent.status != asNull.status || absent.field("error.code") != asNull.field("error.code") || absent.field("error.details.field") != asNull.field("error.details.field") {
				t.Errorf("%s %s: null answered %d %v %v, absent %d %v %v", s.path, p.path,
					asNull.status, asNull.field("error.code"), asNull.field("error.details.field"),
					absent.status, absent.field("error.code"), absent.field("error.details.field"))
			}
		}
	}
	t.Logf("%d members sent as null and left out", probes)
	if probes < 60 {
		t.Fatalf("only %d members probed: the samples were not walked", probes)
	}
}
