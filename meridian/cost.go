package meridian

import (
	"context"
	"math"
	"strconv"

	"riskapi/engine"
)

// Estimate returns what Analyze(req) will cost, from the request and its data alone,
// before any check runs (platform contract §11; model and measured constants:
// docs/methods/meridian.md, "Cost model"). It validates req as Analyze does (reusing the
// plan Validate kept) and returns the same errors. CPU covers the dominant loops of every
// check, the profile and, when the data is inline (req.Data without a fed Dataset),
// reading it; Memory is the peak of the bytes Analyze holds beyond the request and a fed
// Dataset (with inline data, the dataset it builds is included); Field names the input that
// drives the CPU: "checks[i]" for the costliest check, "data" when reading or profiling
// the data costs most.
//
// With inline data, Estimate reads it to learn its rows, columns and distinct values:
// linear in its bytes, which the body limit bounds. A caller that feeds a Dataset (the HTTP
// layer streams the body into one) pays only for the model.
func Estimate(req Request) (engine.Cost, error) {
	p, err := req.compiled()
	if err != nil {
		return engine.Cost{}, err
	}
	ds := req.Dataset
	inline := (ds == nil || ds.format == formatNone) && req.Data != nil
	if inline {
		ds = NewDataset()
		if err := ds.readInline(context.Background(), req.Data); err != nil {
			return engine.Cost{}, err
		}
	}
	hasData := ds != nil && ds.format != formatNone
	if !hasData {
		ds = NewDataset()
	}
	s := p.sheet(ds, hasData)
	if inline {
		s.read(req.Data)
	}
	return s.cost(), nil
}

// cost is the estimate of the work Analyze does on ds once ds has been read.
func (p *plan) cost(ds *Dataset, hasData bool) engine.Cost { return p.sheet(ds, hasData).cost() }

// outputPerValueByte is what one byte of a listed value takes in the encoded result: JSON
// escapes at most 6 bytes for one (a control character as \u00XX), and text rarely more
// than a few percent of its bytes; 2 covers text with a third of its bytes escaped.
const outputPerValueByte = 2

