package meridian

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

// TestInvalidRequests: every contract violation is an *engine.InputError with the contract's code,
// the JSON path of the offending value and a message that says what to do.
func TestInvalidRequests(t *testing.T) {
	const data = `"data": {"csv": "a,b\n1,2\n"}`
	cases := []struct {
		name, body      string
		code, field     string
		received        string
		messageContains string
	}{
		{"source_id missing", `{` + data + `}`, "INVALID_SOURCE_ID", "source_id", "missing", "required"},
		{"source_id charset", `{"source_id": "a b", ` + data + `}`, "INVALID_SOURCE_ID", "source_id", "string", ""},
		{"source_id too long", `{"source_id": "` + strings.Repeat("a", 129) + `", ` + data + `}`, "INVALID_SOURCE_ID", "source_id", "string", ""},
		{"no data, no signals", `{"source_id": "s"}`, "INVALID_DATA", "data", "missing", "data"},
		{"checks without data", `{"source_id": "s", "signals": {"error_rate": 0.1}, "checks": [{"type": "not_null", "column": "a"}]}`, "INVALID_DATA", "data", "missing", "checks need data"},
		{"records and csv", `{"source_id": "s", "data": {"records": [], "csv": "a\n"}}`, "INVALID_DATA", "data", "object", "not both"},
		{"empty data", `{"source_id": "s", "data": {}}`, "INVALID_DATA", "data.records", "missing", ""},
		{"records not an array", `{"source_id": "s", "data": {"records": {"a": 1}}}`, "INVALID_DATA", "data.records", "object", ""},
		{"record not an object", `{"source_id": "s", "data": {"records": [{"a": 1}, 7]}}`, "INVALID_DATA", "data.records[1]", "number", ""},
		{"number out of range", `{"source_id": "s", "data": {"records": [{"a": 1e400}]}}`, "INVALID_DATA", "data.records[0].a", "number", "64-bit"},
		{"delimiter two characters", `{"source_id": "s", "data": {"csv": "a\n", "delimiter": ";;"}}`, "INVALID_DATA", "data.delimiter", "string", "one character"},
		{"delimiter quote", `{"source_id": "s", "data": {"csv": "a\n", "delimiter": "\""}}`, "INVALID_DATA", "data.delimiter", "string", ""},
		{"delimiter with records", `{"source_id": "s", "data": {"records": [], "delimiter": ";"}}`, "INVALID_DATA", "data.delimiter", "string", ""},
		{"csv without header", `{"source_id": "s", "data": {"csv": ""}}`, "INVALID_DATA", "data.csv", "string", "line 1"},
		{"ragged row", `{"source_id": "s", "data": {"csv": "a,b\n1,2\n3\n4,5\n"}}`, "INVALID_DATA", "data.csv", "string", "line 3"},
		{"ragged row after a quoted line break", `{"source_id": "s", "data": {"csv": "a,b\n\"x\ny\",2\n1,2,3\n"}}`, "INVALID_DATA", "data.csv", "string", "line 4"},
		{"bare quote", `{"source_id": "s", "data": {"csv": "a,b\n1,2\n3,x\"y\n"}}`, "INVALID_DATA", "data.csv", "string", "line 3"},
		{"duplicate header", `{"source_id": "s", "data": {"csv": "a,a\n1,2\n"}}`, "INVALID_DATA", "data.csv", "string", "line 1"},
		{"unknown check type", `{"source_id": "s", ` + data + `, "checks": [{"type": "not_null", "column": "a"}, {"type": "is_null", "column": "a"}]}`, "INVALID_CHECKS", "checks[1].type", "string", "not_null, unique, compound_unique, type, between"},
		{"type missing", `{"source_id": "s", ` + data + `, "checks": [{"column": "a"}]}`, "INVALID_CHECKS", "checks[0].type", "missing", ""},
		{"column missing", `{"source_id": "s", ` + data + `, "checks": [{"type": "not_null", "column": "a"}, {"type": "unique", "column": "a"}, {"type": "unique"}]}`, "INVALID_CHECKS", "checks[2].column", "missing", ""},
		{"parameter of another type", `{"source_id": "s", ` + data + `, "checks": [{"type": "not_null", "column": "a", "pattern": "x"}]}`, "INVALID_CHECKS", "checks[0].pattern", "value", "not a parameter of not_null"},
		{"duplicate id", `{"source_id": "s", ` + data + `, "checks": [{"id": "x", "type": "not_null", "column": "a"}, {"id": "x", "type": "unique", "column": "a"}]}`, "INVALID_CHECKS", "checks[1].id", "string", "checks[0]"},
		{"duplicate generated id", `{"source_id": "s", ` + data + `, "checks": [{"id": "check_1", "type": "not_null", "column": "a"}, {"type": "unique", "column": "a"}]}`, "INVALID_CHECKS", "checks[1].id", "missing", ""},
		{"mostly above 1", `{"source_id": "s", ` + data + `, "checks": [{"type": "not_null", "column": "a", "mostly": 1.5}]}`, "INVALID_CHECKS", "checks[0].mostly", "number", ""},
		{"severity", `{"source_id": "s", ` + data + `, "checks": [{"type": "not_null", "column": "a", "severity": "fatal"}]}`, "INVALID_CHECKS", "checks[0].severity", "string", ""},
		{"expected type", `{"source_id": "s", ` + data + `, "checks": [{"type": "type", "column": "a", "expected": "float"}]}`, "INVALID_CHECKS", "checks[0].expected", "string", "integer"},
		{"min above max", `{"source_id": "s", ` + data + `, "checks": [{"type": "between", "column": "a", "min": 5, "max": 1}]}`, "INVALID_CHECKS", "checks[0].max", "number", ""},
		{"fractional length", `{"source_id": "s", ` + data + `, "checks": [{"type": "length_between", "column": "a", "min": 1.5}]}`, "INVALID_CHECKS", "checks[0].min", "number", ""},
		{"negative row count", `{"source_id": "s", ` + data + `, "checks": [{"type": "row_count_between", "min": -1}]}`, "INVALID_CHECKS", "checks[0].min", "number", ""},
		{"in_set without values", `{"source_id": "s", ` + data + `, "checks": [{"type": "in_set", "column": "a"}]}`, "INVALID_CHECKS", "checks[0].values", "missing", ""},
		{"bad regex", `{"source_id": "s", ` + data + `, "checks": [{"type": "regex", "column": "a", "pattern": "(a"}]}`, "INVALID_CHECKS", "checks[0].pattern", "string", "RE2"},
		{"lookaround is not RE2", `{"source_id": "s", ` + data + `, "checks": [{"type": "regex", "column": "a", "pattern": "a(?=b)"}]}`, "INVALID_CHECKS", "checks[0].pattern", "string", ""},
		{"operator", `{"source_id": "s", ` + data + `, "checks": [{"type": "column_comparison", "column": "a", "operator": "=", "other": "b"}]}`, "INVALID_CHECKS", "checks[0].operator", "string", ""},
		{"other missing", `{"source_id": "s", ` + data + `, "checks": [{"type": "column_comparison", "column": "a", "operator": "<"}]}`, "INVALID_CHECKS", "checks[0].other", "missing", ""},
		{"outlier method", `{"source_id": "s", ` + data + `, "checks": [{"type": "outliers", "column": "a", "method": "zscore"}]}`, "INVALID_CHECKS", "checks[0].method", "string", ""},
		{"outlier threshold", `{"source_id": "s", ` + data + `, "checks": [{"type": "outliers", "column": "a", "method": "mad", "threshold": 0}]}`, "INVALID_CHECKS", "checks[0].threshold", "number", ""},
		{"max_age unit", `{"source_id": "s", ` + data + `, "checks": [{"type": "freshness", "column": "a", "max_age": "7w"}]}`, "INVALID_CHECKS", "checks[0].max_age", "string", "7d"},
		{"max_age negative", `{"source_id": "s", ` + data + `, "checks": [{"type": "freshness", "column": "a", "max_age": "-1h"}]}`, "INVALID_CHECKS", "checks[0].max_age", "string", ""},
		{"statistic", `{"source_id": "s", ` + data + `, "checks": [{"type": "statistic_between", "column": "a", "statistic": "mode"}]}`, "INVALID_CHECKS", "checks[0].statistic", "string", ""},
		{"compound_unique columns empty", `{"source_id": "s", ` + data + `, "checks": [{"type": "compound_unique", "columns": []}]}`, "INVALID_CHECKS", "checks[0].columns", "array", ""},
		{"compound_unique column twice", `{"source_id": "s", ` + data + `, "checks": [{"type": "compound_unique", "columns": ["a", "a"]}]}`, "INVALID_CHECKS", "checks[0].columns[1]", "string", ""},
		{"error_rate", `{"source_id": "s", "signals": {"error_rate": 2}}`, "INVALID_SIGNALS", "signals.error_rate", "number", ""},
		{"completeness", `{"source_id": "s", "signals": {"completeness": -0.1}}`, "INVALID_SIGNALS", "signals.completeness", "number", ""},
		{"last_updated", `{"source_id": "s", "signals": {"last_updated": "yesterday", "expected_update_interval": "1d"}}`, "INVALID_SIGNALS", "signals.last_updated", "string", "RFC 3339"},
		{"interval", `{"source_id": "s", "signals": {"last_updated": "2026-01-01", "expected_update_interval": "daily"}}`, "INVALID_SIGNALS", "signals.expected_update_interval", "string", ""},
		{"last_updated alone", `{"source_id": "s", "signals": {"last_updated": "2026-01-01"}}`, "INVALID_SIGNALS", "signals.expected_update_interval", "missing", ""},
		{"interval alone", `{"source_id": "s", "signals": {"expected_update_interval": "1d"}}`, "INVALID_SIGNALS", "signals.last_updated", "missing", ""},
		{"policy", `{"source_id": "s", ` + data + `, "policy": {"block_below": 120}}`, "INVALID_POLICY", "policy.block_below", "number", ""},
		{"as_of", `{"source_id": "s", ` + data + `, "as_of": "2026-01-01 10:00"}`, "INVALID_AS_OF", "as_of", "string", ""},
		{"as_of lower-case t", `{"source_id": "s", ` + data + `, "as_of": "2026-01-01t10:00:00Z"}`, "INVALID_AS_OF", "as_of", "string", ""},
	}
	for _, tc := range cases {
		var req Request
		if err := json.Unmarshal([]byte(tc.body), &req, json.RejectUnknownMembers(true)); err != nil {
			t.Fatalf("%s: body does not decode: %v", tc.name, err)
		}
		_, err := analyzeAt(req, time.Now())
		var ie *engine.InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: error %v, want *engine.InputError", tc.name, err)
			continue
		}
		if ie.Code != tc.code || ie.Field != tc.field || ie.Received != tc.received || ie.Expected == "" || !strings.Contains(ie.Message, tc.messageContains) {
			t.Errorf("%s: got %s %s received=%q expected=%q %q, want %s %s received=%q containing %q", tc.name, ie.Code, ie.Field, ie.Received, ie.Expected, ie.Message, tc.code, tc.field, tc.received, tc.messageContains)
		}
	}
}

