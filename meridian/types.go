// Package meridian checks the quality of a data source from a sample of its data, from
// declared signals about it, or both: it runs Great-Expectations-style checks, scores the six
// quality dimensions, grades the source and says whether an agent should use it. It is a pure
// engine: a Dataset ingests JSON records or CSV as they stream in, Analyze turns a Request
// and a Dataset into a Result, and Generate produces scenarios with known truth.
package meridian

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

// MethodVersion identifies the method documented in docs/methods/meridian.md. meridian/2
// (from meridian/1): the denominator of mostly and unexpected_percent is the non-null values,
// as in Great Expectations 1.x; unexpected_percent_total and unexpected_percent_nonmissing;
// Great Expectations suites (expectation_suite) and the check types they need.
const MethodVersion = "meridian/2"

// MaxRows is the largest number of data rows a request may carry.
const MaxRows = 1_000_000

// MaxChecks is the largest number of checks a request may carry.
const MaxChecks = 100

// MaxColumns and MaxCells bound the width of the data: a JSON record may name new columns
// and a missing key still costs a cell, so without them a small body could claim gigabytes.
const (
	MaxColumns = 1_000
	MaxCells   = 50_000_000 // rows × columns
)

// Default policy thresholds (score points).
const (
	DefaultBlockBelow  = 40.0
	DefaultReviewBelow = 60.0
)

// Request is the body of POST /v1/meridian/quality-check. Optional members are pointers
// (nil when absent). A streaming caller leaves Data nil and feeds a Dataset instead.
type Request struct {
	SourceID string   `json:"source_id"`
	Data     *Data    `json:"data,omitempty"`
	Checks   []Check  `json:"checks,omitempty"`
	Signals  *Signals `json:"signals,omitempty"`
	Policy   *Policy  `json:"policy,omitempty"`
	// AsOf is an RFC 3339 timestamp, the "now" of freshness; nil means Now.
	AsOf *string `json:"as_of,omitempty"`
	// Profile asks for column profiles; nil means true.
	Profile *bool `json:"profile,omitempty"`
	// ExpectationSuite is a Great Expectations suite as GE writes it (1.x, or 0.x's
	// expectation_type), raw: its expectations run as checks after Checks (suite.go).
	ExpectationSuite jsontext.Value `json:"expectation_suite,omitzero"`

	// Now is the "now" of freshness when AsOf is absent (the engine reads no clock: the
	// caller gives it one). Not part of the body.
	Now time.Time `json:"-"`
	// Dataset holds the data when a streaming caller fed it (NewDataset, then ReadCSV or
	// ReadRecords) instead of sending Data. Not part of the body.
	Dataset *Dataset `json:"-"`
	// Budget is the CPU time Analyze accepts to spend, as estimated by Estimate before the
	// work starts; work above it is refused with WORK_LIMIT_EXCEEDED. Zero means
	// engine.DefaultSyncBudget (5 s), the API's limit. Not part of the body.
	Budget time.Duration `json:"-"`
	// Workers is the most goroutines Analyze may run at once (the request's admitted
	// concurrency): it reads inline CSV, runs the checks and profiles the columns on up to
	// that many. 0 means runtime.GOMAXPROCS. The result is the same for any number. Not
	// part of the body.
	Workers int `json:"-"`

	// plan is what Validate compiled, so that Analyze does not compile the request twice.
	plan engine.Compiled[requestKey, plan]
}

// Data is a sample of the source: JSON records or CSV text, not both.
type Data struct {
	// Records is the raw JSON array of record objects ({column: value}); nil or JSON null
	// when absent.
	Records jsontext.Value `json:"records,omitzero"`
	// CSV is RFC 4180 text with a header row.
	CSV *string `json:"csv,omitempty"`
	// Delimiter is one character; nil means ",".
	Delimiter *string `json:"delimiter,omitempty"`
}

