package meridian

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func analyzeCSV(t *testing.T, csv string, checks ...Check) Result {
	t.Helper()
	res, err := analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &csv}, Checks: checks}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func analyzeRecords(t *testing.T, records string, checks ...Check) Result {
	t.Helper()
	res, err := analyzeAt(Request{SourceID: "s", Data: &Data{Records: jsontext.Value(records)}, Checks: checks}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestScoreOfTheContractExample: the dimensions of the contract's example response give its
// score, 82.68, and tier gold.
func TestScoreOfTheContractExample(t *testing.T) {
	d := Dimensions{Completeness: dim(0.98), Validity: dim(0.91), Uniqueness: dim(1), Timeliness: dim(0.4), Accuracy: dim(0.95)}
	s := Score(d)
	if s == nil || math.Round(*s*100)/100 != 82.68 || TierOf(s) != TierGold {
		t.Fatalf("score %v tier %s, want 82.68 gold", s, TierOf(s))
	}
	// Each dimension is floored at 0.01 and the weights renormalise over those present.
	zero := Score(Dimensions{Completeness: dim(0), Accuracy: dim(1)})
	want := 100 * math.Exp((0.25*math.Log(0.01)+0.10*math.Log(1))/0.35)
	if math.Abs(*zero-want) > 1e-9 {
		t.Errorf("floored score %v, want %v", *zero, want)
	}
	if Score(Dimensions{}) != nil || TierOf(nil) != TierUnrated {
		t.Error("no dimension must give a null score and tier unrated")
	}
}

func TestTierAndGating(t *testing.T) {
	for _, c := range []struct {
		score float64
		tier  string
	}{{100, TierPlatinum}, {90, TierPlatinum}, {89.999, TierGold}, {75, TierGold}, {74.9, TierSilver}, {60, TierSilver}, {59.99, TierBronze}, {1, TierBronze}} {
		if got := TierOf(&c.score); got != c.tier {
			t.Errorf("tier(%v) = %s, want %s", c.score, got, c.tier)
		}
	}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		score       *float64
		passed      bool
		block, revw float64
		want        string
	}{
		{nil, true, 40, 60, GatingReview},
		{f(39.9), true, 40, 60, GatingBlock},
		{f(40), true, 40, 60, GatingReview},
		{f(60), true, 40, 60, GatingAllow},
		{f(95), false, 40, 60, GatingReview},
		{f(39), false, 40, 60, GatingBlock},
		{f(70), true, 80, 90, GatingBlock},
		{f(85), true, 80, 90, GatingReview},
	} {
		if got := gate(c.score, c.passed, c.block, c.revw); got != c.want {
			t.Errorf("gate(%v, %v, %v, %v) = %s, want %s", canonJSON(t, c.score), c.passed, c.block, c.revw, got, c.want)
		}
	}
	// The policy of the request is used.
	csv := "a\n1\n2\n\n"
	req := Request{SourceID: "s", Data: &Data{CSV: &csv}, Policy: &Policy{ReviewBelow: ptrOf(100.0)}}
	if res, _ := analyzeAt(req, testNow); res.Gating != GatingAllow {
		t.Errorf("score 100 with review_below 100: %s", res.Gating)
	}
	req.Checks = []Check{{Type: CheckBetween, Column: ptrOf("a"), Min: ptrOf(5.0)}}
	req.Policy = &Policy{BlockBelow: ptrOf(80.0)}
	if res, _ := analyzeAt(req, testNow); res.Gating != GatingBlock || res.Passed {
		t.Errorf("validity 0 with block_below 80: %s passed=%v score=%v", res.Gating, res.Passed, *res.Score)
	}
}

func TestOutliersMAD(t *testing.T) {
	mad := Check{Type: CheckOutliers, Column: ptrOf("x"), Method: ptrOf("mad")}
	// median 3, MAD 1: z(100) = 0.6745·97 > 3.5; z(1) = 1.349.
	res := analyzeCSV(t, "x\n1\n2\n3\n4\n100\n", mad)
	if c := res.Checks[0]; *c.UnexpectedCount != 1 || c.PartialUnexpectedIndexList[0] != 4 || c.Details["median"] != 3.0 || c.Details["mad"] != 1.0 {
		t.Errorf("MAD: %s", canonJSON(t, c))
	}
	// MAD 0: the scale is 1.2533 × mean absolute deviation (0.8), so z(9) = 0.6745·4/1.00264 = 2.69
	// is not an outlier (the contract keeps the 0.6745 factor).
	res = analyzeCSV(t, "x\n5\n5\n5\n5\n9\n", mad)
	if c := res.Checks[0]; *c.UnexpectedCount != 0 || math.Abs(c.Details["scale"].(float64)-1.2533*0.8) > 1e-12 {
		t.Errorf("MAD 0 fallback: %s", canonJSON(t, c))
	}
	// … and with a lower threshold it is.
	low := mad
	low.Threshold = ptrOf(2.5)
	if c := analyzeCSV(t, "x\n5\n5\n5\n5\n9\n", low).Checks[0]; *c.UnexpectedCount != 1 {
		t.Errorf("threshold 2.5: %s", canonJSON(t, c))
	}
	// All equal: no outliers; non-numeric values are unexpected; nulls are not.
	if c := analyzeCSV(t, "k,x\n1,5\n2,5\n3,abc\n4,\n5,5\n", mad).Checks[0]; *c.UnexpectedCount != 1 || c.PartialUnexpectedList[0] != "abc" || *c.MissingCount != 1 {
		t.Errorf("constant column: %s", canonJSON(t, c))
	}
	// Accuracy counts outliers among numeric values only: 1 of 4.
	if a := analyzeCSV(t, "x\n5\n5\nabc\n5\n5000\n", Check{Type: CheckOutliers, Column: ptrOf("x"), Method: ptrOf("iqr")}).Dimensions.Accuracy; a == nil || a.Score != 0.75 {
		t.Errorf("accuracy %v, want 0.75", canonJSON(t, a))
	}
}

func TestOutliersIQRMatchesNumpy(t *testing.T) {
	// numpy.percentile([1..9, 100], [25, 75]) = [3.25, 7.75]; fences −3.5 and 14.5.
	res := analyzeCSV(t, "x\n1\n2\n3\n4\n5\n6\n7\n8\n9\n100\n", Check{Type: CheckOutliers, Column: ptrOf("x"), Method: ptrOf("iqr")})
	c := res.Checks[0]
	if *c.UnexpectedCount != 1 || c.Details["q1"] != 3.25 || c.Details["q3"] != 7.75 || c.Details["lower_fence"] != -3.5 || c.Details["upper_fence"] != 14.5 {
		t.Errorf("IQR: %s", canonJSON(t, c))
	}
	// numpy: p05 of 1..9,100 = 1.45, p95 = 59.05 (linear).
	p := res.Profile.Columns[0]
	if *p.P05 != 1.45 || math.Abs(*p.P95-59.05) > 1e-12 || *p.P50 != 5.5 {
		t.Errorf("quantiles %v %v %v", *p.P05, *p.P50, *p.P95)
	}
}

func TestStatisticBetween(t *testing.T) {
	stat := func(name string, min, max *float64) Check {
		return Check{Type: CheckStatisticBetween, Column: ptrOf("x"), Statistic: &name, Min: min, Max: max}
	}
	res := analyzeCSV(t, "x,k\n1,a\n2,b\nx,c\n,d\n3,e\n4,f\n",
		stat("median", ptrOf(2.5), ptrOf(2.5)), stat("sum", nil, ptrOf(9.0)), stat("stddev", nil, nil),
		stat("min", ptrOf(1.0), nil), stat("mean", nil, nil))
	want := []struct {
		obs     float64
		success bool
	}{{2.5, true}, {10, false}, {math.Sqrt(5.0 / 3), true}, {1, true}, {2.5, true}}
	for i, w := range want {
		c := res.Checks[i]
		if c.ObservedValue != w.obs || c.Success != w.success || *c.MissingCount != 1 || c.UnexpectedCount != nil || c.UnexpectedPercent != nil {
			t.Errorf("check %d: %s, want observed %v success %v", i, canonJSON(t, c), w.obs, w.success)
		}
	}
	// One value: the sample standard deviation is null and the check fails.
	c := analyzeCSV(t, "x\n7\n", stat("stddev", nil, nil)).Checks[0]
	if c.ObservedValue != nil || c.Success {
		t.Errorf("stddev of one value: %s", canonJSON(t, c))
	}
	// Sums beyond the float64 range are null, never Inf.
	res = analyzeRecords(t, `[{"x": 1e308}, {"x": 1e308}]`, stat("sum", nil, nil))
	if res.Checks[0].ObservedValue != nil || res.Profile.Columns[0].Mean != nil {
		t.Errorf("overflow: %s", canonJSON(t, res.Checks[0]))
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("marshal: %v", err)
	}
}

func TestFreshness(t *testing.T) {
	asOf := "2026-01-10T00:00:00Z"
	csv := "ts,k\n2026-01-08,1\n2026-01-09T12:00:00Z,2\n2026-01-11T00:00:00Z,3\nnot a time,4\n,5\n"
	fresh := func(maxAge string) Check { return Check{Type: CheckFreshness, Column: ptrOf("ts"), MaxAge: &maxAge} }
	res, err := analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &csv}, AsOf: &asOf, Checks: []Check{fresh("1d"), fresh("6h")}}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	// The newest timestamp at or before as_of is 2026-01-09T12:00Z (the later one is ignored).
	if c := res.Checks[0]; c.ObservedValue != 43200.0 || !c.Success || *c.MissingCount != 1 || c.UnexpectedCount != nil {
		t.Errorf("1d: %s", canonJSON(t, c))
	}
	if c := res.Checks[1]; c.Success || res.Dimensions.Timeliness.Score != 0.5 {
		t.Errorf("6h: %s timeliness %v, want failure and 0.5", canonJSON(t, c), res.Dimensions.Timeliness.Score)
	}
	// No timestamp at or before as_of: observed null, failure, timeliness 0.
	csv = "ts\n2026-01-11\nx\n"
	res, _ = analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &csv}, AsOf: &asOf, Checks: []Check{fresh("1d")}}, testNow)
	if c := res.Checks[0]; c.ObservedValue != nil || c.Success || res.Dimensions.Timeliness.Score != 0 {
		t.Errorf("none: %s", canonJSON(t, c))
	}
	// Without as_of the request's Now is "now".
	csv = "ts\n2026-01-09T00:00:00Z\n"
	res, _ = analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &csv}, Checks: []Check{fresh("1d")}}, time.Date(2026, 1, 9, 1, 0, 0, 0, time.UTC))
	if res.Checks[0].ObservedValue != 3600.0 {
		t.Errorf("now: %v", res.Checks[0].ObservedValue)
	}
}

