package meridian

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

// Check types, in the order of the contract.
const (
	CheckNotNull          = "not_null"
	CheckUnique           = "unique"
	CheckCompoundUnique   = "compound_unique"
	CheckType             = "type"
	CheckBetween          = "between"
	CheckInSet            = "in_set"
	CheckRegex            = "regex"
	CheckLengthBetween    = "length_between"
	CheckColumnComparison = "column_comparison"
	CheckOutliers         = "outliers"
	CheckRowCountBetween  = "row_count_between"
	CheckColumnsPresent   = "columns_present"
	CheckFreshness        = "freshness"
	CheckStatisticBetween = "statistic_between"

	// Check types of meridian/2, for Great Expectations suites.
	CheckNull               = "null"
	CheckNotInSet           = "not_in_set"
	CheckNotRegex           = "not_regex"
	CheckUniqueWithinRecord = "unique_within_record"
)

// CheckTypes lists the check types Analyze accepts.
func CheckTypes() []string {
	return []string{CheckNotNull, CheckUnique, CheckCompoundUnique, CheckType, CheckBetween, CheckInSet,
		CheckRegex, CheckLengthBetween, CheckColumnComparison, CheckOutliers, CheckRowCountBetween,
		CheckColumnsPresent, CheckFreshness, CheckStatisticBetween,
		CheckNull, CheckNotInSet, CheckNotRegex, CheckUniqueWithinRecord}
}

// checkParams lists the parameters each check type takes (besides id, type, mostly, severity).
var checkParams = map[string][]string{
	CheckNotNull:          {"column"},
	CheckUnique:           {"column"},
	CheckCompoundUnique:   {"columns", "ignore_row_if"},
	CheckType:             {"column", "expected"},
	CheckBetween:          {"column", "min", "max", "strict", "strict_min", "strict_max"},
	CheckInSet:            {"column", "values"},
	CheckRegex:            {"column", "pattern", "patterns", "match_on"},
	CheckLengthBetween:    {"column", "min", "max", "strict_min", "strict_max"},
	CheckColumnComparison: {"column", "operator", "other", "ignore_row_if"},
	CheckOutliers:         {"column", "method", "threshold"},
	CheckRowCountBetween:  {"min", "max", "strict_min", "strict_max"},
	CheckColumnsPresent:   {"columns", "exact"},
	CheckFreshness:        {"column", "max_age"},
	CheckStatisticBetween: {"column", "statistic", "min", "max", "strict_min", "strict_max"},

	CheckNull:               {"column"},
	CheckNotInSet:           {"column", "values"},
	CheckNotRegex:           {"column", "pattern", "patterns", "match_on"},
	CheckUniqueWithinRecord: {"columns", "ignore_row_if"},
}

// Default outlier thresholds.
const (
	DefaultMADThreshold = 3.5
	DefaultIQRThreshold = 1.5
)

var (
	expectedTypes = []string{"string", "number", "integer", "boolean", "timestamp"}
	operators     = []string{"<", "<=", "==", "!=", ">=", ">"}
	statistics    = []string{"mean", "median", "min", "max", "sum", "stddev", "distinct_count", "distinct_ratio"}
	matchOns      = []string{"any", "all"}
	// pairIgnores are the ignore_row_if values of column_comparison (Great Expectations'
	// column-pair expectations); rowIgnores those of compound_unique and
	// unique_within_record (its multicolumn expectations).
	pairIgnores = []string{ignoreEither, ignoreBoth, ignoreNeither}
	rowIgnores  = []string{ignoreAll, ignoreAny, ignoreNever}
)

// ignore_row_if values: which rows a multi-column check skips (its missing_count).
const (
	ignoreEither  = "either_value_is_missing" // column_comparison's default in checks
	ignoreBoth    = "both_values_are_missing" // Great Expectations' default
	ignoreNeither = "neither"
	ignoreAll     = "all_values_are_missing" // GE's default; unique_within_record's
	ignoreAny     = "any_value_is_missing"   // compound_unique's default in checks
	ignoreNever   = "never"
)

