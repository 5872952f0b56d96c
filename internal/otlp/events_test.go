package otlp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"riskapi/drift"
)

// eventsByID maps a batch's events by id, for tests that look at one of them.
func eventsByID(t *testing.T, b Batch) map[string]drift.Event {
	t.Helper()
	out := map[string]drift.Event{}
	for _, a := range b.Agents {
		for _, ev := range a.Events {
			out[ev.ID] = ev
		}
	}
	return out
}

func idOf(n byte) string {
	return "5b8efff798038103d269b633813fc60c:000000000000000" + string("0123456789abcdef"[n])
}

func TestEventsCountOnlyAgentSpans(t *testing.T) {
	b := Events(request(nil, nil,
		newSpan(1, 0, str(attrOperation, opInvokeAgent), str(attrAgentID, "a")),
		newSpan(2, 1, str(attrOperation, opExecuteTool), str(attrAgentID, "a")),
		newSpan(3, 1, str(attrOperation, "chat"), str(attrAgentID, "a")), // a model call: ignored
		newSpan(4, 1, str("http.method", "GET")),                         // plain span: ignored
		newSpan(5, 1, str(attrAgentID, "a"), str(attrAction, "refund")),  // riskapi.* attribute: counted
		&tracepb.Span{TraceId: traceID, SpanId: spanID(6), StartTimeUnixNano: 1767225600e9, Attributes: []*commonpb.KeyValue{str(attrAgentID, "a")},
			Events: []*tracepb.Span_Event{{Name: eventBeneficiary, Attributes: []*commonpb.KeyValue{str(attrParty, "p"), dbl(attrValue, 1)}}}}, // riskapi event: counted, no action
	))
	if b.Events != 3 || b.Ignored != 2 || b.RejectedSpans() != 1 {
		t.Fatalf("events %d, ignored %d, rejected %d (%s), want 3, 2, 1", b.Events, b.Ignored, b.RejectedSpans(), b.Message())
	}
	if got := b.Message(); got != "1 span had no action" {
		t.Errorf("message %q", got)
	}
	got := eventsByID(t, b)
	for id, action := range map[string]string{idOf(1): "invoke_agent", idOf(2): "execute_tool", idOf(5): "refund"} {
		if got[id].Action != action {
			t.Errorf("%s: action %q, want %q", id, got[id].Action, action)
		}
	}
}

// Attributes are read from the span, then its scope, then its resource.
func TestEventsLookUpSpanScopeResource(t *testing.T) {
	resource := []*commonpb.KeyValue{str(attrAgentID, "from_resource"), str(attrInstructedBy, "resource_party"), dbl(attrPrincipalValue, 1)}
	scope := []*commonpb.KeyValue{str(attrAgentID, "from_scope"), dbl(attrPrincipalValue, 2)}
	b := Events(request(resource, scope,
		newSpan(1, 0, str(attrOperation, opExecuteTool), dbl(attrPrincipalValue, 3), str(attrAgentID, "from_span")),
		newSpan(2, 0, str(attrOperation, opExecuteTool)),
	))
	got := eventsByID(t, b)
	if len(b.Agents) != 2 || b.Agents[0].AgentID != "from_scope" || b.Agents[1].AgentID != "from_span" {
		t.Fatalf("agents %+v", b.Agents)
	}
	if v := *got[idOf(1)].PrincipalValue; v != 3 {
		t.Errorf("span value %g, want the span's 3", v)
	}
	if v := *got[idOf(2)].PrincipalValue; v != 2 {
		t.Errorf("span value %g, want the scope's 2", v)
	}
	if p := got[idOf(2)].InstructedBy; p != "resource_party" {
		t.Errorf("instructed_by %q, want the resource's", p)
	}
}

func TestEventFields(t *testing.T) {
	span := newSpan(2, 1,
		str(attrOperation, opExecuteTool), str(attrToolName, "transfer"), str(attrAgentName, "payments-agent"),
		dbl(attrPrincipalValue, -12.5), integer(attrBestAlternative, 40), str(attrInstructedBy, "vendor_x"),
		integer(attrDelegationDepth, 5), boolean(attrOverridden, true), str("customer.tier", "gold"))
	span.Events = []*tracepb.Span_Event{
		{Name: eventBeneficiary, Attributes: []*commonpb.KeyValue{str(attrParty, "vendor_x"), dbl(attrValue, 30)}},
		{Name: "log"},
		{Name: eventBeneficiary, Attributes: []*commonpb.KeyValue{str(attrParty, "principal"), integer(attrValue, 2)}},
	}
	b := Events(request(nil, nil, span))
	ev, ok := eventsByID(t, b)[idOf(2)]
	if !ok {
		t.Fatalf("no event: %s", b.Message())
	}
	if b.Agents[0].AgentID != "payments-agent" || ev.Action != "transfer" || !ev.Timestamp.Equal(time.Unix(1767225602, 0)) ||
		*ev.PrincipalValue != -12.5 || *ev.BestAlternativeValue != 40 || ev.InstructedBy != "vendor_x" ||
		*ev.DelegationDepth != 5 || !*ev.Overridden {
		t.Errorf("event %+v", ev)
	}
	if len(ev.Beneficiaries) != 2 || ev.Beneficiaries[0].Party != "vendor_x" || ev.Beneficiaries[1].Value != 2 {
		t.Errorf("beneficiaries %+v", ev.Beneficiaries)
	}
	var attrs map[string]any
	if err := json.Unmarshal(ev.Attributes, &attrs); err != nil {
		t.Fatal(err)
	}
	// The mapped attributes are not repeated; the operation and tool name stay.
	if len(attrs) != 3 || attrs["customer.tier"] != "gold" || attrs[attrToolName] != "transfer" || attrs[attrOperation] != opExecuteTool {
		t.Errorf("attributes %v", attrs)
	}
}