func TestColumnNotFound(t *testing.T) {
	res := analyzeCSV(t, "a,b\n1,\n2,3\n",
		Check{Type: CheckNotNull, Column: ptrOf("zzz")},
		Check{Type: CheckColumnComparison, Column: ptrOf("a"), Operator: ptrOf("<"), Other: ptrOf("nope")},
		Check{Type: CheckColumnsPresent, Columns: []string{"a", "nope", "zzz"}})
	for _, c := range res.Checks[:2] {
		if c.Success || c.Details["error"] != "column_not_found" || c.MissingCount != nil || c.UnexpectedCount != nil ||
			c.UnexpectedPercent != nil || c.ObservedValue != nil || len(c.PartialUnexpectedList) != 0 || c.ElementCount != 2 {
			t.Errorf("%s", canonJSON(t, c))
		}
	}
	if c := res.Checks[2]; c.Success || canonJSON(t, c.ObservedValue) != `["nope","zzz"]` || *c.MissingCount != 0 {
		t.Errorf("columns_present: %s", canonJSON(t, c))
	}
	// The not_null on a missing column feeds no dimension: completeness is over all columns.
	if d := res.Dimensions; d.Completeness.Score != 0.75 || d.Consistency != nil {
		t.Errorf("dimensions %s", canonJSON(t, d))
	}
}