// CPU constants of the model, in nanoseconds per iteration of a loop. Each was measured by
// `COST_CALIBRATE=1 go test -run TestCalibrate -v ./meridian` (a case isolates the loop and
// runs it for 50–400 ms of CPU five times on a fresh dataset; the median is quoted below as
// "measured"; 2 cores, Go 1.26, 2026-11-27). Where the value differs, it was centred between
// the calibration table and the generator's data (TestCostEstimateHoldsForEveryScenario).
const (
	// costAnalyze is the fixed cost of one analysis: the plan's maps, the result, the
	// dimensions, a Dataset (measured 4,328 with one row and column of inline CSV; 11,467 on
	// 2026-11-28's slower machine, see costCSVByte).
	costAnalyze = 7_000
	// costReadColumn is one column of inline data read: its slices, its 64-slot table
	// (measured 759).
	costReadColumn = 1_000
	// costCheck is the fixed cost of one check: its result, details and pooled counts
	// (measured 438).
	costCheck = 400
	// costScanRow is one row of the scan that collects a row check's first 20 unexpected
	// values; the scan may read every row (measured 0.77).
	costScanRow = 0.8
	// costDistinct is one distinct value of the per-value loops of unique, type, in_set,
	// regex and length_between: a flag or count test, a store (measured 0.77). The loops of
	// between (a call comparing with the bounds), outliers (a call of the method's test) and
	// freshness (two instant comparisons) cost more per value: costBoundsValue,
	// costOutlierValue and costFreshValue, set from the ratios of the check-type test.
	costDistinct     = 0.8
	costBoundsValue  = 1.5
	costOutlierValue = 2.2
	costFreshValue   = 2.5
	// costInSetMember is the lookup of one in_set member in the column's dictionary
	// (measured 67.3).
	costInSetMember = 68
	// costRuneByte is one byte of a string counted in runes: length_between, the profile's
	// lengths (measured 0.56).
	costRuneByte = 0.52
	// costKeyRow is one row of compound_unique outside its pairing passes: the key copy,
	// the count and the scan (measured 2.86).
	costKeyRow = 2.9
	// costPairRow is one row of one pairing pass of compound_unique, run once per column
	// after the first (a map hit: measured 5.48); costPairNew one new key pair (an insert,
	// and the cache misses of a large map: measured 65.2).
	costPairRow = 6.5
	costPairNew = 61
	// costCompareRow is one row of column_comparison: two ids, two flag tests, a compare
	// (measured 6.01).
	costCompareRow = 6.2
	// costListByte is one byte of a value copied into a partial list (measured 0.18 with
	// values of 200,000 bytes on warm memory). The copies are fresh allocations: where page
	// faults and the scavenger's madvise are dear (a virtual machine whose kernel tracks memory
	// accesses) an analysis that lists 20 values of 20,000 bytes, run 600 times, measured
	// 0.45 ms a run against 0.12 ms estimated at 0.2 a byte. At 0.45 both machines sit within
	// the 3× bound (warm: 2.5× over at worst; there: 0.5×).
	costListByte = 0.45
	// costCompareByte is one byte of a string comparison in column_comparison (measured
	// 0.04).
	costCompareByte = 0.05
	// costParseTime is the parse of one distinct timestamp, once per column (measured 30.0).
	costParseTime = 28
	// costSortValue is one distinct number per halving of a numeric summary's sort: a
	// summary of m numbers costs m·log2(m)·costSortValue, the sort and the collecting and
	// merging of the numbers (measured 1.01).
	costSortValue = 1.05
	// costMADValue is the same for the median absolute deviation of outliers' mad method:
	// the deviations, their compensated sum and their summary (measured 3.72).
	costMADValue = 3.7
	// costProfileColumn is the fixed cost of one column profile (measured 1,191 for numeric
	// columns); costProfileValue one distinct value of its loops: type flags, top values
	// (measured 6.1 to 11.5 over the calibration runs).
	costProfileColumn = 1_200
	costProfileValue  = 9
	// Reading inline CSV with the byte-level reader (2026-11-27, GOMAXPROCS=1, load average
	// about 5; encoding/csv's were 0.65, 28.0 and 66.3): per byte, splitting and UTF-8
	// validation (measured 0.14); per field, hashing and interning a value (measured 18.0 on
	// the calibration table, about 1.6 times that on the generator's data); per distinct
	// value, inferring its types (measured 36.1). CPU is counted over every goroutine: the
	// workers split the same work, with about 10 % more of it in all. On 2026-11-28 a
	// machine of the same kind measured 1.05, 58.6 and 159 (after the chunks' fields and
	// the columns were sized at once): reading allocates most of the fresh memory of an
	// analysis, and its page faults cost about 3 µs each there, so reading slowed 3 to 7
	// times where the other loops slowed 2 to 3 (the cost checks scale by the machine's
	// Slowness for those). The three constants and costAnalyze are the geometric means of
	// the two machines' measurements, so that both stay within 3×.
	costCSVByte  = 0.38
	costCSVField = 32
	costCSVNew   = 76
	// Reading inline JSON records: per byte, the decoder (measured 1.01; 2.50 on
	// 2026-11-28's machine); per field (measured 112.7; 271.7); per distinct value (measured
	// 38.1 on the calibration table; 203.7). Geometric means, as for CSV.
	costJSONByte  = 1.6
	costJSONField = 175
	costJSONNew   = 88
	// unique_within_record: per distinct value of its columns, mapping it to the ids shared
	// by the columns: an insert into the evaluation's string-keyed map the first time a
	// column is mapped (costSharedNew; 250 measured on 400,000 distinct numbers, whose map
	// outgrows the caches), a lookup the next times (costSharedValue); per cell of a row,
	// collecting its id and comparing it with the row's others (costWithinCell).
	costSharedNew   = 200
	costSharedValue = 40
	costWithinCell  = 2.2
	// costFillValue is one distinct value of null's verdicts, all set (a vectorised loop:
	// 0.3 measured on warm memory; 0.6–1.0 where the verdicts' fresh pages are dear to fault
	// in, see costListByte).
	costFillValue = 0.6
	// costExactColumn is one column of the data listed by columns_present with exact (the
	// names, the lookup and the details: 60 measured, 145 where allocations are dear);
	// costDistinctStatistic the result of distinct_count or distinct_ratio (the boxed
	// observed value: 300 measured).
	costExactColumn       = 100
	costDistinctStatistic = 300
)

