package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"riskapi/drift"
	"riskapi/internal/auth"
	"riskapi/internal/store"
)

// driftBody renders an analyze (or ingest) request for a generated agent. extra members are
// added to the top level as they are.
func driftBody(t testing.TB, agentID string, events []drift.Event, extra string) string {
	t.Helper()
	raw, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`{"agent_id": %q, "events": %s%s}`, agentID, raw, extra)
}

func generateDrift(t testing.TB, scenario string, seed int64) (drift.Input, drift.Truth) {
	t.Helper()
	in, truth := drift.Generate(scenario, seed, drift.GenParams{Events: 1200})
	if len(in.Events) == 0 {
		t.Fatalf("Generate(%s) produced no events", scenario)
	}
	return in, truth
}

// The seed's own example: a numeric agent_id names the field, the type expected and the type received.
func TestDriftNumericAgentID(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, `{"agent_id": 123}`)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_AGENT_ID")
	want := map[string]any{"field": "agent_id", "expected": "string", "received": "number"}
	if got := r.field("error.details"); !reflect.DeepEqual(got, want) {
		t.Fatalf("details = %v, want %v", got, want)
	}
}

func TestDriftValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	in, _ := generateDrift(t, drift.ScenarioAligned, 1)
	events, _ := json.Marshal(in.Events[:25])
	ev := func(i int, member string) string { // 25 valid events with member spliced into event i
		var list []map[string]any
		_ = json.Unmarshal(events, &list)
		var add map[string]any
		if err := json.Unmarshal([]byte("{"+member+"}"), &add); err != nil {
			t.Fatal(err)
		}
		for k, v := range add {
			if v == nil {
				delete(list[i], k)
			} else {
				list[i][k] = v
			}
		}
		out, _ := json.Marshal(list)
		return string(out)
	}
	long := strings.Repeat("a", 129)
	cases := []struct {
		name, path, body   string
		code, field, recvd string
	}{
		{"missing agent_id", "/v1/drift/analyze", `{}`, "INVALID_AGENT_ID", "agent_id", "missing"},
		{"empty agent_id", "/v1/drift/analyze", `{"agent_id": ""}`, "INVALID_AGENT_ID", "agent_id", "string"},
		{"agent_id with a space", "/v1/drift/analyze", `{"agent_id": "agent 7"}`, "INVALID_AGENT_ID", "agent_id", "string"},
		{"agent_id too long", "/v1/drift/analyze", `{"agent_id": "` + long + `"}`, "INVALID_AGENT_ID", "agent_id", "string"},
		{"19 events", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + string(mustJSON(t, in.Events[:19])) + `}`, "INVALID_EVENTS", "events", "array"},
		{"events not an array", "/v1/drift/analyze", `{"agent_id": "a", "events": {}}`, "INVALID_EVENTS", "events", "object"},
		{"timestamp missing", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(3, `"timestamp": null`) + `}`, "INVALID_EVENTS", "events[3].timestamp", "missing"},
		{"timestamp not RFC 3339", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(4, `"timestamp": "yesterday"`) + `}`, "INVALID_EVENTS", "events[4].timestamp", "string"},
		{"action missing", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(5, `"action": null`) + `}`, "INVALID_EVENTS", "events[5].action", "missing"},
		{"action too long", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(5, `"action": "`+strings.Repeat("x", 65)+`"`) + `}`, "INVALID_EVENTS", "events[5].action", "string"},
		{"principal_value a string", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(6, `"principal_value": "12"`) + `}`, "INVALID_EVENTS", "events[6].principal_value", "string"},
		{"negative beneficiary value", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(7, `"beneficiaries": [{"party": "v", "value": 1}, {"party": "w", "value": -2}]`) + `}`, "INVALID_EVENTS", "events[7].beneficiaries[1].value", "number"},
		{"beneficiary without party", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(7, `"beneficiaries": [{"value": 1}]`) + `}`, "INVALID_EVENTS", "events[7].beneficiaries[0].party", "missing"},
		{"negative delegation_depth", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(8, `"delegation_depth": -1`) + `}`, "INVALID_EVENTS", "events[8].delegation_depth", "number"},
		{"fractional delegation_depth", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(8, `"delegation_depth": 1.5`) + `}`, "INVALID_EVENTS", "events[8].delegation_depth", "number"},
		{"attributes not an object", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(9, `"attributes": [1]`) + `}`, "INVALID_EVENTS", "events[9].attributes", "array"},
		{"empty event id", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + ev(2, `"id": ""`) + `}`, "INVALID_EVENTS", "events[2].id", "string"},
		{"window with inline events", "/v1/drift/analyze", `{"agent_id": "a", "events": ` + string(events) + `, "window": {}}`, "INVALID_WINDOW", "window", "object"},
		{"window to before from", "/v1/drift/analyze", `{"agent_id": "a", "window": {"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}}`, "INVALID_WINDOW", "window.to", "string"},
		{"baseline with both", "/v1/drift/analyze", `{"agent_id": "a", "baseline": {"fraction": 0.3, "until": "2026-01-01T00:00:00Z"}}`, "INVALID_BASELINE", "baseline", "object"},
		{"baseline fraction too small", "/v1/drift/analyze", `{"agent_id": "a", "baseline": {"fraction": 0.01}}`, "INVALID_BASELINE", "baseline.fraction", "number"},
		{"sensitivity too large", "/v1/drift/analyze", `{"agent_id": "a", "sensitivity": 0.5}`, "INVALID_SENSITIVITY", "sensitivity", "number"},
		{"sensitivity zero", "/v1/drift/analyze", `{"agent_id": "a", "sensitivity": 0}`, "INVALID_SENSITIVITY", "sensitivity", "number"},
		{"empty principal_id", "/v1/drift/analyze", `{"agent_id": "a", "principal_id": ""}`, "INVALID_PRINCIPAL_ID", "principal_id", "string"},
		{"ingest without events", "/v1/drift/events", `{"agent_id": "a"}`, "INVALID_EVENTS", "events", "missing"},
		{"ingest of no events", "/v1/drift/events", `{"agent_id": "a", "events": []}`, "INVALID_EVENTS", "events", "array"},
		{"ingest bad event", "/v1/drift/events", `{"agent_id": "a", "events": ` + ev(0, `"timestamp": null`) + `}`, "INVALID_EVENTS", "events[0].timestamp", "missing"},
		{"ingest numeric agent_id", "/v1/drift/events", `{"agent_id": 7, "events": []}`, "INVALID_AGENT_ID", "agent_id", "number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.send(http.MethodPost, c.path, b.testKey, c.body)
			r.wantError(t, http.StatusBadRequest, "validation_error", c.code)
			if r.field("error.details.field") != c.field || r.field("error.details.received") != c.recvd {
				t.Fatalf("details = %v, want field %s received %s", r.field("error.details"), c.field, c.recvd)
			}
			if msg, _ := r.field("error.message").(string); msg == "" {
				t.Fatal("no message")
			}
		})
	}
	t.Run("unknown member of an event", func(t *testing.T) {
		r := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, `{"agent_id": "a", "events": `+ev(1, `"timestmap": "2026-01-01T00:00:00Z"`)+`}`)
		r.wantError(t, http.StatusBadRequest, "validation_error", "UNKNOWN_FIELD")
		if r.field("error.details.field") != "events[1].timestmap" || !strings.Contains(r.field("error.message").(string), `"timestamp"`) {
			t.Fatalf("got %s", r.raw)
		}
	})
	// Nothing was analysed or stored by any of the above.
	if n := b.get("/v1/drift/analyses", b.testKey).field("pagination.total_count"); n != 0.0 {
		t.Fatalf("total_count after invalid requests = %v, want 0", n)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A planted shadow principal posted inline is found and named; the analysis is stored, GET
// returns the same object, and a subscribed endpoint gets drift.shadow_detected carrying it.
func TestDriftShadowDetectedEmitsEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, allowLoopback, nil)
	hook := b.createWebhook(b.testKey, "http://127.0.0.1:9/drift", `["drift.shadow_detected"]`).field("data.id").(string)
	in, truth := generateDrift(t, drift.ScenarioShadow, 11)
	r := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, driftBody(t, "agent_7", in.Events, `"principal_id": "user_42"`))
	if r.status != http.StatusOK {
		t.Fatalf("analyze: %d %s", r.status, r.raw)
	}
	data := r.body["data"].(map[string]any)
	if data["shadow_principal_detected"] != true || data["object"] != "drift.analysis" || data["livemode"] != false ||
		data["agent_id"] != "agent_7" || data["principal_id"] != "user_42" {
		t.Fatalf("analysis header/verdict wrong: %s", r.raw)
	}
	parties := data["shadow_principals"].([]any)
	if len(parties) == 0 || parties[0].(map[string]any)["party"] != truth.Party {
		t.Fatalf("shadow_principals = %v, want %s first", parties, truth.Party)
	}
	if score := data["score"].(float64); score >= 50 {
		t.Fatalf("score %v with a shadow principal detected, want < 50", score)
	}
	if data["events_analyzed"] != float64(len(in.Events)) {
		t.Fatalf("events_analyzed = %v, want %d", data["events_analyzed"], len(in.Events))
	}
	id := data["id"].(string)
	got := b.get("/v1/drift/analyses/"+id, b.testKey)
	if !bytes.Equal(rawData(t, got.raw), rawData(t, r.raw)) {
		t.Fatalf("GET differs from POST:\n%s\n%s", rawData(t, got.raw), rawData(t, r.raw))
	}
	events := b.get("/v1/events?type=drift.shadow_detected", b.testKey)
	items := events.body["data"].([]any)
	if len(items) != 1 {
		t.Fatalf("%d drift.shadow_detected events, want 1", len(items))
	}
	evObj := items[0].(map[string]any)["data"].(map[string]any)["object"]
	if !reflect.DeepEqual(evObj, got.body["data"]) {
		t.Fatalf("event data.object is not the analysis:\n%v\n%v", evObj, got.body["data"])
	}
	if n := b.get("/v1/webhooks/"+hook+"/deliveries", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("deliveries queued for the subscribed endpoint = %v, want 1", n)
	}
}