func TestCompletenessCountsAColumnOnce(t *testing.T) {
	res := analyzeCSV(t, "a,b,c\n1,,\n,,\n3,4,\n",
		Check{Type: CheckNotNull, Column: ptrOf("a")}, Check{Type: CheckNotNull, Column: ptrOf("a"), Mostly: ptrOf(0.5)},
		Check{Type: CheckNotNull, Column: ptrOf("b")})
	// a: 2 of 3, b: 1 of 3 → 3/6; c (no not_null check) is not counted.
	if got := res.Dimensions.Completeness.Score; got != 0.5 {
		t.Errorf("completeness %v, want 0.5", got)
	}
	if !res.Checks[1].Success || res.Checks[0].Success {
		t.Errorf("mostly does not change the dimension but does the check: %v %v", res.Checks[0].Success, res.Checks[1].Success)
	}
}

func TestSignalsOnly(t *testing.T) {
	req := Request{SourceID: "s", AsOf: ptrOf("2026-01-04T00:00:00Z"), Signals: &Signals{
		Completeness: ptrOf(0.9), ErrorRate: ptrOf(0.1), LastUpdated: ptrOf("2026-01-01"), ExpectedUpdateInterval: ptrOf("1d")}}
	res, err := analyzeAt(req, testNow)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Dimensions
	if d.Completeness.Score != 0.9 || d.Accuracy.Score != 0.9 || math.Abs(d.Timeliness.Score-1.0/3) > 1e-15 || d.Validity != nil || d.Uniqueness != nil || d.Consistency != nil {
		t.Errorf("dimensions %s", canonJSON(t, d))
	}
	want := 100 * math.Exp((0.25*math.Log(0.9)+0.15*math.Log(1.0/3)+0.10*math.Log(0.9))/0.5)
	if math.Abs(*res.Score-want) > 1e-9 || res.Profile != nil || !res.Passed || res.Statistics.SuccessPercent != nil || len(res.Checks) != 0 {
		t.Errorf("signals only: %s (want score %v)", canonJSON(t, res), want)
	}
	// Empty signals: nothing measured.
	res, _ = analyzeAt(Request{SourceID: "s", Signals: &Signals{}}, testNow)
	if res.Score != nil || res.Tier != TierUnrated || res.Gating != GatingReview {
		t.Errorf("empty signals: %s", canonJSON(t, res))
	}
	// With data, the declared completeness is not used but error_rate and last_updated are.
	csv := "a,b\n1,\n"
	req.Data = &Data{CSV: &csv}
	res, _ = analyzeAt(req, testNow)
	if res.Dimensions.Completeness.Score != 0.5 || res.Dimensions.Accuracy.Score != 0.9 || res.Profile == nil {
		t.Errorf("data and signals: %s", canonJSON(t, res.Dimensions))
	}
}

