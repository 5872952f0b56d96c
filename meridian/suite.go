package meridian

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

// A Great Expectations (GE) expectation suite, as GE 1.x writes it —
// {"name", "id", "meta", "notes", "expectations": [{"type", "kwargs", "meta", "id",
// "severity", ...}]} — or as 0.x did (the key "expectation_type", "expectation_suite_name",
// "data_asset_type", "ge_cloud_id"), becomes checks by the contract's table (geExpectations).
// The suite and its expectations are foreign documents, posted as they are: members this
// file does not read are ignored. Kwargs are read strictly: one that an expectation does not
// take, or that would change what it checks in a way Meridian does not implement
// (row_condition, windows, a $PARAMETER reference), is INVALID_CHECKS, because ignoring it
// would give a result that differs from GE's without saying so.

// suiteField is the path of the suite in the request and in errors.
const suiteField = "expectation_suite"

// geExpectation maps one GE expectation type to a check.
type geExpectation struct {
	check string
	// kwargs are the kwargs the expectation takes besides geCommonKwargs ("mostly" among
	// them for the expectations GE evaluates row by row).
	kwargs []string
	// build fills the check from the kwargs.
	build func(k *geKwargs, c *Check) error
}

// geCommonKwargs are accepted by every expectation: result_format (results are always GE's
// SUMMARY form plus Meridian's fields), catch_exceptions, include_config and batch_id are
// ignored; row_condition, condition_parser and windows are accepted only when null.
var geCommonKwargs = []string{"result_format", "catch_exceptions", "include_config", "batch_id", "row_condition", "condition_parser", "windows"}

