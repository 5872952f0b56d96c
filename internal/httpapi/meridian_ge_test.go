package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
)

// geRecords is a small trip table: nulls in most columns, a duplicated id (rows 4 and 5),
// a vendor outside the usual set (row 9), one lower-case and one long code.
const geRecords = `[
 {"id": 1,  "vendor": "a",  "fare": 10,  "tip": 1,    "code": "AB-1",  "note": null, "start": 1,    "end": 2},
 {"id": 2,  "vendor": "b",  "fare": 20,  "tip": 2,    "code": "AB-2",  "note": null, "start": 2,    "end": 2},
 {"id": 3,  "vendor": "a",  "fare": null, "tip": null, "code": "CD-3",  "note": null, "start": null, "end": null},
 {"id": 4,  "vendor": "c",  "fare": 30,  "tip": 30,   "code": "ab-4",  "note": "x",  "start": 4,    "end": 3},
 {"id": 5,  "vendor": null, "fare": -5,  "tip": 0,    "code": "AB-5",  "note": null, "start": 5,    "end": 6},
 {"id": 5,  "vendor": "b",  "fare": 50,  "tip": 5,    "code": "EF-6",  "note": null, "start": 6,    "end": null},
 {"id": 7,  "vendor": "a",  "fare": 70,  "tip": 1,    "code": "AB-7",  "note": null, "start": 7,    "end": 8},
 {"id": 8,  "vendor": "a",  "fare": 40,  "tip": 4,    "code": null,    "note": null, "start": null, "end": 9},
 {"id": 9,  "vendor": "b",  "fare": 100, "tip": 10,   "code": "AB-9",  "note": null, "start": 9,    "end": 10},
 {"id": 10, "vendor": "x",  "fare": 60,  "tip": null, "code": "AB-10", "note": null, "start": 10,   "end": 11}]`