func TestNoChecksAndNoRows(t *testing.T) {
	res := analyzeCSV(t, "a,b\n")
	if !res.Passed || res.Statistics.SuccessPercent != nil || res.Statistics.EvaluatedChecks != 0 || res.Profile.RowCount != 0 || res.Score != nil {
		t.Errorf("no checks, no rows: %s", canonJSON(t, res))
	}
	if c := res.Profile.Columns[0]; c.NullPercent != nil || c.InferredType != nil || c.DistinctCount != 0 || len(c.TopValues) != 0 {
		t.Errorf("empty column profile: %s", canonJSON(t, c))
	}
	res = analyzeCSV(t, "a,b\n", Check{Type: CheckNotNull, Column: ptrOf("a")}, Check{Type: CheckRowCountBetween, Min: ptrOf(1.0)})
	if c := res.Checks[0]; !c.Success || *c.UnexpectedCount != 0 || c.UnexpectedPercent != nil {
		t.Errorf("row check on no rows: %s", canonJSON(t, c))
	}
	if c := res.Checks[1]; c.Success || c.ObservedValue != 0 {
		t.Errorf("row_count_between: %s", canonJSON(t, c))
	}
	if *res.Statistics.SuccessPercent != 50 || res.Passed {
		t.Errorf("statistics %s", canonJSON(t, res.Statistics))
	}
	off := false
	csv := "a\n1\n"
	if r, _ := analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &csv}, Profile: &off}, testNow); r.Profile != nil {
		t.Error("profile: false must give a null profile")
	}
}