// Check is one requested check. Type selects which of the other members apply; a member
// that does not apply to the type is an error.
type Check struct {
	ID       *string  `json:"id,omitempty"`
	Type     string   `json:"type"`
	Mostly   *float64 `json:"mostly,omitempty"`
	Severity *string  `json:"severity,omitempty"`

	Column    *string          `json:"column,omitempty"`
	Columns   []string         `json:"columns,omitempty"`
	Expected  *string          `json:"expected,omitempty"`
	Min       *float64         `json:"min,omitempty"`
	Max       *float64         `json:"max,omitempty"`
	Strict    *bool            `json:"strict,omitempty"`
	Values    []jsontext.Value `json:"values,omitempty"`
	Pattern   *string          `json:"pattern,omitempty"`
	Operator  *string          `json:"operator,omitempty"`
	Other     *string          `json:"other,omitempty"`
	Method    *string          `json:"method,omitempty"`
	Threshold *float64         `json:"threshold,omitempty"`
	MaxAge    *string          `json:"max_age,omitempty"`
	Statistic *string          `json:"statistic,omitempty"`

	// Parameters of meridian/2 (the forms Great Expectations suites need).
	StrictMin   *bool    `json:"strict_min,omitempty"`
	StrictMax   *bool    `json:"strict_max,omitempty"`
	Patterns    []string `json:"patterns,omitempty"`
	MatchOn     *string  `json:"match_on,omitempty"`
	Exact       *bool    `json:"exact,omitempty"`
	IgnoreRowIf *string  `json:"ignore_row_if,omitempty"`
}

// Signals is declared evidence about the source.
type Signals struct {
	ErrorRate *float64 `json:"error_rate,omitempty"`
	// LastUpdated is an RFC 3339 timestamp or a YYYY-MM-DD date.
	LastUpdated *string `json:"last_updated,omitempty"`
	// ExpectedUpdateInterval is a duration such as "24h" or "7d".
	ExpectedUpdateInterval *string  `json:"expected_update_interval,omitempty"`
	Completeness           *float64 `json:"completeness,omitempty"`
}

// Policy holds the gating thresholds on the 0–100 score; nil members take the defaults.
type Policy struct {
	BlockBelow  *float64 `json:"block_below,omitempty"`
	ReviewBelow *float64 `json:"review_below,omitempty"`
}

// Tiers and gating decisions.
const (
	TierPlatinum = "platinum"
	TierGold     = "gold"
	TierSilver   = "silver"
	TierBronze   = "bronze"
	TierUnrated  = "unrated"

	GatingAllow  = "allow"
	GatingReview = "review"
	GatingBlock  = "block"
)

// Result is the quality-check object minus the fields the HTTP layer adds (id, object,
// livemode, created_at).
type Result struct {
	SourceID string `json:"source_id"`
	// Score is 0–100, nil when no dimension is measured.
	Score      *float64      `json:"score"`
	Tier       string        `json:"tier"`
	Passed     bool          `json:"passed"`
	Gating     string        `json:"gating"`
	Dimensions Dimensions    `json:"dimensions"`
	Checks     []CheckResult `json:"checks"`
	Statistics Statistics    `json:"statistics"`
	// Profile is nil when profiling was turned off or there is no data.
	Profile       *Profile `json:"profile"`
	MethodVersion string   `json:"method_version"`
}

// DimensionScore is one measured dimension, 0–1.
type DimensionScore struct {
	Score float64 `json:"score"`
}

// Dimensions holds one entry per quality dimension; nil when nothing measures it.
type Dimensions struct {
	Completeness *DimensionScore `json:"completeness"`
	Validity     *DimensionScore `json:"validity"`
	Uniqueness   *DimensionScore `json:"uniqueness"`
	Consistency  *DimensionScore `json:"consistency"`
	Timeliness   *DimensionScore `json:"timeliness"`
	Accuracy     *DimensionScore `json:"accuracy"`
}

