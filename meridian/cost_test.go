package meridian

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
	"riskapi/internal/enginetest"
)

// A regexFamily is a kind of pattern with the values that cost it most: values that keep
// its threads alive to their end and never match early.
type regexFamily struct {
	name    string
	pattern string
	// value is the i-th distinct value of n bytes.
	value func(i, n int) string
}

// tagged is n bytes of filler ending with i written in the alphabet digits, so that every
// value is distinct while keeping the filler's kind.
func tagged(filler byte, digits string, i, n int) string {
	tag := []byte{}
	for v := i; ; v /= len(digits) {
		tag = append(tag, digits[v%len(digits)])
		if v < len(digits) {
			break
		}
	}
	if len(tag) >= n {
		return string(tag[:n])
	}
	return strings.Repeat(string(filler), n-len(tag)) + string(tag)
}

// lowerNoX are lowercase letters without x, y and z (`[a-z]{k}x` never matches them).
const lowerNoX = "abcdefghijklmnopqrstuvw"

// words100 is an alternation of 100 random six-letter lowercase words (few share a prefix,
// so the parser cannot factor them).
func words100() string {
	r := rand.New(rand.NewPCG(3, 4))
	ws := make([]string, 100)
	for i := range ws {
		w := make([]byte, 6)
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		ws[i] = string(w)
	}
	return strings.Join(ws, "|")
}

var regexFamilies = []regexFamily{
	// Tiny patterns: the backtracker on short values, the NFA on long ones.
	{"tiny [0-9]+ on letters", `[0-9]+`, func(i, n int) string { return tagged('a', lowerNoX, i, n) }},
	{"tiny e-mail, anchored", `^[a-z0-9._]+@[a-z0-9.-]+\.[a-z]{2,}$`, func(i, n int) string {
		return tagged('a', lowerNoX, i, max(n-7, 1)) + "@ex.com"
	}},
	// Repetitions: one thread per letter of the repetition on a run of letters.
	{"[a-z]{100}x on letters", `[a-z]{100}x`, func(i, n int) string { return tagged('a', lowerNoX, i, n) }},
	{"[a-z]{1000}x on letters", `[a-z]{1000}x`, func(i, n int) string { return tagged('a', lowerNoX, i, n) }},
	// Alternations: every word starts a thread at every position.
	{"alternation of 100 words", "(" + words100() + ")", func(i, n int) string { return tagged('A', "ABCDEFGHIJKLMNOPQRSTUVWXYZ", i, n) }},
	{"anchored alternation of statuses", `^(pending|paid|shipped|delivered|cancelled)$`, func(i, n int) string {
		return "pendin" + tagged('g', "abcdefghijklmnopqrstuvwxyz", i, max(n-6, 1))
	}},
	// A literal: a search, whose worst values hold near misses everywhere.
	{"literal on near misses", `needle`, func(i, n int) string { return strings.Repeat("needl", n/5) + tagged('a', lowerNoX, i, 4) }},
	// Anchored, one-pass.
	{"anchored ^[a-z]+$", `^[a-z]+$`, func(i, n int) string { return tagged('a', "abcdefghijklmnopqrstuvwxyz", i, n) }},
	{"anchored ^[0-9]{3}-[0-9]{4}$", `^[0-9]{3}-[0-9]{4}$`, func(i, n int) string { return "555-" + tagged('0', "0123456789", i, max(n-4, 1)) }},
}

// regexCase is a column of count distinct values of n bytes each, checked by one pattern.
type regexCase struct {
	family regexFamily
	n      int
	count  int
}

// request is the case as a request on a fed Dataset, without the profile.
func (c regexCase) request(t testing.TB) Request {
	var b strings.Builder
	b.WriteString("v\n")
	for i := range c.count {
		b.WriteString(c.family.value(i, c.n))
		b.WriteByte('\n')
	}
	ds := NewDataset()
	if err := ds.ReadCSV(strings.NewReader(b.String()), ','); err != nil {
		t.Fatal(err)
	}
	return Request{SourceID: "regex-cost", Dataset: ds, Profile: ptrOf(false), Now: testNow, Budget: time.Hour,
		Checks: []Check{{Type: CheckRegex, Column: ptrOf("v"), Pattern: ptrOf(c.family.pattern)}}}
}