// Without riskapi.delegation_depth, the depth is the number of invoke_agent ancestors in
// the request: an orchestrator invoking a sub-agent that calls a tool is depth 2.
func TestDelegationDepthFromAncestors(t *testing.T) {
	b := Events(request([]*commonpb.KeyValue{str(attrAgentID, "a")}, nil,
		newSpan(4, 3, str(attrOperation, opExecuteTool)),
		newSpan(1, 0, str(attrOperation, opInvokeAgent)),
		newSpan(2, 1, str("http.method", "POST")), // not an agent span, but on the path
		newSpan(3, 2, str(attrOperation, opInvokeAgent)),
		newSpan(5, 9, str(attrOperation, opExecuteTool)), // parent not in the request
		newSpan(7, 8, str(attrOperation, opInvokeAgent)), // 7 and 8 are each other's parents
		newSpan(8, 7, str(attrOperation, opInvokeAgent)),
	))
	got := eventsByID(t, b)
	for n, want := range map[byte]int{1: 0, 3: 1, 4: 2, 5: 0} {
		if d := *got[idOf(n)].DelegationDepth; d != want {
			t.Errorf("span %d: depth %d, want %d", n, d, want)
		}
	}
	if d7, d8 := *got[idOf(7)].DelegationDepth, *got[idOf(8)].DelegationDepth; d7+d8 != 1 {
		t.Errorf("cycle: depths %d and %d, want 0 and 1 in some order", d7, d8)
	}
}

func TestEventsRejectWithReasons(t *testing.T) {
	op := str(attrOperation, opExecuteTool)
	noIDs := newSpan(9, 0, op, str(attrAgentID, "a"))
	noIDs.SpanId = nil
	b := Events(request(nil, nil,
		newSpan(1, 0, op), newSpan(2, 0, op), // no agent id
		newSpan(3, 0, op, str(attrAgentID, "has space")),
		newSpan(4, 0, op, str(attrAgentID, "a"), str(attrPrincipalValue, "12")),
		newSpan(5, 0, op, str(attrAgentID, "a"), str(attrAction, strings.Repeat("x", 65))),
		newSpan(6, 0, op, str(attrAgentID, "a"), integer(attrDelegationDepth, -1)),
		noIDs,
		newSpan(10, 0, op, str(attrAgentID, "a")), // accepted
	))
	want := "2 spans had no gen_ai.agent.id (nor gen_ai.agent.name); " +
		"1 span had a riskapi.delegation_depth that is not a non-negative int; " +
		"1 span had a riskapi.principal_value that is not a double or int; " +
		"1 span had an invalid action: string (1-64 chars); " +
		"1 span had an invalid gen_ai.agent.id: string (1-128 chars of [A-Za-z0-9._:-]); " +
		"1 span had no valid trace_id (16 bytes) and span_id (8 bytes)"
	if got := b.Message(); got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
	if b.RejectedSpans() != 7 || b.Events != 1 {
		t.Errorf("rejected %d, events %d", b.RejectedSpans(), b.Events)
	}
}

func TestAttributesBounded(t *testing.T) {
	attrs := []*commonpb.KeyValue{str(attrOperation, opExecuteTool), str(attrAgentID, "a"), str("long", strings.Repeat("é", 300)), str("long", "second")}
	for i := range 40 {
		attrs = append(attrs, integer("k"+string(rune('A'+i)), int64(i)))
	}
	b := Events(request(nil, nil, newSpan(1, 0, attrs...)))
	var got map[string]any
	if err := json.Unmarshal(eventsByID(t, b)[idOf(1)].Attributes, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxAttributes {
		t.Errorf("%d attributes, want %d", len(got), MaxAttributes)
	}
	if s := got["long"].(string); s != strings.Repeat("é", MaxStringChars) {
		t.Errorf("long string kept %d characters, want the first of the two cut at %d", len([]rune(s)), MaxStringChars)
	}
}
