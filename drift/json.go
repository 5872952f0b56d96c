package drift

import (
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// sent records which members a decoded Input, EventBatch, Event or Beneficiary held, so that validation tells
// a member left out ("missing") from one sent with its zero value ("string": an empty
// string is a string the contract refuses). Values built in Go hold no bits: a zero value
// counts as missing where zero is not allowed, and as given where it is.
type sent uint8

const (
	sentDecoded sent = 1 << iota
	sentID
	sentTimestamp
	sentAction
	sentInstructedBy
	sentParty
	sentValue
	sentAgentID
)

// take copies a member that was sent (src not nil) into dst and records it in s.
func take[T any](dst, src *T, s *sent, member sent) {
	if src != nil {
		*dst = *src
		*s |= member
	}
}

// eventJSON is an Event as JSON carries it, with a pointer for every member whose absence
// validation must see.
type eventJSON struct {
	ID                   *string        `json:"id,omitzero"`
	Timestamp            *time.Time     `json:"timestamp,omitzero"`
	Action               *string        `json:"action,omitzero"`
	PrincipalValue       *float64       `json:"principal_value,omitzero"`
	BestAlternativeValue *float64       `json:"best_alternative_value,omitzero"`
	Beneficiaries        []Beneficiary  `json:"beneficiaries,omitzero"`
	InstructedBy         *string        `json:"instructed_by,omitzero"`
	DelegationDepth      *int           `json:"delegation_depth,omitzero"`
	Overridden           *bool          `json:"overridden,omitzero"`
	Attributes           jsontext.Value `json:"attributes,omitzero"`
}

// UnmarshalJSONFrom decodes an event and records which members it held (see sent).
// Unknown members and wrong types are reported with their paths as for any other value.
func (e *Event) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w eventJSON
	if err := json.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*e = Event{
		PrincipalValue: w.PrincipalValue, BestAlternativeValue: w.BestAlternativeValue,
		Beneficiaries: w.Beneficiaries, DelegationDepth: w.DelegationDepth, Overridden: w.Overridden,
		Attributes: w.Attributes, sent: sentDecoded,
	}
	take(&e.ID, w.ID, &e.sent, sentID)
	take(&e.Timestamp, w.Timestamp, &e.sent, sentTimestamp)
	take(&e.Action, w.Action, &e.sent, sentAction)
	take(&e.InstructedBy, w.InstructedBy, &e.sent, sentInstructedBy)
	return nil
}

// beneficiaryJSON is a Beneficiary as JSON carries it.
type beneficiaryJSON struct {
	Party *string  `json:"party"`
	Value *float64 `json:"value"`
}

// UnmarshalJSONFrom decodes a beneficiary and records which members it held (see sent).
func (b *Beneficiary) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w beneficiaryJSON
	if err := json.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*b = Beneficiary{sent: sentDecoded}
	take(&b.Party, w.Party, &b.sent, sentParty)
	take(&b.Value, w.Value, &b.sent, sentValue)
	return nil
}

// inputJSON is an Input as JSON carries it.
type inputJSON struct {
	AgentID     *string    `json:"agent_id"`
	PrincipalID *string    `json:"principal_id"`
	Events      []Event    `json:"events"`
	Window      *TimeRange `json:"window"`
	Baseline    *Baseline  `json:"baseline"`
	Sensitivity *float64   `json:"sensitivity"`
}

// UnmarshalJSONFrom decodes an input and records whether agent_id was sent (see sent).
func (in *Input) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	// The events are decoded into the memory of in.spare when there is some: the JSON
	// package reuses a slice's capacity. Still empty with that memory afterwards, the slice
	// was not in the JSON (an empty array is a slice without capacity).
	w := inputJSON{Events: in.spare}
	if err := json.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	if len(w.Events) == 0 && cap(w.Events) > 0 && cap(in.spare) > 0 && &w.Events[:1][0] == &in.spare[:1][0] {
		w.Events = nil
	}
	*in = Input{PrincipalID: w.PrincipalID, Events: w.Events, Window: w.Window, Baseline: w.Baseline,
		Sensitivity: w.Sensitivity, sent: sentDecoded}
	take(&in.AgentID, w.AgentID, &in.sent, sentAgentID)
	return nil
}

// eventBatchJSON is an EventBatch as JSON carries it.
type eventBatchJSON struct {
	AgentID *string `json:"agent_id"`
	Events  []Event `json:"events"`
}

// UnmarshalJSONFrom decodes a batch and records whether agent_id was sent (see sent).
func (b *EventBatch) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w eventBatchJSON
	if err := json.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*b = EventBatch{Events: w.Events, sent: sentDecoded}
	take(&b.AgentID, w.AgentID, &b.sent, sentAgentID)
	return nil
}