// Regex constants, fitted by TestCalibrateRegex to the pattern families of regexFamilies on
// the worst values of 16 to 200,000 bytes (measured ÷ estimated within 0.5–2 for every
// family and length): a match costs start + steps·(step + thread·threads) for the engine Go
// runs, where steps is the runes read and threads the weighted threads of the pattern's
// shape (regexShape).
const (
	// regexEmptyWeight is the weight of an instruction that reads no input (an
	// alternation, a capture, an assertion) against one that reads a rune.
	regexEmptyWeight = 0.5
	// regexShort is a value shorter than any match, which regexp rejects without running:
	// the loop's own cost (measured 22 to 47).
	regexShort = 35
	// regexTouch is one byte, up to the first regexTouchBytes, of reaching a value: the
	// cache and TLB misses of values far apart in the column's arena (values of 20,000
	// bytes failing within 10 runes cost about 200 ns more than short ones).
	regexTouch      = 0.15
	regexTouchBytes = 1024
	// regexLiteral and regexLiteralByte: a literal pattern is a search (bytes.Index); on
	// values full of near misses, the worst, measured 1.4–1.7 times below the estimate.
	regexLiteral     = 60
	regexLiteralByte = 0.3
	// One-pass engine (anchored, unambiguous patterns): 4.25 ns a weighted thread a rune
	// (`^[a-z]+$`: 9 ns a rune).
	regexOnepassStart  = 10
	regexOnepassStep   = 0
	regexOnepassThread = 4.25
	// Backtracker (programs of at most 500 instructions, short values): 3 ns a rune and
	// 3.5 a weighted thread (`[a-z]{100}x`: 358 ns a letter).
	regexBacktrackStart  = 80
	regexBacktrackStep   = 3
	regexBacktrackThread = 3.5
	// NFA simulation (larger programs or longer values): 2 ns a rune and 7.5 a weighted
	// thread (`[a-z]{1000}x`: 7.3 µs a letter).
	regexNFAStart  = 400
	regexNFAStep   = 2
	regexNFAThread = 7.5
	// regexReaderRune is the extra cost of a rune read through a runeReader (an interface
	// call and a decode; small against the threads of the values that use it).
	regexReaderRune = 5
)

// regexLongNanos is the estimated match of one value above which the value is read through
// a runeReader that checks the context within it; regexCheckNanos is the estimated
// matching between two checks of the context. Both keep the CPU spent after a cancel far
// below 100 ms even where the estimate is 3× short.
const (
	regexLongNanos  = 5e6
	regexCheckNanos = 1e6
)

// matchNanos is the estimated CPU of matching one value of n bytes, and whether the value
// is long enough to be read through a runeReader.
func (sh regexShape) matchNanos(n int) (float64, bool) {
	switch {
	case n < sh.minLen:
		return regexShort, false
	case sh.literal:
		return regexLiteral + float64(n)*regexLiteralByte, false
	}
	steps := float64(n)
	if sh.steps >= 0 {
		steps = float64(min(n, sh.steps))
	}
	ns := float64(min(n, regexTouchBytes)) * regexTouch
	switch {
	case sh.onepass:
		ns += regexOnepassStart + steps*(regexOnepassStep+regexOnepassThread*sh.threads)
	case sh.insts <= maxBacktrackProg && n < maxBacktrackVector/sh.insts:
		ns += regexBacktrackStart + steps*(regexBacktrackStep+regexBacktrackThread*sh.threads)
	default:
		ns += regexNFAStart + steps*(regexNFAStep+regexNFAThread*sh.threads)
	}
	if ns < regexLongNanos {
		return ns, false
	}
	// Through a runeReader Go runs the one-pass engine or the NFA, never the backtracker.
	if sh.onepass {
		return regexOnepassStart + steps*(regexOnepassStep+regexReaderRune+regexOnepassThread*sh.threads), true
	}
	return regexNFAStart + steps*(regexNFAStep+regexReaderRune+regexNFAThread*sh.threads), true
}

// runesPerCheck is how many runes of a long value a runeReader reads between checks of the
// context: about regexCheckNanos of matching.
func (sh regexShape) runesPerCheck() int {
	perRune := regexNFAStep + regexReaderRune + regexNFAThread*sh.threads
	if sh.onepass {
		perRune = regexOnepassStep + regexReaderRune + regexOnepassThread*sh.threads
	}
	return int(max(1, min(ctxEvery, regexCheckNanos/perRune)))
}

