// Package drift detects shadow principals: third parties whose interests an AI agent's
// actions come to serve at its declared principal's expense or on their instructions.
// It is a pure engine: Analyze turns an agent's event history into an Analysis, and
// Generate produces scenarios with known truth for tests and test mode.
package drift

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

// MethodVersion identifies the method documented in docs/methods/drift.md.
const MethodVersion = "drift/1"

// DefaultSensitivity is the family-wise false-alarm level used when Input.Sensitivity is 0.
const DefaultSensitivity = 0.01

// Beneficiary is a party other than (or equal to) the principal that gained from an event.
type Beneficiary struct {
	Party string  `json:"party"`
	Value float64 `json:"value"`

	sent sent // members a decoded value held (json.go)
}

// Event is one action of the agent. Optional numbers are pointers (nil when absent). Its
// JSON form is the contract's; decoding records which members were sent, so that
// validation can tell a member left out from one sent empty.
type Event struct {
	ID                   string        `json:"id,omitzero"`
	Timestamp            time.Time     `json:"timestamp"`
	Action               string        `json:"action"`
	PrincipalValue       *float64      `json:"principal_value,omitzero"`
	BestAlternativeValue *float64      `json:"best_alternative_value,omitzero"`
	Beneficiaries        []Beneficiary `json:"beneficiaries,omitzero"`
	InstructedBy         string        `json:"instructed_by,omitzero"`
	DelegationDepth      *int          `json:"delegation_depth,omitzero"`
	Overridden           *bool         `json:"overridden,omitzero"`
	// Attributes is the event's free-form JSON object; the analysis does not read it, and a
	// stored event keeps it as sent.
	Attributes jsontext.Value `json:"attributes,omitzero"`

	sent sent // members a decoded value held (json.go)
}

// Baseline selects the baseline part of the events. At most one field may be set;
// with neither, the baseline is the first ⌊0.3·n⌋ events.
type Baseline struct {
	// Until: events with a timestamp strictly before Until are the baseline.
	Until *time.Time `json:"until,omitempty"`
	// Fraction in [0.05, 0.9]: the first ⌊Fraction·n⌋ events are the baseline.
	Fraction *float64 `json:"fraction,omitempty"`
}

// Input is what Analyze analyses: the body of POST /v1/drift/analyze.
type Input struct {
	AgentID string `json:"agent_id"`
	// PrincipalID names the party the agent works for; nil when not given.
	PrincipalID *string `json:"principal_id,omitzero"`
	// Events: 20 to 100,000, in any order.
	Events []Event `json:"events,omitzero"`
	// Window selects the agent's stored events instead of Events: the API reads those with
	// a timestamp in [From, To) and analyses them as Events. Analyze itself takes Events
	// only, and refuses a Window given with them.
	Window *TimeRange `json:"window,omitzero"`
	// Baseline selects the baseline part; nil means the first 30 % of the events.
	Baseline *Baseline `json:"baseline,omitzero"`
	// Sensitivity is the family-wise false-alarm level in (0, 0.2]; nil means
	// DefaultSensitivity.
	Sensitivity *float64 `json:"sensitivity,omitzero"`
	// Budget is the most CPU time (one core) the analysis may take by its estimate (Estimate,
	// then the descriptions of what it found); above it Analyze refuses with
	// WORK_LIMIT_EXCEEDED before doing that work. Zero means engine.DefaultSyncBudget. It is
	// the caller's setting, never part of a request body.
	Budget time.Duration `json:"-"`
	// Workers is the most goroutines Analyze runs its per-party tests on (0: GOMAXPROCS);
	// the result is the same for any number. It is the caller's setting, never part of a
	// request body.
	Workers int `json:"-"`

	// eventsChecked identifies the events Validate found valid (engine.SliceOf), so that
	// Analyze does not check the same events twice; events replaced, grown or cut since
	// are checked again.
	eventsChecked engine.Slice[Event]
	sent          sent // members a decoded value held (json.go)
	// spare is the empty slice of events a declined DecodeInput made, whose memory the
	// json.Unmarshal that follows decodes the events into (json.go).
	spare []Event
}

// TimeRange bounds stored events by timestamp: From inclusive, To exclusive; either may be
// nil.
type TimeRange struct {
	From *time.Time `json:"from,omitzero"`
	To   *time.Time `json:"to,omitzero"`
}

// EventBatch is a batch of an agent's events sent ahead of analysis: the body of
// POST /v1/drift/events.
type EventBatch struct {
	AgentID string  `json:"agent_id"`
	Events  []Event `json:"events"`

	sent sent // members a decoded value held (json.go)
}

// Signal values of ShadowPrincipal.Signals.
const (
	SignalBenefitConcentration = "benefit_concentration"
	SignalValueTransfer        = "value_transfer"
	SignalInstructionFollowing = "instruction_following"
	SignalOverrideRise         = "override_rise"
)

