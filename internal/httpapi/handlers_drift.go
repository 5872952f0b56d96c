package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/drift"
	"riskapi/internal/store"
)

// Limits of the Drift contract (shared/spec/drift.md).
const (
	minAnalyzeEvents = 20
	maxAnalyzeEvents = 100_000
	maxIngestEvents  = 10_000
	maxEventIDChars  = 128
	maxActionChars   = 64
	// maxPartyChars bounds party names, principal ids and instruction sources: long enough
	// for a URL-like source, short enough that one event cannot hold megabytes of names.
	maxPartyChars = 512
	// maxMagnitude bounds every number of an event (as Cascade bounds its inputs): sums of
	// 100,000 values and their squares stay finite, so no statistic overflows to ±Inf.
	maxMagnitude = 1e15
)

var driftAnalyses = analysisKind{
	product: store.ProductDrift, object: "drift.analysis", idPrefix: "dra", list: "drift_analyses",
	subject: "agent_id", noun: "Drift analysis", eventType: EventDriftShadowDetected,
}

// agentIDPattern is the contract's agent_id: 1–128 characters of [A-Za-z0-9._:-].
var agentIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

const agentIDExpected = "string (1-128 chars of [A-Za-z0-9._:-])"

// Timestamps are kept to the nanosecond as Unix nanoseconds, so they must lie within the
// years 1678–2262; the API accepts 1900 up to (not including) 2200.
var (
	earliestEventTime = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	latestEventTime   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// driftEventInput is one event as the API accepts it. Every field is a pointer (or raw JSON)
// so that a missing member can be told from a zero, and so that a stored event is re-encoded
// with exactly the members it was sent with.
type driftEventInput struct {
	ID                   *string                 `json:"id,omitzero"`
	Timestamp            *time.Time              `json:"timestamp,omitzero"`
	Action               *string                 `json:"action,omitzero"`
	PrincipalValue       *float64                `json:"principal_value,omitzero"`
	BestAlternativeValue *float64                `json:"best_alternative_value,omitzero"`
	Beneficiaries        []driftBeneficiaryInput `json:"beneficiaries,omitzero"`
	InstructedBy         *string                 `json:"instructed_by,omitzero"`
	DelegationDepth      *int                    `json:"delegation_depth,omitzero"`
	Overridden           *bool                   `json:"overridden,omitzero"`
	Attributes           jsontext.Value          `json:"attributes,omitzero"`
}

type driftBeneficiaryInput struct {
	Party *string  `json:"party,omitzero"`
	Value *float64 `json:"value,omitzero"`
}

// validateDriftEvents checks events (the value of field "events") in document order.
func validateDriftEvents(events []driftEventInput) *Error {
	for i := range events {
		ev := &events[i]
		path := "events[" + strconv.Itoa(i) + "]"
		if ev.ID != nil && (*ev.ID == "" || utf8.RuneCountInString(*ev.ID) > maxEventIDChars) {
			return invalidField(path+".id", "string (1-128 chars)", "string", "%s.id must be 1 to %d characters long.", path, maxEventIDChars)
		}
		switch {
		case ev.Timestamp == nil:
			return invalidField(path+".timestamp", timeExpectation, "missing", "%s.timestamp is required.", path)
		case ev.Timestamp.Before(earliestEventTime) || !ev.Timestamp.Before(latestEventTime):
			return invalidField(path+".timestamp", timeExpectation+" (years 1900-2199)", "string", "%s.timestamp must lie in the years 1900 to 2199.", path)
		}
		if ev.Action == nil {
			return invalidField(path+".action", "string (1-64 chars)", "missing", "%s.action is required (for example \"purchase\").", path)
		}
		if n := utf8.RuneCountInString(*ev.Action); n == 0 || n > maxActionChars {
			return invalidField(path+".action", "string (1-64 chars)", "string", "%s.action must be 1 to %d characters long.", path, maxActionChars)
		}
		for _, v := range []struct {
			name string
			x    *float64
		}{{"principal_value", ev.PrincipalValue}, {"best_alternative_value", ev.BestAlternativeValue}} {
			if v.x != nil && math.Abs(*v.x) > maxMagnitude {
				return invalidField(path+"."+v.name, "number (between -1e15 and 1e15)", "number", "%s.%s is too large (at most 1e15 in size).", path, v.name)
			}
		}
		for j, b := range ev.Beneficiaries {
			bpath := path + ".beneficiaries[" + strconv.Itoa(j) + "]"
			switch {
			case b.Party == nil:
				return invalidField(bpath+".party", "string", "missing", "%s.party is required.", bpath)
			case *b.Party == "" || utf8.RuneCountInString(*b.Party) > maxPartyChars:
				return invalidField(bpath+".party", fmt.Sprintf("string (1-%d chars)", maxPartyChars), "string", "%s.party must be 1 to %d characters long.", bpath, maxPartyChars)
			case b.Value == nil:
				return invalidField(bpath+".value", "number (>= 0)", "missing", "%s.value is required.", bpath)
			case *b.Value < 0 || *b.Value > maxMagnitude:
				return invalidField(bpath+".value", "number (0 to 1e15)", "number", "%s.value must be between 0 and 1e15 (it is %g).", bpath, *b.Value)
			}
		}
		if ev.InstructedBy != nil && (*ev.InstructedBy == "" || utf8.RuneCountInString(*ev.InstructedBy) > maxPartyChars) {
			return invalidField(path+".instructed_by", fmt.Sprintf("string (1-%d chars)", maxPartyChars), "string", "%s.instructed_by must be 1 to %d characters long.", path, maxPartyChars)
		}
		if ev.DelegationDepth != nil && *ev.DelegationDepth < 0 {
			return invalidField(path+".delegation_depth", "integer (>= 0)", "number", "%s.delegation_depth must not be negative.", path)
		}
		if len(ev.Attributes) > 0 && ev.Attributes.Kind() != '{' && ev.Attributes.Kind() != 'n' {
			return invalidField(path+".attributes", "object", kindName(ev.Attributes.Kind()), "%s.attributes must be an object.", path)
		}
	}
	return nil
}

// engineEvent converts a validated event to the engine's form.
func (ev *driftEventInput) engineEvent() drift.Event {
	out := drift.Event{
		Timestamp: *ev.Timestamp, Action: *ev.Action,
		PrincipalValue: ev.PrincipalValue, BestAlternativeValue: ev.BestAlternativeValue,
		DelegationDepth: ev.DelegationDepth, Overridden: ev.Overridden,
	}
	if ev.ID != nil {
		out.ID = *ev.ID
	}
	if ev.InstructedBy != nil {
		out.InstructedBy = *ev.InstructedBy
	}
	if len(ev.Beneficiaries) > 0 {
		out.Beneficiaries = make([]drift.Beneficiary, len(ev.Beneficiaries))
		for i, b := range ev.Beneficiaries {
			out.Beneficiaries[i] = drift.Beneficiary{Party: *b.Party, Value: *b.Value}
		}
	}
	return out
}

func validateAgentID(agentID *string) *Error {
	switch {
	case agentID == nil:
		return invalidField("agent_id", agentIDExpected, "missing", "agent_id is required.")
	case !agentIDPattern.MatchString(*agentID):
		return invalidField("agent_id", agentIDExpected, "string", "agent_id %q is not valid: use 1 to 128 letters, digits, '.', '_', ':' or '-'.", *agentID)
	}
	return nil
}

// ingestDriftEventsRequest is the body of POST /v1/drift/events.
type ingestDriftEventsRequest struct {
	AgentID *string           `json:"agent_id"`
	Events  []driftEventInput `json:"events"`
}

func (req *ingestDriftEventsRequest) validate() *Error {
	if e := validateAgentID(req.AgentID); e != nil {
		return e
	}
	const expected = "array (1-10000 events)"
	switch {
	case req.Events == nil:
		return invalidField("events", expected, "missing", "events is required.")
	case len(req.Events) == 0 || len(req.Events) > maxIngestEvents:
		return invalidField("events", expected, "array", "events must hold 1 to %d events a call (it holds %d).", maxIngestEvents, len(req.Events))
	}
	return validateDriftEvents(req.Events)
}

// driftEventBatchObject is the answer of POST /v1/drift/events.
type driftEventBatchObject struct {
	AgentID     string `json:"agent_id"`
	Accepted    int    `json:"accepted"`
	Duplicates  int    `json:"duplicates"`
	TotalEvents int64  `json:"total_events"`
}

// handleIngestDriftEvents is POST /v1/drift/events: append events to an agent's stored history,
// skipping ids it already holds.
func (s *Server) handleIngestDriftEvents() http.Handler {
	return handleJSON(s, func(w http.ResponseWriter, r *http.Request, req *ingestDriftEventsRequest) {
		events := make([]store.DriftEvent, len(req.Events))
		for i := range req.Events {
			ev := &req.Events[i]
			payload, err := json.Marshal(ev) // times as sent, to the nanosecond and with their offset
			if err != nil {
				writeError(w, r, err)
				return
			}
			events[i] = store.DriftEvent{Timestamp: *ev.Timestamp, Payload: payload}
			if ev.ID != nil {
				events[i].EventID = *ev.ID
			}
		}
		p := principalFrom(r.Context())
		batch, err := s.cfg.Store.AddDriftEvents(r.Context(), p.Account.ID, p.Key.Mode, *req.AgentID, events)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, driftEventBatchObject{
			AgentID: *req.AgentID, Accepted: batch.Accepted, Duplicates: batch.Duplicates, TotalEvents: batch.Total,
		})
	})
}