// rawData extracts the exact bytes of the envelope's data member.
func rawData(t testing.TB, raw []byte) []byte {
	t.Helper()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	return env.Data
}

// Hard negatives through the API: an aligned agent and a switch to a better vendor are not
// shadow principals and emit no event; the better vendor's switch is still reported as the
// agent's strongest change when the engine finds one.
func TestDriftNegativesEmitNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, allowLoopback, nil)
	b.createWebhook(b.testKey, "http://127.0.0.1:9/drift", `["*"]`)
	for i, scenario := range []string{drift.ScenarioAligned, drift.ScenarioLegitimateShift} {
		in, _ := generateDrift(t, scenario, int64(20+i))
		r := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, driftBody(t, "agent_"+scenario, in.Events, ""))
		if r.status != http.StatusOK || r.field("data.shadow_principal_detected") != false {
			t.Fatalf("%s: %d %s", scenario, r.status, r.raw)
		}
		if sp := r.field("data.shadow_principals").([]any); len(sp) != 0 {
			t.Fatalf("%s: shadow_principals = %v, want []", scenario, sp)
		}
		if r.field("data.principal_id") != nil {
			t.Fatalf("%s: principal_id = %v, want null when none was given", scenario, r.field("data.principal_id"))
		}
	}
	if n := b.get("/v1/events", b.testKey).field("pagination.total_count"); n != 0.0 {
		t.Fatalf("events after negatives = %v, want 0", n)
	}
}

