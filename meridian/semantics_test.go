package meridian

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// records is a request on JSON records with the given checks, without the profile.
func records(rows string, checks ...Check) Request {
	return Request{SourceID: "ge", Data: &Data{Records: []byte(rows)}, Checks: checks, Profile: ptrOf(false)}
}

func approx(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-9 }

// As in Great Expectations 1.x, mostly and unexpected_percent count the non-null values:
// one value out of range among three non-null values and two nulls is 33.3 %, which fails
// mostly 0.7 (meridian/1 counted 20 % of the rows, and passed).
func TestMostlyCountsNonNullValues(t *testing.T) {
	t.Parallel()
	req := records(`[{"v": 1}, {"v": 2}, {"v": null}, {}, {"v": 100}]`,
		Check{Type: CheckBetween, Column: ptrOf("v"), Min: ptrOf(0.0), Max: ptrOf(10.0), Mostly: ptrOf(0.7)},
		Check{Type: CheckBetween, Column: ptrOf("v"), Min: ptrOf(0.0), Max: ptrOf(10.0), Mostly: ptrOf(2.0 / 3)},
		Check{Type: CheckNotNull, Column: ptrOf("v"), Mostly: ptrOf(0.6)},
		Check{Type: CheckNull, Column: ptrOf("v"), Mostly: ptrOf(0.5)},
	)
	res, err := analyzeAt(req, testNow)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Checks[0]
	if c.Success || *c.UnexpectedCount != 1 || *c.MissingCount != 2 || !approx(c.UnexpectedPercent, 100.0/3) ||
		!approx(c.UnexpectedPercentNonmissing, 100.0/3) || !approx(c.UnexpectedPercentTotal, 20) {
		t.Errorf("between, mostly 0.7: %+v", c)
	}
	if !res.Checks[1].Success {
		t.Errorf("between, mostly 2/3 (exactly one of three unexpected) fails")
	}
	// not_null and null count every row: 2 nulls of 5 is 40 %.
	if c := res.Checks[2]; !c.Success || !approx(c.UnexpectedPercent, 40) || !approx(c.UnexpectedPercentTotal, 40) {
		t.Errorf("not_null: %+v", c)
	}
	if c := res.Checks[3]; c.Success || *c.UnexpectedCount != 3 || !approx(c.UnexpectedPercent, 60) ||
		len(c.PartialUnexpectedIndexList) != 3 || c.PartialUnexpectedIndexList[2] != 4 {
		t.Errorf("null: %+v", c)
	}
	if res.MethodVersion != "meridian/2" {
		t.Errorf("method_version %s", res.MethodVersion)
	}
}

// A column without a non-null value: nothing is unexpected, the check succeeds and its
// percentages over non-null values are null, as in GE.
func TestAllNullColumnSucceeds(t *testing.T) {
	t.Parallel()
	res, err := analyzeAt(records(`[{"v": null}, {"v": null}]`,
		Check{Type: CheckRegex, Column: ptrOf("v"), Pattern: ptrOf("^a")}), testNow)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Checks[0]
	if !c.Success || *c.UnexpectedCount != 0 || c.UnexpectedPercent != nil || c.UnexpectedPercentNonmissing != nil ||
		!approx(c.UnexpectedPercentTotal, 0) {
		t.Errorf("%+v", c)
	}
}