func TestProfileDetails(t *testing.T) {
	res := analyzeRecords(t, `[{"s": "b", "n": 1, "t": "2026-01-01", "m": 1, "o": {"k": 1}},
		{"s": "a", "n": 2.5, "t": "2026-01-02T00:00:00Z", "m": "x", "o": {"k": 2}},
		{"s": "a", "n": 1.0, "t": null, "m": true, "o": {"k": 1.0}},
		{"s": "b", "n": 4, "t": "2026-01-03", "o": {"k": 3}},
		{"s": "日本語", "n": 1, "t": "2026-01-03"}]`)
	byName := map[string]ColumnProfile{}
	for _, c := range res.Profile.Columns {
		byName[c.Name] = c
	}
	if got := strings.Join(slices.Collect(func(yield func(string) bool) {
		for _, c := range res.Profile.Columns {
			yield(c.Name)
		}
	}), ","); got != "s,n,t,m,o" {
		t.Errorf("columns %s", got)
	}
	s := byName["s"]
	// Ties by first appearance: b (row 0) before a (row 1).
	if canonJSON(t, s.TopValues) != `[{"count":2,"value":"b"},{"count":2,"value":"a"},{"count":1,"value":"日本語"}]` || *s.MinLength != 1 || *s.MaxLength != 3 || *s.InferredType != "string" {
		t.Errorf("s: %s", canonJSON(t, s))
	}
	n := byName["n"]
	if *n.InferredType != "number" || n.DistinctCount != 3 || *n.Mean != 1.9 || n.MinLength != nil || canonJSON(t, n.TopValues[0]) != `{"count":3,"value":1}` {
		t.Errorf("n: %s", canonJSON(t, n))
	}
	if tt := byName["t"]; *tt.InferredType != "timestamp" || tt.NullCount != 1 || *tt.NullPercent != 20 || *tt.MaxLength != 20 || tt.Mean != nil {
		t.Errorf("t: %s", canonJSON(t, tt))
	}
	if m := byName["m"]; *m.InferredType != "mixed" || m.NullCount != 2 {
		t.Errorf("m: %s", canonJSON(t, m))
	}
	// {"k": 1} and {"k": 1.0} are equal JSON values.
	if o := byName["o"]; *o.InferredType != "object" || o.DistinctCount != 3 {
		t.Errorf("o: %s", canonJSON(t, o))
	}
}

func TestColumnComparison(t *testing.T) {
	cmp := func(op string) Check {
		return Check{Type: CheckColumnComparison, Column: ptrOf("l"), Operator: &op, Other: ptrOf("r")}
	}
	csv := "l,r\n" +
		"2026-01-01T10:00:00+02:00,2026-01-01T09:00:00Z\n" + // instants: 08:00Z < 09:00Z (text says the opposite)
		"2026-01-02,2026-01-01T23:59:59Z\n" + // date vs date-time: 00:00Z > 23:59:59Z the day before
		"10,9\n" + // numbers: 10 > 9 (text says the opposite)
		"1.0,1\n" + // numbers: equal
		"5,abc\n" + // a number against a non-number: unexpected for every operator
		"abc,abd\n" + // strings by code points
		"é,z\n" + // é (U+00E9) > z (U+007A)
		",x\n" // missing
	res := analyzeCSV(t, csv, cmp("<"), cmp("=="), cmp("!="), cmp(">="))
	want := []struct {
		u     int
		index []int
	}{
		{5, []int{1, 2, 3, 4, 6}}, // < holds for rows 0 and 5 only
		{6, []int{0, 1, 2, 4, 5, 6}},
		{2, []int{3, 4}},
		{3, []int{0, 4, 5}},
	}
	for i, w := range want {
		c := res.Checks[i]
		if *c.UnexpectedCount != w.u || !slices.Equal(c.PartialUnexpectedIndexList, w.index) || *c.MissingCount != 1 {
			t.Errorf("%s: %s, want %d at %v", *res.Checks[i].Column, canonJSON(t, c), w.u, w.index)
		}
	}
	if got := canonJSON(t, res.Checks[0].PartialUnexpectedList[0]); got != `["2026-01-02","2026-01-01T23:59:59Z"]` {
		t.Errorf("pair %s", got)
	}
	if d := res.Dimensions.Consistency.Score; math.Abs(d-(1-16.0/28)) > 1e-15 {
		t.Errorf("consistency %v", d)
	}
	// JSON: booleans support == and != only.
	res = analyzeRecords(t, `[{"l": true, "r": true}, {"l": true, "r": false}, {"l": "1", "r": 1}]`, cmp("=="), cmp("<="))
	if *res.Checks[0].UnexpectedCount != 2 || *res.Checks[1].UnexpectedCount != 3 {
		t.Errorf("JSON comparisons: %d %d", *res.Checks[0].UnexpectedCount, *res.Checks[1].UnexpectedCount)
	}
}

