package meridian

import (
	"bytes"
	"context"
	"io"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

// partialLimit is the length of the partial unexpected lists.
const partialLimit = 20

// Analyze validates req (unless Validate already did), runs its checks on the data, scores
// the dimensions and gates the source (method: docs/methods/meridian.md). The data is
// req.Dataset when a streaming caller fed one (ReadCSV or ReadRecords), otherwise req.Data,
// read here. req.Now is the "now" of freshness when req.AsOf is absent. Invalid requests
// give an *engine.InputError carrying the contract's code and field path; work estimated
// (Estimate's model) above req.Budget is refused with WORK_LIMIT_EXCEEDED before it
// starts. ctx is checked while inline data is read, before each check and each column
// profile, and every few thousand values or rows of the loops within them (inside one long
// value, every few thousand runes of a regex match); its error is returned once it ends.
func Analyze(ctx context.Context, req Request) (Result, error) {
	p, err := req.compiled()
	if err != nil {
		return Result{}, err
	}
	ds := req.Dataset
	if (ds == nil || ds.format == formatNone) && req.Data != nil {
		ds = NewDataset()
		ds.SetWorkers(req.Workers)
		if err := ds.readInline(ctx, req.Data); err != nil {
			return Result{}, err
		}
	}
	hasData := ds != nil && ds.format != formatNone
	if !hasData {
		ds = NewDataset() // signals only (compile checked that no check needs data)
	}
	if ie := p.cost(ds, hasData).Within(req.Budget); ie != nil {
		return Result{}, ie
	}
	if p.asOf == nil && req.Now.IsZero() {
		return Result{}, engine.Invalid("INVALID_AS_OF", "as_of", "string (RFC 3339 timestamp)", "missing",
			"as_of is required when the request's Now is not set: freshness needs an instant to measure from.")
	}
	now := req.Now
	asOf := instantOf(now)
	if p.asOf != nil {
		asOf = *p.asOf
	}
	e := evaluation{ctx: ctx, ds: ds, asOf: asOf, complCols: map[string]bool{}, shown: &shownValues{m: map[shownKey]any{}}}
	res := Result{
		SourceID:      req.SourceID,
		Checks:        make([]CheckResult, 0, len(p.checks)),
		MethodVersion: MethodVersion,
		Passed:        true,
	}
	workers := workerCount(req.Workers)
	profiled := hasData && p.profile
	var profile *Profile
	if profiled {
		profile = ds.newProfile()
	}
	results, err := e.runAll(p.checks, workers, profile)
	if err != nil {
		return Result{}, err
	}
	for _, cr := range results {
		if !cr.Success && cr.Severity == "error" {
			res.Passed = false
		}
		if cr.Success {
			res.Statistics.SuccessfulChecks++
		} else {
			res.Statistics.UnsuccessfulChecks++
		}
		res.Checks = append(res.Checks, cr)
	}
	res.Statistics.EvaluatedChecks = len(res.Checks)
	if n := len(res.Checks); n > 0 {
		res.Statistics.SuccessPercent = ptr(100 * float64(res.Statistics.SuccessfulChecks) / float64(n))
	}
	res.Dimensions = e.dimensions(hasData, req.Signals, p)
	res.Score = Score(res.Dimensions)
	res.Tier = TierOf(res.Score)
	res.Gating = gate(res.Score, res.Passed, p.blockBelow, p.reviewBelow)
	res.Profile = profile
	return res, nil
}

// readInline reads the request's own data; once ctx ends, reading stops with its error.
func (d *Dataset) readInline(ctx context.Context, data *Data) error {
	if data.CSV != nil {
		delim := ','
		if data.Delimiter != nil {
			r, err := ParseDelimiter(*data.Delimiter)
			if err != nil {
				return err
			}
			delim = r
		}
		err := d.ReadCSV(&contextReader{ctx: ctx, r: strings.NewReader(*data.CSV)}, delim)
		return contextError(ctx, err)
	}
	err := d.ReadRecords(jsontext.NewDecoder(&contextReader{ctx: ctx, r: bytes.NewReader(data.Records)}))
	return contextError(ctx, err)
}

// contextError is ctx's error when reading stopped because ctx ended, else err.
func contextError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// contextReader is a sized reader that fails once ctx has ended, so that reading inline
// data stops within one buffer (4 KiB of CSV, a decoder's read of JSON) of a cancel.
type contextReader struct {
	ctx context.Context
	r   interface {
		io.Reader
		Len() int
	}
}

func (r *contextReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Len is the number of bytes not yet read (what lets ReadCSV size its columns once).
func (r *contextReader) Len() int { return r.r.Len() }

// evaluation accumulates the pooled counts of the dimensions while the checks run.
type evaluation struct {
	ctx  context.Context
	ds   *Dataset
	asOf instant
	// shown holds the values the partial lists show, so that a long value listed by several
	// checks (or rows) is copied once.
	shown *shownValues

	complCols  map[string]bool
	complOrder []string
	valU, valN int
	uniU, uniN int
	conU, conN int
	outU, outN int
	timeliness []float64

	// keys maps the values of several columns to one id space (unique_within_record
	// compares values across columns); built on first use.
	keys map[string]uint32
}

// ctxEvery is how many iterations of a loop over values or rows run between checks of the
// context: a few microseconds of work, well within the contract's 100 ms after a cancel,
// for a check that costs about 20 ns.
const ctxEvery = 4096

// stopped reports, every ctxEvery iterations i, whether ctx has ended; the caller returns
// and Analyze reports the context's error.
func (e *evaluation) stopped(i int) bool {
	return i%ctxEvery == 0 && e.ctx.Err() != nil
}

type shownKey struct {
	col *column
	id  uint32
}

// shownValues holds the values the partial lists show, shared by the checks running side
// by side.
type shownValues struct {
	mu sync.Mutex
	m  map[shownKey]any
}

// show is ds.display(col, id), copied once per evaluation.
func (e *evaluation) show(col *column, id uint32) any {
	if id == 0 {
		return nil
	}
	k := shownKey{col, id}
	e.shown.mu.Lock()
	defer e.shown.mu.Unlock()
	v, ok := e.shown.m[k]
	if !ok {
		v = e.ds.display(col, id)
		e.shown.m[k] = v
	}
	return v
}

func withinMostly(unexpected, elements int, mostly float64) bool {
	u := float64(unexpected)
	allowed := (1 - mostly) * float64(elements)
	return u <= allowed || math.Abs(u-allowed) <= 1e-9*math.Max(u, allowed)
}

// runAll runs the checks in order, or on up to workers goroutines, each on its own
// evaluation whose pooled counts are then added to e in the checks' order, so that the
// results and the dimensions are the same for any number of workers. When profile is not
// nil it also fills profile's columns (after the checks on one goroutine; on several, beside
// them, from the same pool of tasks: one check can take most of the checks' time — a regular
// expression over a million values, 20 of the 46 ms of the 1M-row benchmark — and the
// profile's columns then run on the other cores instead of after it). It returns ctx's error
// once it has ended.
func (e *evaluation) runAll(checks []compiled, workers int, profile *Profile) ([]CheckResult, error) {
	results := make([]CheckResult, len(checks))
	columns := 0
	if profile != nil {
		columns = len(profile.Columns)
	}
	if workers <= 1 || len(checks)+columns <= 1 {
		for i := range checks {
			if err := e.ctx.Err(); err != nil {
				return nil, err
			}
			results[i] = e.run(&checks[i])
		}
		for j := range columns {
			e.ds.profileInto(e.ctx, profile, j)
		}
		if err := e.ctx.Err(); err != nil {
			return nil, err // a check or a column's profile may have stopped early
		}
		return results, nil
	}
	forks := make([]*evaluation, len(checks))
	parallel(workers, len(checks)+columns, func(i int) {
		if e.ctx.Err() != nil {
			return
		}
		if i >= len(checks) {
			e.ds.profileInto(e.ctx, profile, i-len(checks))
			return
		}
		f := &evaluation{ctx: e.ctx, ds: e.ds, asOf: e.asOf, complCols: map[string]bool{}, shown: e.shown}
		results[i], forks[i] = f.run(&checks[i]), f
	})
	if err := e.ctx.Err(); err != nil {
		return nil, err
	}
	for _, f := range forks {
		for _, name := range f.complOrder {
			if !e.complCols[name] {
				e.complCols[name] = true
				e.complOrder = append(e.complOrder, name)
			}
		}
		e.valU, e.valN = e.valU+f.valU, e.valN+f.valN
		e.uniU, e.uniN = e.uniU+f.uniU, e.uniN+f.uniN
		e.conU, e.conN = e.conU+f.conU, e.conN+f.conN
		e.outU, e.outN = e.outU+f.outU, e.outN+f.outN
		e.timeliness = append(e.timeliness, f.timeliness...)
	}
	return results, nil
}

func (e *evaluation) run(c *compiled) CheckResult {
	ds := e.ds
	cr := CheckResult{
		ID: c.id, Type: c.typ, Severity: c.severity,
		ElementCount:               ds.rows,
		PartialUnexpectedList:      []any{},
		PartialUnexpectedIndexList: []int{},
		Details:                    map[string]any{},
		ExpectationType:            c.expectationType,
		Kwargs:                     c.kwargs,
		Meta:                       c.meta,
	}
	switch c.typ {
	case CheckCompoundUnique, CheckColumnsPresent, CheckUniqueWithinRecord:
		cr.Columns = c.columns
	case CheckRowCountBetween:
	default:
		col := c.column
		cr.Column = &col
	}
	// Missing columns.
	var needed []string
	switch c.typ {
	case CheckRowCountBetween, CheckColumnsPresent:
	case CheckCompoundUnique, CheckUniqueWithinRecord:
		needed = c.columns
	case CheckColumnComparison:
		needed = []string{c.column, c.other}
		cr.Details["operator"] = c.op
		cr.Details["other"] = c.other
		cr.Details["ignore_row_if"] = c.ignoreRowIf
	default:
		needed = []string{c.column}
	}
	var absent []string
	for _, name := range needed {
		if ds.column(name) == nil && !contains(absent, name) {
			absent = append(absent, name)
		}
	}
	if len(absent) > 0 {
		cr.Details["error"] = "column_not_found"
		cr.Details["missing_columns"] = absent
		return cr
	}
	switch c.typ {
	case CheckNotNull:
		col := ds.column(c.column)
		if !e.complCols[c.column] {
			e.complCols[c.column] = true
			e.complOrder = append(e.complOrder, c.column)
		}
		nulls := ds.rows - col.nonNull
		e.rowByID(&cr, c, col, nil, true, nulls, nulls)
	case CheckNull:
		e.null(&cr, c)
	case CheckUnique:
		col := ds.column(c.column)
		bad := make([]bool, len(col.dict.count))
		u := 0
		for id := 1; id < len(bad); id++ {
			if e.stopped(id) {
				return cr
			}
			if col.dict.count[id] > 1 {
				bad[id] = true
				u += int(col.dict.count[id])
			}
		}
		e.uniU += u
		e.uniN += col.nonNull
		e.rowByID(&cr, c, col, bad, false, u, ds.rows-col.nonNull)
	case CheckCompoundUnique:
		e.compoundUnique(&cr, c)
	case CheckType, CheckBetween, CheckInSet, CheckRegex, CheckLengthBetween, CheckNotInSet, CheckNotRegex:
		col := ds.column(c.column)
		bad := e.invalid(c, col)
		u := 0
		for id := 1; id < len(bad); id++ {
			if bad[id] {
				u += int(col.dict.count[id])
			}
		}
		e.valU += u
		e.valN += col.nonNull
		e.rowByID(&cr, c, col, bad, false, u, ds.rows-col.nonNull)
	case CheckUniqueWithinRecord:
		e.uniqueWithinRecord(&cr, c)
	case CheckColumnComparison:
		e.columnComparison(&cr, c)
	case CheckOutliers:
		e.outliers(&cr, c)
	case CheckRowCountBetween:
		zero := 0
		cr.MissingCount = &zero
		cr.ObservedValue = ds.rows
		cr.Success = inBounds(float64(ds.rows), c.min, c.max, c.strictMin, c.strictMax)
	case CheckColumnsPresent:
		e.columnsPresent(&cr, c)
	case CheckFreshness:
		e.freshness(&cr, c)
	case CheckStatisticBetween:
		e.statisticBetween(&cr, c)
	}
	return cr
}

// null runs null: every non-null value is unexpected.
func (e *evaluation) null(cr *CheckResult, c *compiled) {
	col := e.ds.column(c.column)
	bad := make([]bool, len(col.dict.count))
	for id := 1; id < len(bad); id++ {
		bad[id] = true
	}
	e.rowByID(cr, c, col, bad, false, col.nonNull, e.ds.rows-col.nonNull)
}

// columnsPresent runs columns_present: observed, the listed columns the data lacks; with
// exact, the data's columns not listed fail too (details.unexpected_columns).
func (e *evaluation) columnsPresent(cr *CheckResult, c *compiled) {
	zero := 0
	cr.MissingCount = &zero
	missing := []string{}
	for _, name := range c.columns {
		if e.ds.column(name) == nil {
			missing = append(missing, name)
		}
	}
	cr.ObservedValue = missing
	cr.Success = len(missing) == 0
	if c.exact {
		extra := []string{}
		for _, name := range e.ds.Columns() {
			if !contains(c.columns, name) {
				extra = append(extra, name)
			}
		}
		cr.Details["unexpected_columns"] = extra
		cr.Success = cr.Success && len(extra) == 0
	}
}

// statisticBetween runs statistic_between: the statistic of the numeric values, or the
// distinct count or ratio of the non-null values.
func (e *evaluation) statisticBetween(cr *CheckResult, c *compiled) {
	col := e.ds.column(c.column)
	nulls := e.ds.rows - col.nonNull
	cr.MissingCount = &nulls
	switch c.statistic {
	case "distinct_count":
		n := col.dict.size()
		cr.ObservedValue = n
		cr.Success = inBounds(float64(n), c.min, c.max, c.strictMin, c.strictMax)
	case "distinct_ratio":
		if col.nonNull > 0 {
			v := float64(col.dict.size()) / float64(col.nonNull)
			cr.ObservedValue = v
			cr.Success = inBounds(v, c.min, c.max, c.strictMin, c.strictMax)
		}
	default:
		if v := ptr(col.numeric().statistic(c.statistic)); v != nil {
			cr.ObservedValue = *v
			cr.Success = inBounds(*v, c.min, c.max, c.strictMin, c.strictMax)
		}
	}
}

// inBounds reports min ≤ x ≤ max (min < x where strictMin, x < max where strictMax);
// absent bounds do not bind.
func inBounds(x float64, min, max *float64, strictMin, strictMax bool) bool {
	if min != nil && (x < *min || strictMin && x == *min) {
		return false
	}
	if max != nil && (x > *max || strictMax && x == *max) {
		return false
	}
	return true
}

// rowByID finishes a row check whose unexpected values are decided per distinct value
// (bad[id]; nullBad: nulls are unexpected).
func (e *evaluation) rowByID(cr *CheckResult, c *compiled, col *column, bad []bool, nullBad bool, unexpected, missing int) {
	if unexpected > 0 {
		for r, id := range col.ids {
			if e.stopped(r) {
				return
			}
			if id == 0 && nullBad || id != 0 && bad != nil && bad[id] {
				cr.PartialUnexpectedList = append(cr.PartialUnexpectedList, e.show(col, id))
				cr.PartialUnexpectedIndexList = append(cr.PartialUnexpectedIndexList, r)
				if len(cr.PartialUnexpectedIndexList) == partialLimit {
					break
				}
			}
		}
	}
	finishRow(cr, c, unexpected, missing)
}

// finishRow sets a row check's counts and success. As in Great Expectations 1.x the
// denominator of mostly and unexpected_percent is the values the check looked at: the
// non-null ones (element_count − missing_count), except for not_null and null, whose
// unexpected values are defined by nullness and whose denominator is element_count.
func finishRow(cr *CheckResult, c *compiled, unexpected, missing int) {
	cr.UnexpectedCount = &unexpected
	cr.MissingCount = &missing
	considered := cr.ElementCount - missing
	if c.typ == CheckNotNull || c.typ == CheckNull {
		considered = cr.ElementCount
	}
	if cr.ElementCount > 0 {
		cr.UnexpectedPercentTotal = ptr(100 * float64(unexpected) / float64(cr.ElementCount))
	}
	if considered > 0 {
		cr.UnexpectedPercent = ptr(100 * float64(unexpected) / float64(considered))
		cr.UnexpectedPercentNonmissing = cr.UnexpectedPercent
	}
	cr.Success = withinMostly(unexpected, considered, c.mostly)
}

// invalid marks the distinct values of col that a validity check finds unexpected.
func (e *evaluation) invalid(c *compiled, col *column) []bool {
	d := &col.dict
	bad := make([]bool, len(d.count))
	switch c.typ {
	case CheckType:
		e.markTypes(bad, d.flags, c.want)
	case CheckBetween:
		for id := 1; id < len(bad); id++ {
			if e.stopped(id) {
				return bad
			}
			bad[id] = d.flags[id]&fNumber == 0 || !inBounds(d.num[id], c.min, c.max, c.strictMin, c.strictMax)
		}
	case CheckInSet, CheckNotInSet:
		in := c.typ == CheckInSet
		for id := 1; id < len(bad); id++ {
			bad[id] = in
		}
		for i, v := range c.values {
			if e.stopped(i) {
				return bad
			}
			if id := e.ds.lookup(col, v); id != 0 {
				bad[id] = !in
			}
		}
	case CheckRegex, CheckNotRegex:
		e.matchRegex(c, col, bad)
	case CheckLengthBetween:
		e.markLengths(c, col, bad)
	}
	return bad
}

// markTypes marks the values whose flags have none of want's (the loop alone, so that it
// keeps its registers).
func (e *evaluation) markTypes(bad []bool, flags []uint8, want uint8) {
	flags = flags[:len(bad)]
	for id := 1; id < len(bad); id++ {
		if e.stopped(id) {
			return
		}
		bad[id] = flags[id]&want == 0
	}
}

// markLengths marks the values that are not strings or whose length in code points is
// outside c's bounds (the loop alone, so that it keeps its registers).
func (e *evaluation) markLengths(c *compiled, col *column, bad []bool) {
	for id := 1; id < len(bad); id++ {
		if e.stopped(id) {
			return
		}
		t := e.ds.text(col, uint32(id))
		bad[id] = t == nil || !inBounds(float64(runeLen(t)), c.min, c.max, c.strictMin, c.strictMax)
	}
}

// matchRegex marks the distinct values of col that c finds unexpected: for regex, values
// its patterns do not match (match_on any: none of them; all: not every one); for
// not_regex, values they match (any: one of them; all: every one). Values that are not
// strings are unexpected for both. It checks ctx every ctxEvery values or regexCheckNanos
// of estimated matching, whichever comes first; a value whose match alone is estimated
// above regexCheckNanos is read through a runeReader that ends the input once ctx has
// ended, every regexCheckNanos of its runes.
func (e *evaluation) matchRegex(c *compiled, col *column, bad []bool) {
	since := 0.0 // estimated nanoseconds since the last check of ctx
	negate := c.typ == CheckNotRegex
	for id := 1; id < len(bad); id++ {
		t := e.ds.text(col, uint32(id))
		if t == nil {
			bad[id] = true
			continue
		}
		if id%ctxEvery == 0 && e.ctx.Err() != nil {
			return
		}
		// matched: any pattern matched (match_on any), or every pattern did (all).
		matched := c.matchAll
		for j := range c.patterns {
			m, ok := e.match(&c.patterns[j], t, &since)
			if !ok {
				return
			}
			if m != c.matchAll {
				matched = m
				break
			}
		}
		bad[id] = matched == negate
	}
}

// match runs one pattern on t, adding its estimated nanoseconds to since and checking ctx
// once they reach regexCheckNanos; ok is false when ctx has ended.
func (e *evaluation) match(pt *pattern, t []byte, since *float64) (matched, ok bool) {
	ns, long := pt.shape.matchNanos(len(t))
	*since += ns
	if *since >= regexCheckNanos {
		*since = 0
		if e.ctx.Err() != nil {
			return false, false
		}
	}
	if !long {
		return pt.re.Match(t), true
	}
	rr := runeReader{b: t, ctx: e.ctx, every: pt.shape.runesPerCheck()}
	return pt.re.MatchReader(&rr), true
}

// runeReader reads a value rune by rune for regexp's MatchReader and ends the input (an
// error, which regexp reads as the end of the text) once ctx has ended, checking it every
// `every` runes. It decodes as regexp does with a []byte: invalid UTF-8 reads as
// utf8.RuneError, one byte at a time.
type runeReader struct {
	b     []byte
	ctx   context.Context
	every int
	left  int
}

func (r *runeReader) ReadRune() (rune, int, error) {
	if r.left == 0 {
		r.left = r.every
		if err := r.ctx.Err(); err != nil {
			return 0, 0, err
		}
	}
	r.left--
	if len(r.b) == 0 {
		return 0, 0, io.EOF
	}
	if c := r.b[0]; c < utf8.RuneSelf {
		r.b = r.b[1:]
		return rune(c), 1, nil
	}
	c, n := utf8.DecodeRune(r.b)
	r.b = r.b[n:]
	return c, n, nil
}

// lookup returns the id of the in_set member v in col, or 0. For CSV a member is compared as
// its text: a string's content, a number's literal, true/false, an object's or array's JSON.
func (d *Dataset) lookup(col *column, v jsontext.Value) uint32 {
	if d.format == formatJSON {
		k, _, _, isNull, reason := jsonKey(nil, v)
		if isNull || reason != "" {
			return 0
		}
		return col.dict.findBytes(k, hashBytes(d, k))
	}
	var text []byte
	switch v.Kind() {
	case 'n':
		return 0
	case '"':
		var err error
		if text, err = jsontext.AppendUnquote(nil, v); err != nil {
			return 0
		}
	default:
		cv := v.Clone()
		if err := cv.Compact(); err != nil {
			return 0
		}
		text = cv
	}
	if len(text) == 0 {
		return 0
	}
	return col.dict.findBytes(text, hashBytes(d, text))
}

// compoundUnique runs compound_unique. With ignore_row_if any_value_is_missing (the rule of
// checks) a row with a null key column is skipped; with all_values_are_missing (Great
// Expectations' default, a suite's) only rows null in every key column are, and never skips
// none: a null is then a value of the key, equal to other nulls (as pandas' duplicated).
func (e *evaluation) compoundUnique(cr *CheckResult, c *compiled) {
	ds := e.ds
	cols := make([]*column, len(c.columns))
	ids := make([][]uint32, len(c.columns)) // per column, the ids the keys are built from
	nullAsValue := c.ignoreRowIf != ignoreAny
	for i, name := range c.columns {
		cols[i] = ds.column(name)
		ids[i] = cols[i].ids
		if nullAsValue {
			if ids[i] = e.nullAsValue(cols[i].ids); ids[i] == nil {
				return
			}
		}
	}
	key := make([]uint32, ds.rows)
	copy(key, ids[0])
	next := uint32(0)
	for _, colIDs := range ids[1:] {
		if e.ctx.Err() != nil {
			return // Analyze returns the context's error
		}
		pairs := make(map[uint64]uint32, min(ds.rows, 1<<16))
		next = 0
		for r, id := range colIDs {
			if e.stopped(r) {
				return
			}
			if key[r] == 0 || id == 0 {
				key[r] = 0
				continue
			}
			k := uint64(key[r])<<32 | uint64(id)
			v, ok := pairs[k]
			if !ok {
				next++
				v = next
				pairs[k] = v
			}
			key[r] = v
		}
	}
	if len(cols) == 1 {
		next = uint32(cols[0].dict.size())
		if nullAsValue {
			next++
		}
	}
	if c.ignoreRowIf == ignoreAll {
		for r := range key {
			if e.stopped(r) {
				return
			}
			allNull := true
			for _, col := range cols {
				if col.ids[r] != 0 {
					allNull = false
					break
				}
			}
			if allNull {
				key[r] = 0
			}
		}
	}
	count := make([]uint32, next+1)
	missing := 0
	for _, k := range key {
		if k == 0 {
			missing++
		}
		count[k]++
	}
	u := 0
	for k := 1; k < len(count); k++ {
		if count[k] > 1 {
			u += int(count[k])
		}
	}
	if u > 0 {
		for r, k := range key {
			if e.stopped(r) {
				return
			}
			if k != 0 && count[k] > 1 {
				tuple := make([]any, len(cols))
				for i, col := range cols {
					tuple[i] = e.show(col, col.ids[r])
				}
				cr.PartialUnexpectedList = append(cr.PartialUnexpectedList, tuple)
				cr.PartialUnexpectedIndexList = append(cr.PartialUnexpectedIndexList, r)
				if len(cr.PartialUnexpectedIndexList) == partialLimit {
					break
				}
			}
		}
	}
	e.uniU += u
	e.uniN += ds.rows - missing
	finishRow(cr, c, u, missing)
}

func (e *evaluation) columnComparison(cr *CheckResult, c *compiled) {
	ds := e.ds
	l, r := ds.column(c.column), ds.column(c.other)
	var lt, rt []instant
	missing, u := 0, 0
	unexpected := func(row int, a, b uint32) {
		u++
		if len(cr.PartialUnexpectedIndexList) < partialLimit {
			cr.PartialUnexpectedList = append(cr.PartialUnexpectedList, []any{e.show(l, a), e.show(r, b)})
			cr.PartialUnexpectedIndexList = append(cr.PartialUnexpectedIndexList, row)
		}
	}
	if c.ignoreRowIf == ignoreEither {
		// The default of checks (meridian/1's rule): a row with a null is skipped.
		for row := 0; row < ds.rows; row++ {
			if e.stopped(row) {
				return
			}
			a, b := l.ids[row], r.ids[row]
			if a == 0 || b == 0 {
				missing++
				continue
			}
			if lt == nil {
				lt, rt = l.timestamps(ds), r.timestamps(ds)
			}
			if !ds.compare(l, r, a, b, lt, rt, c.op) {
				unexpected(row, a, b)
			}
		}
	} else {
		// both_values_are_missing skips rows null on both sides, neither none; a row with a
		// null that is not skipped is unexpected: as in Great Expectations, a comparison
		// with a null fails.
		skipBoth := c.ignoreRowIf == ignoreBoth
		for row := 0; row < ds.rows; row++ {
			if e.stopped(row) {
				return
			}
			a, b := l.ids[row], r.ids[row]
			switch {
			case a == 0 && b == 0 && skipBoth:
				missing++
			case a == 0 || b == 0:
				unexpected(row, a, b)
			default:
				if lt == nil {
					lt, rt = l.timestamps(ds), r.timestamps(ds)
				}
				if !ds.compare(l, r, a, b, lt, rt, c.op) {
					unexpected(row, a, b)
				}
			}
		}
	}
	e.conU += u
	e.conN += ds.rows - missing
	finishRow(cr, c, u, missing)
}

// compare evaluates "left op right" for two non-null values: numbers as numbers, a number
// against a non-number fails, timestamps as instants, strings by code points; other JSON
// values (booleans, objects, arrays) support only == and != (JSON equality).
func (d *Dataset) compare(l, r *column, a, b uint32, lt, rt []instant, op string) bool {
	fa, fb := l.dict.flags[a], r.dict.flags[b]
	var c int
	switch {
	case fa&fNumber != 0 && fb&fNumber != 0:
		x, y := l.dict.num[a], r.dict.num[b]
		switch {
		case x < y:
			c = -1
		case x > y:
			c = 1
		}
	case fa&fNumber != 0 || fb&fNumber != 0:
		return false
	case fa&fTimestamp != 0 && fb&fTimestamp != 0:
		c = lt[a].compare(rt[b])
	case fa&fString != 0 && fb&fString != 0:
		c = bytes.Compare(d.text(l, a), d.text(r, b))
	default:
		eq := bytes.Equal(l.dict.key(a), r.dict.key(b))
		switch op {
		case "==":
			return eq
		case "!=":
			return !eq
		}
		return false
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
	case ">":
		return c > 0
	}
	return false
}

// nullAsValue returns ids with every id shifted up by one and nulls as 1, so that a null
// takes part in a key as a value (never 0, the skipped key); nil when ctx has ended.
func (e *evaluation) nullAsValue(ids []uint32) []uint32 {
	out := make([]uint32, len(ids))
	for r, id := range ids {
		if e.stopped(r) {
			return nil
		}
		out[r] = id + 1
	}
	return out
}

// timestamps returns the parsed instant of every distinct value (zero where not a timestamp).
func (c *column) timestamps(d *Dataset) []instant {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	if c.times != nil {
		return c.times
	}
	c.times = make([]instant, len(c.dict.count))
	for id := 1; id < len(c.times); id++ {
		if c.dict.flags[id]&fTimestamp != 0 {
			c.times[id], _ = parseTimestamp(d.text(c, uint32(id)))
		}
	}
	return c.times
}

func (e *evaluation) outliers(cr *CheckResult, c *compiled) {
	ds := e.ds
	col := ds.column(c.column)
	s := col.numeric()
	d := &col.dict
	isOut := func(float64) bool { return false }
	cr.Details["method"] = c.method
	cr.Details["threshold"] = c.threshold
	if s.n > 0 {
		switch c.method {
		case "mad":
			m := s.quantile(0.5)
			mad, meanAD := s.mad(m)
			scale := mad
			if mad == 0 {
				scale = 1.2533 * meanAD
			}
			cr.Details["median"] = m
			cr.Details["mad"] = mad
			if scale > 0 && finite(scale) {
				cr.Details["scale"] = scale
				isOut = func(x float64) bool { return math.Abs(0.6745*(x-m)/scale) > c.threshold }
			}
		case "iqr":
			q1, q3 := s.quantile(0.25), s.quantile(0.75)
			lo, hi := q1-c.threshold*(q3-q1), q3+c.threshold*(q3-q1)
			cr.Details["q1"], cr.Details["q3"] = q1, q3
			if finite(lo) {
				cr.Details["lower_fence"] = lo
			}
			if finite(hi) {
				cr.Details["upper_fence"] = hi
			}
			isOut = func(x float64) bool { return x < lo || x > hi }
		}
	}
	bad := make([]bool, len(d.count))
	u, out := 0, 0
	for id := 1; id < len(bad); id++ {
		if e.stopped(id) {
			return
		}
		switch {
		case d.flags[id]&fNumber == 0:
			bad[id] = true
			u += int(d.count[id])
		case isOut(d.num[id]):
			bad[id] = true
			u += int(d.count[id])
			out += int(d.count[id])
		}
	}
	e.outU += out
	e.outN += s.n
	e.rowByID(cr, c, col, bad, false, u, ds.rows-col.nonNull)
}

func (e *evaluation) freshness(cr *CheckResult, c *compiled) {
	ds := e.ds
	col := ds.column(c.column)
	nulls := ds.rows - col.nonNull
	cr.MissingCount = &nulls
	times := col.timestamps(ds)
	var newest instant
	found := false
	for id := 1; id < len(times); id++ {
		if e.stopped(id) {
			return
		}
		if col.dict.flags[id]&fTimestamp == 0 || col.dict.count[id] == 0 {
			continue
		}
		t := times[id]
		if t.compare(e.asOf) <= 0 && (!found || t.compare(newest) > 0) {
			newest, found = t, true
		}
	}
	if !found {
		e.timeliness = append(e.timeliness, 0)
		return
	}
	age := e.asOf.secondsSince(newest)
	allowed := c.maxAge.Seconds()
	cr.ObservedValue = age
	cr.Details["max_age_seconds"] = allowed
	cr.Success = age <= allowed
	e.timeliness = append(e.timeliness, timelinessOf(age, allowed))
}

func timelinessOf(age, allowed float64) float64 {
	if age <= allowed {
		return 1
	}
	return allowed / age
}

func dim(v float64) *DimensionScore { return &DimensionScore{Score: v} }

func (e *evaluation) dimensions(hasData bool, sig *Signals, p *plan) Dimensions {
	var dims Dimensions
	ds := e.ds
	if hasData {
		cols := e.complOrder
		if len(cols) == 0 {
			cols = ds.Columns()
		}
		cells, nonNull := 0, 0
		for _, name := range cols {
			cells += ds.rows
			nonNull += ds.column(name).nonNull
		}
		if cells > 0 {
			dims.Completeness = dim(float64(nonNull) / float64(cells))
		}
	} else if sig != nil && sig.Completeness != nil {
		dims.Completeness = dim(*sig.Completeness)
	}
	ratio := func(u, n int) *DimensionScore {
		if n == 0 {
			return nil
		}
		return dim(1 - float64(u)/float64(n))
	}
	dims.Validity = ratio(e.valU, e.valN)
	dims.Uniqueness = ratio(e.uniU, e.uniN)
	dims.Consistency = ratio(e.conU, e.conN)

	tl := e.timeliness
	if p.lastUpdated != nil {
		tl = append(tl, timelinessOf(e.asOf.secondsSince(*p.lastUpdated), p.interval.Seconds()))
	}
	if len(tl) > 0 {
		m := tl[0]
		for _, v := range tl[1:] {
			m = math.Min(m, v)
		}
		dims.Timeliness = dim(m)
	}
	acc := ratio(e.outU, e.outN)
	if sig != nil && sig.ErrorRate != nil {
		if v := 1 - *sig.ErrorRate; acc == nil || v < acc.Score {
			acc = dim(v)
		}
	}
	dims.Accuracy = acc
	return dims
}

// Dimension weights of the score.
const (
	WeightCompleteness = 0.25
	WeightValidity     = 0.25
	WeightUniqueness   = 0.15
	WeightTimeliness   = 0.15
	WeightConsistency  = 0.10
	WeightAccuracy     = 0.10
)

// Score is 100 × the weighted geometric mean of the present dimensions, each floored at
// 0.01, with the weights renormalised over the present ones; nil when none is present.
func Score(d Dimensions) *float64 {
	var wsum, lsum float64
	for _, x := range []struct {
		d *DimensionScore
		w float64
	}{{d.Completeness, WeightCompleteness}, {d.Validity, WeightValidity}, {d.Uniqueness, WeightUniqueness},
		{d.Timeliness, WeightTimeliness}, {d.Consistency, WeightConsistency}, {d.Accuracy, WeightAccuracy}} {
		if x.d == nil {
			continue
		}
		wsum += x.w
		lsum += x.w * math.Log(math.Max(x.d.Score, 0.01))
	}
	if wsum == 0 {
		return nil
	}
	s := 100 * math.Exp(lsum/wsum)
	return &s
}

// TierOf grades a score: platinum ≥ 90, gold ≥ 75, silver ≥ 60, bronze below; unrated when
// there is no score.
func TierOf(score *float64) string {
	switch {
	case score == nil:
		return TierUnrated
	case *score >= 90:
		return TierPlatinum
	case *score >= 75:
		return TierGold
	case *score >= 60:
		return TierSilver
	}
	return TierBronze
}

func gate(score *float64, passed bool, blockBelow, reviewBelow float64) string {
	switch {
	case score == nil:
		return GatingReview
	case *score < blockBelow:
		return GatingBlock
	case !passed || *score < reviewBelow:
		return GatingReview
	}
	return GatingAllow
}
