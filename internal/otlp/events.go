package otlp

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"riskapi/drift"
	"riskapi/engine"
)

// Span attributes and events of the mapping (shared/spec/agents.md §1).
const (
	attrOperation       = "gen_ai.operation.name"
	attrAgentID         = "gen_ai.agent.id"
	attrAgentName       = "gen_ai.agent.name"
	attrToolName        = "gen_ai.tool.name"
	attrAction          = "riskapi.action"
	attrPrincipalValue  = "riskapi.principal_value"
	attrBestAlternative = "riskapi.best_alternative_value"
	attrInstructedBy    = "riskapi.instructed_by"
	attrDelegationDepth = "riskapi.delegation_depth"
	attrOverridden      = "riskapi.overridden"
	eventBeneficiary    = "riskapi.beneficiary"
	attrParty           = "riskapi.party"
	attrValue           = "riskapi.value"
	riskapiPrefix       = "riskapi."

	opExecuteTool = "execute_tool"
	opInvokeAgent = "invoke_agent"
)

// mappedAttributes are read into an event's own fields, so they are not repeated in its
// attributes. gen_ai.operation.name and gen_ai.tool.name stay: they describe the span
// beyond the action taken from them.
var mappedAttributes = map[string]bool{
	attrAgentID: true, attrAgentName: true, attrAction: true, attrPrincipalValue: true,
	attrBestAlternative: true, attrInstructedBy: true, attrDelegationDepth: true, attrOverridden: true,
}

// AgentEvents are the events of one agent, in the order of their spans in the request.
type AgentEvents struct {
	AgentID string
	Events  []drift.Event
}

// Rejection counts the spans refused for one reason.
type Rejection struct {
	Reason string // completes "<n> spans …", for example "had no gen_ai.agent.id"
	Spans  int
}

// Batch is what one request's spans give Drift: events by agent, the spans refused by
// reason, and how many spans were not agent spans (neither accepted nor rejected).
type Batch struct {
	Agents   []AgentEvents // by agent id, ascending
	Events   int           // events in Agents
	Ignored  int
	Rejected []Rejection // most frequent reason first
}

// RejectedSpans is the number of spans refused, for partial_success.rejected_spans.
func (b Batch) RejectedSpans() int64 {
	var n int64
	for _, r := range b.Rejected {
		n += int64(r.Spans)
	}
	return n
}

// Message counts each reason for partial_success.error_message, for example "12 spans had no
// gen_ai.agent.id (nor gen_ai.agent.name); 1 span had an invalid action: string (1-64 chars)".
func (b Batch) Message() string {
	parts := make([]string, len(b.Rejected))
	for i, r := range b.Rejected {
		noun := "spans"
		if r.Spans == 1 {
			noun = "span"
		}
		parts[i] = fmt.Sprintf("%d %s %s", r.Spans, noun, r.Reason)
	}
	return strings.Join(parts, "; ")
}

// Events maps the request's spans to Drift events as the contract's table says. A span
// counts when its gen_ai.operation.name is execute_tool or invoke_agent, or when it has an
// attribute (or an event) under riskapi.; every other span is ignored. Attributes are looked
// up on the span, then its scope, then its resource. A counted span that does not make a
// valid event (drift.ValidateEvents) is rejected with the reason. Nothing here fails: a
// request of any shape yields a Batch.
func Events(req *coltracepb.ExportTraceServiceRequest) Batch {
	m := newMapper(req)
	byAgent := map[string][]drift.Event{}
	rejected := map[string]int{}
	var b Batch
	for i := range m.spans {
		s := &m.spans[i]
		if !s.counted() {
			b.Ignored++
			continue
		}
		agentID, ev, reason := m.event(i)
		if reason != "" {
			rejected[reason]++
			continue
		}
		byAgent[agentID] = append(byAgent[agentID], ev)
		b.Events++
	}
	for _, id := range slices.Sorted(maps.Keys(byAgent)) {
		b.Agents = append(b.Agents, AgentEvents{AgentID: id, Events: byAgent[id]})
	}
	for reason, n := range rejected {
		b.Rejected = append(b.Rejected, Rejection{Reason: reason, Spans: n})
	}
	slices.SortFunc(b.Rejected, func(x, y Rejection) int {
		return cmp.Or(cmp.Compare(y.Spans, x.Spans), strings.Compare(x.Reason, y.Reason))
	})
	return b
}

// span is one span with the attributes of its scope and resource, where lookups fall back.
type span struct {
	*tracepb.Span
	scope, resource attributeIndex
}

// attributeIndex finds the attributes of a scope or resource by key. Every span of the scope
// looks up a dozen keys in it: an index built once keeps a resource of a million attributes
// from costing a million comparisons per span.
type attributeIndex map[string]*commonpb.AnyValue