// analyzeDriftRequest is the body of POST /v1/drift/analyze.
type analyzeDriftRequest struct {
	AgentID     *string             `json:"agent_id"`
	PrincipalID *string             `json:"principal_id"`
	Events      *[]driftEventInput  `json:"events"`
	Window      *driftWindowInput   `json:"window"`
	Baseline    *driftBaselineInput `json:"baseline"`
	Sensitivity *float64            `json:"sensitivity"`
}

type driftWindowInput struct {
	From *time.Time `json:"from"`
	To   *time.Time `json:"to"`
}

type driftBaselineInput struct {
	Until    *time.Time `json:"until"`
	Fraction *float64   `json:"fraction"`
}

func (req *analyzeDriftRequest) validate() *Error {
	if e := validateAgentID(req.AgentID); e != nil {
		return e
	}
	if req.PrincipalID != nil && (*req.PrincipalID == "" || utf8.RuneCountInString(*req.PrincipalID) > maxPartyChars) {
		return invalidField("principal_id", fmt.Sprintf("string (1-%d chars)", maxPartyChars), "string", "principal_id must be 1 to %d characters long.", maxPartyChars)
	}
	if req.Events != nil {
		const expected = "array (20-100000 events)"
		if n := len(*req.Events); n < minAnalyzeEvents || n > maxAnalyzeEvents {
			return invalidField("events", expected, "array", "events must hold %d to %d events (it holds %d).", minAnalyzeEvents, maxAnalyzeEvents, n)
		}
		if e := validateDriftEvents(*req.Events); e != nil {
			return e
		}
	}
	if w := req.Window; w != nil {
		const expected = "object ({from?, to?} RFC 3339, from before to)"
		switch {
		case req.Events != nil:
			return invalidField("window", "absent when events are sent", "object", "window selects stored events; it cannot be combined with inline events.")
		case w.From != nil && (w.From.Before(earliestEventTime) || !w.From.Before(latestEventTime)):
			return invalidField("window.from", expected+" (years 1900-2199)", "string", "window.from must lie in the years 1900 to 2199, as event timestamps do.")
		case w.To != nil && (w.To.Before(earliestEventTime) || w.To.After(latestEventTime)):
			return invalidField("window.to", expected+" (years 1900-2200)", "string", "window.to must lie in the years 1900 to 2200, as event timestamps do.")
		case w.From != nil && w.To != nil && !w.From.Before(*w.To):
			return invalidField("window.to", expected, "string", "window.to must be later than window.from (to is exclusive).")
		}
	}
	if b := req.Baseline; b != nil {
		const expected = "object ({until: timestamp} or {fraction: 0.05-0.9})"
		switch {
		case b.Until != nil && b.Fraction != nil:
			return invalidField("baseline", expected, "object", "baseline takes until or fraction, not both.")
		case b.Until == nil && b.Fraction == nil:
			return invalidField("baseline", expected, "object", "baseline needs until or fraction; omit baseline for the default (the first 30 %% of events).")
		case b.Fraction != nil && (*b.Fraction < 0.05 || *b.Fraction > 0.9):
			return invalidField("baseline.fraction", "number (0.05-0.9)", "number", "baseline.fraction must be between 0.05 and 0.9 (it is %g).", *b.Fraction)
		case b.Until != nil && req.Events != nil:
			// Inline events: the split can be checked now, before anything runs or is stored.
			before := 0
			for _, ev := range *req.Events {
				if ev.Timestamp.Before(*b.Until) {
					before++
				}
			}
			if before == 0 || before == len(*req.Events) {
				return invalidField("baseline.until", "string (a timestamp with events on both sides)", "string",
					"baseline.until leaves %d of the %d events in the baseline; both the baseline and the monitoring part need events.", before, len(*req.Events))
			}
		}
	}
	if v := req.Sensitivity; v != nil && !(*v > 0 && *v <= 0.2) {
		return invalidField("sensitivity", "number (greater than 0, at most 0.2)", "number", "sensitivity is a family-wise false-alarm level in (0, 0.2] (it is %g).", *v)
	}
	return nil
}