// geSuite is an expectation suite as Great Expectations 1.x writes it (suite.to_json_dict():
// name, id, expectations with type, kwargs, meta, id, severity; meta with the GE version;
// notes), with one expectation in 0.x's form (expectation_type). Each expectation's id
// names its case below.
const geSuite = `{
  "name": "trips",
  "id": "6f1f3a59-2c2f-4a77-9e0e-3f1d2b7c9a10",
  "expectations": [
    {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "vendor", "mostly": 0.9}, "meta": {"owner": "ops"}, "id": "vendor_not_null", "severity": "critical"},
    {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "fare"}, "meta": {}, "id": "fare_not_null"},
    {"type": "expect_column_values_to_be_null", "kwargs": {"column": "note", "mostly": 0.9}, "meta": {}, "id": "note_null"},
    {"type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}, "meta": {}, "id": "id_unique"},
    {"type": "expect_compound_columns_to_be_unique", "kwargs": {"column_list": ["vendor", "tip"], "ignore_row_if": "any_value_is_missing"}, "meta": {}, "id": "vendor_tip_unique"},
    {"type": "expect_compound_columns_to_be_unique", "kwargs": {"column_list": ["vendor", "note"]}, "meta": {}, "id": "vendor_note_unique"},
    {"type": "expect_select_column_values_to_be_unique_within_record", "kwargs": {"column_list": ["fare", "tip"]}, "meta": {}, "id": "fare_tip_within"},
    {"type": "expect_column_values_to_be_of_type", "kwargs": {"column": "id", "type_": "int"}, "meta": {}, "id": "id_int"},
    {"type": "expect_column_values_to_be_in_type_list", "kwargs": {"column": "code", "type_list": ["int", "str"], "mostly": 0.9}, "meta": {}, "id": "code_types"},
    {"type": "expect_column_values_to_be_between", "kwargs": {"column": "tip", "min_value": 0, "max_value": 10, "strict_min": true, "mostly": 0.75}, "meta": {}, "id": "tip_between_strict_min"},
    {"type": "expect_column_values_to_be_between", "kwargs": {"column": "tip", "min_value": null, "max_value": 10, "strict_max": true, "mostly": 0.8}, "meta": {}, "id": "tip_below_10"},
    {"type": "expect_column_values_to_be_between", "kwargs": {"column": "fare", "min_value": 0, "max_value": 100, "mostly": 0.9}, "meta": {}, "id": "fare_between"},
    {"type": "expect_column_values_to_be_in_set", "kwargs": {"column": "vendor", "value_set": ["a", "b", "c"]}, "meta": {}, "id": "vendor_in_set"},
    {"type": "expect_column_values_to_not_be_in_set", "kwargs": {"column": "vendor", "value_set": ["x", "y"], "mostly": 0.85}, "meta": {}, "id": "vendor_not_in_set", "severity": "warning"},
    {"type": "expect_column_values_to_match_regex", "kwargs": {"column": "code", "regex": "^[A-Z]{2}-\\d+$"}, "meta": {}, "id": "code_regex"},
    {"type": "expect_column_values_to_not_match_regex", "kwargs": {"column": "code", "regex": "^CD"}, "meta": {}, "id": "code_not_regex"},
    {"type": "expect_column_values_to_match_regex_list", "kwargs": {"column": "code", "regex_list": ["^AB", "^CD"]}, "meta": {}, "id": "code_regex_any"},
    {"type": "expect_column_values_to_match_regex_list", "kwargs": {"column": "code", "regex_list": ["^AB", "1"], "match_on": "all"}, "meta": {}, "id": "code_regex_all"},
    {"type": "expect_column_values_to_not_match_regex_list", "kwargs": {"column": "code", "regex_list": ["^EF", "^ab"]}, "meta": {}, "id": "code_not_regex_list"},
    {"type": "expect_column_value_lengths_to_be_between", "kwargs": {"column": "code", "min_value": 4, "max_value": 4}, "meta": {}, "id": "code_lengths"},
    {"type": "expect_column_value_lengths_to_equal", "kwargs": {"column": "code", "value": 4}, "meta": {}, "id": "code_length_4"},
    {"type": "expect_column_pair_values_a_to_be_greater_than_b", "kwargs": {"column_A": "end", "column_B": "start", "or_equal": true}, "meta": {}, "id": "end_after_start"},
    {"type": "expect_column_pair_values_a_to_be_greater_than_b", "kwargs": {"column_A": "end", "column_B": "start", "or_equal": true, "ignore_row_if": "either_value_is_missing"}, "meta": {}, "id": "end_after_start_either"},
    {"type": "expect_column_pair_values_to_be_equal", "kwargs": {"column_A": "start", "column_B": "end", "ignore_row_if": "either_value_is_missing", "mostly": 0.1}, "meta": {}, "id": "start_equals_end"},
    {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 5, "max_value": 10}, "meta": {}, "id": "rows_between"},
    {"type": "expect_table_row_count_to_equal", "kwargs": {"value": 11}, "meta": {}, "id": "rows_equal"},
    {"type": "expect_table_columns_to_match_set", "kwargs": {"column_set": ["id", "vendor", "fare", "tip", "code", "note", "start", "end"]}, "meta": {}, "id": "columns_exact"},
    {"type": "expect_table_columns_to_match_set", "kwargs": {"column_set": ["id", "vendor"]}, "meta": {}, "id": "columns_subset_exact"},
    {"type": "expect_table_columns_to_match_set", "kwargs": {"column_set": ["id", "vendor"], "exact_match": false}, "meta": {}, "id": "columns_subset"},
    {"expectation_type": "expect_column_to_exist", "kwargs": {"column": "nope"}, "meta": {}, "id": "nope_exists"},
    {"type": "expect_column_mean_to_be_between", "kwargs": {"column": "tip", "min_value": 6, "max_value": 7}, "meta": {}, "id": "tip_mean"},
    {"type": "expect_column_median_to_be_between", "kwargs": {"column": "tip", "min_value": 3, "max_value": 3}, "meta": {}, "id": "tip_median"},
    {"type": "expect_column_min_to_be_between", "kwargs": {"column": "tip", "min_value": 0, "max_value": 0, "strict_min": true}, "meta": {}, "id": "tip_min"},
    {"type": "expect_column_max_to_be_between", "kwargs": {"column": "tip", "max_value": 30}, "meta": {}, "id": "tip_max"},
    {"type": "expect_column_sum_to_be_between", "kwargs": {"column": "tip", "min_value": 50, "max_value": 60}, "meta": {}, "id": "tip_sum"},
    {"type": "expect_column_stdev_to_be_between", "kwargs": {"column": "tip", "max_value": 5}, "meta": {}, "id": "tip_stdev"},
    {"type": "expect_column_unique_value_count_to_be_between", "kwargs": {"column": "vendor", "min_value": 3, "max_value": 4}, "meta": {}, "id": "vendor_distinct"},
    {"type": "expect_column_proportion_of_unique_values_to_be_between", "kwargs": {"column": "id", "min_value": 0.95, "result_format": "COMPLETE"}, "meta": {}, "id": "id_unique_proportion", "rendered_content": [], "notes": null}
  ],
  "meta": {"great_expectations_version": "1.3.5"},
  "notes": null
}`