// indexAttributes indexes attrs; a key met twice keeps its first value, as a lookup in the
// list would.
func indexAttributes(attrs []*commonpb.KeyValue) attributeIndex {
	idx := make(attributeIndex, len(attrs))
	for _, kv := range attrs {
		if _, dup := idx[kv.GetKey()]; !dup && kv.GetValue() != nil {
			idx[kv.GetKey()] = kv.GetValue()
		}
	}
	return idx
}

// lookup returns the value of key from the span, else its scope, else its resource. The
// span's own attributes are scanned: each span's are read a bounded number of times, so the
// cost stays linear in the request.
func (s *span) lookup(key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.GetKey() == key && kv.GetValue() != nil {
			return kv.GetValue()
		}
	}
	if v, ok := s.scope[key]; ok {
		return v
	}
	return s.resource[key]
}

// operation is the span's gen_ai.operation.name, "" when it has none or not a string.
func (s *span) operation() string { return s.lookup(attrOperation).GetStringValue() }

// counted reports whether the span becomes an event (or a rejection).
func (s *span) counted() bool {
	if op := s.operation(); op == opExecuteTool || op == opInvokeAgent {
		return true
	}
	for _, kv := range s.Attributes {
		if strings.HasPrefix(kv.GetKey(), riskapiPrefix) {
			return true
		}
	}
	for _, ev := range s.Events {
		if ev.GetName() == eventBeneficiary {
			return true
		}
	}
	return false
}

// mapper holds a request's spans, indexed for the walk up to their ancestors.
type mapper struct {
	spans []span
	// byID finds a span by trace id and span id (their bytes, concatenated).
	byID map[string]int
	// invokeAncestors[i] is the number of invoke_agent ancestors of span i, once known
	// (unknown or inProgress before).
	invokeAncestors []int
}

const (
	unknown    = -1
	inProgress = -2
)

func newMapper(req *coltracepb.ExportTraceServiceRequest) *mapper {
	m := &mapper{byID: map[string]int{}}
	for _, rs := range req.GetResourceSpans() {
		resource := indexAttributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			scope := indexAttributes(ss.GetScope().GetAttributes())
			for _, sp := range ss.GetSpans() {
				if sp == nil {
					continue
				}
				key := string(sp.GetTraceId()) + string(sp.GetSpanId())
				if _, dup := m.byID[key]; !dup {
					m.byID[key] = len(m.spans)
				}
				m.spans = append(m.spans, span{Span: sp, scope: scope, resource: resource})
			}
		}
	}
	m.invokeAncestors = make([]int, len(m.spans))
	for i := range m.invokeAncestors {
		m.invokeAncestors[i] = unknown
	}
	return m
}

// parent returns the index of span i's parent when the request holds it.
func (m *mapper) parent(i int) (int, bool) {
	s := &m.spans[i]
	if len(s.ParentSpanId) == 0 {
		return 0, false
	}
	p, ok := m.byID[string(s.TraceId)+string(s.ParentSpanId)]
	return p, ok
}

// countInvokeAncestors returns the number of invoke_agent spans among span i's ancestors
// within the request. Each span's count is computed once (the walk stops at a span already
// counted), so a request's spans cost time linear in their number; a cycle of parent ids,
// which no tracer writes but a body can hold, ends the walk as if at a root.
func (m *mapper) countInvokeAncestors(i int) int {
	var path []int
	j := i
	for m.invokeAncestors[j] == unknown {
		m.invokeAncestors[j] = inProgress
		path = append(path, j)
		p, ok := m.parent(j)
		if !ok {
			j = -1
			break
		}
		j = p
	}
	d := 0
	if j >= 0 && m.invokeAncestors[j] >= 0 {
		d = m.invokeAncestors[j] + m.isInvoke(j)
	}
	for k := len(path) - 1; k >= 0; k-- {
		m.invokeAncestors[path[k]] = d
		d += m.isInvoke(path[k])
	}
	return m.invokeAncestors[i]
}

func (m *mapper) isInvoke(i int) int {
	if m.spans[i].operation() == opInvokeAgent {
		return 1
	}
	return 0
}