// Memory constants of the model, in bytes.
const (
	// memAnalyze is what any analysis holds: the plan, the result, the pooled counts, and
	// the small garbage the collector has not yet taken.
	memAnalyze = 1 << 20
	// memReadPerStore is the peak heap of reading inline data per byte of the column store
	// it builds: the store, and the old copies of its growing slices and the batches waiting
	// to be interned (measured 1.03 to 1.55 over the shapes of TestCostIngestPeakHolds).
	memReadPerStore = 1.6
	// memCheckResult is one check's result: the struct, its details map, the lists' headers.
	memCheckResult = 1_500
	// memListEntry is one entry of a partial list besides the value's bytes (the interface,
	// the row index, the memo's entry).
	memListEntry = 96
	// memProfileColumn is one column's profile besides its top values' bytes.
	memProfileColumn = 600
	// memPairEntry is one entry of compound_unique's map of key pairs (a uint64 key and a
	// uint32 value in Go's swiss table, with its growth and the previous pass's map not yet
	// collected: 62 bytes measured).
	memPairEntry = 80
)

// columnFacts is what the model reads of one column, in one pass over its distinct values.
type columnFacts struct {
	distinct  int
	repeated  int   // distinct values on more than one row
	numbers   int   // distinct numeric values
	times     int   // distinct timestamps
	textBytes int64 // the bytes of the distinct string values (regex and length checks read them)
	maxText   int   // the longest
	rowBytes  int64 // the bytes of the string values of every row
	allFlags  uint8 // the flags every value has (the profile's inferred type)
	lengths   []lengthCount
}

// lengthCount is how many distinct string values of a column have one length.
type lengthCount struct{ length, count int }

// facts reads what the model needs of column c: about 3 ns a distinct value.
func (d *Dataset) facts(c *column) *columnFacts {
	f := &columnFacts{distinct: c.dict.size(), allFlags: 0xFF}
	short := make([]int, 256)
	long := map[int]int{}
	for id := 1; id < len(c.dict.count); id++ {
		fl := c.dict.flags[id]
		f.allFlags &= fl
		if c.dict.count[id] > 1 {
			f.repeated++
		}
		if fl&fNumber != 0 {
			f.numbers++
		}
		if fl&fTimestamp != 0 {
			f.times++
		}
		t := d.text(c, uint32(id))
		if t == nil {
			continue
		}
		n := len(t)
		f.textBytes += int64(n)
		f.maxText = max(f.maxText, n)
		f.rowBytes += int64(n) * int64(c.dict.count[id])
		if n < len(short) {
			short[n]++
		} else {
			long[n]++
		}
	}
	for n, k := range short {
		if k > 0 {
			f.lengths = append(f.lengths, lengthCount{n, k})
		}
	}
	for n, k := range long {
		f.lengths = append(f.lengths, lengthCount{n, k})
	}
	return f
}

// costSheet adds up the estimate of one analysis.
type costSheet struct {
	ds    *Dataset
	facts map[*column]*columnFacts
	// summarized and timed are the columns whose numeric summary or timestamps an earlier
	// check computed (Analyze keeps them for the later ones).
	summarized, timed map[*column]bool
	// shared are the columns whose values unique_within_record mapped to shared ids.
	shared map[*column]bool
	// shown is, per column, the bytes of values the partial lists may copy (each value at
	// most once: Analyze copies a value once per evaluation).
	shown map[*column]float64

	ns, topNs float64
	field     string
	held      float64 // bytes kept to the end: caches, results
	// passing and passed are the two largest amounts of bytes one step holds and frees: a
	// step's bytes may still be on the heap, uncollected, while the next step's are.
	passing, passed float64
	dataBytes       float64 // the dataset Analyze builds from inline data
	// output is the bytes of values the partial lists show in the encoded result: unlike
	// their memory, once per check that lists them.
	output float64
}

func (p *plan) sheet(ds *Dataset, hasData bool) *costSheet {
	s := &costSheet{ds: ds, facts: map[*column]*columnFacts{}, summarized: map[*column]bool{},
		timed: map[*column]bool{}, shown: map[*column]float64{}, shared: map[*column]bool{}}
	s.ns = costAnalyze
	for i := range p.checks {
		s.check(i, &p.checks[i])
	}
	if hasData && p.profile {
		s.profile()
	}
	for c, b := range s.shown {
		f := s.factsOf(c)
		s.held += min(b, float64(f.textBytes)+memListEntry*float64(f.distinct))
	}
	return s
}

func (s *costSheet) factsOf(c *column) *columnFacts {
	f, ok := s.facts[c]
	if !ok {
		f = s.ds.facts(c)
		s.facts[c] = f
	}
	return f
}

// charge adds ns of CPU driven by field.
func (s *costSheet) charge(field string, ns float64) {
	s.ns += ns
	if ns > s.topNs {
		s.topNs, s.field = ns, field
	}
}