func TestValidateMember(t *testing.T) {
	req := Request{SourceID: "ok", Checks: []Check{{Type: "bogus"}}, Policy: &Policy{ReviewBelow: ptrOf(-1.0)}}
	var ie *engine.InputError
	if err := req.ValidateMember("source_id"); err != nil {
		t.Errorf("source_id: %v", err)
	}
	if err := req.ValidateMember("checks"); !errors.As(err, &ie) || ie.Field != "checks[0].type" {
		t.Errorf("checks: %v", err)
	}
	if err := req.ValidateMember("policy"); !errors.As(err, &ie) || ie.Field != "policy.review_below" {
		t.Errorf("policy: %v", err)
	}
	if err := req.ValidateMember("as_of"); err != nil {
		t.Errorf("absent as_of: %v", err)
	}
	if err := req.Validate(); !errors.As(err, &ie) || ie.Field != "checks[0].type" {
		t.Errorf("Validate: first failure in contract order, got %v", err)
	}
}

func TestTooManyChecks(t *testing.T) {
	csv := "a\n1\n"
	req := Request{SourceID: "s", Data: &Data{CSV: &csv}}
	for i := 0; i <= MaxChecks; i++ {
		req.Checks = append(req.Checks, Check{Type: CheckNotNull, Column: ptrOf("a")})
	}
	var ie *engine.InputError
	if _, err := analyzeAt(req, time.Now()); !errors.As(err, &ie) || ie.Code != "INVALID_CHECKS" || ie.Field != "checks" {
		t.Fatalf("got %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	ok := map[string]time.Duration{
		"36h": 36 * time.Hour, "7d": 7 * 24 * time.Hour, "90m": 90 * time.Minute, "1d12h": 36 * time.Hour,
		"1.5h": 90 * time.Minute, "0.5d": 12 * time.Hour, "250ms": 250 * time.Millisecond, "1h30m15s": time.Hour + 30*time.Minute + 15*time.Second,
	}
	for s, want := range ok {
		if got, err := parseDuration(s); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "d", "7", "7w", "-1h", "+1h", "1h-", "1..5h", "h1", "1e3h"} {
		if d, err := parseDuration(s); err == nil {
			t.Errorf("%q: accepted as %v", s, d)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	ok := map[string]time.Time{
		"2026-03-01":                          time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		"2024-02-29":                          time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		"2026-03-01T10:00:00Z":                time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		"2026-03-01T10:00:00.5+02:00":         time.Date(2026, 3, 1, 8, 0, 0, 5e8, time.UTC),
		"2026-03-01T10:00:00.123456789-05:30": time.Date(2026, 3, 1, 15, 30, 0, 123456789, time.UTC),
		"1969-12-31T23:59:59Z":                time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		"0001-01-01T00:00:00Z":                time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		"9999-12-31T23:59:59Z":                time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	}
	for s, want := range ok {
		got, okp := parseTimestamp(s)
		if !okp || got != instantOf(want) {
			t.Errorf("%q: %v %v, want %v", s, got, okp, instantOf(want))
		}
	}
	for _, s := range []string{"2026-02-29", "2026-13-01", "2026-03-01t10:00:00Z", "2026-03-01T10:00:00z", "2026-03-01 10:00:00Z",
		"2026-03-01T10:00:00", "2026-03-01T24:00:00Z", "2026-03-01T10:60:00Z", "2026-03-01T10:00:60Z", "2026-03-01T10:00:00.Z",
		"2026-03-01T10:00:00+0200", "2026-03-01T10:00Z", "26-03-01", "2026-3-1", "20260301", "2026-03-01T10:00:00+24:00"} {
		if _, okp := parseTimestamp(s); okp {
			t.Errorf("%q: accepted", s)
		}
	}
}

// TestSizeLimits: the width of the data and the costly work of the checks are bounded, so a
// small body cannot claim gigabytes or minutes.
func TestSizeLimits(t *testing.T) {
	var ie *engine.InputError
	header := make([]string, MaxColumns+1)
	for i := range header {
		header[i] = "c" + strconv.Itoa(i)
	}
	csv := strings.Join(header, ",") + "\n"
	if _, err := analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &csv}}, time.Now()); !errors.As(err, &ie) || ie.Field != "data.csv" || !strings.Contains(ie.Message, "line 1") {
		t.Errorf("too many CSV columns: %v", err)
	}
	var rec strings.Builder
	rec.WriteString(`[{"a": 1}, {`)
	for i := 0; i < MaxColumns; i++ {
		if i > 0 {
			rec.WriteByte(',')
		}
		fmt.Fprintf(&rec, `"c%d": %d`, i, i)
	}
	rec.WriteString("}]")
	if _, err := analyzeAt(Request{SourceID: "s", Data: &Data{Records: jsontext.Value(rec.String())}}, time.Now()); !errors.As(err, &ie) || ie.Field != "data.records[1]" {
		t.Errorf("too many JSON columns: %v", err)
	}
	// 100 compound_unique checks of four distinct columns over 300,000 rows: 90,000,000
	// new key pairs (about 60 ns each), above the 5 s budget; the checks cost alike, the
	// first is named.
	var table strings.Builder
	table.WriteString("a,b,c,d\n")
	for i := range 300_000 {
		v := strconv.Itoa(i)
		table.WriteString(v + "," + v + "," + v + "," + v + "\n")
	}
	body := table.String()
	req := Request{SourceID: "s", Data: &Data{CSV: &body}}
	for i := 0; i < MaxChecks; i++ {
		req.Checks = append(req.Checks, Check{Type: CheckCompoundUnique, Columns: []string{"a", "b", "c", "d"}})
	}
	start := time.Now()
	_, err := analyzeAt(req, time.Now())
	if !errors.As(err, &ie) || ie.Code != engine.CodeWorkLimitExceeded || ie.Field != "checks[0]" {
		t.Errorf("work budget: %v", err)
	}
	// Refused after reading the data (about 0.1 s; 2–6 s under the race detector on a
	// loaded 2-core machine), before any check runs (which would take tens of seconds, ten
	// to a hundred times that under the race detector).
	limit := 5 * time.Second
	if raceEnabled {
		limit = 60 * time.Second
	}
	if took := time.Since(start); took > limit {
		t.Errorf("refusal took %v: the work ran", took)
	}
	req.Checks = req.Checks[:1]
	if _, err := analyzeAt(req, time.Now()); err != nil {
		t.Errorf("within the budget: %v", err)
	}
	// A library caller may give another budget.
	req.Budget = time.Millisecond
	if _, err := analyzeAt(req, time.Now()); !errors.As(err, &ie) || ie.Code != engine.CodeWorkLimitExceeded {
		t.Errorf("one check within a budget of 1 ms: %v", err)
	}
}

// A Request changed after Validate is compiled again: Analyze never runs the old plan.
func TestChangesAfterValidateAreSeen(t *testing.T) {
	t.Parallel()
	csv := "a\n1\n"
	req := Request{SourceID: "s", Data: &Data{CSV: &csv}, Checks: []Check{{Type: CheckNotNull, Column: ptrOf("a")}}}
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	req.Checks = []Check{{Type: "no_such_check"}}
	var ie *engine.InputError
	if _, err := analyzeAt(req, testNow); !errors.As(err, &ie) || ie.Code != "INVALID_CHECKS" {
		t.Fatalf("checks replaced after Validate: %v, want INVALID_CHECKS", err)
	}
}
