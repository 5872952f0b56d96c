package meridian

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
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

// estimateAndRun returns req's estimate and a run of Analyze on it (which must succeed).
func estimateAndRun(t *testing.T, req Request) (engine.Cost, func()) {
	t.Helper()
	est, err := Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	return est, func() {
		if _, err := Analyze(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
}

// The ten-`[a-z]{1000}x`-on-300,000-letters request of the security review (21 s of CPU)
// is refused by Estimate and by Analyze in milliseconds, before any match runs.
func TestHeavyRegexIsRefusedBeforeItRuns(t *testing.T) {
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
	if took > 200*time.Millisecond {
		t.Errorf("Estimate and Analyze took %v: the matching ran", took)
	}
	t.Logf("estimate %v (%s), refused after %v: %s", est.CPU, est.Field, took, ie.Message)
}

// Ingestion of a body of n bytes never takes more heap than IngestPeak(n), and the bound is
// enforced: sparse records that would claim more are refused as they are read.
func TestIngestPeakBoundsSparseRecords(t *testing.T) {
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
	if testing.Short() {
		t.Skip("measures CPU for about 4 s; run without -short")
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
	if testing.Short() {
		t.Skip("measures CPU for about 2 s; run without -short")
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
	if testing.Short() {
		t.Skip("measures CPU for about 3 s; run without -short")
	}
	for _, f := range regexFamilies {
		for _, n := range []int{200, 20_000} {
			one, _ := analyzeRegex(f.pattern).matchNanos(n)
			count := int(max(1, min(20_000, float64(costTarget)/one, 4e6/float64(n))))
			estimateHolds(t, f.name+" n="+strconv.Itoa(n), regexCase{f, n, count}.request(t))
		}
	}
}