// event maps span i, or returns why it is rejected.
func (m *mapper) event(i int) (agentID string, ev drift.Event, reason string) {
	s := &m.spans[i]
	agent := s.lookup(attrAgentID)
	if agent == nil {
		agent = s.lookup(attrAgentName)
	}
	switch {
	case agent == nil:
		return "", ev, "had no " + attrAgentID + " (nor " + attrAgentName + ")"
	case !drift.ValidAgentID(agent.GetStringValue()):
		return "", ev, "had an invalid " + attrAgentID + ": " + drift.AgentIDExpected
	}
	agentID = agent.GetStringValue()
	if len(s.TraceId) != 16 || len(s.SpanId) != 8 {
		return "", ev, "had no valid trace_id (16 bytes) and span_id (8 bytes)"
	}
	ev.ID = hex.EncodeToString(s.TraceId) + ":" + hex.EncodeToString(s.SpanId)
	if t := s.StartTimeUnixNano; t != 0 {
		ev.Timestamp = time.Unix(0, int64(min(t, math.MaxInt64))).UTC()
	}
	ev.Action = s.action()
	var bad string
	if ev.PrincipalValue, bad = s.number(attrPrincipalValue); bad != "" {
		return "", ev, bad
	}
	if ev.BestAlternativeValue, bad = s.number(attrBestAlternative); bad != "" {
		return "", ev, bad
	}
	if v := s.lookup(attrInstructedBy); v != nil {
		if _, ok := v.Value.(*commonpb.AnyValue_StringValue); !ok {
			return "", ev, "had a non-string " + attrInstructedBy
		}
		ev.InstructedBy = v.GetStringValue()
	}
	if ev.DelegationDepth, bad = s.integer(attrDelegationDepth); bad != "" {
		return "", ev, bad
	}
	if ev.DelegationDepth == nil {
		depth := m.countInvokeAncestors(i)
		ev.DelegationDepth = &depth
	}
	if v := s.lookup(attrOverridden); v != nil {
		b, ok := v.Value.(*commonpb.AnyValue_BoolValue)
		if !ok {
			return "", ev, "had a non-bool " + attrOverridden
		}
		ev.Overridden = &b.BoolValue
	}
	if ev.Beneficiaries, bad = s.beneficiaries(); bad != "" {
		return "", ev, bad
	}
	ev.Attributes = remainingAttributes(s.Attributes)
	if err := drift.ValidateEvents([]drift.Event{ev}); err != nil {
		return "", ev, invalidReason(err)
	}
	return agentID, ev, ""
}

// action is riskapi.action, else gen_ai.tool.name for an execute_tool span, else the
// operation's name.
func (s *span) action() string {
	if a := s.lookup(attrAction).GetStringValue(); a != "" {
		return a
	}
	op := s.operation()
	if op == opExecuteTool {
		if t := s.lookup(attrToolName).GetStringValue(); t != "" {
			return t
		}
	}
	return op
}

// number reads a double or int attribute; nil when absent, a reason when of another type.
func (s *span) number(key string) (*float64, string) {
	v, ok := asNumber(s.lookup(key))
	if !ok {
		return nil, "had a " + key + " that is not a double or int"
	}
	return v, ""
}

func asNumber(v *commonpb.AnyValue) (*float64, bool) {
	switch x := v.GetValue().(type) {
	case nil:
		return nil, true
	case *commonpb.AnyValue_DoubleValue:
		return &x.DoubleValue, true
	case *commonpb.AnyValue_IntValue:
		f := float64(x.IntValue)
		return &f, true
	}
	return nil, false
}

// integer reads a non-negative int attribute that fits an int; nil when absent.
func (s *span) integer(key string) (*int, string) {
	v := s.lookup(key)
	if v == nil {
		return nil, ""
	}
	x, ok := v.Value.(*commonpb.AnyValue_IntValue)
	if !ok || x.IntValue < 0 || x.IntValue > math.MaxInt32 {
		return nil, "had a " + key + " that is not a non-negative int"
	}
	n := int(x.IntValue)
	return &n, ""
}

// beneficiaries reads the span's riskapi.beneficiary events.
func (s *span) beneficiaries() ([]drift.Beneficiary, string) {
	var out []drift.Beneficiary
	for _, ev := range s.Events {
		if ev.GetName() != eventBeneficiary {
			continue
		}
		var party, value *commonpb.AnyValue
		for _, kv := range ev.GetAttributes() {
			switch kv.GetKey() {
			case attrParty:
				party = cmp.Or(party, kv.GetValue())
			case attrValue:
				value = cmp.Or(value, kv.GetValue())
			}
		}
		if _, ok := party.GetValue().(*commonpb.AnyValue_StringValue); !ok {
			return nil, "had a " + eventBeneficiary + " event without a string " + attrParty
		}
		v, ok := asNumber(value)
		if !ok || v == nil {
			return nil, "had a " + eventBeneficiary + " event without a numeric " + attrValue
		}
		out = append(out, drift.Beneficiary{Party: party.GetStringValue(), Value: *v})
	}
	return out, ""
}

// indexes matches the [i] of a validation error's path.
var indexes = regexp.MustCompile(`\[[0-9]+\]`)

// invalidReason words the engine's verdict on a mapped event as a rejection reason: the
// event field without its path ("action", "beneficiaries.value") and what it must be.
func invalidReason(err error) string {
	var invalid *engine.InputError
	if !errors.As(err, &invalid) {
		return "did not make a valid event"
	}
	field := indexes.ReplaceAllString(strings.TrimPrefix(invalid.Field, "events[0]."), "")
	if invalid.Received == "missing" {
		return "had no " + field
	}
	return "had an invalid " + field + ": " + invalid.Expected
}

// truncate cuts s to at most n characters (runes).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}