// maxPatterns bounds the patterns of one regex or not_regex check.
const maxPatterns = 100

// pattern is one compiled regular expression of a regex or not_regex check, with the shape
// of its program for the cost model.
type pattern struct {
	re    *regexp.Regexp
	shape regexShape
}

// compiled is a validated check with its defaults applied.
type compiled struct {
	id, typ, severity string
	mostly            float64
	column, other     string
	columns           []string
	min, max          *float64
	strictMin         bool
	strictMax         bool
	want              uint8 // type: the flags a value may have (any of them)
	values            []jsontext.Value
	patterns          []pattern
	matchAll          bool // regex, not_regex: match_on all
	exact             bool // columns_present: extra columns fail too
	ignoreRowIf       string
	op                string
	method            string
	threshold         float64
	maxAge            time.Duration
	statistic         string

	// Set on the checks of an expectation suite (suite.go), with field, the expectation's
	// path (expectation_suite.expectations[i]) that errors and the cost model name.
	expectationType string
	kwargs, meta    jsontext.Value
	field           string
}

// plan is a validated request.
type plan struct {
	checks      []compiled
	asOf        *instant
	lastUpdated *instant
	interval    time.Duration
	blockBelow  float64
	reviewBelow float64
	profile     bool
}

// Validate checks every member of the request except the content of data (which a Dataset
// checks while reading it), in the order of the contract's table, then the rules that tie
// members together (a source_id; data or signals; checks need data), and returns the first
// violation as an *engine.InputError. A streaming caller feeds Dataset before it validates:
// an empty Dataset is no data. It keeps the plan it compiled (engine.Compiled), so that
// Analyze on the same Request does not compile it again.
func (r *Request) Validate() error { return r.plan.Validate(r.key(), r.compile) }

// compiled is the compiled request: Validate's, or compiled now.
func (r *Request) compiled() (*plan, error) { return r.plan.Get(r.key(), r.compile) }

// requestKey is what the plan was compiled from (see engine.Compiled).
type requestKey struct {
	sourceID string
	data     *Data
	dataset  *Dataset
	checks   engine.Slice[Check]
	signals  *Signals
	policy   *Policy
	asOf     engine.Optional[string]
	profile  engine.Optional[bool]
	suite    engine.Slice[byte]
}

func (r *Request) key() requestKey {
	return requestKey{
		sourceID: r.SourceID, data: r.Data, dataset: r.Dataset, checks: engine.SliceOf(r.Checks),
		signals: r.Signals, policy: r.Policy, asOf: engine.ValueOf(r.AsOf), profile: engine.ValueOf(r.Profile),
		suite: engine.SliceOf([]byte(r.ExpectationSuite)),
	}
}

// ValidateMember checks one top-level member by its JSON name (source_id, data, checks,
// signals, policy, as_of, profile), so a streaming caller can report the first failure in
// document order, before the data has been read. A member that is absent is valid, except
// source_id. Unknown names are valid.
func (r *Request) ValidateMember(name string) error {
	var p plan
	switch name {
	case "source_id":
		return r.validateSourceID(true)
	case "data":
		return r.validateData()
	case "checks":
		return r.compileChecks(&p)
	case "expectation_suite":
		return r.compileSuite(&p)
	case "signals":
		return r.compileSignals(&p)
	case "policy":
		return r.compilePolicy(&p)
	case "as_of":
		return r.compileAsOf(&p)
	}
	return nil
}

func (r *Request) compile() (*plan, error) {
	p := &plan{profile: r.Profile == nil || *r.Profile}
	if err := r.validateSourceID(false); err != nil {
		return nil, err
	}
	if err := r.validateData(); err != nil {
		return nil, err
	}
	if err := r.compileChecks(p); err != nil {
		return nil, err
	}
	if err := r.compileSuite(p); err != nil {
		return nil, err
	}
	p.analyzeRegexes()
	if err := r.compileSignals(p); err != nil {
		return nil, err
	}
	if err := r.compilePolicy(p); err != nil {
		return nil, err
	}
	if err := r.compileAsOf(p); err != nil {
		return nil, err
	}
	switch {
	case !r.hasData() && r.Signals == nil:
		return nil, engine.Invalid(codeData, "data", "object (records or csv; or send signals)", "missing",
			"The request needs data (records or csv) or signals.")
	case !r.hasData() && len(p.checks) > 0:
		return nil, engine.Invalid(codeData, "data", "object (records or csv; checks run on data)", "missing",
			"checks need data to run on: send data.records or data.csv, or remove checks for a signals-only request.")
	}
	return p, nil
}