// geExpectations is the contract's table.
var geExpectations = map[string]geExpectation{
	"expect_column_values_to_not_be_null":                    {CheckNotNull, []string{"column", "mostly"}, geColumn},
	"expect_column_values_to_be_null":                        {CheckNull, []string{"column", "mostly"}, geColumn},
	"expect_column_values_to_be_unique":                      {CheckUnique, []string{"column", "mostly"}, geColumn},
	"expect_compound_columns_to_be_unique":                   {CheckCompoundUnique, []string{"column_list", "mostly", "ignore_row_if"}, geMulticolumn},
	"expect_select_column_values_to_be_unique_within_record": {CheckUniqueWithinRecord, []string{"column_list", "mostly", "ignore_row_if"}, geMulticolumn},
	"expect_column_values_to_be_of_type":                     {CheckType, []string{"column", "type_", "mostly"}, geType},
	"expect_column_values_to_be_in_type_list":                {CheckType, []string{"column", "type_list", "mostly"}, geType},
	"expect_column_values_to_be_between":                     {CheckBetween, []string{"column", "min_value", "max_value", "strict_min", "strict_max", "mostly"}, geBetween},
	"expect_column_values_to_be_in_set":                      {CheckInSet, []string{"column", "value_set", "mostly"}, geValueSet},
	"expect_column_values_to_not_be_in_set":                  {CheckNotInSet, []string{"column", "value_set", "mostly"}, geValueSet},
	"expect_column_values_to_match_regex":                    {CheckRegex, []string{"column", "regex", "mostly"}, geRegex},
	"expect_column_values_to_not_match_regex":                {CheckNotRegex, []string{"column", "regex", "mostly"}, geRegex},
	"expect_column_values_to_match_regex_list":               {CheckRegex, []string{"column", "regex_list", "match_on", "mostly"}, geRegexList},
	"expect_column_values_to_not_match_regex_list":           {CheckNotRegex, []string{"column", "regex_list", "match_on", "mostly"}, geRegexList},
	"expect_column_value_lengths_to_be_between":              {CheckLengthBetween, []string{"column", "min_value", "max_value", "strict_min", "strict_max", "mostly"}, geBetween},
	"expect_column_value_lengths_to_equal": {CheckLengthBetween, []string{"column", "value", "mostly"}, func(k *geKwargs, c *Check) error {
		return geEqual(k, c)
	}},
	"expect_column_pair_values_a_to_be_greater_than_b": {CheckColumnComparison, []string{"column_A", "column_B", "or_equal", "ignore_row_if", "mostly"}, func(k *geKwargs, c *Check) error {
		orEqual, err := k.boolean("or_equal")
		op := ">"
		if orEqual != nil && *orEqual {
			op = ">="
		}
		k.rename("operator", "or_equal")
		c.Operator = &op
		if err != nil {
			return err
		}
		return gePair(k, c)
	}},
	"expect_column_pair_values_to_be_equal": {CheckColumnComparison, []string{"column_A", "column_B", "ignore_row_if", "mostly"}, func(k *geKwargs, c *Check) error {
		op := "=="
		c.Operator = &op
		return gePair(k, c)
	}},
	"expect_table_row_count_to_be_between": {CheckRowCountBetween, []string{"min_value", "max_value", "strict_min", "strict_max"}, geBetween},
	"expect_table_row_count_to_equal": {CheckRowCountBetween, []string{"value"}, func(k *geKwargs, c *Check) error {
		return geEqual(k, c)
	}},
	"expect_table_columns_to_match_set": {CheckColumnsPresent, []string{"column_set", "exact_match"}, func(k *geKwargs, c *Check) error {
		exact, err := k.boolean("exact_match")
		if err != nil {
			return err
		}
		if exact == nil {
			exact = ptrOf(true) // GE's default
		}
		c.Exact = exact
		k.rename("exact", "exact_match")
		return geColumnList(k, c, "column_set")
	}},
	"expect_column_to_exist": {CheckColumnsPresent, []string{"column", "column_index"}, func(k *geKwargs, c *Check) error {
		if v, ok := k.get("column_index"); ok && v.Kind() != 'n' {
			return k.invalid("column_index", "null", kindName(v.Kind()), "is not supported: Meridian checks that the column exists, not its position; omit column_index.")
		}
		col, err := k.str("column", true)
		if err != nil {
			return err
		}
		c.Columns = []string{*col}
		k.rename("columns", "column")
		return nil
	}},
	"expect_column_mean_to_be_between":                        geStatistic("mean"),
	"expect_column_median_to_be_between":                      geStatistic("median"),
	"expect_column_min_to_be_between":                         geStatistic("min"),
	"expect_column_max_to_be_between":                         geStatistic("max"),
	"expect_column_sum_to_be_between":                         geStatistic("sum"),
	"expect_column_stdev_to_be_between":                       geStatistic("stddev"),
	"expect_column_unique_value_count_to_be_between":          geStatistic("distinct_count"),
	"expect_column_proportion_of_unique_values_to_be_between": geStatistic("distinct_ratio"),
}