// The check types of meridian/2 on one table, each against the count GE's documentation
// gives.
func TestNewCheckTypes(t *testing.T) {
	t.Parallel()
	rows := `[
		{"a": 1, "b": 1, "c": 2, "s": "apple", "n": 0},
		{"a": 2, "b": 3, "c": 4, "s": "banana", "n": 5},
		{"a": 3, "b": 3, "c": 3, "s": "cherry", "n": 10},
		{"a": null, "b": null, "c": null, "s": "kiwi", "n": 10},
		{"a": 5, "b": null, "c": 5, "s": 7, "n": null}]`
	req := records(rows,
		// a, b, c repeat within rows 0 (a=b), 2 (b=c) and 4 (a=c); row 3 is all null.
		Check{ID: ptrOf("within"), Type: CheckUniqueWithinRecord, Columns: []string{"a", "b", "c"}},
		Check{ID: ptrOf("within_any"), Type: CheckUniqueWithinRecord, Columns: []string{"a", "b", "c"}, IgnoreRowIf: ptrOf("any_value_is_missing")},
		Check{ID: ptrOf("not_in_set"), Type: CheckNotInSet, Column: ptrOf("s"), Values: jsonValues(`"kiwi"`, `7`)},
		Check{ID: ptrOf("not_regex"), Type: CheckNotRegex, Column: ptrOf("s"), Pattern: ptrOf("an")},
		Check{ID: ptrOf("regex_any"), Type: CheckRegex, Column: ptrOf("s"), Patterns: []string{"^a", "^b"}},
		Check{ID: ptrOf("regex_all"), Type: CheckRegex, Column: ptrOf("s"), Patterns: []string{"a", "n"}, MatchOn: ptrOf("all")},
		Check{ID: ptrOf("not_regex_all"), Type: CheckNotRegex, Column: ptrOf("s"), Patterns: []string{"a", "n"}, MatchOn: ptrOf("all")},
		Check{ID: ptrOf("strict_min"), Type: CheckBetween, Column: ptrOf("n"), Min: ptrOf(0.0), Max: ptrOf(10.0), StrictMin: ptrOf(true)},
		Check{ID: ptrOf("strict_max"), Type: CheckBetween, Column: ptrOf("n"), Min: ptrOf(0.0), Max: ptrOf(10.0), StrictMax: ptrOf(true)},
		Check{ID: ptrOf("strict"), Type: CheckBetween, Column: ptrOf("n"), Min: ptrOf(0.0), Max: ptrOf(10.0), Strict: ptrOf(true)},
		Check{ID: ptrOf("exact"), Type: CheckColumnsPresent, Columns: []string{"a", "b", "c", "s"}, Exact: ptrOf(true)},
		Check{ID: ptrOf("cmp_both"), Type: CheckColumnComparison, Column: ptrOf("c"), Operator: ptrOf(">="), Other: ptrOf("b"), IgnoreRowIf: ptrOf("both_values_are_missing")},
		Check{ID: ptrOf("cmp_either"), Type: CheckColumnComparison, Column: ptrOf("c"), Operator: ptrOf(">="), Other: ptrOf("b")},
		Check{ID: ptrOf("distinct"), Type: CheckStatisticBetween, Column: ptrOf("n"), Statistic: ptrOf("distinct_count"), Min: ptrOf(3.0), Max: ptrOf(3.0)},
		Check{ID: ptrOf("ratio"), Type: CheckStatisticBetween, Column: ptrOf("n"), Statistic: ptrOf("distinct_ratio"), Max: ptrOf(0.75), StrictMax: ptrOf(true)},
	)
	res, err := analyzeAt(req, testNow)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]CheckResult{}
	for _, c := range res.Checks {
		byID[c.ID] = c
	}
	for _, w := range []struct {
		id         string
		success    bool
		unexpected int
		missing    int
		rows       []int
	}{
		{"within", false, 3, 1, []int{0, 2, 4}},
		{"within_any", false, 2, 2, []int{0, 2}},
		{"not_in_set", false, 2, 0, []int{3, 4}},
		{"not_regex", false, 2, 0, []int{1, 4}}, // banana matches; 7 is not a string
		{"regex_any", false, 3, 0, []int{2, 3, 4}},
		{"regex_all", false, 4, 0, []int{0, 2, 3, 4}}, // only banana has both a and n
		{"not_regex_all", false, 2, 0, []int{1, 4}},
		{"strict_min", false, 1, 1, []int{0}},
		{"strict_max", false, 2, 1, []int{2, 3}},
		{"strict", false, 3, 1, []int{0, 2, 3}},
		// c ≥ b holds on rows 0–2; row 3 has both null (skipped); row 4 has b null:
		// unexpected under GE's both_values_are_missing, skipped under either.
		{"cmp_both", false, 1, 1, []int{4}},
		{"cmp_either", true, 0, 2, []int{}},
	} {
		c := byID[w.id]
		if c.Success != w.success || *c.UnexpectedCount != w.unexpected || *c.MissingCount != w.missing ||
			len(c.PartialUnexpectedIndexList) != len(w.rows) {
			t.Errorf("%s: success %v unexpected %d missing %d rows %v; want %v %d %d %v", w.id, c.Success, *c.UnexpectedCount,
				*c.MissingCount, c.PartialUnexpectedIndexList, w.success, w.unexpected, w.missing, w.rows)
			continue
		}
		for i, r := range w.rows {
			if c.PartialUnexpectedIndexList[i] != r {
				t.Errorf("%s: rows %v, want %v", w.id, c.PartialUnexpectedIndexList, w.rows)
				break
			}
		}
	}
	if c := byID["exact"]; c.Success || c.Details["unexpected_columns"] == nil {
		t.Errorf("exact: %+v", c)
	}
	if c := byID["distinct"]; !c.Success || c.ObservedValue != 3 {
		t.Errorf("distinct_count: %+v", c)
	}
	if c := byID["ratio"]; c.Success || c.ObservedValue != 0.75 {
		t.Errorf("distinct_ratio: %+v", c)
	}
	if c := byID["within"]; len(c.PartialUnexpectedList) != 3 {
		t.Errorf("within: list %v", c.PartialUnexpectedList)
	}
}