// hasData reports whether the request holds data: a fed Dataset, or Data.
func (r *Request) hasData() bool {
	return (r.Dataset != nil && r.Dataset.format != formatNone) || r.Data != nil
}

// SourceIDExpected is the contract's rule for source_id, as errors state it.
const SourceIDExpected = "string (1-128 chars of [A-Za-z0-9._:/-])"

// ValidSourceID reports whether id is a valid source_id: 1–128 characters of [A-Za-z0-9._:/-].
func ValidSourceID(id string) bool { return engine.ValidIdentifier(id, "/") }

// validateSourceID checks source_id; present says the member was sent (a streaming caller
// checks it as it arrives), so that an empty one is reported as sent rather than missing.
func (r *Request) validateSourceID(present bool) error {
	switch {
	case r.SourceID == "" && !present:
		return engine.Invalid("INVALID_SOURCE_ID", "source_id", SourceIDExpected, "missing", "source_id is required: 1 to 128 letters, digits, '.', '_', ':', '/' or '-'.")
	case !ValidSourceID(r.SourceID):
		return engine.Invalid("INVALID_SOURCE_ID", "source_id", SourceIDExpected, "string", "source_id must be 1 to 128 letters, digits, '.', '_', ':', '/' or '-'.")
	}
	return nil
}

func (r *Request) validateData() error {
	d := r.Data
	if d == nil {
		return nil
	}
	hasRecords := len(d.Records) > 0 && d.Records.Kind() != 'n'
	switch {
	case hasRecords && d.CSV != nil:
		return engine.Invalid(codeData, "data", "object (records or csv, not both)", "object", "data must hold either records or csv, not both.")
	case !hasRecords && d.CSV == nil:
		return engine.Invalid(codeData, "data.records", "array of objects (or data.csv)", "missing", "data needs records (an array of objects) or csv (a string).")
	case hasRecords && d.Records.Kind() != '[':
		k := kindName(d.Records.Kind())
		return engine.Invalid(codeData, "data.records", "array of objects", k, "data.records must be an array of objects, not %s.", k)
	case hasRecords && d.Delimiter != nil:
		return engine.Invalid(codeData, "data.delimiter", "no such field with records", "string", "data.delimiter applies to csv only.")
	}
	if d.Delimiter != nil {
		if _, err := ParseDelimiter(*d.Delimiter); err != nil {
			return err
		}
	}
	return nil
}

func checkErr(i int, member, expected, received, format string, args ...any) *engine.InputError {
	field := "checks[" + strconv.Itoa(i) + "]"
	if member != "" {
		field += "." + member
	}
	return engine.Invalid("INVALID_CHECKS", field, expected, received, "%s %s", field, fmt.Sprintf(format, args...))
}

func oneOf(list []string) string { return "one of " + strings.Join(list, ", ") }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// present lists the type-specific members a check carries, in struct order.
func (c *Check) present() []string {
	var out []string
	add := func(ok bool, name string) {
		if ok {
			out = append(out, name)
		}
	}
	add(c.Column != nil, "column")
	add(c.Columns != nil, "columns")
	add(c.Expected != nil, "expected")
	add(c.Min != nil, "min")
	add(c.Max != nil, "max")
	add(c.Strict != nil, "strict")
	add(c.Values != nil, "values")
	add(c.Pattern != nil, "pattern")
	add(c.Operator != nil, "operator")
	add(c.Other != nil, "other")
	add(c.Method != nil, "method")
	add(c.Threshold != nil, "threshold")
	add(c.MaxAge != nil, "max_age")
	add(c.Statistic != nil, "statistic")
	add(c.StrictMin != nil, "strict_min")
	add(c.StrictMax != nil, "strict_max")
	add(c.Patterns != nil, "patterns")
	add(c.MatchOn != nil, "match_on")
	add(c.Exact != nil, "exact")
	add(c.IgnoreRowIf != nil, "ignore_row_if")
	return out
}