// The ten-`[a-z]{1000}x`-on-300,000-letters request of the security review (21 s of CPU)
// is refused by Estimate and by Analyze in milliseconds, before any match runs.
func TestCostRefusesTheHeavyRegexBeforeItRuns(t *testing.T) {
	value := strings.Repeat("a", 300_000)
	records := `[{"v": "` + value + `"}]`
	req := Request{SourceID: "review", Data: &Data{Records: []byte(records)}, Now: testNow}
	for i := range 10 {
		req.Checks = append(req.Checks, Check{ID: ptrOf("re" + strconv.Itoa(i)), Type: CheckRegex, Column: ptrOf("v"), Pattern: ptrOf(`[a-z]{1000}x`)})
	}
	start := time.Now()
	est, err := Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	if est.CPU <= engine.DefaultSyncBudget || est.Field != "checks[0]" {
		t.Errorf("estimate %v for %s, want above %v for checks[0]", est.CPU, est.Field, engine.DefaultSyncBudget)
	}
	_, err = Analyze(context.Background(), req)
	took := time.Since(start)
	var ie *engine.InputError
	if !errors.As(err, &ie) || ie.Code != engine.CodeWorkLimitExceeded || ie.Field != "checks[0]" {
		t.Fatalf("Analyze: %v, want WORK_LIMIT_EXCEEDED at checks[0]", err)
	}
	if ie.Expected == "" || ie.Received == "" {
		t.Errorf("details: expected %q, received %q", ie.Expected, ie.Received)
	}
	if took > 200*time.Millisecond && !raceEnabled {
		t.Errorf("Estimate and Analyze took %v: the matching ran", took)
	}
	t.Logf("estimate %v (%s), refused after %v: %s", est.CPU, est.Field, took, ie.Message)
}

