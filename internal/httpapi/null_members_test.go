package httpapi

import (
	"cmp"
	"encoding/json"
	"fmt"
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

// maxProbedElements: arrays up to this long are probed element by element.
const maxProbedElements = 25

// nullProbes walks a valid request body and makes a probe of every object member, at every
// depth (every element of a short array, the first of a long one), outside free-form values.
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
				// Every element of a short array (each check, each scenario), the first of a
				// long one (events, observations, nodes), which all hold the same members.
				n := len(inner)
				if n > maxProbedElements {
					n = 1
				}
				for i, e := range inner[:n] {
					if element, ok := e.(map[string]any); ok {
						walk(element, fmt.Sprintf("%s[%d]", at, i))
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
		shrinkSample(t, g.product, request)
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
	// Hand-written requests hold the options the generated ones leave out: every Meridian
	// check type and the policy, every Cascade scenario type, Drift's window, baseline and
	// sensitivity over stored events, Convergence's communications and sensitivity.
	csv := "id,name,price,cost,updated\n1,a,10,8,2026-11-20T10:00:00Z\n2,bb,12,9,2026-11-20T11:00:00Z\n3,ccc,11,,2026-11-20T12:00:00Z\n"
	meridianChecks := `[
		{"type": "not_null", "column": "cost", "id": "c1", "mostly": 0.5, "severity": "warning"},
		{"type": "null", "column": "cost"},
		{"type": "unique", "column": "id"},
		{"type": "between", "column": "price", "min": 0, "max": 100, "strict_min": true, "strict_max": false},
		{"type": "between", "column": "price", "min": 0, "strict": true},
		{"type": "in_set", "column": "name", "values": ["a", "bb"]},
		{"type": "not_in_set", "column": "name", "values": ["zz"]},
		{"type": "regex", "column": "name", "pattern": "^[a-c]+$"},
		{"type": "not_regex", "column": "name", "patterns": ["^x", "^y"], "match_on": "any"},
		{"type": "length_between", "column": "name", "min": 1, "max": 3, "strict_min": false, "strict_max": false},
		{"type": "statistic_between", "column": "price", "statistic": "mean", "min": 1, "max": 50, "strict_min": false, "strict_max": false},
		{"type": "columns_present", "columns": ["id", "price"], "exact": false},
		{"type": "compound_unique", "columns": ["id", "name"], "ignore_row_if": "all_values_are_missing"},
		{"type": "unique_within_record", "columns": ["price", "cost"], "ignore_row_if": "any_value_is_missing"},
		{"type": "column_comparison", "column": "price", "operator": ">=", "other": "cost", "ignore_row_if": "either_value_is_missing"},
		{"type": "freshness", "column": "updated", "max_age": "48h"},
		{"type": "outliers", "column": "price", "method": "iqr", "threshold": 3},
		{"type": "type", "column": "price", "expected": "number"},
		{"type": "row_count_between", "min": 1, "max": 10, "strict_min": false, "strict_max": false}
	]`
	var meridianRequest map[string]any
	if err := json.Unmarshal([]byte(`{"source_id": "prices", "data": {"csv": `+string(mustJSON(t, csv))+`, "delimiter": ","},
		"checks": `+meridianChecks+`, "policy": {"block_below": 30, "review_below": 50}, "as_of": "2026-11-21T10:00:00Z", "profile": true}`), &meridianRequest); err != nil {
		t.Fatal(err)
	}
	var cascadeRequest map[string]any
	if err := json.Unmarshal([]byte(`{"network": {"nodes": [{"id": "a", "failure_probability": 0.1, "provider": "p1"}, {"id": "b", "provider": "p1"}, {"id": "c"}],
		"edges": [{"source": "a", "target": "b", "weight": 1}, {"source": "b", "target": "c", "weight": 2}]}, "simulations": 200, "seed": 4,
		"scenarios": [{"type": "node_failure", "name": "n", "nodes": ["a"]}, {"type": "random_failure", "probability": 0.2}, {"type": "random_node", "count": 1},
		{"type": "targeted_attack", "count": 1, "by": "degree"}, {"type": "provider_outage", "provider": "p1"}, {"type": "shock", "nodes": ["a"], "loss_fraction": 0.5}]}`), &cascadeRequest); err != nil {
		t.Fatal(err)
	}
	drift := samples[0].body
	agent := drift["agent_id"]
	events := drift["events"].([]any)
	if r := b.send(http.MethodPost, "/v1/drift/events", b.testKey, string(mustJSON(t, map[string]any{"agent_id": agent, "events": events}))); r.status != http.StatusOK {
		t.Fatalf("store events: %d %s", r.status, r.raw)
	}
	first, _ := events[0].(map[string]any)["timestamp"].(string)
	var market map[string]any
	for _, s := range samples {
		if s.path == "/v1/convergence/analyze-market" && s.body["observations"] != nil {
			market = s.body
			break
		}
	}
	observation := market["observations"].([]any)[0].(map[string]any)
	communications := []any{map[string]any{"from": observation["firm"], "to": "another firm", "timestamp": observation["period"]}}
	samples = append(samples,
		sample{path: "/v1/meridian/quality-check", body: meridianRequest},
		sample{path: "/v1/cascade/simulate", body: cascadeRequest},
		sample{path: "/v1/drift/analyze", body: map[string]any{"agent_id": agent, "principal_id": drift["principal_id"],
			"window": map[string]any{"from": first, "to": "2100-01-01T00:00:00Z"}, "baseline": map[string]any{"fraction": 0.3}, "sensitivity": 0.05}},
		sample{path: "/v1/drift/analyze", body: map[string]any{"agent_id": agent, "baseline": map[string]any{"until": events[len(events)/2].(map[string]any)["timestamp"]}}},
		sample{path: "/v1/convergence/analyze-market", body: map[string]any{"market_id": market["market_id"], "observations": market["observations"],
			"communications": communications, "sensitivity": 0.05}},
	)
	samples = append(samples,
		sample{path: "/v1/test/generate", body: map[string]any{"product": "drift", "scenario": "aligned", "count": 1, "seed": 3}},
		sample{path: "/v1/webhooks", body: map[string]any{"url": "http://127.0.0.1:9/hook", "events": []any{"*"}, "secret": testSecret, "description": "ci"}},
		sample{path: "/v1/webhooks/" + endpoint.field("data.id").(string), method: http.MethodPatch,
			body: map[string]any{"url": "http://127.0.0.1:9/kept", "events": []any{"*"}, "description": "ci", "status": "enabled"}},
	)
	probes := 0
	for _, s := range samples {
		method := cmp.Or(s.method, http.MethodPost)
		// The request as it is must be accepted, so that every probe of an optional member is
		// an accepted request the document is checked against.
		if r := b.send(method, s.path, b.testKey, string(mustJSON(t, s.body))); r.status >= 300 {
			t.Fatalf("%s: the sample itself was refused: %d %s", s.path, r.status, r.raw)
		}
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

// shrinkSample cuts a generated request down to a size that still has every member the
// generator writes: the probes are about members, not sizes, and each is two requests. With
// the generated sizes (1,200 Drift events, a 180 kB CSV, a simulation of thousands of runs)
// the test took 69 s under the race detector.
func shrinkSample(t *testing.T, product string, request map[string]any) {
	t.Helper()
	switch product {
	case "drift":
		if events, ok := request["events"].([]any); ok && len(events) > 120 {
			request["events"] = events[:120]
		}
	case "meridian":
		data, _ := request["data"].(map[string]any)
		if records, ok := data["records"].([]any); ok && len(records) > 200 {
			data["records"] = records[:200]
		}
		if csv, ok := data["csv"].(string); ok {
			if lines := strings.SplitAfter(csv, "\n"); len(lines) > 201 {
				data["csv"] = strings.Join(lines[:201], "")
			}
		}
	case "cascade":
		if n, ok := request["simulations"].(float64); ok && n > 200 {
			request["simulations"] = 200.0
		}
	}
}