func (r *Request) compileChecks(p *plan) error {
	if len(r.Checks) > MaxChecks {
		return engine.Invalid("INVALID_CHECKS", "checks", fmt.Sprintf("array (at most %d checks)", MaxChecks), "array",
			"checks holds %d checks; at most %d are allowed per request.", len(r.Checks), MaxChecks)
	}
	seen := map[string]int{}
	p.checks = make([]compiled, 0, len(r.Checks))
	for i := range r.Checks {
		c, err := compileCheck(i, &r.Checks[i])
		if err != nil {
			return err
		}
		if j, dup := seen[c.id]; dup {
			received := "string"
			if r.Checks[i].ID == nil {
				received = "missing"
			}
			return checkErr(i, "id", "string (unique among checks)", received, "has the id %q, already used by checks[%d].", c.id, j)
		}
		seen[c.id] = i
		p.checks = append(p.checks, c)
	}
	return nil
}

// analyzeRegexes gives each regex check the shape of its program for the cost model
// (analysed once per distinct pattern, a millisecond at most).
func (p *plan) analyzeRegexes() {
	shapes := map[string]regexShape{}
	for i := range p.checks {
		for j := range p.checks[i].patterns {
			pt := &p.checks[i].patterns[j]
			text := pt.re.String()
			sh, ok := shapes[text]
			if !ok {
				sh = analyzeRegex(text)
				shapes[text] = sh
			}
			pt.shape = sh
		}
	}
}