// GEExpectationTypes lists the Great Expectations expectation types an expectation_suite
// may hold, sorted.
func GEExpectationTypes() []string {
	out := make([]string, 0, len(geExpectations))
	for name := range geExpectations {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func geStatistic(name string) geExpectation {
	return geExpectation{CheckStatisticBetween, []string{"column", "min_value", "max_value", "strict_min", "strict_max"}, func(k *geKwargs, c *Check) error {
		c.Statistic = &name
		return geBetween(k, c)
	}}
}

func geColumn(k *geKwargs, c *Check) error {
	col, err := k.str("column", true)
	c.Column = col
	return err
}

// geMulticolumn reads a multicolumn expectation: column_list and ignore_row_if, whose default
// in a suite is GE's, all_values_are_missing.
func geMulticolumn(k *geKwargs, c *Check) error {
	v, err := k.str("ignore_row_if", false)
	if err != nil {
		return err
	}
	if v == nil {
		v = ptrOf(ignoreAll)
	}
	c.IgnoreRowIf = v
	k.rename("ignore_row_if", "ignore_row_if")
	return geColumnList(k, c, "column_list")
}

func geColumnList(k *geKwargs, c *Check, name string) error {
	cols, err := k.strings(name, true)
	c.Columns = cols
	k.rename("columns", name)
	return err
}

// geTypes maps GE's type names (pandas, numpy, Python and SQL spellings) to Meridian's.
var geTypes = map[string]string{
	"int": "integer", "int64": "integer", "integer": "integer", "INTEGER": "integer",
	"float": "number", "float64": "number", "number": "number", "NUMERIC": "number", "DOUBLE": "number",
	"str": "string", "string": "string", "object_": "string", "VARCHAR": "string", "TEXT": "string",
	"bool": "boolean", "boolean": "boolean", "BOOLEAN": "boolean",
	"datetime": "timestamp", "datetime64": "timestamp", "timestamp": "timestamp", "TIMESTAMP": "timestamp", "date": "timestamp",
}

func geTypeNames() string {
	names := make([]string, 0, len(geTypes))
	for n := range geTypes {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// geType reads type_ or type_list; the list's types are kept in k.types (a value passes
// when it has any of them).
func geType(k *geKwargs, c *Check) error {
	if err := geColumn(k, c); err != nil {
		return err
	}
	name := "type_"
	var names []string
	if _, ok := k.get("type_list"); ok {
		name = "type_list"
		list, err := k.strings(name, true)
		if err != nil {
			return err
		}
		names = list
	} else {
		t, err := k.str(name, true)
		if err != nil {
			return err
		}
		names = []string{*t}
	}
	for j, n := range names {
		m, ok := geTypes[n]
		if !ok {
			member := name
			if name == "type_list" {
				member += "[" + strconv.Itoa(j) + "]"
			}
			return k.invalid(member, "string (a type name: "+geTypeNames()+")", "string", "%q is not a type name Meridian maps; it maps %s.", n, geTypeNames())
		}
		k.types |= typeFlag(m)
		if c.Expected == nil {
			c.Expected = &m
		}
	}
	k.rename("expected", name)
	return nil
}

// geBetween reads min_value, max_value (null: no bound; GE raises when both are null) and,
// where the expectation takes them, strict_min and strict_max.
func geBetween(k *geKwargs, c *Check) error {
	if err := k.column(c); err != nil {
		return err
	}
	min, err := k.number("min_value")
	if err != nil {
		return err
	}
	max, err := k.number("max_value")
	if err != nil {
		return err
	}
	if min == nil && max == nil {
		return k.invalid("min_value", "number (min_value or max_value)", "null", "and max_value cannot both be null (Great Expectations raises too): give at least one bound.")
	}
	c.Min, c.Max = min, max
	k.rename("min", "min_value")
	k.rename("max", "max_value")
	if slices.Contains(k.accepted, "strict_min") {
		if c.StrictMin, err = k.boolean("strict_min"); err != nil {
			return err
		}
		if c.StrictMax, err = k.boolean("strict_max"); err != nil {
			return err
		}
	}
	return nil
}

// geEqual reads value, a whole number ≥ 0 (a length or a row count), as min = max.
func geEqual(k *geKwargs, c *Check) error {
	if err := k.column(c); err != nil {
		return err
	}
	v, err := k.number("value")
	if err != nil {
		return err
	}
	if v == nil {
		return k.invalid("value", "integer (>= 0)", "missing", "is required.")
	}
	c.Min, c.Max = v, v
	k.rename("min", "value")
	k.rename("max", "value")
	return nil
}

func geValueSet(k *geKwargs, c *Check) error {
	if err := geColumn(k, c); err != nil {
		return err
	}
	v, ok := k.get("value_set")
	if !ok || v.Kind() != '[' {
		received := "missing"
		if ok {
			received = kindName(v.Kind())
		}
		return k.invalid("value_set", "array", received, "is required: the list of values.")
	}
	var values []jsontext.Value
	if err := json.Unmarshal(v, &values); err != nil {
		return k.invalid("value_set", "array", "array", "is not a valid JSON array.")
	}
	if values == nil {
		values = []jsontext.Value{}
	}
	c.Values = values
	k.rename("values", "value_set")
	return nil
}

func geRegex(k *geKwargs, c *Check) error {
	if err := geColumn(k, c); err != nil {
		return err
	}
	re, err := k.str("regex", true)
	c.Pattern = re
	k.rename("pattern", "regex")
	return err
}

func geRegexList(k *geKwargs, c *Check) error {
	if err := geColumn(k, c); err != nil {
		return err
	}
	list, err := k.strings("regex_list", true)
	if err != nil {
		return err
	}
	c.Patterns = list
	k.rename("patterns", "regex_list")
	on, err := k.str("match_on", false)
	c.MatchOn = on
	k.rename("match_on", "match_on")
	return err
}

// gePair reads a column-pair expectation: column_A, column_B and ignore_row_if, whose
// default in a suite is GE's, both_values_are_missing.
func gePair(k *geKwargs, c *Check) error {
	a, err := k.str("column_A", true)
	if err != nil {
		return err
	}
	b, err := k.str("column_B", true)
	if err != nil {
		return err
	}
	c.Column, c.Other = a, b
	k.rename("column", "column_A")
	k.rename("other", "column_B")
	ignore, err := k.str("ignore_row_if", false)
	if err != nil {
		return err
	}
	if ignore == nil {
		ignore = ptrOf(ignoreBoth)
	}
	c.IgnoreRowIf = ignore
	k.rename("ignore_row_if", "ignore_row_if")
	return nil
}

// geKwargs are one expectation's kwargs, in document order, with the path of each for
// errors.
type geKwargs struct {
	path     string // expectation_suite.expectations[i].kwargs
	names    []string
	values   []jsontext.Value
	accepted []string
	// members maps a member of the check (as compileCheck names it in errors) to the kwarg
	// it came from.
	members map[string]string
	types   uint8 // type checks: the flags of type_ or type_list
}

func (k *geKwargs) get(name string) (jsontext.Value, bool) {
	i := slices.Index(k.names, name)
	if i < 0 {
		return nil, false
	}
	return k.values[i], true
}

func (k *geKwargs) rename(member, kwarg string) { k.members[member] = kwarg }

func (k *geKwargs) invalid(name, expected, received, format string, args ...any) *engine.InputError {
	field := k.path + "." + name
	return engine.Invalid("INVALID_CHECKS", field, expected, received, "%s %s", field, fmt.Sprintf(format, args...))
}

// column reads column where the expectation takes one.
func (k *geKwargs) column(c *Check) error {
	if !slices.Contains(k.accepted, "column") {
		return nil
	}
	return geColumn(k, c)
}

// str reads a string kwarg; null is absent.
func (k *geKwargs) str(name string, required bool) (*string, error) {
	v, ok := k.get(name)
	if !ok || v.Kind() == 'n' {
		if required {
			return nil, k.invalid(name, "string", "missing", "is required.")
		}
		return nil, nil
	}
	var s string
	if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return nil, k.invalid(name, "string", kindName(v.Kind()), "must be a string.")
	}
	return &s, nil
}

// strings reads a kwarg that is a list of strings (GE also writes a set as a list).
func (k *geKwargs) strings(name string, required bool) ([]string, error) {
	v, ok := k.get(name)
	if !ok || v.Kind() == 'n' {
		if required {
			return nil, k.invalid(name, "array of strings", "missing", "is required.")
		}
		return nil, nil
	}
	var list []string
	if v.Kind() != '[' || json.Unmarshal(v, &list) != nil {
		return nil, k.invalid(name, "array of strings", kindName(v.Kind()), "must be an array of strings.")
	}
	if list == nil {
		list = []string{}
	}
	return list, nil
}

// number reads a numeric kwarg; null is absent. GE raises on a bound that is not a number
// (Meridian compares numbers only), so a string or boolean is refused.
func (k *geKwargs) number(name string) (*float64, error) {
	v, ok := k.get(name)
	if !ok || v.Kind() == 'n' {
		return nil, nil
	}
	var f float64
	if v.Kind() != '0' || json.Unmarshal(v, &f) != nil || math.IsInf(f, 0) {
		return nil, k.invalid(name, "number or null", kindName(v.Kind()), "must be a number or null.")
	}
	return &f, nil
}

// boolean reads a boolean kwarg; null is absent.
func (k *geKwargs) boolean(name string) (*bool, error) {
	v, ok := k.get(name)
	if !ok || v.Kind() == 'n' {
		return nil, nil
	}
	if v.Kind() != 't' && v.Kind() != 'f' {
		return nil, k.invalid(name, "boolean", kindName(v.Kind()), "must be true or false.")
	}
	b := v.Kind() == 't'
	return &b, nil
}

// geSeverities maps GE 1.x's expectation severity to Meridian's.
var geSeverities = map[string]string{"critical": "error", "warning": "warning", "info": "warning"}

// suiteExpectation is one expectation as read from the suite.
type suiteExpectation struct {
	index    int
	typ      string
	typeKey  string // "type" or "expectation_type"
	kwargs   jsontext.Value
	meta     jsontext.Value
	id       *string
	severity *string
}

// compileSuite compiles the expectation suite into checks appended to p.checks, after those
// of checks. An expectation type Meridian does not map is INVALID_CHECKS naming every such
// expectation of the suite and listing the supported types; nothing is evaluated.
func (r *Request) compileSuite(p *plan) error {
	raw := r.ExpectationSuite
	if len(raw) == 0 || raw.Kind() == 'n' {
		return nil
	}
	exps, err := readSuite(raw)
	if err != nil {
		return err
	}
	if n := len(p.checks) + len(exps); n > MaxChecks {
		return engine.Invalid("INVALID_CHECKS", suiteField+".expectations", fmt.Sprintf("array (at most %d expectations and checks together)", MaxChecks), "array",
			"%s.expectations holds %d expectations and checks %d checks; at most %d are allowed per request.", suiteField, len(exps), len(p.checks), MaxChecks)
	}
	var unsupported []string
	first := -1
	for _, x := range exps {
		if _, ok := geExpectations[x.typ]; !ok {
			unsupported = append(unsupported, fmt.Sprintf("%s (expectations[%d])", x.typ, x.index))
			if first < 0 {
				first = x.index
			}
		}
	}
	if len(unsupported) > 0 {
		field := fmt.Sprintf("%s.expectations[%d].%s", suiteField, first, exps[first].typeKey)
		return engine.Invalid("INVALID_CHECKS", field, "string (a supported expectation type: "+strings.Join(GEExpectationTypes(), ", ")+")", "string",
			"The expectation suite holds expectation types Meridian does not support: %s. Nothing was evaluated. Supported types: %s.",
			strings.Join(unsupported, ", "), strings.Join(GEExpectationTypes(), ", "))
	}
	seen := map[string]int{}
	for j := range p.checks {
		seen[p.checks[j].id] = j
	}
	for _, x := range exps {
		c, err := compileExpectation(x)
		if err != nil {
			return err
		}
		if _, dup := seen[c.id]; dup {
			return engine.Invalid("INVALID_CHECKS", fmt.Sprintf("%s.expectations[%d].id", suiteField, x.index), "string (unique among checks and expectations)", "string",
				"%s.expectations[%d].id %q is already the id of another check or expectation.", suiteField, x.index, c.id)
		}
		seen[c.id] = len(p.checks)
		p.checks = append(p.checks, c)
	}
	return nil
}

// readSuite reads the expectations of a suite: its "expectations" member, an array of
// objects, each with its type under "type" (GE 1.x) or "expectation_type" (0.x).
func readSuite(raw jsontext.Value) ([]suiteExpectation, error) {
	if raw.Kind() != '{' {
		return nil, engine.Invalid("INVALID_CHECKS", suiteField, "object (a Great Expectations suite)", kindName(raw.Kind()),
			"%s must be a Great Expectations suite object with an expectations array.", suiteField)
	}
	var doc struct {
		Expectations jsontext.Value `json:"expectations"`
		Rest         jsontext.Value `json:",unknown"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, engine.Invalid("INVALID_CHECKS", suiteField, "object (a Great Expectations suite)", "object", "%s is not a valid suite object: %v.", suiteField, err)
	}
	field := suiteField + ".expectations"
	if doc.Expectations.Kind() != '[' {
		received := "missing"
		if len(doc.Expectations) > 0 {
			received = kindName(doc.Expectations.Kind())
		}
		return nil, engine.Invalid("INVALID_CHECKS", field, "array of expectation objects", received, "%s must be an array of expectations.", field)
	}
	var items []jsontext.Value
	if err := json.Unmarshal(doc.Expectations, &items); err != nil {
		return nil, engine.Invalid("INVALID_CHECKS", field, "array of expectation objects", "array", "%s is not a valid array: %v.", field, err)
	}
	if len(items) > MaxChecks {
		return nil, engine.Invalid("INVALID_CHECKS", field, fmt.Sprintf("array (at most %d expectations)", MaxChecks), "array",
			"%s holds %d expectations; at most %d are allowed per request.", field, len(items), MaxChecks)
	}
	out := make([]suiteExpectation, len(items))
	for i, item := range items {
		at := fmt.Sprintf("%s[%d]", field, i)
		if item.Kind() != '{' {
			return nil, engine.Invalid("INVALID_CHECKS", at, "object (an expectation)", kindName(item.Kind()), "%s must be an expectation object.", at)
		}
		var e struct {
			Type            jsontext.Value `json:"type"`
			ExpectationType jsontext.Value `json:"expectation_type"`
			Kwargs          jsontext.Value `json:"kwargs"`
			Meta            jsontext.Value `json:"meta"`
			ID              jsontext.Value `json:"id"`
			Severity        jsontext.Value `json:"severity"`
			Rest            jsontext.Value `json:",unknown"`
		}
		if err := json.Unmarshal(item, &e); err != nil {
			return nil, engine.Invalid("INVALID_CHECKS", at, "object (an expectation)", "object", "%s is not a valid expectation: %v.", at, err)
		}
		x := suiteExpectation{index: i, kwargs: e.Kwargs, meta: e.Meta}
		typ, err := optionalString(at+".type", e.Type)
		if err != nil {
			return nil, err
		}
		oldTyp, err := optionalString(at+".expectation_type", e.ExpectationType)
		if err != nil {
			return nil, err
		}
		switch {
		case typ == nil && oldTyp == nil:
			return nil, engine.Invalid("INVALID_CHECKS", at+".type", "string (an expectation type)", "missing", "%s.type (or expectation_type) is required.", at)
		case typ != nil && oldTyp != nil && *typ != *oldTyp:
			return nil, engine.Invalid("INVALID_CHECKS", at+".expectation_type", "string (equal to type)", "string", "%s.expectation_type (%q) differs from type (%q).", at, *oldTyp, *typ)
		case typ != nil:
			x.typ, x.typeKey = *typ, "type"
		default:
			x.typ, x.typeKey = *oldTyp, "expectation_type"
		}
		if x.id, err = optionalString(at+".id", e.ID); err != nil {
			return nil, err
		}
		if x.severity, err = optionalString(at+".severity", e.Severity); err != nil {
			return nil, err
		}
		if len(x.kwargs) == 0 || x.kwargs.Kind() == 'n' {
			x.kwargs = jsontext.Value("{}")
		} else if x.kwargs.Kind() != '{' {
			return nil, engine.Invalid("INVALID_CHECKS", at+".kwargs", "object", kindName(x.kwargs.Kind()), "%s.kwargs must be an object.", at)
		}
		if len(x.meta) == 0 || x.meta.Kind() == 'n' {
			x.meta = jsontext.Value("{}")
		} else if x.meta.Kind() != '{' {
			return nil, engine.Invalid("INVALID_CHECKS", at+".meta", "object", kindName(x.meta.Kind()), "%s.meta must be an object.", at)
		}
		out[i] = x
	}
	return out, nil
}

// optionalString is the string v holds; nil when v is absent or null.
func optionalString(field string, v jsontext.Value) (*string, error) {
	if len(v) == 0 || v.Kind() == 'n' {
		return nil, nil
	}
	var s string
	if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return nil, engine.Invalid("INVALID_CHECKS", field, "string", kindName(v.Kind()), "%s must be a string.", field)
	}
	return &s, nil
}

// compileExpectation compiles one supported expectation into a check.
func compileExpectation(x suiteExpectation) (compiled, error) {
	at := fmt.Sprintf("%s.expectations[%d]", suiteField, x.index)
	ge := geExpectations[x.typ]
	k := &geKwargs{path: at + ".kwargs", accepted: append(slices.Clone(ge.kwargs), geCommonKwargs...), members: map[string]string{}}
	if err := k.read(x.kwargs); err != nil {
		return compiled{}, err
	}
	for i, name := range k.names {
		if !slices.Contains(k.accepted, name) {
			return compiled{}, k.invalid(name, "no such kwarg for "+x.typ, kindName(k.values[i].Kind()),
				"is not a kwarg of %s that Meridian supports (it takes %s).", x.typ, strings.Join(ge.kwargs, ", "))
		}
		if hasParameter(k.values[i]) {
			return compiled{}, k.invalid(name, "a value (not a $PARAMETER reference)", "object",
				"is a $PARAMETER reference; evaluation parameters are not supported: send the value itself.")
		}
		switch name {
		case "row_condition", "windows":
			if k.values[i].Kind() != 'n' {
				return compiled{}, k.invalid(name, "null", kindName(k.values[i].Kind()),
					"is not supported: Meridian evaluates every row of the data; send the rows to check instead, or null.")
			}
		}
	}
	in := Check{Type: ge.check}
	if m, ok := k.get("mostly"); ok && m.Kind() != 'n' {
		v, err := k.number("mostly")
		if err != nil {
			return compiled{}, err
		}
		in.Mostly = v
	}
	if x.severity != nil {
		sev, ok := geSeverities[*x.severity]
		if !ok {
			return compiled{}, engine.Invalid("INVALID_CHECKS", at+".severity", "string (critical, warning or info)", "string",
				"%s.severity must be critical, warning or info, not %q.", at, *x.severity)
		}
		in.Severity = &sev
	}
	id := "expectation_" + strconv.Itoa(x.index)
	if x.id != nil {
		id = *x.id
	}
	in.ID = &id
	if err := ge.build(k, &in); err != nil {
		return compiled{}, err
	}
	c, err := compileCheck(x.index, &in)
	if err != nil {
		return compiled{}, k.translate(err, at)
	}
	if k.types != 0 {
		c.want = k.types
	}
	c.expectationType, c.kwargs, c.meta, c.field = x.typ, x.kwargs, x.meta, at
	return c, nil
}

// read reads the kwargs object in document order.
func (k *geKwargs) read(raw jsontext.Value) error {
	dec := jsontext.NewDecoder(strings.NewReader(string(raw)))
	if _, err := dec.ReadToken(); err != nil {
		return k.invalid("", "object", "object", "is not a valid object: %v.", err)
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return k.invalid("", "object", "object", "is not a valid object: %v.", err)
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return k.invalid("", "object", "object", "is not a valid object: %v.", err)
		}
		k.names = append(k.names, name)
		k.values = append(k.values, v.Clone())
	}
	return nil
}

// hasParameter reports whether v is, or holds, a {"$PARAMETER": …} reference.
func hasParameter(v jsontext.Value) bool {
	if k := v.Kind(); k != '{' && k != '[' {
		return false
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(x any) bool {
		switch x := x.(type) {
		case map[string]any:
			if _, ok := x["$PARAMETER"]; ok {
				return true
			}
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(x)
}

// translate rewrites an error compileCheck reported at checks[i].member to the kwarg the
// member came from.
func (k *geKwargs) translate(err error, at string) error {
	var ie *engine.InputError
	if !errors.As(err, &ie) {
		return err
	}
	old := ie.Field
	rest := old[strings.IndexByte(old, ']')+1:] // ".member[…]…", or "" for the check itself
	field := at
	switch {
	case strings.HasPrefix(rest, ".id"):
		field = at + ".id"
	case strings.HasPrefix(rest, ".severity"):
		field = at + ".severity"
	case strings.HasPrefix(rest, "."):
		member := rest[1:]
		suffix := ""
		if i := strings.IndexAny(member, ".["); i >= 0 {
			member, suffix = member[:i], member[i:]
		}
		if kw, ok := k.members[member]; ok {
			member = kw
		}
		field = k.path + "." + member + suffix
	}
	out := *ie
	out.Field = field
	out.Message = strings.Replace(ie.Message, old, field, 1)
	return &out
}