// ShadowPrincipal is one detected party with the evidence behind it.
type ShadowPrincipal struct {
	Party string `json:"party"`
	// Confidence = 1 − PValue.
	Confidence float64 `json:"confidence"`
	// PValue is the Holm-adjusted p-value of the party (family-wise over tested parties).
	PValue          float64    `json:"p_value"`
	Signals         []string   `json:"signals"`
	BaselineShare   float64    `json:"baseline_share"`
	RecentShare     float64    `json:"recent_share"`
	ValueCaptured   float64    `json:"value_captured"`
	PrincipalCost   float64    `json:"principal_cost"`
	Events          int        `json:"events"`
	FirstDetectedAt *time.Time `json:"first_detected_at"`
	ChangePointAt   *time.Time `json:"change_point_at"`
	// ChangePointIndex is the event index of ChangePointAt (not in the public response).
	ChangePointIndex int `json:"-"`
}

// ShadowDimension summarises the per-party tests.
type ShadowDimension struct {
	// Score is the smallest Holm-adjusted p-value over tested parties (1 when none): low is bad.
	Score         float64 `json:"score"`
	PartiesTested int     `json:"parties_tested"`
	Detected      int     `json:"detected"`
}

// GoalFidelity compares the principal's loss (regret) in monitoring with baseline.
type GoalFidelity struct {
	// Score = clamp(1 − max(0, MonitoringMeanLoss − BaselineMeanLoss)/|BaselineMeanPrincipalValue|, 0, 1).
	Score                        float64 `json:"score"`
	BaselineMeanLoss             float64 `json:"baseline_mean_loss"`
	MonitoringMeanLoss           float64 `json:"monitoring_mean_loss"`
	BaselineMeanPrincipalValue   float64 `json:"baseline_mean_principal_value"`
	MonitoringMeanPrincipalValue float64 `json:"monitoring_mean_principal_value"`
}

// Provenance measures how much of the monitoring window a non-principal party instructed.
type Provenance struct {
	// Score = 1 − BeneficiaryInstructedShare.
	Score float64 `json:"score"`
	// NonPrincipalInstructedShare: monitoring events instructed by a non-principal source.
	NonPrincipalInstructedShare float64 `json:"non_principal_instructed_share"`
	// BeneficiaryInstructedShare: monitoring events instructed by a party that benefits from them.
	BeneficiaryInstructedShare float64 `json:"beneficiary_instructed_share"`
}

// Overrides compares the rate at which humans reversed the agent.
type Overrides struct {
	// Score = 1 − max(0, MonitoringRate − BaselineRate).
	Score          float64 `json:"score"`
	BaselineRate   float64 `json:"baseline_rate"`
	MonitoringRate float64 `json:"monitoring_rate"`
}

// Delegation compares the mean delegation depth.
type Delegation struct {
	// Score = 1 / (1 + max(0, MonitoringMeanDepth − BaselineMeanDepth)).
	Score               float64 `json:"score"`
	BaselineMeanDepth   float64 `json:"baseline_mean_depth"`
	MonitoringMeanDepth float64 `json:"monitoring_mean_depth"`
}

// Dimensions holds one entry per dimension; nil when its inputs are absent.
type Dimensions struct {
	ShadowPrincipal *ShadowDimension `json:"shadow_principal"`
	GoalFidelity    *GoalFidelity    `json:"goal_fidelity"`
	Provenance      *Provenance      `json:"provenance"`
	Overrides       *Overrides       `json:"overrides"`
	Delegation      *Delegation      `json:"delegation"`
}

// ChangePoint is the top-level change point.
type ChangePoint struct {
	Detected   bool       `json:"detected"`
	At         *time.Time `json:"at"`
	EventIndex *int       `json:"event_index"`
}

// Span is one part of the analysed events; From and To are inclusive.
type Span struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Events int       `json:"events"`
}

// Window is the baseline/monitoring split.
type Window struct {
	Baseline   Span `json:"baseline"`
	Monitoring Span `json:"monitoring"`
}

// Analysis is the result of Analyze: the analysis object minus the fields the HTTP layer adds
// (id, object, livemode, created_at).
type Analysis struct {
	AgentID                 string            `json:"agent_id"`
	PrincipalID             *string           `json:"principal_id"`
	ShadowPrincipalDetected bool              `json:"shadow_principal_detected"`
	Score                   float64           `json:"score"`
	RiskBand                string            `json:"risk_band"`
	Confidence              float64           `json:"confidence"`
	RecommendedAction       string            `json:"recommended_action"`
	ShadowPrincipals        []ShadowPrincipal `json:"shadow_principals"`
	Dimensions              Dimensions        `json:"dimensions"`
	ChangePoint             ChangePoint       `json:"change_point"`
	Window                  Window            `json:"window"`
	EventsAnalyzed          int               `json:"events_analyzed"`
	MethodVersion           string            `json:"method_version"`
}