func compileCheck(i int, in *Check) (compiled, error) {
	c := compiled{typ: in.Type, severity: "error", mostly: 1}
	params, ok := checkParams[in.Type]
	if !ok {
		received := "string"
		if in.Type == "" {
			received = "missing"
			return c, checkErr(i, "type", "string ("+oneOf(CheckTypes())+")", received, "needs a type, one of %s.", strings.Join(CheckTypes(), ", "))
		}
		return c, checkErr(i, "type", "string ("+oneOf(CheckTypes())+")", received, "has the unknown type %q; known types are %s.", in.Type, strings.Join(CheckTypes(), ", "))
	}
	c.id = "check_" + strconv.Itoa(i)
	if in.ID != nil {
		if n := len(*in.ID); n < 1 || n > 128 {
			return c, checkErr(i, "id", "string (1-128 characters)", "string", "must be 1–128 characters.")
		}
		c.id = *in.ID
	}
	if in.Mostly != nil {
		if m := *in.Mostly; !(m >= 0 && m <= 1) {
			return c, checkErr(i, "mostly", "number (0-1)", "number", "must be between 0 and 1.")
		}
		c.mostly = *in.Mostly
	}
	if in.Severity != nil {
		if s := *in.Severity; s != "error" && s != "warning" {
			return c, checkErr(i, "severity", "string (error or warning)", "string", "must be \"error\" or \"warning\", not %q.", s)
		}
		c.severity = *in.Severity
	}
	for _, m := range in.present() {
		if !contains(params, m) {
			takes := "no parameters"
			if len(params) > 0 {
				takes = strings.Join(params, ", ")
			}
			return c, checkErr(i, m, "no such field for "+in.Type, "value", "is not a parameter of %s checks (they take %s).", in.Type, takes)
		}
	}
	needColumn := func(member string, v *string) (string, error) {
		if v == nil {
			return "", checkErr(i, member, "string (a column name)", "missing", "is required for %s checks.", in.Type)
		}
		return *v, nil
	}
	needColumns := func() ([]string, error) {
		if len(in.Columns) == 0 {
			received := "missing"
			if in.Columns != nil {
				received = "array"
			}
			return nil, checkErr(i, "columns", "array of strings (at least one column)", received, "must list at least one column.")
		}
		for j, a := range in.Columns {
			for _, b := range in.Columns[:j] {
				if a == b {
					return nil, checkErr(i, "columns["+strconv.Itoa(j)+"]", "string (each column once)", "string", "names column %q twice.", a)
				}
			}
		}
		return in.Columns, nil
	}
	// bounds checks min/max: finite, integral and ≥ 0 when integer, min ≤ max.
	bounds := func(integer bool) error {
		exp := "number"
		if integer {
			exp = "integer (>= 0)"
		}
		for _, b := range []struct {
			name string
			v    *float64
		}{{"min", in.Min}, {"max", in.Max}} {
			if b.v == nil {
				continue
			}
			if !finite(*b.v) {
				return checkErr(i, b.name, exp, "number", "must be a finite number.")
			}
			if integer && (*b.v < 0 || *b.v != math.Trunc(*b.v)) {
				return checkErr(i, b.name, exp, "number", "must be a whole number of at least 0.")
			}
		}
		if in.Min != nil && in.Max != nil && *in.Min > *in.Max {
			return checkErr(i, "max", exp+" (at least min)", "number", "(%v) is below min (%v).", *in.Max, *in.Min)
		}
		c.min, c.max = in.Min, in.Max
		c.strictMin, c.strictMax = flagOr(in.StrictMin, false), flagOr(in.StrictMax, false)
		return nil
	}
	var err error
	switch in.Type {
	case CheckNotNull, CheckUnique, CheckNull:
		c.column, err = needColumn("column", in.Column)
	case CheckCompoundUnique:
		if c.columns, err = needColumns(); err != nil {
			break
		}
		c.ignoreRowIf, err = choice(i, "ignore_row_if", in.IgnoreRowIf, ignoreAny, rowIgnores)
	case CheckColumnsPresent:
		c.columns, err = needColumns()
		c.exact = in.Exact != nil && *in.Exact
	case CheckUniqueWithinRecord:
		if c.columns, err = needColumns(); err != nil {
			break
		}
		c.ignoreRowIf, err = choice(i, "ignore_row_if", in.IgnoreRowIf, ignoreAll, rowIgnores)
	case CheckType:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		exp := "string (" + oneOf(expectedTypes) + ")"
		if in.Expected == nil {
			err = checkErr(i, "expected", exp, "missing", "is required for type checks: one of %s.", strings.Join(expectedTypes, ", "))
		} else if !contains(expectedTypes, *in.Expected) {
			err = checkErr(i, "expected", exp, "string", "must be one of %s, not %q.", strings.Join(expectedTypes, ", "), *in.Expected)
		} else {
			c.want = typeFlag(*in.Expected)
		}
	case CheckBetween:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		if err = bounds(false); err != nil {
			break
		}
		strict := in.Strict != nil && *in.Strict
		c.strictMin = flagOr(in.StrictMin, strict)
		c.strictMax = flagOr(in.StrictMax, strict)
	case CheckInSet, CheckNotInSet:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		if in.Values == nil {
			err = checkErr(i, "values", "array", "missing", "is required for %s checks.", in.Type)
			break
		}
		for j, v := range in.Values {
			if !v.IsValid() {
				err = checkErr(i, "values["+strconv.Itoa(j)+"]", "a JSON value", "value", "is not valid JSON.")
				break
			}
		}
		c.values = in.Values
	case CheckRegex, CheckNotRegex:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		if c.patterns, err = compilePatterns(i, in); err != nil {
			break
		}
		var on string
		on, err = choice(i, "match_on", in.MatchOn, "any", matchOns)
		c.matchAll = on == "all"
	case CheckLengthBetween:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		err = bounds(true)
	case CheckColumnComparison:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		exp := "string (" + oneOf(operators) + ")"
		switch {
		case in.Operator == nil:
			err = checkErr(i, "operator", exp, "missing", "is required for column_comparison checks: one of %s.", strings.Join(operators, " "))
		case !contains(operators, *in.Operator):
			err = checkErr(i, "operator", exp, "string", "must be one of %s, not %q.", strings.Join(operators, " "), *in.Operator)
		default:
			c.op = *in.Operator
			if c.other, err = needColumn("other", in.Other); err == nil {
				c.ignoreRowIf, err = choice(i, "ignore_row_if", in.IgnoreRowIf, ignoreEither, pairIgnores)
			}
		}
	case CheckOutliers:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		const exp = "string (mad or iqr)"
		switch {
		case in.Method == nil:
			err = checkErr(i, "method", exp, "missing", "is required for outliers checks: mad or iqr.")
		case *in.Method == "mad":
			c.method, c.threshold = "mad", DefaultMADThreshold
		case *in.Method == "iqr":
			c.method, c.threshold = "iqr", DefaultIQRThreshold
		default:
			err = checkErr(i, "method", exp, "string", "must be \"mad\" or \"iqr\", not %q.", *in.Method)
		}
		if err == nil && in.Threshold != nil {
			if t := *in.Threshold; !(t > 0) || !finite(t) {
				err = checkErr(i, "threshold", "number (> 0)", "number", "must be a finite number above 0.")
			} else {
				c.threshold = t
			}
		}
	case CheckRowCountBetween:
		err = bounds(true)
	case CheckFreshness:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		const exp = "string (duration such as 24h, 90m or 7d)"
		if in.MaxAge == nil {
			err = checkErr(i, "max_age", exp, "missing", "is required for freshness checks (a duration such as \"24h\" or \"7d\").")
			break
		}
		d, derr := parseDuration(*in.MaxAge)
		if derr != nil || d <= 0 {
			err = checkErr(i, "max_age", exp, "string", "must be a positive duration such as \"36h\", \"90m\" or \"7d\", not %q.", *in.MaxAge)
			break
		}
		c.maxAge = d
	case CheckStatisticBetween:
		if c.column, err = needColumn("column", in.Column); err != nil {
			break
		}
		exp := "string (" + oneOf(statistics) + ")"
		switch {
		case in.Statistic == nil:
			err = checkErr(i, "statistic", exp, "missing", "is required for statistic_between checks: one of %s.", strings.Join(statistics, ", "))
		case !contains(statistics, *in.Statistic):
			err = checkErr(i, "statistic", exp, "string", "must be one of %s, not %q.", strings.Join(statistics, ", "), *in.Statistic)
		default:
			c.statistic = *in.Statistic
			err = bounds(false)
		}
	}
	return c, err
}