// CheckResult is the outcome of one check, in the conventions of Great Expectations 1.x.
type CheckResult struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Column   *string  `json:"column"`
	Columns  []string `json:"columns,omitempty"`
	Severity string   `json:"severity"`
	Success  bool     `json:"success"`
	// ElementCount is the number of rows.
	ElementCount int `json:"element_count"`
	// MissingCount is nil when a column of the check does not exist.
	MissingCount *int `json:"missing_count"`
	// UnexpectedCount is nil for aggregate checks and for missing columns.
	// UnexpectedPercent is 0–100 of the non-null values (ElementCount − MissingCount; of
	// ElementCount for not_null and null), as in Great Expectations 1.x, and
	// UnexpectedPercentNonmissing the same; UnexpectedPercentTotal is 0–100 of ElementCount.
	// Each is nil when its UnexpectedCount is, or when its denominator is 0.
	UnexpectedCount             *int     `json:"unexpected_count"`
	UnexpectedPercent           *float64 `json:"unexpected_percent"`
	UnexpectedPercentTotal      *float64 `json:"unexpected_percent_total"`
	UnexpectedPercentNonmissing *float64 `json:"unexpected_percent_nonmissing"`
	// PartialUnexpectedList holds the first 20 unexpected values in row order (nil entries
	// are nulls); PartialUnexpectedIndexList their 0-based row numbers.
	PartialUnexpectedList      []any `json:"partial_unexpected_list"`
	PartialUnexpectedIndexList []int `json:"partial_unexpected_index_list"`
	// ObservedValue is the measured quantity of an aggregate check; nil for row checks.
	ObservedValue any            `json:"observed_value"`
	Details       map[string]any `json:"details"`
	// ExpectationType, Kwargs and Meta are set on the checks of an expectation suite: the
	// expectation's type (as sent, under either key), its kwargs as sent and its meta ({}
	// when absent).
	ExpectationType string         `json:"expectation_type,omitempty"`
	Kwargs          jsontext.Value `json:"kwargs,omitzero"`
	Meta            jsontext.Value `json:"meta,omitzero"`
}

// Statistics counts the check outcomes.
type Statistics struct {
	EvaluatedChecks    int      `json:"evaluated_checks"`
	SuccessfulChecks   int      `json:"successful_checks"`
	UnsuccessfulChecks int      `json:"unsuccessful_checks"`
	SuccessPercent     *float64 `json:"success_percent"`
}

// Profile describes every column of the data.
type Profile struct {
	RowCount int             `json:"row_count"`
	Columns  []ColumnProfile `json:"columns"`
}

// ColumnProfile summarises one column. Numeric statistics are nil unless the inferred type
// is integer or number; lengths are nil unless it is string or timestamp.
type ColumnProfile struct {
	Name string `json:"name"`
	// InferredType is the narrowest of boolean, integer, number, timestamp, string that every
	// non-null value satisfies; for JSON records where none does, "object" or "array" when
	// every value is one, else "mixed"; nil when every value is null.
	InferredType  *string    `json:"inferred_type"`
	NullCount     int        `json:"null_count"`
	NullPercent   *float64   `json:"null_percent"`
	DistinctCount int        `json:"distinct_count"`
	Min           *float64   `json:"min"`
	Max           *float64   `json:"max"`
	Mean          *float64   `json:"mean"`
	Stddev        *float64   `json:"stddev"`
	P05           *float64   `json:"p05"`
	P50           *float64   `json:"p50"`
	P95           *float64   `json:"p95"`
	MinLength     *int       `json:"min_length"`
	MaxLength     *int       `json:"max_length"`
	TopValues     []TopValue `json:"top_values"`
}

// TopValue is one frequent value of a column: a string for CSV; for JSON records the value
// in its JSON type.
type TopValue struct {
	Value any `json:"value"`
	Count int `json:"count"`
}