// driftAnalysisObject is the stored and returned analysis.
type driftAnalysisObject struct {
	resourceHeader `json:",inline"`
	drift.Analysis `json:",inline"`
}

// handleAnalyzeDrift is POST /v1/drift/analyze: analyse inline events, or the agent's stored
// ones within window, store the analysis and, when a shadow principal is found, the
// drift.shadow_detected event in the same transaction.
func (s *Server) handleAnalyzeDrift() http.Handler {
	return handleJSON(s, func(w http.ResponseWriter, r *http.Request, req *analyzeDriftRequest) {
		var inputs []driftEventInput
		if req.Events != nil {
			inputs = *req.Events
		} else {
			var e *Error
			if inputs, e = s.storedDriftEvents(r, req); e != nil {
				writeError(w, r, e)
				return
			}
		}
		in := drift.Input{AgentID: *req.AgentID, Events: make([]drift.Event, len(inputs))}
		for i := range inputs {
			in.Events[i] = inputs[i].engineEvent()
		}
		if req.PrincipalID != nil {
			in.PrincipalID = *req.PrincipalID
		}
		if req.Baseline != nil {
			in.Baseline = drift.Baseline{Until: req.Baseline.Until, Fraction: req.Baseline.Fraction}
		}
		if req.Sensitivity != nil {
			in.Sensitivity = *req.Sensitivity
		}
		analysis, err := drift.Analyze(in)
		var inputErr *drift.InputError
		if errors.As(err, &inputErr) {
			// The checks above leave the engine little to refuse: a baseline.until that leaves
			// the baseline or the monitoring part empty is the case a client meets.
			expected := "a value the analysis can use"
			if topLevelField(inputErr.Field) == "baseline" {
				expected = "object (a baseline that leaves both parts non-empty)"
			}
			writeError(w, r, invalidField(inputErr.Field, expected, "object", "%s: %s.", inputErr.Field, inputErr.Reason))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		h, now := s.newHeader(r, driftAnalyses)
		obj := driftAnalysisObject{resourceHeader: h, Analysis: analysis}
		payload, err := s.saveAnalysis(r, driftAnalyses, h, now, *req.AgentID, obj, analysis.ShadowPrincipalDetected)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, payload)
	})
}