// typeFlag is the value flag of an expected type of type checks.
func typeFlag(expected string) uint8 {
	switch expected {
	case "string":
		return fString
	case "number":
		return fNumber
	case "integer":
		return fInteger
	case "boolean":
		return fBool
	case "timestamp":
		return fTimestamp
	}
	return 0
}

// flagOr is *b, or def when b is nil.
func flagOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// choice is *v when it is one of list, def when v is nil, and an error at checks[i].member
// otherwise.
func choice(i int, member string, v *string, def string, list []string) (string, error) {
	switch {
	case v == nil:
		return def, nil
	case !contains(list, *v):
		return "", checkErr(i, member, "string ("+oneOf(list)+")", "string", "must be one of %s, not %q.", strings.Join(list, ", "), *v)
	}
	return *v, nil
}

// compilePatterns compiles a regex or not_regex check's pattern, or its patterns (one of
// the two, at most maxPatterns).
func compilePatterns(i int, in *Check) ([]pattern, error) {
	const exp = "string (RE2 regular expression)"
	switch {
	case in.Pattern != nil && in.Patterns != nil:
		return nil, checkErr(i, "patterns", "absent with pattern", "array", "and pattern cannot both be given: send one pattern, or the list in patterns.")
	case in.Pattern != nil:
		re, err := regexp.Compile(*in.Pattern)
		if err != nil {
			return nil, checkErr(i, "pattern", exp, "string", "is not an RE2 regular expression: %v.", err)
		}
		return []pattern{{re: re}}, nil
	case in.Patterns == nil:
		return nil, checkErr(i, "pattern", exp, "missing", "(or patterns, a list) is required for %s checks.", in.Type)
	case len(in.Patterns) == 0 || len(in.Patterns) > maxPatterns:
		return nil, checkErr(i, "patterns", fmt.Sprintf("array of 1-%d strings", maxPatterns), "array", "must hold 1 to %d patterns, not %d.", maxPatterns, len(in.Patterns))
	}
	out := make([]pattern, len(in.Patterns))
	for j, text := range in.Patterns {
		re, err := regexp.Compile(text)
		if err != nil {
			return nil, checkErr(i, "patterns["+strconv.Itoa(j)+"]", exp, "string", "is not an RE2 regular expression: %v.", err)
		}
		out[j] = pattern{re: re}
	}
	return out, nil
}