// Ingestion of a body of n bytes never takes more heap than IngestPeak(n), and the bound is
// enforced: sparse records that would claim more are refused as they are read.
func TestCostIngestBoundRefusesSparseRecords(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`[{`)
	for j := range MaxColumns {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"c` + strconv.Itoa(j) + `": 1`)
	}
	b.WriteString(`}`)
	b.WriteString(strings.Repeat(`,{}`, 40_000)) // 120 kB that would claim 160 MB of ids
	b.WriteString(`]`)
	ds := NewDataset()
	err := ds.ReadRecords(jsontext.NewDecoder(bytes.NewReader(b.Bytes())))
	var ie *engine.InputError
	if !errors.As(err, &ie) || ie.Code != codeData || !strings.HasPrefix(ie.Field, "data.records") {
		t.Fatalf("sparse records: %v, want INVALID_DATA", err)
	}
	if held, limit := ds.footprint(), ingestLimit(int64(b.Len())); held > limit+ingestBase {
		t.Errorf("refused only at %d bytes held, limit %d", held, limit)
	}
	t.Log(ie.Message)
}

// forget drops what Analyze keeps in a fed dataset between runs (numeric summaries, parsed
// timestamps), so that every measured run does the work the estimate counts.
func forget(ds *Dataset) {
	for _, c := range ds.cols {
		c.stats, c.times = nil, nil
	}
}

// costTarget is the CPU a measured case aims at: long enough that the process's other
// threads are noise, short enough that the cost tests stay within about 20 s.
const costTarget = 80 * time.Millisecond

// estimateHolds checks req's estimate against Analyze of req, repeated until the estimate
// reaches costTarget.
func estimateHolds(t *testing.T, name string, req Request) {
	t.Helper()
	est, err := Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	runs := int(max(1, min(2000, costTarget/max(est.CPU, time.Microsecond))))
	est.CPU *= time.Duration(runs)
	enginetest.EstimateHolds(t, name+" ×"+strconv.Itoa(runs), est, func() {
		for range runs {
			if req.Dataset != nil {
				forget(req.Dataset)
			}
			if _, err := Analyze(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// calibrationDataset reads rows rows of the calibration table.
func calibrationDataset(t testing.TB, rows int) *Dataset {
	ds := NewDataset()
	if err := ds.ReadCSV(bytes.NewReader(calibrationTable(rows)), ','); err != nil {
		t.Fatal(err)
	}
	return ds
}

// checkTypeCases are one case per check type (two where the type has two regimes), on the
// calibration table.
func checkTypeCases() []struct {
	name  string
	check Check
} {
	col := func(s string) *string { return &s }
	return []struct {
		name  string
		check Check
	}{
		{"not_null", Check{Type: CheckNotNull, Column: col("id")}},
		{"unique", Check{Type: CheckUnique, Column: col("num")}},
		{"compound_unique of ten-value columns", Check{Type: CheckCompoundUnique, Columns: []string{"cat", "cat2"}}},
		{"compound_unique of distinct columns", Check{Type: CheckCompoundUnique, Columns: []string{"num", "num2"}}},
		{"compound_unique, nulls as values", Check{Type: CheckCompoundUnique, Columns: []string{"id", "cat", "cat2"}, IgnoreRowIf: col("all_values_are_missing")}},
		{"type", Check{Type: CheckType, Column: col("num"), Expected: col("integer")}},
		{"between", Check{Type: CheckBetween, Column: col("num"), Min: ptrOf(0.0), Max: ptrOf(1000.0)}},
		{"in_set", Check{Type: CheckInSet, Column: col("flag"), Values: jsonValues(`"y"`)}},
		{"regex", Check{Type: CheckRegex, Column: col("txt"), Pattern: col(`^x+[0-9]+$`)}},
		{"length_between", Check{Type: CheckLengthBetween, Column: col("txt"), Min: ptrOf(1.0), Max: ptrOf(59.0)}},
		{"column_comparison of timestamps", Check{Type: CheckColumnComparison, Column: col("ts2"), Operator: col(">"), Other: col("ts")}},
		{"column_comparison of numbers", Check{Type: CheckColumnComparison, Column: col("num"), Operator: col("<"), Other: col("num2")}},
		{"outliers iqr", Check{Type: CheckOutliers, Column: col("num"), Method: col("iqr")}},
		{"outliers mad", Check{Type: CheckOutliers, Column: col("num"), Method: col("mad")}},
		{"row_count_between", Check{Type: CheckRowCountBetween, Min: ptrOf(1.0)}},
		{"columns_present", Check{Type: CheckColumnsPresent, Columns: []string{"id", "num", "nope"}}},
		{"freshness", Check{Type: CheckFreshness, Column: col("ts"), MaxAge: col("1d")}},
		{"statistic_between", Check{Type: CheckStatisticBetween, Column: col("num"), Statistic: col("median")}},
		{"null", Check{Type: CheckNull, Column: col("txt")}},
		{"not_in_set", Check{Type: CheckNotInSet, Column: col("flag"), Values: jsonValues(`"n"`, `"z"`)}},
		{"not_regex", Check{Type: CheckNotRegex, Column: col("txt"), Pattern: col(`^x+[0-9]+5$`)}},
		{"regex with three patterns, match_on all", Check{Type: CheckRegex, Column: col("txt"), Patterns: []string{`^x+`, `[0-9]+$`, `7`}, MatchOn: col("all")}},
		{"unique_within_record of two distinct columns", Check{Type: CheckUniqueWithinRecord, Columns: []string{"num", "num2"}}},
		{"unique_within_record of four columns", Check{Type: CheckUniqueWithinRecord, Columns: []string{"cat", "cat2", "flag", "id"}}},
		{"column_comparison, both_values_are_missing", Check{Type: CheckColumnComparison, Column: col("num"), Operator: col("!="), Other: col("num2"), IgnoreRowIf: col("both_values_are_missing")}},
		{"columns_present exact", Check{Type: CheckColumnsPresent, Columns: []string{"id", "num"}, Exact: ptrOf(true)}},
		{"statistic_between distinct_ratio", Check{Type: CheckStatisticBetween, Column: col("cat"), Statistic: col("distinct_ratio"), Max: ptrOf(0.5)}},
	}
}

// copiesOf is req with as many copies of check (up to MaxChecks) as make the estimate
// reach costTarget: cheap checks are measured over many copies, costly ones alone.
func copiesOf(t *testing.T, check Check, req Request) Request {
	t.Helper()
	req.Checks = []Check{check}
	one, err := Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Checks = nil
	for i := range int(max(1, min(MaxChecks, costTarget/one.CPU))) {
		check.ID = ptrOf("c" + strconv.Itoa(i))
		req.Checks = append(req.Checks, check)
	}
	return req
}

// Every check type's estimate is within 3× of its measured CPU (cost tests do not run in
// parallel: they measure the process's CPU).
func TestCostEstimateHoldsForEveryCheckType(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures CPU for about 4 s; run without -short and -race")
	}
	ds := calibrationDataset(t, 200_000)
	for _, c := range checkTypeCases() {
		estimateHolds(t, c.name, copiesOf(t, c.check, Request{SourceID: "cost", Dataset: ds, Profile: ptrOf(false), Now: testNow}))
	}
	estimateHolds(t, "profile", Request{SourceID: "cost", Dataset: ds, Now: testNow})
}

// Every scenario of the generator, in both formats, at the default size and at 50,000
// rows: reading the inline data, 12 checks and the profile.
func TestCostEstimateHoldsForEveryScenario(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures CPU for about 2 s; run without -short and -race")
	}
	for _, sc := range TestModeScenarios() {
		for _, format := range []string{FormatCSV, FormatRecords} {
			for _, rows := range []int{0, 50_000} {
				req, _ := Generate(sc, 7, GenParams{Rows: rows, Format: format})
				estimateHolds(t, sc+" "+format+" rows="+strconv.Itoa(rows), req)
			}
		}
	}
}

// Every regex pattern family, on short values and on long ones.
func TestCostEstimateHoldsForRegexFamilies(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures CPU for about 3 s; run without -short and -race")
	}
	for _, f := range regexFamilies {
		for _, n := range []int{200, 20_000} {
			one, _ := analyzeRegex(f.pattern).matchNanos(n)
			count := int(max(1, min(20_000, float64(costTarget)/one, 4e6/float64(n))))
			estimateHolds(t, f.name+" n="+strconv.Itoa(n), regexCase{f, n, count}.request(t))
		}
	}
}

// A value read through runeReader (as long values are, so that a cancel stops the match)
// matches exactly as the value itself.
func TestRuneReaderMatchesAsBytes(t *testing.T) {
	t.Parallel()
	patterns := []string{`^$`, `\bfoo\b`, `(?m)^ab$`, `(?i)straße`, `[^a-z]`, `.`, `\x{FFFD}`, `^é+$`, `a*?b`, `(a|ab)(c|bcd)(d*)`, `\Bb`, `z\z`}
	for _, f := range regexFamilies {
		patterns = append(patterns, f.pattern)
	}
	values := []string{"", "foo", "a foo b", "ab\nab", "STRASSE", "straße", "ééé", "\xff\xfe", "a\xffb", "abcd", "zz", "日本語 foo",
		strings.Repeat("ab", 500) + "c", tagged('a', lowerNoX, 5, 300)}
	for i := range 40 {
		values = append(values, regexFamilies[i%len(regexFamilies)].value(i, 1+i*37%300))
	}
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		for _, v := range values {
			for _, every := range []int{1, 3, ctxEvery} {
				rr := runeReader{b: []byte(v), ctx: context.Background(), every: every}
				if got, want := re.MatchReader(&rr), re.MatchString(v); got != want {
					t.Errorf("%#q on %.30q (every %d): reader %v, bytes %v", p, v, every, got, want)
				}
			}
		}
	}
}

// The shape of a pattern bounds the threads Go's regexp keeps alive: the figures the model
// relies on for the pattern families.
func TestCostRegexShapes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern string
		threads float64 // at least
		steps   int
		onepass bool
		literal bool
	}{
		{`[a-z]{1000}x`, 1000, -1, false, false},
		{`^[a-z]{1000}x$`, 1, 1002, false, false},
		{`^[a-z]+$`, 1, -1, true, false},
		{`^(pending|paid|shipped|delivered|cancelled)$`, 1, 10, true, false},
		{"(" + words100() + ")", 100, -1, false, false},
		{`foo`, 0, -1, false, true},
	} {
		sh := analyzeRegex(c.pattern)
		if sh.threads < c.threads || sh.steps != c.steps || sh.onepass != c.onepass || sh.literal != c.literal {
			t.Errorf("%.40s: %+v, want threads ≥ %v, steps %d, onepass %v, literal %v", c.pattern, sh, c.threads, c.steps, c.onepass, c.literal)
		}
	}
}

// The Memory of Estimate covers the peak heap of Analyze beyond the request and a fed
// Dataset (with inline data, the dataset it builds), within 3× (plus 4 MiB).
func TestCostMemoryEstimateHolds(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures the heap for about 3 s; run without -short and -race")
	}
	memoryHolds := func(name string, req Request) {
		t.Helper()
		est, err := Estimate(req)
		if err != nil {
			t.Fatal(err)
		}
		if req.Dataset != nil {
			forget(req.Dataset)
		}
		enginetest.MemoryEstimateHolds(t, name, est, func() {
			if _, err := Analyze(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, format := range []string{FormatCSV, FormatRecords} {
		req, _ := Generate(ScenarioDirty, 3, GenParams{Rows: 40_000, Format: format})
		memoryHolds("dirty "+format+" 40,000 rows, inline", req)
	}
	ds := calibrationDataset(t, 100_000)
	fed := func(checks ...Check) Request {
		return Request{SourceID: "memory", Dataset: ds, Profile: ptrOf(false), Now: testNow, Checks: checks}
	}
	col := func(s string) *string { return &s }
	memoryHolds("compound_unique of distinct columns", fed(Check{Type: CheckCompoundUnique, Columns: []string{"num", "num2", "id"}}))
	memoryHolds("outliers mad", fed(Check{Type: CheckOutliers, Column: col("num"), Method: col("mad")}))
	memoryHolds("freshness and column_comparison", fed(Check{Type: CheckFreshness, Column: col("ts"), MaxAge: col("1d")},
		Check{ID: col("cmp"), Type: CheckColumnComparison, Column: col("ts2"), Operator: col(">"), Other: col("ts")}))
	profiled := fed()
	profiled.Profile = nil
	memoryHolds("profile", profiled)
	// Ten checks that every value fails list the same eight long values: each is copied once.
	long := regexCase{regexFamily{"never", `^[a-w]+$x`, regexFamilies[3].value}, 300_000, 8}.request(t)
	for i := range 9 {
		long.Checks = append(long.Checks, Check{ID: ptrOf("re" + strconv.Itoa(i)), Type: CheckRegex, Column: ptrOf("v"), Pattern: ptrOf(`^[a-w]+$x`)})
	}
	memoryHolds("partial lists of 300,000-letter values", long)
}

// ingestShape is a table whose reading the ingestion bound must cover.
type ingestShape struct {
	name       string
	cols, rows int
	value      func(i, j int) string
}

var ingestShapes = []ingestShape{
	{"4 columns × 200,000 distinct base-36 numbers", 4, 200_000, func(i, _ int) string { return strconv.FormatInt(int64(i), 36) }},
	{"1,000 columns × 2,000 distinct numbers", 1000, 2_000, func(i, _ int) string { return strconv.Itoa(i) }},
	{"1,000 columns × 4,000 repeated digits", 1000, 4_000, func(i, j int) string { return strconv.Itoa((i * (j + 1)) % 10) }},
	{"1,000 columns × 8,000 nulls", 1000, 8_000, func(int, int) string { return "" }},
	{"2 columns × 40,000 distinct 100-character strings", 2, 40_000, func(i, _ int) string { return tagged('x', "0123456789", i, 100) }},
}

func (s ingestShape) csv() []byte {
	var b bytes.Buffer
	header(&b, s.cols)
	for i := range s.rows {
		for j := range s.cols {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.value(i, j))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Reading a body of n bytes, as CSV or as records, never takes more heap than IngestPeak(n)
// (measured peak heap growth of ReadCSV and ReadRecords).
func TestCostIngestPeakHolds(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("reads about 150 MB of data, measuring the heap; run without -short and -race")
	}
	check := func(name string, body []byte, read func(ds *Dataset) error) {
		t.Helper()
		ds := NewDataset()
		peak := enginetest.MeasurePeakHeap(t, func() {
			if err := read(ds); err != nil {
				t.Fatal(err)
			}
		})
		bound := IngestPeak(int64(len(body)))
		t.Logf("%s: %d bytes, peak %d (%.2f per byte), column store %d, bound %d (%.1f×)", name, len(body), peak,
			float64(peak)/float64(len(body)), ds.footprint(), bound, float64(bound)/float64(peak))
		if peak > bound {
			t.Errorf("%s: peak heap %d above IngestPeak %d", name, peak, bound)
		}
	}
	var orders bytes.Buffer
	if err := WriteOrdersCSV(&orders, 100_000, 1); err != nil {
		t.Fatal(err)
	}
	shapes := append(ingestShapes, ingestShape{name: "orders, 100,000 rows"})
	for _, s := range shapes {
		csv := orders.Bytes()
		if s.value != nil {
			csv = s.csv()
		}
		check(s.name+", CSV", csv, func(ds *Dataset) error { return ds.ReadCSV(bytes.NewReader(csv), ',') })
		records := csvRecords(csv, true)
		check(s.name+", records", records, func(ds *Dataset) error {
			return ds.ReadRecords(jsontext.NewDecoder(bytes.NewReader(records)))
		})
	}
}

// Held-out shapes, not used to fit the constants: the benchmark's orders table as CSV and as
// records, a wide table, JSON values of every type, and patterns of other families.
func TestCostEstimateHoldsHeldOut(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures CPU for about 3 s; run without -short and -race")
	}
	var orders bytes.Buffer
	if err := WriteOrdersCSV(&orders, 150_000, 2); err != nil {
		t.Fatal(err)
	}
	csv := orders.String()
	estimateHolds(t, "orders CSV, 150,000 rows, benchmark checks", Request{SourceID: "orders", Data: &Data{CSV: &csv}, Checks: OrdersChecks(), Now: OrdersAsOf})
	estimateHolds(t, "orders records, 150,000 rows, benchmark checks",
		Request{SourceID: "orders", Data: &Data{Records: csvRecords(orders.Bytes(), true)}, Checks: OrdersChecks(), Now: OrdersAsOf})
	wide := string(ingestShape{"wide", 1000, 300, func(i, j int) string { return strconv.Itoa(i*7 + j) }}.csv())
	estimateHolds(t, "1,000 columns × 300 rows, profile and checks", Request{SourceID: "wide", Data: &Data{CSV: &wide}, Now: testNow,
		Checks: []Check{{Type: CheckUnique, Column: ptrOf("c1")}, {Type: CheckCompoundUnique, Columns: []string{"c1", "c2", "c3"}},
			{Type: CheckOutliers, Column: ptrOf("c4"), Method: ptrOf("mad")}, {Type: CheckColumnComparison, Column: ptrOf("c5"), Operator: ptrOf("<"), Other: ptrOf("c6")}}})
	var mixed strings.Builder
	mixed.WriteString("[")
	for i := range 30_000 {
		if i > 0 {
			mixed.WriteString(",")
		}
		mixed.WriteString(`{"n": ` + strconv.Itoa(i%977) + `.5, "b": ` + strconv.FormatBool(i%3 == 0) + `, "s": "v` + strconv.Itoa(i) +
			`", "o": {"k": ` + strconv.Itoa(i%50) + `}, "a": [` + strconv.Itoa(i%7) + `], "t": "2026-01-0` + strconv.Itoa(1+i%9) + `"}`)
	}
	mixed.WriteString("]")
	estimateHolds(t, "records of every JSON type, 30,000 rows", Request{SourceID: "mixed", Data: &Data{Records: []byte(mixed.String())}, Now: testNow,
		Checks: []Check{{Type: CheckType, Column: ptrOf("n"), Expected: ptrOf("number")}, {Type: CheckInSet, Column: ptrOf("o"), Values: jsonValues(`{"k": 1}`)},
			{Type: CheckRegex, Column: ptrOf("s"), Pattern: ptrOf(`^v[0-9]+$`)}, {Type: CheckFreshness, Column: ptrOf("t"), MaxAge: ptrOf("30d")}}})
	for _, f := range []regexFamily{
		{"(?i)hello\\s+world on letters", `(?i)hello\s+world`, func(i, n int) string { return tagged('h', lowerNoX, i, n) }},
		{".*x.*y on capitals", `.*x.*y`, func(i, n int) string { return tagged('A', "ABCDEFGHIJKLMNOPQRSTUVWXYZ", i, n) }},
		{"(a|b)*c on ab", `(a|b)*c`, func(i, n int) string { return tagged('a', "ab", i, n) }},
		{"^\\w+@\\w+\\.com$ on addresses", `^\w+@\w+\.com$`, func(i, n int) string { return tagged('u', lowerNoX, i, max(n-9, 1)) + "@mail.com" }},
		{"[0-9]+-[0-9]+ on digits", `[0-9]+-[0-9]+`, func(i, n int) string { return tagged('1', "0123456789", i, n) }},
		{"^(?:[a-z]{3}[0-9]{2})+$ on codes", `^(?:[a-z]{3}[0-9]{2})+$`, func(i, n int) string { return strings.Repeat("abc12", n/5) + tagged('a', lowerNoX, i, 3) }},
	} {
		for _, n := range []int{100, 5_000} {
			one, _ := analyzeRegex(f.pattern).matchNanos(n)
			count := int(max(1, min(20_000, float64(costTarget)/one, 4e6/float64(n))))
			estimateHolds(t, f.name+" n="+strconv.Itoa(n), regexCase{f, n, count}.request(t))
		}
	}
}