// Events stored in batches (with repeats) are analysed by agent id, with the same result as
// the same events sent inline; windows select them; an unknown agent is 404.
func TestDriftStoredEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	in, truth := generateDrift(t, drift.ScenarioShadow, 12)
	evs := make([]drift.Event, len(in.Events))
	copy(evs, in.Events)
	for i := range evs {
		evs[i].ID = fmt.Sprintf("e%05d", i)
	}
	half := len(evs) / 2
	r := b.send(http.MethodPost, "/v1/drift/events", b.testKey, driftBody(t, "agent_s", evs[:half], ""))
	want := map[string]any{"agent_id": "agent_s", "accepted": float64(half), "duplicates": 0.0, "total_events": float64(half)}
	if r.status != http.StatusOK || !reflect.DeepEqual(r.body["data"], want) {
		t.Fatalf("first batch: %d %s", r.status, r.raw)
	}
	// The second batch repeats the last 100 events of the first.
	r = b.send(http.MethodPost, "/v1/drift/events", b.testKey, driftBody(t, "agent_s", evs[half-100:], ""))
	want = map[string]any{"agent_id": "agent_s", "accepted": float64(len(evs) - half), "duplicates": 100.0, "total_events": float64(len(evs))}
	if !reflect.DeepEqual(r.body["data"], want) {
		t.Fatalf("second batch: %s, want %v", r.raw, want)
	}

	stored := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, `{"agent_id": "agent_s"}`)
	inline := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, driftBody(t, "agent_s", evs, ""))
	if stored.status != http.StatusOK || inline.status != http.StatusOK {
		t.Fatalf("stored %d %s / inline %d", stored.status, stored.raw, inline.status)
	}
	strip := func(r response) map[string]any {
		d := r.body["data"].(map[string]any)
		delete(d, "id")
		delete(d, "created_at")
		return d
	}
	if s, i := strip(stored), strip(inline); !reflect.DeepEqual(s, i) {
		t.Fatalf("analysis of stored events differs from inline:\n%v\n%v", s, i)
	}
	if stored.field("data.shadow_principal_detected") != true {
		t.Fatalf("stored shadow agent not detected: %s", stored.raw)
	}
	_ = truth

	// A window: events from the 100th event's timestamp on, before the 600th.
	from, to := evs[100].Timestamp.UTC(), evs[600].Timestamp.UTC()
	body := fmt.Sprintf(`{"agent_id": "agent_s", "window": {"from": %q, "to": %q}}`, from.Format("2006-01-02T15:04:05.999999999Z07:00"), to.Format("2006-01-02T15:04:05.999999999Z07:00"))
	r = b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, body)
	wantN := 0
	for _, e := range evs {
		if !e.Timestamp.Before(from) && e.Timestamp.Before(to) {
			wantN++
		}
	}
	if r.status != http.StatusOK || r.field("data.events_analyzed") != float64(wantN) {
		t.Fatalf("window: %d events_analyzed %v, want %d\n%s", r.status, r.field("data.events_analyzed"), wantN, r.raw)
	}

	r = b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, `{"agent_id": "agent_unknown"}`)
	r.wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
	r = b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, `{"agent_id": "agent_s", "window": {"to": "2001-01-01T00:00:00Z"}}`)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_WINDOW")
	// Stored events belong to the key's mode: the live key sees no such agent.
	r = b.send(http.MethodPost, "/v1/drift/analyze", b.liveKey, `{"agent_id": "agent_s"}`)
	r.wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")

	b.send(http.MethodPost, "/v1/drift/events", b.testKey, driftBody(t, "agent_few", evs[:5], ""))
	r = b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, `{"agent_id": "agent_few"}`)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_EVENTS")
	if r.field("error.details.field") != "events" {
		t.Fatalf("too few stored events: %s", r.raw)
	}
}