func TestUniqueAndCompoundUnique(t *testing.T) {
	csv := "a,b\n1,x\n1,x\n1,\n2,x\n,x\n2,y\n3,z\n"
	res := analyzeCSV(t, csv, Check{Type: CheckUnique, Column: ptrOf("a")}, Check{Type: CheckCompoundUnique, Columns: []string{"a", "b"}},
		Check{Type: CheckCompoundUnique, Columns: []string{"b"}})
	if c := res.Checks[0]; *c.UnexpectedCount != 5 || *c.MissingCount != 1 || !slices.Equal(c.PartialUnexpectedIndexList, []int{0, 1, 2, 3, 5}) {
		t.Errorf("unique: %s", canonJSON(t, c))
	}
	if c := res.Checks[1]; *c.UnexpectedCount != 2 || *c.MissingCount != 2 || canonJSON(t, c.PartialUnexpectedList) != `[["1","x"],["1","x"]]` {
		t.Errorf("compound_unique: %s", canonJSON(t, c))
	}
	if c := res.Checks[2]; *c.UnexpectedCount != 4 || *c.MissingCount != 1 {
		t.Errorf("compound_unique of one column: %s", canonJSON(t, c))
	}
	// uniqueness pools: (5 + 2 + 4) unexpected of (6 + 5 + 6) non-null.
	if u := res.Dimensions.Uniqueness.Score; math.Abs(u-(1-11.0/17)) > 1e-15 {
		t.Errorf("uniqueness %v", u)
	}
}

func TestValidityChecks(t *testing.T) {
	csv := "v,k\n0,1\n5,2\n10,3\n-1,4\nabc,5\n,6\n日本語,7\n"
	res := analyzeCSV(t, csv,
		Check{Type: CheckBetween, Column: ptrOf("v"), Min: ptrOf(0.0), Max: ptrOf(10.0)},
		Check{Type: CheckBetween, Column: ptrOf("v"), Min: ptrOf(0.0), Max: ptrOf(10.0), Strict: ptrOf(true)},
		Check{Type: CheckRegex, Column: ptrOf("v"), Pattern: ptrOf(`\d`)},
		Check{Type: CheckLengthBetween, Column: ptrOf("v"), Min: ptrOf(2.0), Max: ptrOf(3.0)},
		Check{Type: CheckInSet, Column: ptrOf("v"), Values: jsonValues(`0`, `"abc"`, `null`)})
	for i, want := range []int{3, 5, 2, 2, 4} {
		if c := res.Checks[i]; *c.UnexpectedCount != want || *c.MissingCount != 1 {
			t.Errorf("check %d (%s): unexpected %d, want %d", i, c.Type, *c.UnexpectedCount, want)
		}
	}
	// validity pools the five checks: 16 unexpected of 5 × 6 non-null values.
	if v := res.Dimensions.Validity.Score; v != 1-16.0/30 {
		t.Errorf("validity %v, want 1 − 16/30", v)
	}
}

// TestResultJSONShape: the marshalled result has exactly the contract's member names.
func TestResultJSONShape(t *testing.T) {
	req, _ := Generate(ScenarioDirty, 5, GenParams{Rows: 200})
	res, err := analyzeAt(req, testNow)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]jsontext.Value
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]jsontext.Value) string {
		var k []string
		for name := range m {
			k = append(k, name)
		}
		slices.Sort(k)
		return strings.Join(k, ",")
	}
	if got := keys(top); got != "checks,dimensions,gating,method_version,passed,profile,score,source_id,statistics,tier" {
		t.Errorf("top-level members: %s", got)
	}
	var dims map[string]jsontext.Value
	json.Unmarshal(top["dimensions"], &dims)
	if got := keys(dims); got != "accuracy,completeness,consistency,timeliness,uniqueness,validity" {
		t.Errorf("dimensions: %s", got)
	}
	var checks []map[string]jsontext.Value
	json.Unmarshal(top["checks"], &checks)
	if got := keys(checks[0]); got != "column,details,element_count,id,missing_count,observed_value,partial_unexpected_index_list,partial_unexpected_list,severity,success,type,unexpected_count,unexpected_percent,unexpected_percent_nonmissing,unexpected_percent_total" {
		t.Errorf("check members: %s", got)
	}
	var stats map[string]jsontext.Value
	json.Unmarshal(top["statistics"], &stats)
	if got := keys(stats); got != "evaluated_checks,success_percent,successful_checks,unsuccessful_checks" {
		t.Errorf("statistics: %s", got)
	}
	var prof struct {
		RowCount int                         `json:"row_count"`
		Columns  []map[string]jsontext.Value `json:"columns"`
	}
	json.Unmarshal(top["profile"], &prof)
	if got := keys(prof.Columns[0]); got != "distinct_count,inferred_type,max,max_length,mean,min,min_length,name,null_count,null_percent,p05,p50,p95,stddev,top_values" {
		t.Errorf("profile column: %s", got)
	}
	if res.MethodVersion != "meridian/2" {
		t.Errorf("method_version %s", res.MethodVersion)
	}
}