// storedDriftEvents reads the agent's stored events within the request's window for an
// analysis: 404 when the agent has none at all; 400 when the window holds fewer than 20 or
// more than 100,000 (the analysis limits; nothing is silently cut off).
func (s *Server) storedDriftEvents(r *http.Request, req *analyzeDriftRequest) ([]driftEventInput, *Error) {
	p := principalFrom(r.Context())
	var from, to *time.Time
	if req.Window != nil {
		from, to = req.Window.From, req.Window.To
	}
	stored, err := s.cfg.Store.DriftEvents(r.Context(), p.Account.ID, p.Key.Mode, *req.AgentID, from, to, maxAnalyzeEvents+1)
	if err != nil {
		return nil, fmtInternal(r.Context(), "read drift events", err)
	}
	inWindow := "stored events"
	if req.Window != nil {
		inWindow = "stored events in the window"
	}
	switch {
	case len(stored) == 0 && req.Window == nil:
		return nil, newError(CodeNotFound, "Agent %s has no stored events. Send them with POST /v1/drift/events, or inline in events.", *req.AgentID)
	case len(stored) == 0:
		total, err := s.cfg.Store.CountDriftEvents(r.Context(), p.Account.ID, p.Key.Mode, *req.AgentID)
		if err != nil {
			return nil, fmtInternal(r.Context(), "count drift events", err)
		}
		if total == 0 {
			return nil, newError(CodeNotFound, "Agent %s has no stored events. Send them with POST /v1/drift/events, or inline in events.", *req.AgentID)
		}
		return nil, invalidField("window", "object (a window holding 20-100000 stored events)", "object", "Agent %s has no %s (it has %d in all).", *req.AgentID, inWindow, total)
	case len(stored) < minAnalyzeEvents:
		field, expected := "events", "array (20-100000 events)"
		if req.Window != nil {
			field, expected = "window", "object (a window holding 20-100000 stored events)"
		}
		return nil, invalidField(field, expected, "missing", "Agent %s has %d %s; an analysis needs at least %d.", *req.AgentID, len(stored), inWindow, minAnalyzeEvents)
	case len(stored) > maxAnalyzeEvents:
		return nil, invalidField("window", "object (a window holding 20-100000 stored events)", "object",
			"Agent %s has more than %d %s, the most one analysis takes; narrow the window (from, to).", *req.AgentID, maxAnalyzeEvents, inWindow)
	}
	// One decode of the payloads joined into an array is much cheaper than one per event.
	var buf bytes.Buffer
	buf.Grow(len(stored) * (len(stored[0].Payload) + 1))
	buf.WriteByte('[')
	for i, ev := range stored {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(ev.Payload)
	}
	buf.WriteByte(']')
	var events []driftEventInput
	if err := json.Unmarshal(buf.Bytes(), &events); err != nil {
		return nil, fmtInternal(r.Context(), "decode stored drift events", err)
	}
	return events, nil
}