// geWant is what Great Expectations' documented semantics give for one expectation of
// geSuite on geRecords.
type geWant struct {
	check      string // the Meridian check type it maps to
	success    bool
	unexpected any // number, or nil for aggregates
	missing    float64
	percent    any // unexpected_percent: number, or nil
	rows       []float64
	observed   any
}

var geWants = map[string]geWant{
	// Nulls are the unexpected values; the denominator is every row.
	"vendor_not_null": {"not_null", true, 1.0, 1, 10.0, []float64{4}, nil},
	"fare_not_null":   {"not_null", false, 1.0, 1, 10.0, []float64{2}, nil},
	"note_null":       {"null", true, 1.0, 9, 10.0, []float64{3}, nil},
	// ids 5 and 5: every occurrence.
	"id_unique": {"unique", false, 2.0, 0, 20.0, []float64{4, 5}, nil},
	// (a, 1) on rows 0 and 6; rows 2, 4 and 9 have a null and are skipped.
	"vendor_tip_unique": {"compound_unique", false, 2.0, 3, 200.0 / 7, []float64{0, 6}, nil},
	// GE's default ignore_row_if all_values_are_missing: only row 4 (both null) is skipped;
	// a null is a value of the key, equal to other nulls: (a, null) on rows 0, 2, 6, 7 and
	// (b, null) on rows 1, 5, 8.
	"vendor_note_unique": {"compound_unique", false, 7.0, 1, 700.0 / 9, []float64{0, 1, 2, 5, 6, 7, 8}, nil},
	// 30 = 30 on row 3; row 2 is all null (skipped by GE's default all_values_are_missing).
	"fare_tip_within": {"unique_within_record", false, 1.0, 1, 100.0 / 9, []float64{3}, nil},
	"id_int":          {"type", true, 0.0, 0, 0.0, []float64{}, nil},
	"code_types":      {"type", true, 0.0, 1, 0.0, []float64{}, nil},
	// tip (8 non-null values): 0 fails strict_min, 30 the maximum: 2 of 8 = 25 % ≤ 25 %.
	"tip_between_strict_min": {"between", true, 2.0, 2, 25.0, []float64{3, 4}, nil},
	// 30 and 10 (strict): 2 of 8 = 25 % > 20 %.
	"tip_below_10": {"between", false, 2.0, 2, 25.0, []float64{3, 8}, nil},
	// fare: -5 of 9 non-null values = 11.1 % > 10 %; counted over the 10 rows it would be
	// 10 % and pass: the GE denominator decides.
	"fare_between":      {"between", false, 1.0, 1, 100.0 / 9, []float64{4}, nil},
	"vendor_in_set":     {"in_set", false, 1.0, 1, 100.0 / 9, []float64{9}, nil},
	"vendor_not_in_set": {"not_in_set", true, 1.0, 1, 100.0 / 9, []float64{9}, nil},
	// code (9 non-null values): "ab-4" does not match.
	"code_regex":     {"regex", false, 1.0, 1, 100.0 / 9, []float64{3}, nil},
	"code_not_regex": {"not_regex", false, 1.0, 1, 100.0 / 9, []float64{2}, nil},
	// Neither ^AB nor ^CD: ab-4, EF-6.
	"code_regex_any": {"regex", false, 2.0, 1, 200.0 / 9, []float64{3, 5}, nil},
	// Both ^AB and 1: only AB-1 and AB-10.
	"code_regex_all":      {"regex", false, 7.0, 1, 700.0 / 9, []float64{1, 2, 3, 4, 5, 6, 8}, nil},
	"code_not_regex_list": {"not_regex", false, 2.0, 1, 200.0 / 9, []float64{3, 5}, nil},
	"code_lengths":        {"length_between", false, 1.0, 1, 100.0 / 9, []float64{9}, nil},
	"code_length_4":       {"length_between", false, 1.0, 1, 100.0 / 9, []float64{9}, nil},
	// GE's default ignore_row_if both_values_are_missing: row 2 (both null) is skipped; rows
	// 5 and 7 (one side null) are unexpected, with row 3 (3 < 4).
	"end_after_start":        {"column_comparison", false, 3.0, 1, 100.0 / 3, []float64{3, 5, 7}, nil},
	"end_after_start_either": {"column_comparison", false, 1.0, 3, 100.0 / 7, []float64{3}, nil},
	"start_equals_end":       {"column_comparison", true, 6.0, 3, 600.0 / 7, []float64{0, 3, 4, 6, 8, 9}, nil},
	// Aggregates: observed values as GE computes them (pandas skips nulls; stdev is the
	// sample standard deviation).
	"rows_between":         {"row_count_between", true, nil, 0, nil, []float64{}, 10.0},
	"rows_equal":           {"row_count_between", false, nil, 0, nil, []float64{}, 10.0},
	"columns_exact":        {"columns_present", true, nil, 0, nil, []float64{}, []any{}},
	"columns_subset_exact": {"columns_present", false, nil, 0, nil, []float64{}, []any{}},
	"columns_subset":       {"columns_present", true, nil, 0, nil, []float64{}, []any{}},
	"nope_exists":          {"columns_present", false, nil, 0, nil, []float64{}, []any{"nope"}},
	"tip_mean":             {"statistic_between", true, nil, 2, nil, []float64{}, 6.625},
	"tip_median":           {"statistic_between", true, nil, 2, nil, []float64{}, 3.0},
	"tip_min":              {"statistic_between", false, nil, 2, nil, []float64{}, 0.0},
	"tip_max":              {"statistic_between", true, nil, 2, nil, []float64{}, 30.0},
	"tip_sum":              {"statistic_between", true, nil, 2, nil, []float64{}, 53.0},
	"tip_stdev":            {"statistic_between", false, nil, 2, nil, []float64{}, 9.970492178709849},
	"vendor_distinct":      {"statistic_between", true, nil, 1, nil, []float64{}, 4.0},
	"id_unique_proportion": {"statistic_between", false, nil, 0, nil, []float64{}, 0.9},
}