func (s *costSheet) pass(bytes float64) {
	switch {
	case bytes > s.passing:
		s.passing, s.passed = bytes, s.passing
	case bytes > s.passed:
		s.passed = bytes
	}
}

// list charges a row check's partial list over cols: the values it may copy (each at most
// once per analysis) and their memory. It returns the CPU of the copies.
func (s *costSheet) list(cols ...*column) float64 {
	s.held += partialLimit * memListEntry
	ns := 0.0
	for _, c := range cols {
		f := s.factsOf(c)
		b := partialLimit * float64(f.maxText)
		ns += min(b, float64(f.textBytes)) * costListByte
		s.shown[c] += b + partialLimit*memListEntry
		s.output += min(b, float64(f.textBytes)) * outputPerValueByte
	}
	return ns
}

// summary charges a numeric summary of c (kept when keep).
func (s *costSheet) summary(c *column, keep bool) float64 {
	if s.summarized[c] {
		return 0
	}
	f := s.factsOf(c)
	m := float64(f.numbers)
	s.pass(40 * m)
	if keep {
		s.summarized[c] = true
		s.held += 24 * m
	}
	return 2*float64(f.distinct)*costDistinct + m*costSortValue*math.Log2(m+1)
}

// timestamps charges the parsed timestamps of c (kept for the later checks).
func (s *costSheet) timestamps(c *column) float64 {
	if s.timed[c] {
		return 0
	}
	s.timed[c] = true
	f := s.factsOf(c)
	s.held += 16 * float64(f.distinct+1)
	return float64(f.times)*costParseTime + float64(f.distinct)*costDistinct
}

func (s *costSheet) check(i int, c *compiled) {
	ds := s.ds
	field := "checks[" + strconv.Itoa(i) + "]"
	if c.expectationType != "" {
		field = c.field
	}
	s.held += memCheckResult
	ns := float64(costCheck)
	col := ds.column(c.column)
	rows := float64(ds.rows)
	switch c.typ {
	case CheckRowCountBetween:
	case CheckColumnsPresent:
		if c.exact {
			ns += float64(len(ds.cols)) * costExactColumn
		}
	case CheckUniqueWithinRecord:
		cols := make([]*column, 0, len(c.columns))
		for _, name := range c.columns {
			if cc := ds.column(name); cc != nil {
				cols = append(cols, cc)
			}
		}
		if len(cols) < len(c.columns) {
			break // a column is missing: nothing runs
		}
		for _, cc := range cols {
			distinct := float64(cc.dict.size())
			ns += distinct * costSharedValue
			s.pass(4 * distinct) // the column's shared ids
			if !s.shared[cc] {
				s.shared[cc] = true
				ns += distinct * costSharedNew
				s.held += float64(len(cc.dict.arena)) + 48*distinct // the map's keys and entries
			}
		}
		k := float64(len(cols))
		ns += rows * k * costWithinCell * max(1, k/8)
		ns += s.list(cols...)
	case CheckCompoundUnique:
		cols := make([]*column, 0, len(c.columns))
		for _, name := range c.columns {
			if cc := ds.column(name); cc != nil {
				cols = append(cols, cc)
			}
		}
		if len(cols) < len(c.columns) {
			break // a column is missing: nothing runs
		}
		// The pairs of a pass are at most the rows, and at most the keys of the previous
		// pass times the distinct values of the column.
		ns += rows * costKeyRow
		if c.ignoreRowIf != ignoreAny {
			// Nulls as values: every column's ids copied, shifted (4 bytes a row each).
			ns += rows * float64(len(cols)) * costDistinct
			s.pass(4 * rows * float64(len(cols)))
		}
		keys, pairs := float64(s.factsOf(cols[0]).distinct), 0.0
		for _, cc := range cols[1:] {
			keys = min(rows, keys*float64(s.factsOf(cc).distinct+1))
			ns += rows*costPairRow + keys*costPairNew
			pairs = max(pairs, keys)
		}
		s.pass(8*rows + pairs*memPairEntry)
		ns += s.list(cols...)
	case CheckColumnComparison:
		other := ds.column(c.other)
		if col == nil || other == nil {
			break
		}
		ns += rows*costCompareRow + s.timestamps(col) + s.timestamps(other) +
			float64(min(s.factsOf(col).rowBytes, s.factsOf(other).rowBytes))*costCompareByte
		ns += s.list(col, other)
	default:
		if col == nil {
			break
		}
		f := s.factsOf(col)
		n := float64(f.distinct)
		switch c.typ {
		case CheckNotNull:
		case CheckNull:
			ns += n * costFillValue
		case CheckUnique, CheckType:
			ns += n * costDistinct
		case CheckBetween:
			ns += n * costBoundsValue
		case CheckInSet, CheckNotInSet:
			ns += n*costDistinct + float64(len(c.values))*costInSetMember
		case CheckRegex, CheckNotRegex:
			ns += n*costDistinct + s.regex(c, f)
		case CheckLengthBetween:
			ns += n*costDistinct + float64(f.textBytes)*costRuneByte
		case CheckOutliers:
			ns += s.summary(col, true) + n*costOutlierValue
			if c.method == "mad" {
				m := float64(f.numbers)
				ns += m * costMADValue * math.Log2(m+1)
				s.pass(40 * m)
			}
		case CheckFreshness:
			ns += s.timestamps(col) + n*costFreshValue
		case CheckStatisticBetween:
			if c.statistic == "distinct_count" || c.statistic == "distinct_ratio" {
				ns += costDistinctStatistic
			} else {
				ns += s.summary(col, true)
			}
		}
		switch c.typ {
		case CheckFreshness, CheckStatisticBetween:
		default:
			// The scan for the partial list runs when a row is unexpected and may read
			// every row (the 20th unexpected row may be the last); not_null and unique know
			// beforehand whether any row is.
			switch {
			case c.typ == CheckNotNull && col.nonNull == ds.rows:
			case c.typ == CheckNull:
				// Every non-null value is unexpected: the scan stops at the 20th, after
				// at most the nulls and 20 rows.
				if col.nonNull > 0 {
					ns += float64(min(ds.rows, ds.rows-col.nonNull+partialLimit)) * costScanRow
				}
			case c.typ == CheckUnique && f.repeated == 0:
			default:
				ns += rows * costScanRow
			}
			s.pass(n + 1) // the per-value verdicts
			ns += s.list(col)
		}
	}
	s.charge(field, ns)
}

