package meridian

// An independent, deliberately naive implementation of the contract (row loops, string keys,
// sorting, regular expressions), run against the engine on random data in both formats.
// It shares no code with the engine except the JSON library.

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// refCell is one cell as the oracle sees it. For CSV only text and null are used.
type refCell struct {
	null bool
	lit  string // JSON literal ("" when the key is missing); CSV text
	kind byte   // JSON: '"', '0', 'b', 'o'; CSV: 't'
	str  string // JSON string content; CSV text
	num  float64
}

type refData struct {
	csv  bool
	cols []string
	rows [][]refCell // rows[r][c]
}

var (
	reInt     = regexp.MustCompile(`^[+-]?[0-9]+$`)
	reNum     = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	reDate    = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	reDateTim = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`)
)

func refTime(s string) (time.Time, bool) {
	switch {
	case reDate.MatchString(s):
		t, err := time.Parse("2006-01-02", s)
		return t, err == nil
	case reDateTim.MatchString(s):
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	return time.Time{}, false
}

func (c refCell) isString() bool { return !c.null && (c.kind == '"' || c.kind == 't') }

func (c refCell) number() (float64, bool) {
	switch {
	case c.null:
		return 0, false
	case c.kind == '0':
		return c.num, true
	case c.kind == 't' && reNum.MatchString(c.str):
		f, err := strconv.ParseFloat(c.str, 64)
		return f, err == nil && !math.IsInf(f, 0)
	}
	return 0, false
}

func (c refCell) timestamp() (time.Time, bool) {
	if !c.isString() {
		return time.Time{}, false
	}
	return refTime(c.str)
}

func (c refCell) hasType(t string) bool {
	if c.null {
		return false
	}
	switch t {
	case "string":
		return c.isString()
	case "number":
		_, ok := c.number()
		return ok
	case "integer":
		if c.kind == 't' {
			return reInt.MatchString(c.str)
		}
		return c.kind == '0' && c.num == math.Floor(c.num)
	case "boolean":
		if c.kind == 't' {
			return strings.EqualFold(c.str, "true") || strings.EqualFold(c.str, "false")
		}
		return c.kind == 'b'
	case "timestamp":
		_, ok := c.timestamp()
		return ok
	}
	return false
}

// key is the equality key: CSV text; JSON type and value (numbers numerically).
func (c refCell) key() string {
	switch c.kind {
	case 't':
		return "t" + c.str
	case '"':
		return "s" + c.str
	case '0':
		f := c.num
		if f == 0 {
			f = 0
		}
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(c.kind) + c.lit
}

// out is the value as the response shows it.
func (c refCell) out() any {
	switch {
	case c.null:
		return nil
	case c.kind == 't' || c.kind == '"':
		return c.str
	case c.kind == '0':
		if c.num == 0 {
			return 0.0 // −0 equals 0 and shows as 0
		}
		return c.num
	case c.kind == 'b':
		return c.lit == "true"
	}
	return jsontext.Value(c.lit)
}

func (d *refData) col(name string) int { return slices.Index(d.cols, name) }

// ---- random data ----

var (
	csvPools = [][]string{
		{"1", "2", "3", "-4", "+5", "007", "1.0", "1e1", " 4", "x", "", "", "10", "3"},
		{"2.50", "3.75", "1e-3", ".5", "5.", "-0", "0", "NaN", "Inf", "1e400", "0x10", "", "12.25", "99", "-7.5", "1000"},
		{"a", "b", "NA", "null", "None", "TRUE", "false", "True", "", "é", "😀x", "b", "a ", "ab"},
		{"2026-03-01T10:00:00Z", "2026-03-01T10:00:00.123+02:00", "2026-03-01", "2026-02-30", "2026-03-01t10:00:00z",
			"2026-03-01 10:00:00Z", "2026-13-01", "2026-03-01t10:00:00Z", "2026-03-01T10:00:00", "2026-03-02T23:59:59-05:00", "2026-03-05T00:00:00Z", "", "2025-12-31"},
		{"x", "xy", "héllo", "ünï", "日本語", "abc", "", "z", "Zebra", "apple", "Äpfel"},
		{"true", "false", "TRUE", "False", "yes", "", "0", "1"},
	}
	jsonPools = [][]string{
		{"1", "2", "3", "3.0", "3e0", "-0", "0", "2.5", "1e2", "100", `"3"`, "null", "", "10"},
		{"2.5", "3.75", "0.001", "-7.5", "1000", "12.25", `"12.25"`, "true", "null", "", "99", "-0.0"},
		{`"a"`, `"b"`, `"NA"`, `"null"`, `""`, `"TRUE"`, "false", `"é"`, `"a\"b"`, `"\u00e9"`, "null", `"ab"`},
		{`"2026-03-01T10:00:00Z"`, `"2026-03-01T10:00:00.123+02:00"`, `"2026-03-01"`, `"2026-02-30"`, `"2026-03-05T00:00:00Z"`,
			`"2026-03-02T23:59:59-05:00"`, "20260301", `"2026-03-01t10:00:00Z"`, `"2026-03-01T24:00:00Z"`, "null", "", `"2025-12-31"`},
		{`"x"`, `"xy"`, `"héllo"`, `"日本語"`, `{"a":1}`, `[1,2]`, `[]`, `"abc"`, `"Zebra"`, "1", "null"},
		{"true", "false", `"true"`, "null", "", "1", "0"},
	}
)

func randomData(r *rand.Rand, isCSV bool) *refData {
	ncol := 2 + r.IntN(5)
	n := r.IntN(120)
	switch r.IntN(8) {
	case 0:
		n = 0
	case 1:
		n = 1
	}
	pools := jsonPools
	if isCSV {
		pools = csvPools
	}
	d := &refData{csv: isCSV}
	which := make([]int, ncol)
	for j := range which {
		which[j] = r.IntN(len(pools))
		d.cols = append(d.cols, fmt.Sprintf("c%d_%d", j, which[j]))
	}
	for i := 0; i < n; i++ {
		row := make([]refCell, ncol)
		for j := range row {
			pool := pools[which[j]]
			lit := pool[r.IntN(len(pool))]
			if r.IntN(4) == 0 { // some fresh numbers so distinct counts vary
				if isCSV {
					lit = strconv.Itoa(r.IntN(50))
				} else {
					lit = strconv.FormatFloat(float64(r.IntN(500))/4, 'g', -1, 64)
				}
			}
			row[j] = makeCell(lit, isCSV)
		}
		d.rows = append(d.rows, row)
	}
	return d
}

func makeCell(lit string, isCSV bool) refCell {
	if isCSV {
		return refCell{null: lit == "", lit: lit, kind: 't', str: lit}
	}
	c := refCell{lit: lit}
	switch {
	case lit == "" || lit == "null":
		c.null = true
	case lit[0] == '"':
		s, err := strconv.Unquote(lit)
		if err != nil {
			panic(err)
		}
		c.kind, c.str = '"', s
	case lit == "true" || lit == "false":
		c.kind = 'b'
	case lit[0] == '{' || lit[0] == '[':
		c.kind = 'o'
	default:
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			panic(err)
		}
		c.kind, c.num = '0', f
	}
	return c
}

func (d *refData) request() Request {
	var data Data
	if d.csv {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		w.Write(d.cols)
		for _, row := range d.rows {
			rec := make([]string, len(row))
			for j, c := range row {
				rec[j] = c.lit
			}
			w.Write(rec)
		}
		w.Flush()
		s := b.String()
		data.CSV = &s
	} else {
		var b strings.Builder
		b.WriteByte('[')
		for i, row := range d.rows {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			first := true
			for j, c := range row {
				if c.lit == "" { // missing key
					continue
				}
				if !first {
					b.WriteByte(',')
				}
				first = false
				fmt.Fprintf(&b, "%q:%s", d.cols[j], c.lit)
			}
			b.WriteByte('}')
		}
		b.WriteByte(']')
		data.Records = jsontext.Value(b.String())
	}
	return Request{SourceID: "oracle", Data: &data}
}

// columnsSeen is the column list the engine should report: for JSON, columns that appear in
// at least one record, in order of first appearance.
func (d *refData) columnsSeen() []string {
	if d.csv {
		return d.cols
	}
	var out []string
	type pos struct{ row, col int }
	first := map[string]pos{}
	for i, row := range d.rows {
		for j, c := range row {
			if c.lit != "" {
				if _, ok := first[d.cols[j]]; !ok {
					first[d.cols[j]] = pos{i, j}
					out = append(out, d.cols[j])
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		pa, pb := first[a], first[b]
		if pa.row != pb.row {
			return pa.row - pb.row
		}
		return pa.col - pb.col
	})
	return out
}

func randomChecks(r *rand.Rand, d *refData) []Check {
	var out []Check
	cols := d.cols
	col := func() *string { return ptrOf(cols[r.IntN(len(cols))]) }
	num := func() *float64 {
		if r.IntN(3) == 0 {
			return nil
		}
		return ptrOf(float64(r.IntN(40)) - 5.5)
	}
	members := []string{`"a"`, `"b"`, `1`, `3`, `"3"`, `2.5`, `"2.50"`, `true`, `"TRUE"`, `null`, `{"a":1}`, `"x"`, `"NA"`, `"1.0"`}
	for k := 0; k < 14; k++ {
		c := Check{}
		if r.IntN(3) == 0 {
			c.Mostly = ptrOf(float64(r.IntN(11)) / 10)
		}
		switch r.IntN(15) {
		case 0:
			c.Type, c.Column = CheckNotNull, col()
		case 1:
			c.Type, c.Column = CheckUnique, col()
		case 2:
			c.Type, c.Columns = CheckCompoundUnique, []string{cols[0], cols[1]}
		case 3:
			c.Type, c.Column = CheckType, col()
			c.Expected = ptrOf(expectedTypes[r.IntN(len(expectedTypes))])
		case 4:
			c.Type, c.Column, c.Min, c.Max = CheckBetween, col(), num(), num()
			if c.Min != nil && c.Max != nil && *c.Min > *c.Max {
				c.Min, c.Max = c.Max, c.Min
			}
			if r.IntN(2) == 0 {
				c.Strict = ptrOf(true)
			}
		case 5:
			c.Type, c.Column = CheckInSet, col()
			for _, m := range members {
				if r.IntN(2) == 0 {
					c.Values = append(c.Values, jsontext.Value(m))
				}
			}
			if c.Values == nil {
				c.Values = []jsontext.Value{}
			}
		case 6:
			pats := []string{`^[a-z]+$`, `[0-9]`, `^.$`, `é`, `^$`, `(?i)true`}
			c.Type, c.Column, c.Pattern = CheckRegex, col(), ptrOf(pats[r.IntN(len(pats))])
		case 7:
			c.Type, c.Column = CheckLengthBetween, col()
			if r.IntN(2) == 0 {
				c.Min = ptrOf(float64(r.IntN(3)))
			}
			if r.IntN(2) == 0 {
				c.Max = ptrOf(float64(2 + r.IntN(4)))
			}
		case 8:
			c.Type, c.Column, c.Other = CheckColumnComparison, col(), col()
			c.Operator = ptrOf(operators[r.IntN(len(operators))])
		case 9:
			c.Type, c.Column = CheckOutliers, col()
			c.Method = ptrOf([]string{"mad", "iqr"}[r.IntN(2)])
			if r.IntN(3) == 0 {
				c.Threshold = ptrOf(0.5 + float64(r.IntN(10))/4)
			}
		case 10:
			c.Type, c.Min, c.Max = CheckRowCountBetween, ptrOf(float64(r.IntN(50))), nil
			if r.IntN(2) == 0 {
				c.Max = ptrOf(*c.Min + float64(r.IntN(100)))
			}
		case 11:
			c.Type, c.Columns = CheckColumnsPresent, []string{cols[0], "nope"}[:1+r.IntN(2)]
		case 12:
			c.Type, c.Column = CheckFreshness, col()
			c.MaxAge = ptrOf([]string{"1h", "36h", "2d", "90m", "400d"}[r.IntN(5)])
		case 13:
			c.Type, c.Column = CheckStatisticBetween, col()
			c.Statistic = ptrOf(statistics[r.IntN(len(statistics))])
			c.Min, c.Max = num(), num()
			if c.Min != nil && c.Max != nil && *c.Min > *c.Max {
				c.Min, c.Max = c.Max, c.Min
			}
		case 14:
			c.Type, c.Column = CheckNotNull, ptrOf("absent_column")
		}
		out = append(out, c)
	}
	return out
}

// ---- the oracle ----

type refResult struct {
	success             bool
	missing, unexpected *int
	percent             *float64
	list                []any
	index               []int
	observed            any
	colNotFound         bool
	dimKind             string // validity, uniqueness, consistency, accuracy, completeness, timeliness
	dimU, dimN          int
	timeliness          float64
}

func refQuantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	t := h - float64(lo)
	if lo+1 >= n || t == 0 {
		return sorted[lo]
	}
	a, b := sorted[lo], sorted[lo+1]
	if t >= 0.5 {
		return b - (b-a)*(1-t)
	}
	return a + (b-a)*t
}

func refStat(vals []float64, name string) *float64 {
	n := len(vals)
	s := slices.Clone(vals)
	sort.Float64s(s)
	var v float64
	switch {
	case n == 0:
		return nil
	case name == "min":
		v = s[0]
	case name == "max":
		v = s[n-1]
	case name == "median":
		v = refQuantile(s, 0.5)
	case name == "sum" || name == "mean":
		for _, x := range vals {
			v += x
		}
		if name == "mean" {
			v /= float64(n)
		}
	case name == "stddev":
		if n < 2 {
			return nil
		}
		m := 0.0
		for _, x := range vals {
			m += x
		}
		m /= float64(n)
		for _, x := range vals {
			v += (x - m) * (x - m)
		}
		v = math.Sqrt(v / float64(n-1))
	}
	return &v
}

func refCompare(a, b refCell, op string) bool {
	x, aNum := a.number()
	y, bNum := b.number()
	var c int
	switch {
	case aNum && bNum:
		c = cmpFloat(x, y)
	case aNum || bNum:
		return false
	default:
		ta, okA := a.timestamp()
		tb, okB := b.timestamp()
		switch {
		case okA && okB:
			c = ta.Compare(tb)
		case a.isString() && b.isString():
			c = strings.Compare(a.str, b.str)
		default:
			eq := a.key() == b.key()
			return op == "==" && eq || op == "!=" && !eq
		}
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case ">=":
		return c >= 0
	}
	return c > 0
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func inRange(x float64, min, max *float64, strict bool) bool {
	if min != nil && (x < *min || (strict && x == *min)) {
		return false
	}
	if max != nil && (x > *max || (strict && x == *max)) {
		return false
	}
	return true
}

func refCheck(d *refData, c Check, asOf time.Time) refResult {
	n := len(d.rows)
	seen := d.columnsSeen()
	var need []string
	switch c.Type {
	case CheckRowCountBetween, CheckColumnsPresent:
	case CheckCompoundUnique:
		need = c.Columns
	case CheckColumnComparison:
		need = []string{*c.Column, *c.Other}
	default:
		need = []string{*c.Column}
	}
	for _, name := range need {
		if !slices.Contains(seen, name) {
			return refResult{colNotFound: true, list: []any{}, index: []int{}}
		}
	}
	res := refResult{list: []any{}, index: []int{}}
	mostly := 1.0
	if c.Mostly != nil {
		mostly = *c.Mostly
	}
	intp := func(v int) *int { return &v }
	// row checks: bad(row) and missing(row)
	var bad func(i int) bool
	var isMissing func(i int) bool
	var show func(i int) any
	cell := func(i int, name string) refCell { return d.rows[i][d.col(name)] }
	if c.Column != nil && len(need) > 0 {
		name := *c.Column
		isMissing = func(i int) bool { return cell(i, name).null }
		show = func(i int) any { return cell(i, name).out() }
	}
	switch c.Type {
	case CheckNotNull:
		bad = isMissing
		res.dimKind = "completeness"
	case CheckUnique:
		cnt := map[string]int{}
		for i := 0; i < n; i++ {
			if v := cell(i, *c.Column); !v.null {
				cnt[v.key()]++
			}
		}
		bad = func(i int) bool { v := cell(i, *c.Column); return !v.null && cnt[v.key()] > 1 }
		res.dimKind = "uniqueness"
	case CheckCompoundUnique:
		tuple := func(i int) (string, bool) {
			var parts []string
			for _, name := range c.Columns {
				v := cell(i, name)
				if v.null {
					return "", false
				}
				parts = append(parts, v.key())
			}
			return strings.Join(parts, "\x00"), true
		}
		cnt := map[string]int{}
		for i := 0; i < n; i++ {
			if k, ok := tuple(i); ok {
				cnt[k]++
			}
		}
		isMissing = func(i int) bool { _, ok := tuple(i); return !ok }
		bad = func(i int) bool { k, ok := tuple(i); return ok && cnt[k] > 1 }
		show = func(i int) any {
			var out []any
			for _, name := range c.Columns {
				out = append(out, cell(i, name).out())
			}
			return out
		}
		res.dimKind = "uniqueness"
	case CheckType:
		bad = func(i int) bool { v := cell(i, *c.Column); return !v.null && !v.hasType(*c.Expected) }
		res.dimKind = "validity"
	case CheckBetween:
		bad = func(i int) bool {
			v := cell(i, *c.Column)
			x, ok := v.number()
			return !v.null && (!ok || !inRange(x, c.Min, c.Max, c.Strict != nil && *c.Strict))
		}
		res.dimKind = "validity"
	case CheckInSet:
		set := map[string]bool{}
		for _, m := range c.Values {
			lit := string(m)
			if d.csv {
				if lit == "null" {
					continue
				}
				if lit[0] == '"' {
					lit, _ = strconv.Unquote(lit)
				}
				set[makeCell(lit, true).key()] = true
			} else if mc := makeCell(lit, false); !mc.null {
				set[mc.key()] = true
			}
		}
		bad = func(i int) bool { v := cell(i, *c.Column); return !v.null && !set[v.key()] }
		res.dimKind = "validity"
	case CheckRegex:
		re := regexp.MustCompile(*c.Pattern)
		bad = func(i int) bool { v := cell(i, *c.Column); return !v.null && (!v.isString() || !re.MatchString(v.str)) }
		res.dimKind = "validity"
	case CheckLengthBetween:
		bad = func(i int) bool {
			v := cell(i, *c.Column)
			return !v.null && (!v.isString() || !inRange(float64(utf8.RuneCountInString(v.str)), c.Min, c.Max, false))
		}
		res.dimKind = "validity"
	case CheckColumnComparison:
		isMissing = func(i int) bool { return cell(i, *c.Column).null || cell(i, *c.Other).null }
		bad = func(i int) bool {
			return !isMissing(i) && !refCompare(cell(i, *c.Column), cell(i, *c.Other), *c.Operator)
		}
		show = func(i int) any { return []any{cell(i, *c.Column).out(), cell(i, *c.Other).out()} }
		res.dimKind = "consistency"
	case CheckOutliers:
		var vals []float64
		for i := 0; i < n; i++ {
			if x, ok := cell(i, *c.Column).number(); ok {
				vals = append(vals, x)
			}
		}
		sort.Float64s(vals)
		out := func(float64) bool { return false }
		if len(vals) > 0 {
			if *c.Method == "mad" {
				th := 3.5
				if c.Threshold != nil {
					th = *c.Threshold
				}
				m := refQuantile(vals, 0.5)
				var devs []float64
				meanAD := 0.0
				for _, x := range vals {
					devs = append(devs, math.Abs(x-m))
					meanAD += math.Abs(x - m)
				}
				meanAD /= float64(len(vals))
				sort.Float64s(devs)
				scale := refQuantile(devs, 0.5)
				if scale == 0 {
					scale = 1.2533 * meanAD
				}
				if scale > 0 {
					out = func(x float64) bool { return math.Abs(0.6745*(x-m)/scale) > th }
				}
			} else {
				th := 1.5
				if c.Threshold != nil {
					th = *c.Threshold
				}
				q1, q3 := refQuantile(vals, 0.25), refQuantile(vals, 0.75)
				lo, hi := q1-th*(q3-q1), q3+th*(q3-q1)
				out = func(x float64) bool { return x < lo || x > hi }
			}
		}
		bad = func(i int) bool {
			v := cell(i, *c.Column)
			x, ok := v.number()
			return !v.null && (!ok || out(x))
		}
		res.dimKind = "accuracy"
		for _, x := range vals {
			if out(x) {
				res.dimU++
			}
		}
		res.dimN = len(vals)
	case CheckRowCountBetween:
		res.missing = intp(0)
		res.observed = n
		res.success = inRange(float64(n), c.Min, c.Max, false)
		return res
	case CheckColumnsPresent:
		res.missing = intp(0)
		absent := []string{}
		for _, name := range c.Columns {
			if !slices.Contains(seen, name) {
				absent = append(absent, name)
			}
		}
		res.observed = absent
		res.success = len(absent) == 0
		return res
	case CheckFreshness:
		miss := 0
		var newest time.Time
		found := false
		for i := 0; i < n; i++ {
			v := cell(i, *c.Column)
			if v.null {
				miss++
			}
			if t, ok := v.timestamp(); ok && !t.After(asOf) && (!found || t.After(newest)) {
				newest, found = t, true
			}
		}
		res.missing = intp(miss)
		res.dimKind = "timeliness"
		if !found {
			return res
		}
		age := asOf.Sub(newest).Seconds()
		maxAge, _ := parseDurationRef(*c.MaxAge)
		res.observed = age
		res.success = age <= maxAge
		res.timeliness = 1
		if age > maxAge {
			res.timeliness = maxAge / age
		}
		return res
	case CheckStatisticBetween:
		miss := 0
		var vals []float64
		for i := 0; i < n; i++ {
			v := cell(i, *c.Column)
			if v.null {
				miss++
			}
			if x, ok := v.number(); ok {
				vals = append(vals, x)
			}
		}
		res.missing = intp(miss)
		if *c.Statistic == "distinct_count" || *c.Statistic == "distinct_ratio" {
			distinct := map[string]bool{}
			for i := 0; i < n; i++ {
				if v := cell(i, *c.Column); !v.null {
					distinct[v.key()] = true
				}
			}
			var obs float64
			switch {
			case *c.Statistic == "distinct_count":
				res.observed = len(distinct)
				obs = float64(len(distinct))
			case n-miss > 0:
				obs = float64(len(distinct)) / float64(n-miss)
				res.observed = obs
			default:
				return res
			}
			res.success = inRange(obs, c.Min, c.Max, false)
			return res
		}
		if s := refStat(vals, *c.Statistic); s != nil {
			res.observed = *s
			res.success = inRange(*s, c.Min, c.Max, false)
		}
		return res
	}
	miss, u, nonNullish := 0, 0, 0
	for i := 0; i < n; i++ {
		if isMissing(i) {
			miss++
		}
		if bad(i) {
			u++
			if len(res.index) < 20 {
				res.index = append(res.index, i)
				res.list = append(res.list, show(i))
			}
		}
	}
	nonNullish = n - miss
	res.missing, res.unexpected = intp(miss), intp(u)
	// meridian/2: the denominator is the non-null values (all rows for not_null).
	considered := n - miss
	if c.Type == CheckNotNull {
		considered = n
	}
	if considered > 0 {
		p := 100 * float64(u) / float64(considered)
		res.percent = &p
	}
	res.success = float64(u) <= (1-mostly)*float64(considered)+1e-9*float64(considered)
	if res.dimKind != "accuracy" {
		res.dimU, res.dimN = u, nonNullish
	}
	return res
}

func parseDurationRef(s string) (float64, bool) {
	if strings.HasSuffix(s, "d") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		return v * 86400, err == nil
	}
	d, err := time.ParseDuration(s)
	return d.Seconds(), err == nil
}

type refColumn struct {
	name                    string
	inferred                *string
	nulls, distinct         int
	min, max, p05, p50, p95 *float64
	mean, stddev            *float64
	minLen, maxLen          *int
	topValues               []any
	topCounts               []int
}

func refProfile(d *refData) []refColumn {
	var out []refColumn
	for _, name := range d.columnsSeen() {
		j := d.col(name)
		rc := refColumn{name: name}
		cnt := map[string]int{}
		var order []string
		firstCell := map[string]refCell{}
		var nonNull []refCell
		for _, row := range d.rows {
			v := row[j]
			if v.null {
				rc.nulls++
				continue
			}
			nonNull = append(nonNull, v)
			k := v.key()
			if cnt[k] == 0 {
				order = append(order, k)
				firstCell[k] = v
			}
			cnt[k]++
		}
		rc.distinct = len(cnt)
		if len(nonNull) > 0 {
			t := "mixed"
			for _, cand := range []string{"boolean", "integer", "number", "timestamp", "string"} {
				all := true
				for _, v := range nonNull {
					all = all && v.hasType(cand)
				}
				if all {
					t = cand
					break
				}
			}
			if t == "mixed" {
				objs, arrs := true, true
				for _, v := range nonNull {
					objs = objs && v.kind == 'o' && v.lit[0] == '{'
					arrs = arrs && v.kind == 'o' && v.lit[0] == '['
				}
				if objs {
					t = "object"
				} else if arrs {
					t = "array"
				}
			}
			rc.inferred = &t
			switch t {
			case "integer", "number":
				var vals []float64
				for _, v := range nonNull {
					x, _ := v.number()
					vals = append(vals, x)
				}
				rc.min, rc.max = refStat(vals, "min"), refStat(vals, "max")
				rc.mean, rc.stddev = refStat(vals, "mean"), refStat(vals, "stddev")
				sort.Float64s(vals)
				q := func(p float64) *float64 { v := refQuantile(vals, p); return &v }
				rc.p05, rc.p50, rc.p95 = q(0.05), q(0.5), q(0.95)
			case "string", "timestamp":
				lo, hi := math.MaxInt, 0
				for _, v := range nonNull {
					l := utf8.RuneCountInString(v.str)
					lo, hi = min(lo, l), max(hi, l)
				}
				rc.minLen, rc.maxLen = &lo, &hi
			}
		}
		sorted := slices.Clone(order)
		slices.SortStableFunc(sorted, func(a, b string) int { return cnt[b] - cnt[a] })
		for _, k := range sorted[:min(5, len(sorted))] {
			rc.topValues = append(rc.topValues, firstCell[k].out())
			rc.topCounts = append(rc.topCounts, cnt[k])
		}
		out = append(out, rc)
	}
	return out
}

// ---- comparison ----

func canonJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	jv := jsontext.Value(b)
	if err := jv.Canonicalize(); err != nil {
		t.Fatal(err)
	}
	return string(jv)
}

// closeRel compares sums computed in different orders: relative 1e-9, absolute 1e-12.
func closeRel(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-12
}

func eqFloatPtr(a, b *float64, exact bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if exact {
		return *a == *b
	}
	return closeRel(*a, *b)
}

func eqIntPtr(a, b *int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func TestOracleRandomData(t *testing.T) {
	asOf := time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC)
	for seed := uint64(1); seed <= 120; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		d := randomData(r, seed%2 == 0)
		req := d.request()
		req.Checks = randomChecks(r, d)
		if r.IntN(3) == 0 {
			req.Signals = &Signals{ErrorRate: ptrOf(float64(r.IntN(10)) / 100)}
		}
		res, err := evaluateOn(req, nil, asOf)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		name := fmt.Sprintf("seed %d (csv=%v, %d rows)", seed, d.csv, len(d.rows))
		// Checks.
		var valU, valN, uniU, uniN, conU, conN, outU, outN int
		var tl []float64
		complCols := map[string]bool{}
		for i, c := range req.Checks {
			want := refCheck(d, c, asOf)
			got := res.Checks[i]
			where := fmt.Sprintf("%s check %d (%s %s)", name, i, c.Type, canonJSON(t, c))
			if got.ID != fmt.Sprintf("check_%d", i) || got.Type != c.Type || got.ElementCount != len(d.rows) {
				t.Errorf("%s: id/type/element_count %q %q %d", where, got.ID, got.Type, got.ElementCount)
			}
			if want.colNotFound {
				if got.Success || got.Details["error"] != "column_not_found" || got.MissingCount != nil || got.UnexpectedCount != nil || got.ObservedValue != nil {
					t.Errorf("%s: want column_not_found, got %s", where, canonJSON(t, got))
				}
				continue
			}
			if got.Success != want.success {
				t.Errorf("%s: success %v, want %v (got %s)", where, got.Success, want.success, canonJSON(t, got))
			}
			if !eqIntPtr(got.MissingCount, want.missing) || !eqIntPtr(got.UnexpectedCount, want.unexpected) {
				t.Errorf("%s: missing/unexpected %v/%v, want %v/%v", where, canonJSON(t, got.MissingCount), canonJSON(t, got.UnexpectedCount), canonJSON(t, want.missing), canonJSON(t, want.unexpected))
			}
			if !eqFloatPtr(got.UnexpectedPercent, want.percent, true) {
				t.Errorf("%s: unexpected_percent %v, want %v", where, canonJSON(t, got.UnexpectedPercent), canonJSON(t, want.percent))
			}
			if !slices.Equal(got.PartialUnexpectedIndexList, want.index) || canonJSON(t, got.PartialUnexpectedList) != canonJSON(t, want.list) {
				t.Errorf("%s: partial lists %s %v, want %s %v", where, canonJSON(t, got.PartialUnexpectedList), got.PartialUnexpectedIndexList, canonJSON(t, want.list), want.index)
			}
			switch w := want.observed.(type) {
			case float64:
				g, ok := got.ObservedValue.(float64)
				if !ok || !closeRel(g, w) {
					t.Errorf("%s: observed %v, want %v", where, got.ObservedValue, w)
				}
			default:
				if canonJSON(t, got.ObservedValue) != canonJSON(t, want.observed) {
					t.Errorf("%s: observed %s, want %s", where, canonJSON(t, got.ObservedValue), canonJSON(t, want.observed))
				}
			}
			switch want.dimKind {
			case "completeness":
				complCols[*c.Column] = true
			case "validity":
				valU, valN = valU+want.dimU, valN+want.dimN
			case "uniqueness":
				uniU, uniN = uniU+want.dimU, uniN+want.dimN
			case "consistency":
				conU, conN = conU+want.dimU, conN+want.dimN
			case "accuracy":
				outU, outN = outU+want.dimU, outN+want.dimN
			case "timeliness":
				tl = append(tl, want.timeliness)
			}
		}
		// Dimensions and score.
		ratio := func(u, n int) *float64 {
			if n == 0 {
				return nil
			}
			v := 1 - float64(u)/float64(n)
			return &v
		}
		var compl *float64
		cols := d.columnsSeen()
		if len(complCols) > 0 {
			cols = nil
			for name := range complCols {
				cols = append(cols, name)
			}
		}
		if cells := len(cols) * len(d.rows); cells > 0 {
			nulls := 0
			for _, name := range cols {
				for _, row := range d.rows {
					if row[d.col(name)].null {
						nulls++
					}
				}
			}
			v := 1 - float64(nulls)/float64(cells)
			compl = &v
		}
		acc := ratio(outU, outN)
		if req.Signals != nil {
			v := 1 - *req.Signals.ErrorRate
			if acc == nil || v < *acc {
				acc = &v
			}
		}
		var tls *float64
		if len(tl) > 0 {
			v := slices.Min(tl)
			tls = &v
		}
		wantDims := []*float64{compl, ratio(valU, valN), ratio(uniU, uniN), ratio(conU, conN), tls, acc}
		gotDims := []*DimensionScore{res.Dimensions.Completeness, res.Dimensions.Validity, res.Dimensions.Uniqueness, res.Dimensions.Consistency, res.Dimensions.Timeliness, res.Dimensions.Accuracy}
		weights := []float64{.25, .25, .15, .10, .15, .10}
		var wsum, lsum float64
		for k := range wantDims {
			var g *float64
			if gotDims[k] != nil {
				g = &gotDims[k].Score
			}
			if !eqFloatPtr(g, wantDims[k], false) {
				t.Errorf("%s: dimension %d = %v, want %v", name, k, canonJSON(t, g), canonJSON(t, wantDims[k]))
			}
			if wantDims[k] != nil {
				wsum += weights[k]
				lsum += weights[k] * math.Log(math.Max(*wantDims[k], 0.01))
			}
		}
		if wsum > 0 {
			s := 100 * math.Exp(lsum/wsum)
			if res.Score == nil || !closeRel(*res.Score, s) {
				t.Errorf("%s: score %v, want %v", name, canonJSON(t, res.Score), s)
			}
		}
		// Profile.
		want := refProfile(d)
		if res.Profile == nil || res.Profile.RowCount != len(d.rows) || len(res.Profile.Columns) != len(want) {
			t.Fatalf("%s: profile %s, want %d columns", name, canonJSON(t, res.Profile), len(want))
		}
		for k, w := range want {
			g := res.Profile.Columns[k]
			where := fmt.Sprintf("%s column %s", name, w.name)
			if g.Name != w.name || g.NullCount != w.nulls || g.DistinctCount != w.distinct || canonJSON(t, g.InferredType) != canonJSON(t, w.inferred) {
				t.Errorf("%s: name/nulls/distinct/type %s %d %d %s, want %d %d %s", where, g.Name, g.NullCount, g.DistinctCount, canonJSON(t, g.InferredType), w.nulls, w.distinct, canonJSON(t, w.inferred))
			}
			for _, f := range []struct {
				name  string
				g, w  *float64
				exact bool
			}{{"min", g.Min, w.min, true}, {"max", g.Max, w.max, true}, {"p05", g.P05, w.p05, true}, {"p50", g.P50, w.p50, true},
				{"p95", g.P95, w.p95, true}, {"mean", g.Mean, w.mean, false}, {"stddev", g.Stddev, w.stddev, false}} {
				if !eqFloatPtr(f.g, f.w, f.exact) {
					t.Errorf("%s: %s %s, want %s", where, f.name, canonJSON(t, f.g), canonJSON(t, f.w))
				}
			}
			if !eqIntPtr(g.MinLength, w.minLen) || !eqIntPtr(g.MaxLength, w.maxLen) {
				t.Errorf("%s: lengths %s %s, want %s %s", where, canonJSON(t, g.MinLength), canonJSON(t, g.MaxLength), canonJSON(t, w.minLen), canonJSON(t, w.maxLen))
			}
			var gv []any
			var gc []int
			for _, tv := range g.TopValues {
				gv, gc = append(gv, tv.Value), append(gc, tv.Count)
			}
			if canonJSON(t, gv) != canonJSON(t, w.topValues) || !slices.Equal(gc, w.topCounts) {
				t.Errorf("%s: top values %s %v, want %s %v", where, canonJSON(t, gv), gc, canonJSON(t, w.topValues), w.topCounts)
			}
		}
	}
}