// The cost model names a suite's costliest expectation by its path in the suite.
func TestEstimateNamesTheExpectation(t *testing.T) {
	t.Parallel()
	value := strings.Repeat("a", 300_000)
	req := Request{SourceID: "s", Data: &Data{Records: []byte(`[{"v": "` + value + `"}]`)}, Now: testNow,
		Checks: []Check{{Type: CheckNotNull, Column: ptrOf("v")}},
		ExpectationSuite: jsontext.Value(`{"expectations": [{"type": "expect_column_to_exist", "kwargs": {"column": "v"}},
			{"type": "expect_column_values_to_match_regex", "kwargs": {"column": "v", "regex": "[a-z]{1000}x"}}]}`)}
	est, err := Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	if est.Field != "expectation_suite.expectations[1]" {
		t.Errorf("field %q", est.Field)
	}
}

// compound_unique's ignore_row_if: any_value_is_missing (the default of checks) skips a row
// with a null key column; all_values_are_missing (GE's default) only rows null in every key
// column, and a null is then a value of the key, equal to other nulls; never skips none.
func TestCompoundUniqueIgnoreRowIf(t *testing.T) {
	t.Parallel()
	rows := `[{"a": 1, "b": null}, {"a": 1, "b": null}, {"a": null, "b": null}, {"b": null}, {"a": 2, "b": 3}]`
	for _, w := range []struct {
		ignore              *string
		unexpected, missing int
		list                string
	}{
		{nil, 0, 4, `[]`},
		{ptrOf("any_value_is_missing"), 0, 4, `[]`},
		{ptrOf("all_values_are_missing"), 2, 2, `[[1,null],[1,null]]`},
		{ptrOf("never"), 4, 0, `[[1,null],[1,null],[null,null],[null,null]]`},
	} {
		res, err := analyzeAt(records(rows, Check{Type: CheckCompoundUnique, Columns: []string{"a", "b"}, IgnoreRowIf: w.ignore}), testNow)
		if err != nil {
			t.Fatal(err)
		}
		c := res.Checks[0]
		list, _ := json.Marshal(c.PartialUnexpectedList)
		if *c.UnexpectedCount != w.unexpected || *c.MissingCount != w.missing || string(list) != w.list {
			t.Errorf("ignore_row_if %v: unexpected %d missing %d list %s; want %d %d %s", w.ignore, *c.UnexpectedCount, *c.MissingCount, list, w.unexpected, w.missing, w.list)
		}
	}
}

// strict_min and strict_max exclude their bound in length_between and row_count_between.
func TestStrictBoundsOfLengthsAndRowCounts(t *testing.T) {
	t.Parallel()
	res, err := analyzeAt(records(`[{"s": "ab"}, {"s": "abc"}, {"s": "abcd"}]`,
		Check{Type: CheckLengthBetween, Column: ptrOf("s"), Min: ptrOf(2.0), Max: ptrOf(4.0), StrictMin: ptrOf(true)},
		Check{Type: CheckLengthBetween, Column: ptrOf("s"), Min: ptrOf(2.0), Max: ptrOf(4.0), StrictMax: ptrOf(true)},
		Check{Type: CheckRowCountBetween, Min: ptrOf(3.0), StrictMin: ptrOf(true)},
		Check{Type: CheckRowCountBetween, Max: ptrOf(3.0)},
	), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Checks[0]; *c.UnexpectedCount != 1 || c.PartialUnexpectedIndexList[0] != 0 {
		t.Errorf("strict_min: %+v", c)
	}
	if c := res.Checks[1]; *c.UnexpectedCount != 1 || c.PartialUnexpectedIndexList[0] != 2 {
		t.Errorf("strict_max: %+v", c)
	}
	if res.Checks[2].Success || !res.Checks[3].Success {
		t.Errorf("row counts: %v %v", res.Checks[2].Success, res.Checks[3].Success)
	}
}