func sigErr(member, expected, received, format string, args ...any) *engine.InputError {
	return engine.Invalid("INVALID_SIGNALS", "signals."+member, expected, received, "signals.%s %s", member, fmt.Sprintf(format, args...))
}

func (r *Request) compileSignals(p *plan) error {
	s := r.Signals
	if s == nil {
		return nil
	}
	if s.ErrorRate != nil && !(*s.ErrorRate >= 0 && *s.ErrorRate <= 1) {
		return sigErr("error_rate", "number (0-1)", "number", "must be between 0 and 1.")
	}
	if s.LastUpdated != nil {
		t, ok := parseTimestamp(*s.LastUpdated)
		if !ok {
			return sigErr("last_updated", "string (RFC 3339 timestamp)", "string", "must be an RFC 3339 timestamp such as 2026-11-21T10:00:00Z, not %q.", *s.LastUpdated)
		}
		p.lastUpdated = &t
	}
	if s.ExpectedUpdateInterval != nil {
		d, err := parseDuration(*s.ExpectedUpdateInterval)
		if err != nil || d <= 0 {
			return sigErr("expected_update_interval", "string (duration such as 24h or 7d)", "string", "must be a positive duration such as \"24h\" or \"7d\", not %q.", *s.ExpectedUpdateInterval)
		}
		p.interval = d
	}
	if s.Completeness != nil && !(*s.Completeness >= 0 && *s.Completeness <= 1) {
		return sigErr("completeness", "number (0-1)", "number", "must be between 0 and 1.")
	}
	if s.LastUpdated != nil && s.ExpectedUpdateInterval == nil {
		return sigErr("expected_update_interval", "string (duration such as 24h or 7d)", "missing", "is required with last_updated: timeliness compares the age with it.")
	}
	if s.LastUpdated == nil && s.ExpectedUpdateInterval != nil {
		return sigErr("last_updated", "string (RFC 3339 timestamp)", "missing", "is required with expected_update_interval.")
	}
	return nil
}

func (r *Request) compilePolicy(p *plan) error {
	p.blockBelow, p.reviewBelow = DefaultBlockBelow, DefaultReviewBelow
	if r.Policy == nil {
		return nil
	}
	for _, m := range []struct {
		name string
		v    *float64
		dst  *float64
	}{{"block_below", r.Policy.BlockBelow, &p.blockBelow}, {"review_below", r.Policy.ReviewBelow, &p.reviewBelow}} {
		if m.v == nil {
			continue
		}
		if !(*m.v >= 0 && *m.v <= 100) {
			return engine.Invalid("INVALID_POLICY", "policy."+m.name, "number (0-100)", "number", "policy.%s must be a score between 0 and 100.", m.name)
		}
		*m.dst = *m.v
	}
	return nil
}

func (r *Request) compileAsOf(p *plan) error {
	if r.AsOf == nil {
		return nil
	}
	t, ok := parseTimestamp(*r.AsOf)
	if !ok {
		return engine.Invalid("INVALID_AS_OF", "as_of", "string (RFC 3339 timestamp)", "string", "as_of must be an RFC 3339 timestamp such as 2026-11-21T10:00:00Z, not %q.", *r.AsOf)
	}
	p.asOf = &t
	return nil
}