// regex is the estimated matching of c's patterns against the distinct strings of a
// column: every pattern on every value (the worst case of match_on any and all).
func (s *costSheet) regex(c *compiled, f *columnFacts) float64 {
	ns := 0.0
	for _, pt := range c.patterns {
		for _, lc := range f.lengths {
			v, _ := pt.shape.matchNanos(lc.length)
			ns += float64(lc.count) * v
		}
	}
	return ns
}

// profile charges the column profiles.
func (s *costSheet) profile() {
	ns := 0.0
	for _, c := range s.ds.cols {
		f := s.factsOf(c)
		ns += costProfileColumn + float64(f.distinct)*costProfileValue
		s.held += memProfileColumn + float64(len(c.name)) + topValues*(float64(f.maxText)+memListEntry)
		switch {
		case f.distinct == 0:
		case f.allFlags&(fBool) != 0:
		case f.allFlags&(fInteger|fNumber) != 0:
			ns += s.summary(c, false)
		case f.allFlags&(fTimestamp|fString) != 0:
			ns += float64(f.textBytes) * costRuneByte
		default:
			ns += float64(f.distinct) * costDistinct // otherType
		}
	}
	s.charge("data", ns)
}

// read charges reading the inline data into s.ds: its CPU, and the dataset itself.
func (s *costSheet) read(data *Data) {
	ds := s.ds
	cells := float64(ds.rows) * float64(len(ds.cols))
	distinct := 0.0
	for _, c := range ds.cols {
		distinct += float64(c.dict.size())
	}
	ns := float64(len(ds.cols)) * costReadColumn
	if data.CSV != nil {
		ns += float64(len(*data.CSV))*costCSVByte + cells*costCSVField + distinct*costCSVNew
	} else {
		ns += float64(len(data.Records))*costJSONByte + cells*costJSONField + distinct*costJSONNew
	}
	s.charge("data", ns)
	s.dataBytes = memReadPerStore * float64(ds.footprint())
}

func (s *costSheet) cost() engine.Cost {
	field := s.field
	if field == "" {
		field = "checks"
	}
	return engine.Cost{
		CPU:    engine.PerUnit(s.ns, 1),
		Memory: int64(math.Ceil(memAnalyze + s.dataBytes + s.held + s.passing + s.passed)),
		Field:  field,
		Output: int64(math.Ceil(s.output)),
	}
}