// Attributes are kept with stored events exactly as sent, and never analysed.
func TestDriftStoredEventKeepsAttributes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	body := `{"agent_id": "agent_attr", "events": [{"id": "x1", "timestamp": "2026-11-01T10:00:00.123456789+02:00", "action": "purchase",
		"principal_value": -3.5, "beneficiaries": [{"party": "vendor_a", "value": 0}], "attributes": {"sku": "A-1", "n": [1, 2]}}]}`
	r := b.send(http.MethodPost, "/v1/drift/events", b.testKey, body)
	if r.status != http.StatusOK || r.field("data.accepted") != 1.0 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	stored, err := b.store.DriftEvents(context.Background(), b.account.ID, store.ModeTest, "agent_attr", nil, nil, 10)
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored = %v, %v", stored, err)
	}
	var got map[string]any
	if err := json.Unmarshal(stored[0].Payload, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "x1", "timestamp": "2026-11-01T10:00:00.123456789+02:00", "action": "purchase", "principal_value": -3.5,
		"beneficiaries": []any{map[string]any{"party": "vendor_a", "value": 0.0}}, "attributes": map[string]any{"sku": "A-1", "n": []any{1.0, 2.0}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored event = %v\nwant %v", got, want)
	}
}

// 25 analyses listed 10 at a time take three pages with total_count 25; the agent filter is
// bound into the cursor; the other mode sees none of them.
func TestDriftListAnalyses(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	in, _ := drift.Generate(drift.ScenarioAligned, 3, drift.GenParams{Events: 60})
	seen := map[string]bool{}
	for i := range 25 {
		agent := "agent_list"
		if i%5 == 4 {
			agent = "agent_other"
		}
		r := b.send(http.MethodPost, "/v1/drift/analyze", b.testKey, driftBody(t, agent, in.Events, ""))
		if r.status != http.StatusOK {
			t.Fatalf("analyze %d: %d %s", i, r.status, r.raw)
		}
		b.clock.Advance(1000000) // 1 ms apart, so the order is by time, not only id
	}
	pages, cursor := 0, ""
	for {
		path := "/v1/drift/analyses?limit=10"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := b.get(path, b.testKey)
		pages++
		if r.field("pagination.total_count") != 25.0 {
			t.Fatalf("page %d total_count = %v, want 25", pages, r.field("pagination.total_count"))
		}
		for _, item := range r.body["data"].([]any) {
			id := item.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("%s listed twice", id)
			}
			seen[id] = true
		}
		next, _ := r.field("pagination.next_cursor").(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 3 || len(seen) != 25 {
		t.Fatalf("%d pages, %d analyses; want 3 and 25", pages, len(seen))
	}
	r := b.get("/v1/drift/analyses?agent_id=agent_list&limit=100", b.testKey)
	if r.field("pagination.total_count") != 20.0 {
		t.Fatalf("agent filter total_count = %v, want 20", r.field("pagination.total_count"))
	}
	first := b.get("/v1/drift/analyses?agent_id=agent_list&limit=5", b.testKey)
	next := first.field("pagination.next_cursor").(string)
	b.get("/v1/drift/analyses?agent_id=agent_other&limit=5&cursor="+url.QueryEscape(next), b.testKey).
		wantError(t, http.StatusBadRequest, "validation_error", "INVALID_CURSOR")
	b.get("/v1/drift/analyses?agent_id=bad%20id", b.testKey).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_AGENT_ID")
	if n := b.get("/v1/drift/analyses", b.liveKey).field("pagination.total_count"); n != 0.0 {
		t.Fatalf("live key sees %v test analyses, want 0", n)
	}
	some := first.body["data"].([]any)[0].(map[string]any)["id"].(string)
	b.get("/v1/drift/analyses/"+some, b.liveKey).wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
	b.get("/v1/drift/analyses/dra_nope", b.testKey).wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
}

// Scopes: drift:read lists but cannot analyse; an idempotent retry replays the analysis
// instead of storing a second one.
func TestDriftScopesAndIdempotency(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	reader := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeTest, Scopes: []string{"drift:read"}})
	in, _ := drift.Generate(drift.ScenarioAligned, 4, drift.GenParams{Events: 60})
	body := driftBody(t, "agent_i", in.Events, "")
	b.send(http.MethodPost, "/v1/drift/analyze", reader, body).wantError(t, http.StatusForbidden, "permission_error", "FORBIDDEN")
	b.send(http.MethodPost, "/v1/drift/events", reader, body).wantError(t, http.StatusForbidden, "permission_error", "FORBIDDEN")
	if r := b.get("/v1/drift/analyses", reader); r.status != http.StatusOK {
		t.Fatalf("drift:read list: %d", r.status)
	}
	h := map[string]string{"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json", "Idempotency-Key": "drift-1"}
	first := b.do(http.MethodPost, "/v1/drift/analyze", strings.NewReader(body), h)
	again := b.do(http.MethodPost, "/v1/drift/analyze", strings.NewReader(body), h)
	if first.status != http.StatusOK || !bytes.Equal(first.raw, again.raw) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %q\n%s\n%s", again.status, again.header.Get("Idempotent-Replayed"), first.raw, again.raw)
	}
	if n := b.get("/v1/drift/analyses", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("analyses after a replay = %v, want 1", n)
	}
}
