package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"riskapi/drift"
	"riskapi/internal/monitor"
	"riskapi/internal/simulation/simulationtest"
)

// The monitor resource: created with defaults (201), one per agent and mode (409 CONFLICT
// naming the first), read, listed by agent, changed and deleted; bad input is a 400 naming
// the field.
func TestDriftMonitorResource(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.send(http.MethodPost, "/v1/drift/monitors", b.testKey, `{"agent_id": "agent_m", "principal_id": "user_1", "baseline": {"fraction": 0.2}}`)
	if r.status != http.StatusCreated || r.field("data.object") != "drift.monitor" || r.field("data.sensitivity") != 0.01 ||
		r.field("data.min_events") != 200.0 || r.field("data.status") != "active" || r.field("data.looks") != 0.0 ||
		r.field("data.baseline.fraction") != 0.2 || r.field("data.last_evaluated_at") != nil {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := r.field("data.id").(string)
	again := b.send(http.MethodPost, "/v1/drift/monitors", b.testKey, `{"agent_id": "agent_m"}`)
	again.wantError(t, http.StatusConflict, "invalid_request_error", "CONFLICT")
	if again.field("error.details.monitor_id") != id {
		t.Fatalf("409 details: %s", again.raw)
	}
	if r := b.send(http.MethodPost, "/v1/drift/monitors", b.liveKey, `{"agent_id": "agent_m"}`); r.status != http.StatusCreated {
		t.Fatalf("the agent's monitor in the other mode: %d %s", r.status, r.raw)
	}
	for _, c := range []struct{ body, code string }{
		{`{}`, "INVALID_AGENT_ID"},
		{`{"agent_id": "bad agent"}`, "INVALID_AGENT_ID"},
		{`{"agent_id": "a", "sensitivity": 0.3}`, "INVALID_SENSITIVITY"},
		{`{"agent_id": "a", "min_events": 19}`, "INVALID_MIN_EVENTS"},
		{`{"agent_id": "a", "baseline": {"fraction": 0.95}}`, "INVALID_BASELINE"},
		{`{"agent_id": "a", "principal_id": ""}`, "INVALID_PRINCIPAL_ID"},
		{`{"agent_id": "a", "window": {}}`, "UNKNOWN_FIELD"},
	} {
		b.send(http.MethodPost, "/v1/drift/monitors", b.testKey, c.body).wantError(t, http.StatusBadRequest, "validation_error", c.code)
	}
	if r := b.get("/v1/drift/monitors/"+id, b.testKey); r.status != http.StatusOK || r.field("data.id") != id {
		t.Fatalf("get: %d %s", r.status, r.raw)
	}
	b.get("/v1/drift/monitors/"+id, b.liveKey).wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
	b.send(http.MethodPost, "/v1/drift/monitors", b.testKey, `{"agent_id": "agent_n"}`)
	if r := b.get("/v1/drift/monitors?agent_id=agent_n", b.testKey); r.status != http.StatusOK || len(r.field("data").([]any)) != 1 {
		t.Fatalf("list of agent_n: %d %s", r.status, r.raw)
	}
	if r := b.get("/v1/drift/monitors", b.testKey); len(r.field("data").([]any)) != 2 {
		t.Fatalf("list: %s", r.raw)
	}
	b.get("/v1/drift/monitors?agent_id=bad%20agent", b.testKey).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_AGENT_ID")

	r = b.send(http.MethodPatch, "/v1/drift/monitors/"+id, b.testKey, `{"status": "paused", "sensitivity": 0.05, "description": "checkout"}`)
	if r.status != http.StatusOK || r.field("data.status") != "paused" || r.field("data.sensitivity") != 0.05 || r.field("data.description") != "checkout" {
		t.Fatalf("patch: %d %s", r.status, r.raw)
	}
	b.send(http.MethodPatch, "/v1/drift/monitors/"+id, b.testKey, `{"status": "stopped"}`).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_STATUS")
	b.send(http.MethodPatch, "/v1/drift/monitors/drm_none", b.testKey, `{}`).wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
	if r := b.send(http.MethodDelete, "/v1/drift/monitors/"+id, b.testKey, ""); r.status != http.StatusOK || r.field("data.deleted") != true {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	b.send(http.MethodDelete, "/v1/drift/monitors/"+id, b.testKey, "").wantError(t, http.StatusNotFound, "not_found_error", "NOT_FOUND")
}

// A monitor looks as events arrive, through the background job: every ingestion of at least
// 50 new events queues a look; each look is a stored analysis with monitor_id; the planted
// shadow party alerts once (one drift.shadow_detected event) and not again while later looks
// still detect it.
func TestDriftMonitorLooksAndAlertsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	in, truth := drift.Generate(drift.ScenarioShadow, 42, drift.GenParams{Events: 1500, Onset: 0.4, ShareGain: 0.35, RegretFrac: 0.3})
	r := b.send(http.MethodPost, "/v1/drift/monitors", b.testKey, `{"agent_id": "agent_watched", "principal_id": "`+*in.PrincipalID+`"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := r.field("data.id").(string)
	looker := &monitor.Looker{Store: b.store, Now: b.clock.Now, Logger: slog.New(slog.NewJSONHandler(b.logs, nil))}
	simulationtest.StartJobs(t, b.store.JobDriver(), looker.Register, nil, 1, 0)

	const batch = 300
	for from := 0; from < len(in.Events); from += batch {
		body, err := json.Marshal(drift.EventBatch{AgentID: "agent_watched", Events: in.Events[from : from+batch]})
		if err != nil {
			t.Fatal(err)
		}
		if r := b.send(http.MethodPost, "/v1/drift/events", b.testKey, string(body)); r.status != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.status, r.raw)
		}
		want := float64(from + batch)
		b.await(t, "look at "+id, func() bool {
			return b.get("/v1/drift/monitors/"+id, b.testKey).field("data.events_seen") == want
		})
	}
	m := b.get("/v1/drift/monitors/"+id, b.testKey)
	alerts := m.field("data.alerts").([]any)
	if m.field("data.looks") != 5.0 || len(alerts) != 1 || alerts[0].(map[string]any)["party"] != truth.Party {
		t.Fatalf("monitor after 5 looks (truth %s): %s", truth.Party, m.raw)
	}
	analyses := b.get("/v1/drift/analyses?agent_id=agent_watched", b.testKey)
	items := analyses.field("data").([]any)
	if len(items) != 5 {
		t.Fatalf("%d analyses, want one per look: %s", len(items), analyses.raw)
	}
	for i := range items {
		if items[i].(map[string]any)["monitor_id"] != id {
			t.Fatalf("analysis %d without monitor_id", i)
		}
	}
	alert := alerts[0].(map[string]any)
	alerted := b.get("/v1/drift/analyses/"+alert["analysis_id"].(string), b.testKey)
	if alerted.field("data.shadow_principal_detected") != true {
		t.Fatalf("the alert's analysis: %s", alerted.raw)
	}
	events := b.get("/v1/events?type=drift.shadow_detected", b.testKey)
	if evs := events.field("data").([]any); len(evs) != 1 || evs[0].(map[string]any)["id"] != alert["event_id"] {
		t.Fatalf("events: %s", events.raw)
	}
}

// await polls cond (each poll a request through the API) until it holds, for up to 20 s.
func (b *bundle) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within 20 s", what)
		case <-tick.C:
		}
	}
}

// Spans sent to POST /v1/drift/traces count as events for the agent's monitor as well: an
// export of 25 tool spans makes a monitor with min_events 20 look.
func TestDriftMonitorLooksAfterTraces(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.send(http.MethodPost, "/v1/drift/monitors", b.testKey, `{"agent_id": "agent_traced", "min_events": 20}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := r.field("data.id").(string)
	looker := &monitor.Looker{Store: b.store, Now: b.clock.Now, Logger: slog.New(slog.NewJSONHandler(b.logs, nil))}
	simulationtest.StartJobs(t, b.store.JobDriver(), looker.Register, nil, 1, 0)
	var spans []*tracepb.Span
	for i := range 25 {
		spans = append(spans, &tracepb.Span{TraceId: bytes.Repeat([]byte{0xcd}, 16), SpanId: []byte{9, 9, 9, 9, 9, 9, 0, byte(i + 1)},
			Name: "tool", StartTimeUnixNano: 1795343430_000000000 + uint64(i)*1_000_000_000, Attributes: []*commonpb.KeyValue{
				otlpString("gen_ai.operation.name", "execute_tool"), otlpString("gen_ai.agent.id", "agent_traced"), otlpString("gen_ai.tool.name", "search")}})
	}
	export := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
	if r := b.postTraces(b.testKey, "application/x-protobuf", "", mustMarshal(t, export)); r.status != http.StatusOK {
		t.Fatalf("traces: %d %s", r.status, r.raw)
	}
	b.await(t, "look after traces", func() bool { return b.get("/v1/drift/monitors/"+id, b.testKey).field("data.events_seen") == 25.0 })
}