func closeTo(got any, want float64) bool {
	g, ok := got.(float64)
	return ok && math.Abs(g-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// An exported GE suite posts as it is: every expectation of the table runs as its check,
// in the suite's order, with GE's success, counts and observed value, and echoes its
// expectation_type, kwargs and meta.
func TestMeridianGreatExpectationsSuite(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey,
		`{"source_id": "trips", "data": {"records": `+geRecords+`}, "expectation_suite": `+geSuite+`, "profile": false}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if v := r.field("data.method_version"); v != "meridian/2" {
		t.Errorf("method_version %v", v)
	}
	var suite struct {
		Expectations []struct {
			Type            string          `json:"type"`
			ExpectationType string          `json:"expectation_type"`
			ID              string          `json:"id"`
			Kwargs          json.RawMessage `json:"kwargs"`
			Meta            json.RawMessage `json:"meta"`
		}
	}
	if err := json.Unmarshal([]byte(geSuite), &suite); err != nil {
		t.Fatal(err)
	}
	checks := r.field("data.checks").([]any)
	if len(checks) != len(suite.Expectations) || len(geWants) != len(checks) {
		t.Fatalf("%d results for %d expectations (%d cases)", len(checks), len(suite.Expectations), len(geWants))
	}
	mapped := map[string]bool{}
	for i, x := range suite.Expectations {
		c := checks[i].(map[string]any)
		typ := x.Type + x.ExpectationType
		mapped[typ] = true
		w, ok := geWants[x.ID]
		if !ok || c["id"] != x.ID {
			t.Fatalf("result %d: id %v, expectation %s", i, c["id"], x.ID)
		}
		if c["type"] != w.check || c["expectation_type"] != typ || c["success"] != w.success {
			t.Errorf("%s: type %v (%v), success %v; want %s (%s), %v", x.ID, c["type"], c["expectation_type"], c["success"], w.check, typ, w.success)
		}
		if c["element_count"] != 10.0 || c["missing_count"] != w.missing {
			t.Errorf("%s: element_count %v, missing_count %v; want 10, %v", x.ID, c["element_count"], c["missing_count"], w.missing)
		}
		switch u := w.unexpected.(type) {
		case nil:
			if c["unexpected_count"] != nil || c["unexpected_percent"] != nil || c["unexpected_percent_total"] != nil {
				t.Errorf("%s: an aggregate with unexpected counts %v", x.ID, c)
			}
		case float64:
			if c["unexpected_count"] != u || !closeTo(c["unexpected_percent"], w.percent.(float64)) ||
				c["unexpected_percent_nonmissing"] != c["unexpected_percent"] || !closeTo(c["unexpected_percent_total"], 10*u) {
				t.Errorf("%s: unexpected %v, percent %v, nonmissing %v, total %v; want %v, %v, %v, %v", x.ID, c["unexpected_count"],
					c["unexpected_percent"], c["unexpected_percent_nonmissing"], c["unexpected_percent_total"], u, w.percent, w.percent, 10*u)
			}
		}
		rows := c["partial_unexpected_index_list"].([]any)
		if len(rows) != len(w.rows) {
			t.Errorf("%s: rows %v, want %v", x.ID, rows, w.rows)
		} else {
			for j := range rows {
				if rows[j] != w.rows[j] {
					t.Errorf("%s: rows %v, want %v", x.ID, rows, w.rows)
					break
				}
			}
		}
		switch o := w.observed.(type) {
		case float64:
			if !closeTo(c["observed_value"], o) {
				t.Errorf("%s: observed %v, want %v", x.ID, c["observed_value"], o)
			}
		default:
			if got, _ := json.Marshal(c["observed_value"]); string(got) != jsonText(t, w.observed) {
				t.Errorf("%s: observed %s, want %s", x.ID, got, jsonText(t, w.observed))
			}
		}
		if got, want := jsonText(t, c["kwargs"]), compactJSON(t, x.Kwargs); got != want {
			t.Errorf("%s: kwargs %s, want %s", x.ID, got, want)
		}
		if got, want := jsonText(t, c["meta"]), compactJSON(t, x.Meta); got != want {
			t.Errorf("%s: meta %s, want %s", x.ID, got, want)
		}
	}
	// GE's severities: critical is an error, warning a warning.
	if checks[0].(map[string]any)["severity"] != "error" || checks[13].(map[string]any)["severity"] != "warning" {
		t.Errorf("severities %v %v", checks[0].(map[string]any)["severity"], checks[13].(map[string]any)["severity"])
	}
	// Partial lists show GE's values: a pair as [A, B] with the null side, a record's
	// values, a type-list miss never.
	pair := checks[21].(map[string]any)["partial_unexpected_list"]
	if got := jsonText(t, pair); got != `[[3,4],[null,6],[9,null]]` {
		t.Errorf("end_after_start list %s", got)
	}
	if got := jsonText(t, checks[5].(map[string]any)["partial_unexpected_list"]); got != `[["a",null],["b",null],["a",null],["b",null],["a",null],["a",null],["b",null]]` {
		t.Errorf("vendor_note_unique list %s", got)
	}
	if got := jsonText(t, checks[6].(map[string]any)["partial_unexpected_list"]); got != `[[30,30]]` {
		t.Errorf("fare_tip_within list %s", got)
	}
	if got := jsonText(t, checks[27].(map[string]any)["details"].(map[string]any)["unexpected_columns"]); got != `["fare","tip","code","note","start","end"]` {
		t.Errorf("columns_subset_exact unexpected_columns %s", got)
	}
	// Every expectation type of the table is covered.
	for _, typ := range geTypesOfTheTable {
		if !mapped[typ] {
			t.Errorf("%s is not in the test suite", typ)
		}
	}
	// The suite and the checks of the same request run together, checks first; GET returns
	// the stored object.
	r2 := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey,
		`{"source_id": "trips", "data": {"records": `+geRecords+`}, "checks": [{"id": "c", "type": "not_null", "column": "id"}], "expectation_suite": {"expectations": [{"type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}}]}}`)
	if r2.status != http.StatusOK {
		t.Fatalf("%d %s", r2.status, r2.raw)
	}
	both := r2.field("data.checks").([]any)
	if len(both) != 2 || both[0].(map[string]any)["id"] != "c" || both[1].(map[string]any)["id"] != "expectation_0" ||
		jsonText(t, both[1].(map[string]any)["meta"]) != `{}` || both[0].(map[string]any)["expectation_type"] != nil {
		t.Fatalf("checks and suite: %s", r2.raw)
	}
	id := r2.field("data.id").(string)
	if got := b.get("/v1/meridian/quality-checks/"+id, b.testKey); jsonText(t, got.field("data.checks")) != jsonText(t, both) {
		t.Fatal("GET differs from POST")
	}
}

// geTypesOfTheTable is every expectation type of the contract's table.
var geTypesOfTheTable = []string{
	"expect_column_values_to_not_be_null", "expect_column_values_to_be_null", "expect_column_values_to_be_unique",
	"expect_compound_columns_to_be_unique", "expect_select_column_values_to_be_unique_within_record",
	"expect_column_values_to_be_of_type", "expect_column_values_to_be_in_type_list", "expect_column_values_to_be_between",
	"expect_column_values_to_be_in_set", "expect_column_values_to_not_be_in_set", "expect_column_values_to_match_regex",
	"expect_column_values_to_not_match_regex", "expect_column_values_to_match_regex_list", "expect_column_values_to_not_match_regex_list",
	"expect_column_value_lengths_to_be_between", "expect_column_value_lengths_to_equal",
	"expect_column_pair_values_a_to_be_greater_than_b", "expect_column_pair_values_to_be_equal",
	"expect_table_row_count_to_be_between", "expect_table_row_count_to_equal", "expect_table_columns_to_match_set",
	"expect_column_to_exist", "expect_column_mean_to_be_between", "expect_column_median_to_be_between",
	"expect_column_min_to_be_between", "expect_column_max_to_be_between", "expect_column_sum_to_be_between",
	"expect_column_stdev_to_be_between", "expect_column_unique_value_count_to_be_between",
	"expect_column_proportion_of_unique_values_to_be_between",
}

// Expectations Meridian cannot evaluate as GE does are refused before anything runs: types
// outside the table (all of them named, with their index, and the supported ones listed),
// $PARAMETER references, row conditions, and what GE itself raises on.
func TestMeridianGreatExpectationsSuiteRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	post := func(suite string) response {
		return b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey,
			`{"source_id": "trips", "data": {"records": `+geRecords+`}, "expectation_suite": `+suite+`}`)
	}
	r := post(`{"name": "s", "expectations": [
		{"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "id"}},
		{"type": "expect_column_kl_divergence_to_be_less_than", "kwargs": {"column": "fare"}},
		{"type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}},
		{"expectation_type": "expect_column_values_to_be_dateutil_parseable", "kwargs": {"column": "start"}}]}`)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_CHECKS")
	msg := r.field("error.message").(string)
	if r.field("error.details.field") != "expectation_suite.expectations[1].type" ||
		!strings.Contains(msg, "expect_column_kl_divergence_to_be_less_than (expectations[1])") ||
		!strings.Contains(msg, "expect_column_values_to_be_dateutil_parseable (expectations[3])") {
		t.Fatalf("unsupported: %s", r.raw)
	}
	for _, typ := range geTypesOfTheTable {
		if !strings.Contains(msg, typ) || !strings.Contains(r.field("error.details.expected").(string), typ) {
			t.Fatalf("the refusal does not list %s: %s", typ, r.raw)
		}
	}
	if n := b.get("/v1/meridian/quality-checks", b.testKey).field("pagination.total_count"); n != 0.0 {
		t.Fatalf("a refused suite stored %v checks", n)
	}
	for _, c := range []struct{ name, expectation, field string }{
		{"$PARAMETER", `{"type": "expect_column_values_to_be_between", "kwargs": {"column": "tip", "min_value": {"$PARAMETER": "lo"}, "max_value": 5}}`, "kwargs.min_value"},
		{"row_condition", `{"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "tip", "row_condition": "vendor==\"a\"", "condition_parser": "pandas"}}`, "kwargs.row_condition"},
		{"unknown kwarg", `{"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "tip", "parse_strings_as_datetimes": true}}`, "kwargs.parse_strings_as_datetimes"},
		{"min above max", `{"type": "expect_column_values_to_be_between", "kwargs": {"column": "tip", "min_value": 5, "max_value": 1}}`, "kwargs.max_value"},
		{"no bound", `{"type": "expect_column_mean_to_be_between", "kwargs": {"column": "tip", "min_value": null, "max_value": null}}`, "kwargs.min_value"},
		{"non-numeric bound", `{"type": "expect_column_values_to_be_between", "kwargs": {"column": "tip", "min_value": "2024-01-01"}}`, "kwargs.min_value"},
		{"mostly above 1", `{"type": "expect_column_values_to_be_unique", "kwargs": {"column": "id", "mostly": 1.5}}`, "kwargs.mostly"},
		{"no column", `{"type": "expect_column_values_to_be_unique", "kwargs": {}}`, "kwargs.column"},
		{"Python-only regex", `{"type": "expect_column_values_to_match_regex", "kwargs": {"column": "code", "regex": "(?<=A)B"}}`, "kwargs.regex"},
		{"bad regex in a list", `{"type": "expect_column_values_to_match_regex_list", "kwargs": {"column": "code", "regex_list": ["^A", "("]}}`, "kwargs.regex_list[1]"},
		{"bad match_on", `{"type": "expect_column_values_to_match_regex_list", "kwargs": {"column": "code", "regex_list": ["^A"], "match_on": "some"}}`, "kwargs.match_on"},
		{"unmapped type name", `{"type": "expect_column_values_to_be_of_type", "kwargs": {"column": "id", "type_": "Decimal"}}`, "kwargs.type_"},
		{"bad ignore_row_if", `{"type": "expect_column_pair_values_to_be_equal", "kwargs": {"column_A": "start", "column_B": "end", "ignore_row_if": "sometimes"}}`, "kwargs.ignore_row_if"},
		{"column_index", `{"type": "expect_column_to_exist", "kwargs": {"column": "id", "column_index": 0}}`, "kwargs.column_index"},
		{"bad severity", `{"type": "expect_column_to_exist", "kwargs": {"column": "id"}, "severity": "fatal"}`, "severity"},
		{"types disagree", `{"type": "expect_column_to_exist", "expectation_type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}}`, "expectation_type"},
	} {
		r := post(`{"expectations": [{"type": "expect_table_row_count_to_equal", "kwargs": {"value": 10}}, ` + c.expectation + `]}`)
		r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_CHECKS")
		if want := "expectation_suite.expectations[1]." + c.field; r.field("error.details.field") != want {
			t.Errorf("%s: field %v, want %s: %s", c.name, r.field("error.details.field"), want, r.raw)
		}
	}
	// Ids are unique across checks and expectations.
	r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "trips", "data": {"records": `+geRecords+`},
		"checks": [{"id": "x", "type": "not_null", "column": "id"}], "expectation_suite": {"expectations": [{"type": "expect_column_to_exist", "kwargs": {"column": "id"}, "id": "x"}]}}`)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_CHECKS")
	if r.field("error.details.field") != "expectation_suite.expectations[0].id" {
		t.Errorf("duplicate id: %s", r.raw)
	}
	// A suite that is not a suite.
	for body, field := range map[string]string{`[]`: "expectation_suite", `{"name": "s"}`: "expectation_suite.expectations", `{"expectations": [1]}`: "expectation_suite.expectations[0]"} {
		r := post(body)
		r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_CHECKS")
		if r.field("error.details.field") != field {
			t.Errorf("%s: %s", body, r.raw)
		}
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return jsonText(t, v)
}

// geExampleBody is the worked example of docs/methods/meridian.md §2a, as it stands there.
const geExampleBody = `{"source_id": "trips", "data": {"csv": "id,vendor,fare\n1,a,10\n2,b,\n2,z,-5\n"},
 "expectation_suite": {
   "name": "trips_suite",
   "id": "4b3f0f8e-0f5d-4c1e-9d53-3f5e8b2a7c11",
   "expectations": [
     {"type": "expect_column_values_to_be_between",
      "kwargs": {"column": "fare", "min_value": 0, "max_value": 100, "mostly": 0.6},
      "meta": {"notes": "fares are positive"}, "id": "9a1d6c52-7f0e-4f8a-b1a4-0c2d9e6f3b70",
      "severity": "critical", "rendered_content": null},
     {"type": "expect_column_values_to_be_in_set",
      "kwargs": {"column": "vendor", "value_set": ["a", "b"]},
      "meta": {}, "id": "2c7e4a90-3b1d-4e6f-8a25-7d9c0b1e5f42"},
     {"type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}, "meta": {},
      "id": "e5b8d2f1-6a3c-4d7e-9f10-2b4c6d8e0a13"}],
   "meta": {"great_expectations_version": "1.3.5"},
   "notes": null},
 "profile": false}`

// The documented example gives the documented results.
func TestMeridianGreatExpectationsSuiteExample(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, geExampleBody)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	checks := r.field("data.checks").([]any)
	first := checks[0].(map[string]any)
	want := `{"column":"fare","details":{},"element_count":3,"expectation_type":"expect_column_values_to_be_between",` +
		`"id":"9a1d6c52-7f0e-4f8a-b1a4-0c2d9e6f3b70","kwargs":{"column":"fare","max_value":100,"min_value":0,"mostly":0.6},` +
		`"meta":{"notes":"fares are positive"},"missing_count":1,"observed_value":null,"partial_unexpected_index_list":[2],` +
		`"partial_unexpected_list":["-5"],"severity":"error","success":false,"type":"between","unexpected_count":1,` +
		`"unexpected_percent":50,"unexpected_percent_nonmissing":50,"unexpected_percent_total":33.333333333333336}`
	if got := jsonText(t, first); got != want {
		t.Errorf("first result:\n%s\nwant\n%s", got, want)
	}
	inSet, unique := checks[1].(map[string]any), checks[2].(map[string]any)
	if inSet["success"] != false || inSet["unexpected_count"] != 1.0 || jsonText(t, inSet["partial_unexpected_list"]) != `["z"]` {
		t.Errorf("in_set: %v", inSet)
	}
	if unique["success"] != false || unique["unexpected_count"] != 2.0 || jsonText(t, unique["partial_unexpected_index_list"]) != `[1,2]` {
		t.Errorf("unique: %v", unique)
	}
	if r.field("data.passed") != false {
		t.Errorf("passed %v", r.field("data.passed"))
	}
}
