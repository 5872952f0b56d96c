package drift

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"riskapi/engine"
)

// Limits of the Drift contract (shared/spec/drift.md).
const (
	// MinEvents and MaxEvents bound the events of one analysis.
	MinEvents = 20
	MaxEvents = 100_000
	// MaxBatchEvents bounds the events of one EventBatch (POST /v1/drift/events).
	MaxBatchEvents = 10_000
	// MaxMagnitude bounds every number of an event: sums of 100,000 values and their squares
	// stay finite, so no statistic overflows to ±Inf.
	MaxMagnitude = 1e15
	// MaxPartyChars bounds party names, principal ids and instruction sources: long enough
	// for a URL-like source, short enough that one event cannot hold megabytes of names.
	MaxPartyChars   = 512
	maxEventIDChars = 128
	maxActionChars  = 64
)

// Timestamps are kept to the nanosecond as Unix nanoseconds, so they must lie within the
// years 1678–2262; the contract accepts EarliestTime up to (not including) LatestTime.
var (
	EarliestTime = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	LatestTime   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// AgentIDExpected is the contract's rule for agent_id, as errors state it.
const AgentIDExpected = "string (1-128 chars of [A-Za-z0-9._:-])"

// timeExpectation is Expected for every timestamp.
const timeExpectation = "string (RFC 3339 timestamp)"

// ValidAgentID reports whether id is a valid agent_id: 1–128 characters of [A-Za-z0-9._:-].
func ValidAgentID(id string) bool { return engine.ValidIdentifier(id, "") }

// Members of Input in the contract's (and validation's) order.
var inputMembers = []string{"agent_id", "principal_id", "events", "window", "baseline", "sensitivity"}

// Validate checks the whole input against the contract, member by member in the contract's
// order, and returns the first failure as an *engine.InputError, or nil. It remembers which
// events passed, so that Analyze on the same value does not check them again; events
// replaced, grown or cut since are checked again, but an event edited in place is not:
// validate again after editing one.
func (in *Input) Validate() error {
	for _, name := range inputMembers {
		if err := in.ValidateMember(name); err != nil {
			return err
		}
	}
	return nil
}

// ValidateMember checks one member by its JSON name (agent_id, principal_id, events, window,
// baseline, sensitivity), so that a caller that reads the events later (the API, from its
// store, when a window is sent instead) can check the others first, in the contract's
// order. Unknown names are valid. A passing "events" is remembered, as by Validate.
func (in *Input) ValidateMember(name string) error {
	switch name {
	case "agent_id":
		return validateAgentID(in.AgentID, in.sent)
	case "principal_id":
		if p := in.PrincipalID; p != nil && (*p == "" || utf8.RuneCountInString(*p) > MaxPartyChars) {
			return engine.Invalid("", "principal_id", fmt.Sprintf("string (1-%d chars)", MaxPartyChars), "string", "principal_id must be 1 to %d characters long.", MaxPartyChars)
		}
	case "events":
		return in.validateEvents(nil)
	case "window":
		return in.validateWindow()
	case "baseline":
		return in.validateBaseline()
	case "sensitivity":
		if v := in.Sensitivity; v != nil && !(*v > 0 && *v <= 0.2) {
			return engine.Invalid("", "sensitivity", "number (greater than 0, at most 0.2)", "number", "sensitivity is a family-wise false-alarm level in (0, 0.2] (it is %g).", *v)
		}
	}
	return nil
}

// validateEvents checks member "events" and remembers the events when they pass. It gives
// up with errStopped once stopped (when not nil) reports true: Analyze's check of the
// events of a request it has been asked to abandon.
func (in *Input) validateEvents(stopped func() bool) error {
	in.eventsChecked = engine.Slice[Event]{}
	const expected = "array (20-100000 events)"
	switch n := len(in.Events); {
	case in.Events == nil:
		return engine.Invalid("", "events", expected, "missing", "events is required: %d to %d events.", MinEvents, MaxEvents)
	case n < MinEvents || n > MaxEvents:
		return engine.Invalid("", "events", expected, "array", "events must hold %d to %d events (it holds %d).", MinEvents, MaxEvents, n)
	}
	if err := validateEventsOn(in.Events, stopped, in.workers()); err != nil {
		return err
	}
	in.eventsChecked = engine.SliceOf(in.Events)
	return nil
}

// errStopped is validateEvents' answer once it was stopped.
var errStopped = errors.New("drift: validation stopped")

// validateAgentID checks agent_id; an empty one that was sent is a string the contract
// refuses, not a missing member.
func validateAgentID(id string, sent sent) error {
	switch {
	case id == "" && sent&sentAgentID == 0:
		return engine.Invalid("", "agent_id", AgentIDExpected, "missing", "agent_id is required.")
	case !ValidAgentID(id):
		return engine.Invalid("", "agent_id", AgentIDExpected, "string", "agent_id %q is not valid: use 1 to 128 letters, digits, '.', '_', ':' or '-'.", id)
	}
	return nil
}

// validateWindow checks the window: within the years events may have, From before To, and
// not given with Events (it selects stored events in their place).
func (in *Input) validateWindow() error {
	w := in.Window
	if w == nil {
		return nil
	}
	const expected = "object ({from?, to?} RFC 3339, from before to)"
	switch {
	case in.Events != nil:
		return engine.Invalid("", "window", "absent when events are sent", "object", "window selects stored events; it cannot be combined with inline events.")
	case w.From != nil && (w.From.Before(EarliestTime) || !w.From.Before(LatestTime)):
		return engine.Invalid("", "window.from", expected+" (years 1900-2199)", "string", "window.from must lie in the years 1900 to 2199, as event timestamps do.")
	case w.To != nil && (w.To.Before(EarliestTime) || w.To.After(LatestTime)):
		return engine.Invalid("", "window.to", expected+" (years 1900-2200)", "string", "window.to must lie in the years 1900 to 2200, as event timestamps do.")
	case w.From != nil && w.To != nil && !w.From.Before(*w.To):
		return engine.Invalid("", "window.to", expected, "string", "window.to must be later than window.from (to is exclusive).")
	}
	return nil
}

// validateBaseline checks the baseline's form and, when the events are known, that it
// leaves events on both sides.
func (in *Input) validateBaseline() error {
	b := in.Baseline
	if b == nil {
		return nil
	}
	const expected = "object ({until: timestamp} or {fraction: 0.05-0.9})"
	switch {
	case b.Until != nil && b.Fraction != nil:
		return engine.Invalid("", "baseline", expected, "object", "baseline takes until or fraction, not both.")
	case b.Until == nil && b.Fraction == nil:
		return engine.Invalid("", "baseline", expected, "object", "baseline needs until or fraction; omit baseline for the default (the first 30 %% of events).")
	case b.Fraction != nil && !(*b.Fraction >= 0.05 && *b.Fraction <= 0.9):
		return engine.Invalid("", "baseline.fraction", "number (0.05-0.9)", "number", "baseline.fraction must be between 0.05 and 0.9 (it is %g).", *b.Fraction)
	case b.Until != nil && len(in.Events) > 0:
		before := 0
		for i := range in.Events {
			if in.Events[i].Timestamp.Before(*b.Until) {
				before++
			}
		}
		if before == 0 || before == len(in.Events) {
			return engine.Invalid("", "baseline.until", "string (a timestamp with events on both sides)", "string",
				"baseline.until leaves %d of the %d events in the baseline; both the baseline and the monitoring part need events.", before, len(in.Events))
		}
	}
	return nil
}

// Validate checks a batch of events sent ahead of analysis: the agent_id, 1–10,000 events,
// and every event, in document order.
func (b *EventBatch) Validate() error {
	if err := validateAgentID(b.AgentID, b.sent); err != nil {
		return err
	}
	const expected = "array (1-10000 events)"
	switch {
	case b.Events == nil:
		return engine.Invalid("", "events", expected, "missing", "events is required.")
	case len(b.Events) == 0 || len(b.Events) > MaxBatchEvents:
		return engine.Invalid("", "events", expected, "array", "events must hold 1 to %d events a call (it holds %d).", MaxBatchEvents, len(b.Events))
	}
	return ValidateEvents(b.Events)
}

// ValidateEvents checks events (the value of member "events") in document order: every
// member of every event against the contract, with paths such as events[3].timestamp.
func ValidateEvents(events []Event) error { return validateRange(events, 0, len(events), nil) }

// validateEventsOn validates events on up to workers goroutines, each over a range of them:
// the error it returns is the one of the first event that fails, as one goroutine finds it
// (each range stops at its own first failure, and the lowest range's counts).
func validateEventsOn(events []Event, stopped func() bool, workers int) error {
	workers = max(1, min(workers, len(events)/minEventsPerValidator))
	errs := make([]error, workers)
	parallel(workers, func(w int) {
		lo, hi := w*len(events)/workers, (w+1)*len(events)/workers
		errs[w] = validateRange(events, lo, hi, stopped)
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateRange validates events[lo:hi], with their indexes in events.
func validateRange(events []Event, lo, hi int, stopped func() bool) error {
	for i := lo; i < hi; i++ {
		if stopped != nil && stopped() {
			return errStopped
		}
		if err := events[i].validate(i); err != nil {
			return err
		}
	}
	return nil
}

func (ev *Event) validate(i int) error {
	// The path is built only for an error: this runs for every one of up to 100,000 events.
	at := func() string { return "events[" + strconv.Itoa(i) + "]" }
	if (ev.ID != "" || ev.sent&sentID != 0) && (ev.ID == "" || utf8.RuneCountInString(ev.ID) > maxEventIDChars) {
		return engine.Invalid("", at()+".id", "string (1-128 chars)", "string", "%s.id must be 1 to %d characters long.", at(), maxEventIDChars)
	}
	switch {
	case ev.Timestamp.IsZero() && ev.sent&sentTimestamp == 0:
		return engine.Invalid("", at()+".timestamp", timeExpectation, "missing", "%s.timestamp is required.", at())
	case ev.Timestamp.Before(EarliestTime) || !ev.Timestamp.Before(LatestTime):
		return engine.Invalid("", at()+".timestamp", timeExpectation+" (years 1900-2199)", "string", "%s.timestamp must lie in the years 1900 to 2199.", at())
	}
	if ev.Action == "" && ev.sent&sentAction == 0 {
		return engine.Invalid("", at()+".action", "string (1-64 chars)", "missing", "%s.action is required (for example \"purchase\").", at())
	}
	if n := utf8.RuneCountInString(ev.Action); n == 0 || n > maxActionChars {
		return engine.Invalid("", at()+".action", "string (1-64 chars)", "string", "%s.action must be 1 to %d characters long.", at(), maxActionChars)
	}
	if err := checkMagnitude(ev.PrincipalValue, at, "principal_value"); err != nil {
		return err
	}
	if err := checkMagnitude(ev.BestAlternativeValue, at, "best_alternative_value"); err != nil {
		return err
	}
	for j := range ev.Beneficiaries {
		b := &ev.Beneficiaries[j]
		bpath := func() string { return at() + ".beneficiaries[" + strconv.Itoa(j) + "]" }
		switch {
		case b.Party == "" && b.sent&sentParty == 0:
			return engine.Invalid("", bpath()+".party", "string", "missing", "%s.party is required.", bpath())
		case b.Party == "" || utf8.RuneCountInString(b.Party) > MaxPartyChars:
			return engine.Invalid("", bpath()+".party", fmt.Sprintf("string (1-%d chars)", MaxPartyChars), "string", "%s.party must be 1 to %d characters long.", bpath(), MaxPartyChars)
		case b.sent&sentDecoded != 0 && b.sent&sentValue == 0:
			return engine.Invalid("", bpath()+".value", "number (>= 0)", "missing", "%s.value is required.", bpath())
		case !(b.Value >= 0 && b.Value <= MaxMagnitude):
			return engine.Invalid("", bpath()+".value", "number (0 to 1e15)", "number", "%s.value must be between 0 and 1e15 (it is %g).", bpath(), b.Value)
		}
	}
	if (ev.InstructedBy != "" || ev.sent&sentInstructedBy != 0) && (ev.InstructedBy == "" || utf8.RuneCountInString(ev.InstructedBy) > MaxPartyChars) {
		return engine.Invalid("", at()+".instructed_by", fmt.Sprintf("string (1-%d chars)", MaxPartyChars), "string", "%s.instructed_by must be 1 to %d characters long.", at(), MaxPartyChars)
	}
	if ev.DelegationDepth != nil && *ev.DelegationDepth < 0 {
		return engine.Invalid("", at()+".delegation_depth", "integer (>= 0)", "number", "%s.delegation_depth must not be negative.", at())
	}
	if k := ev.Attributes.Kind(); len(ev.Attributes) > 0 && k != '{' && k != 'n' {
		return engine.Invalid("", at()+".attributes", "object", engine.KindName(k), "%s.attributes must be an object.", at())
	}
	return nil
}

func checkMagnitude(x *float64, at func() string, name string) error {
	if x != nil && !(math.Abs(*x) <= MaxMagnitude) {
		return engine.Invalid("", at()+"."+name, "number (between -1e15 and 1e15)", "number", "%s.%s is too large (at most 1e15 in size).", at(), name)
	}
	return nil
}

// ValidateWithoutEvents checks every member but the events, in the contract's order, for a
// caller that reads the events later (the API reads an agent's stored events once the rest
// of the request has passed).
func (in *Input) ValidateWithoutEvents() error {
	for _, name := range inputMembers {
		if name == "events" {
			continue
		}
		if err := in.ValidateMember(name); err != nil {
			return err
		}
	}
	return nil
}

// validateForAnalysis is the check of Analyze and Estimate: every member, the events unless
// Validate (or ValidateMember) already passed these very events. With a stopped function
// (Analyze's) it gives up with errStopped once that reports true.
func (in *Input) validateForAnalysis(stopped func() bool) error {
	for _, name := range inputMembers {
		var err error
		switch {
		case name != "events":
			err = in.ValidateMember(name)
		case len(in.Events) == 0 || in.eventsChecked != engine.SliceOf(in.Events):
			err = in.validateEvents(stopped)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
