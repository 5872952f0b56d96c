package convergence

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync/atomic"

	"riskapi/engine"
)

// Minimum input sizes of the spec.
const (
	minFirms         = 2
	minPeriods       = 10
	minTenders       = 5
	minBidsPerTender = 3
	maxNameLen       = 128
)

// obsRow is one validated observation.
type obsRow struct {
	firm  int32
	seg   int32 // index into market.segments; −1 without segment
	key   int64
	row   int32
	price float64
	cost  float64 // NaN when absent
	qty   float64 // NaN when absent
}

// bidRow is one validated bid.
type bidRow struct {
	tender int32
	firm   int32 // index into market.bidFirms
	amount float64
	won    bool
}

// tender is one tender's bids.
type tender struct {
	id    string
	bids  []bidRow
	date  Period // earliest date among its bids; zero when none
	dkey  int64
	dated bool
}

// message is one validated communication.
type message struct {
	from, to string
	key      int64
}

// input is the validated, indexed form of an Input.
type input struct {
	alpha float64

	// Observations.
	obsUsable bool
	form      periodForm
	firms     []string   // observation firms, in order of first appearance
	periods   []Period   // distinct periods in order (first form seen of each)
	keys      []int64    // ordering keys of periods
	rows      []obsRow   // in document order
	byFirm    [][]obsRow // per firm, sorted by period and segment
	segments  []string
	allCost   bool // every observation has a cost
	allQty    bool
	anyCost   bool
	anySeg    bool

	// Bids.
	bidFirms []string
	tenders  []tender // usable tenders only (≥ 3 bids), in order of first appearance
	bidsUsed int

	msgs []message

	bench      Benchmarks
	firmsTotal int
}

func numKind(p *float64) string {
	if p == nil {
		return "missing"
	}
	return "number"
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// MarketIDExpected is the contract's rule for market_id, as errors state it.
const MarketIDExpected = "string (1-128 chars of [A-Za-z0-9._:-])"

// ValidMarketID reports whether id is a valid market_id: 1–128 characters of [A-Za-z0-9._:-].
func ValidMarketID(id string) bool { return engine.ValidIdentifier(id, "") }

func okName(s string) bool { return s != "" && len(s) <= maxNameLen }

func checkName(code, field, s string) *engine.InputError {
	if s == "" {
		return engine.Invalid(code, field, "string (1-128 chars)", "missing", "%s is required.", field)
	}
	if len(s) > maxNameLen {
		return engine.Invalid(code, field, "string (1-128 chars)", "string", "%s must be at most 128 characters long.", field)
	}
	return nil
}

// periodExpectation is the expected type of period-like fields.
const periodExpectation = "integer or string (RFC 3339 date or date-time)"

func formName(f periodForm) string {
	if f == formInt {
		return "integer"
	}
	return "string (RFC 3339 date or date-time)"
}

// validate checks the input in document order and indexes it. The first failure is
// returned as an *engine.InputError.
func validate(in *Input) (*input, *engine.InputError) {
	v := &input{}
	if !ValidMarketID(in.MarketID) {
		rec := "string"
		if in.MarketID == "" {
			rec = "missing"
		}
		return nil, engine.Invalid(CodeInvalidMarketID, "market_id", MarketIDExpected, rec,
			"market_id must be 1-128 characters of letters, digits, '.', '_', ':' or '-'.")
	}
	// Validation has no context: its loops run to the end, on in.Run's workers.
	stop := &stopper{ctx: context.Background(), crew: newCrew(in.Run)}
	if err := v.indexObservations(in.Observations, stop); err != nil {
		return nil, err
	}
	if err := v.indexBids(in.Bids); err != nil {
		return nil, err
	}
	if err := v.indexMessages(in.Communications, stop); err != nil {
		return nil, err
	}
	if b := in.Benchmarks; b != nil {
		if err := checkBenchmarks(b); err != nil {
			return nil, err
		}
		v.bench = *b
	}
	v.alpha = DefaultSensitivity
	if s := in.Sensitivity; s != nil {
		if !(*s > 0 && *s <= 0.2) {
			return nil, engine.Invalid(CodeInvalidSensitivity, "sensitivity", "number (0-0.2, exclusive of 0)", "number",
				"sensitivity must be greater than 0 and at most 0.2.")
		}
		v.alpha = *s
	}

	v.obsUsable = len(v.firms) >= minFirms && len(v.periods) >= minPeriods
	bidsUsable := len(v.tenders) >= minTenders
	if !v.obsUsable && !bidsUsable {
		if len(in.Observations) == 0 && len(in.Bids) > 0 {
			return nil, engine.Invalid(CodeInvalidBids, "bids", fmt.Sprintf("array (bids on at least %d tenders with at least %d bids each)", minTenders, minBidsPerTender), "array",
				"bids must cover at least %d tenders with at least %d bids each (found %d such tenders).", minTenders, minBidsPerTender, len(v.tenders))
		}
		rec := "array"
		if len(in.Observations) == 0 {
			rec = "missing"
		}
		return nil, engine.Invalid(CodeInvalidObservations, "observations",
			fmt.Sprintf("array (observations of at least %d firms in at least %d periods, or bids on at least %d tenders with at least %d bids each)", minFirms, minPeriods, minTenders, minBidsPerTender), rec,
			"observations must cover at least %d firms and %d periods (found %d firms and %d periods), or bids must cover at least %d tenders with at least %d bids each.",
			minFirms, minPeriods, len(v.firms), len(v.periods), minTenders, minBidsPerTender)
	}
	if !bidsUsable {
		v.tenders, v.bidsUsed = nil, 0
	}
	seen := make(map[string]struct{}, len(v.firms)+len(v.bidFirms))
	for _, f := range v.firms {
		seen[f] = struct{}{}
	}
	for _, f := range v.bidFirms {
		seen[f] = struct{}{}
	}
	v.firmsTotal = len(seen)
	return v, nil
}

type obsKey struct {
	firm int32
	seg  int32
	key  int64
}

// parsedPeriod is a period's form and ordering key.
type parsedPeriod struct {
	form periodForm
	key  int64
}

// rowChunks is the number of chunks a pass over n rows is cut into: one on one worker, else
// four per worker (rows of one firm or period are not spread evenly), at least
// minChunkRows rows each.
func rowChunks(n int, stop *stopper) int {
	if stop.crew == nil {
		return 1
	}
	return max(1, min(4*(cap(stop.crew.tokens)+1), n/minChunkRows))
}

// minChunkRows is the fewest rows of a chunk of rowChunks.
const minChunkRows = 1024

// rowFailure is the first check a row fails: the member, what was expected and received,
// and the message after the row's path.
type rowFailure struct {
	field, expected, received, message string
}

// observationFailure is the first check observation o fails (its period parsed as pc; form
// is the form of the first observation's period, which every period must have), or nil.
func observationFailure(o *Observation, pc parsedPeriod, form periodForm) *rowFailure {
	switch {
	case o.Firm == "":
		return &rowFailure{".firm", "string (1-128 chars)", "missing", ".firm is required."}
	case len(o.Firm) > maxNameLen:
		return &rowFailure{".firm", "string (1-128 chars)", "string", ".firm must be at most 128 characters long."}
	case pc.form == formInvalid:
		return &rowFailure{".period", periodExpectation, o.Period.jsonKind(), ".period must be an integer or an RFC 3339 date or date-time."}
	case pc.form != form:
		return &rowFailure{".period", formName(form) + " (the form of the other periods)", o.Period.jsonKind(),
			".period must have the same form as the other periods (all integers, or all dates and date-times)."}
	case o.Price == nil || !finite(*o.Price) || *o.Price <= 0:
		return &rowFailure{".price", "number (> 0)", numKind(o.Price), ".price must be a number greater than 0."}
	case o.Cost != nil && (!finite(*o.Cost) || *o.Cost < 0):
		return &rowFailure{".cost", "number (>= 0)", "number", ".cost must be a number of at least 0."}
	case o.Quantity != nil && (!finite(*o.Quantity) || *o.Quantity < 0):
		return &rowFailure{".quantity", "number (>= 0)", "number", ".quantity must be a number of at least 0."}
	case len(o.Segment) > maxNameLen:
		return &rowFailure{".segment", "string (1-128 chars)", "string", ".segment must be at most 128 characters long."}
	}
	return nil
}

// obsChunk is what the first pass over a chunk of observations found.
type obsChunk struct {
	firms, segments []string // in the order of their first appearance in the chunk
	periods         []int32  // rows of the first appearances of the chunk's periods
	failed          int      // the chunk's first row that fails a check; −1 when none
	anyCost, anySeg bool
	allCost, allQty bool
}

// indexObservations checks the observations in document order and indexes them. Chunks of
// rows are units of stop's loop: each checks its rows, parses their periods (once per
// distinct period of the chunk) and numbers their firms and segments in the order of their
// first appearance in the chunk. The chunks' numbers are then joined in chunk order, which
// numbers the firms and segments, and picks each period's first form, in the order of their
// first appearance in the document, as one pass would; the first failing row of the first
// failing chunk is the document's first failure.
func (v *input) indexObservations(obs []Observation, stop *stopper) *engine.InputError {
	n := len(obs)
	chunks := rowChunks(n, stop)
	form := formInvalid
	if n > 0 {
		form, _ = obs[0].Period.parse()
	}
	v.rows = make([]obsRow, n)
	found := make([]obsChunk, chunks)
	stop.each(chunks, 1, func(c int, _ *stopper) {
		ch := obsChunk{failed: -1, allCost: true, allQty: true}
		cache := map[string]parsedPeriod{}
		firms, segments := map[string]int32{}, map[string]int32{}
		keys := map[int64]struct{}{}
		for i := c * n / chunks; i < (c+1)*n/chunks; i++ {
			o := &obs[i]
			pc, ok := cache[o.Period.raw]
			if !ok {
				f, k := o.Period.parse()
				pc = parsedPeriod{f, k}
				cache[o.Period.raw] = pc
			}
			if observationFailure(o, pc, form) != nil {
				ch.failed = i
				break
			}
			f, ok := firms[o.Firm]
			if !ok {
				f = int32(len(ch.firms))
				firms[o.Firm] = f
				ch.firms = append(ch.firms, o.Firm)
			}
			seg := int32(-1)
			if o.Segment != "" {
				if seg, ok = segments[o.Segment]; !ok {
					seg = int32(len(ch.segments))
					segments[o.Segment] = seg
					ch.segments = append(ch.segments, o.Segment)
				}
				ch.anySeg = true
			}
			if _, ok := keys[pc.key]; !ok {
				keys[pc.key] = struct{}{}
				ch.periods = append(ch.periods, int32(i))
			}
			cost, qty := math.NaN(), math.NaN()
			if o.Cost != nil {
				cost, ch.anyCost = *o.Cost, true
			} else {
				ch.allCost = false
			}
			if o.Quantity != nil {
				qty = *o.Quantity
			} else {
				ch.allQty = false
			}
			v.rows[i] = obsRow{firm: f, seg: seg, key: pc.key, row: int32(i), price: *o.Price, cost: cost, qty: qty}
		}
		found[c] = ch
	})
	// Join the chunks up to the first failing one: the rows before its failure are valid.
	failed := -1
	firmIdx, segIdx := map[string]int32{}, map[string]int32{}
	number := func(names []string, idx map[string]int32, all *[]string) []int32 {
		out := make([]int32, len(names))
		for k, name := range names {
			x, ok := idx[name]
			if !ok {
				x = int32(len(*all))
				idx[name] = x
				*all = append(*all, name)
			}
			out[k] = x
		}
		return out
	}
	firmOf, segOf := make([][]int32, chunks), make([][]int32, chunks)
	v.allCost, v.allQty = n > 0, n > 0
	for c := range found {
		ch := &found[c]
		firmOf[c] = number(ch.firms, firmIdx, &v.firms)
		segOf[c] = number(ch.segments, segIdx, &v.segments)
		v.anyCost, v.anySeg = v.anyCost || ch.anyCost, v.anySeg || ch.anySeg
		v.allCost, v.allQty = v.allCost && ch.allCost, v.allQty && ch.allQty
		if ch.failed >= 0 {
			failed, chunks = ch.failed, c+1
			break
		}
	}
	end := n
	if failed >= 0 {
		end = failed
	}
	stop.each(chunks, 1, func(c int, _ *stopper) {
		for i := c * n / len(found); i < min((c+1)*n/len(found), end); i++ {
			r := &v.rows[i]
			r.firm = firmOf[c][r.firm]
			if r.seg >= 0 {
				r.seg = segOf[c][r.seg]
			}
		}
	})
	if failed >= 0 {
		v.rows = v.rows[:failed]
		// A repeated observation earlier in the document is the first failure.
		if err := v.firstDuplicate(obs, failed); err != nil {
			return err
		}
		o := &obs[failed]
		f, k := o.Period.parse()
		e := observationFailure(o, parsedPeriod{f, k}, form)
		path := "observations[" + strconv.Itoa(failed) + "]"
		return engine.Invalid(CodeInvalidObservations, path+e.field, e.expected, e.received, "%s", path+e.message)
	}
	v.form = form
	periodOf := map[int64]Period{}
	for _, ch := range found {
		for _, i := range ch.periods {
			if key := v.rows[i].key; periodOf[key].IsZero() {
				periodOf[key] = obs[i].Period
			}
		}
	}
	// Rows by firm (stable, so in document order), then by period and segment; each
	// firm's sort and check for repeats is a unit of stop's loop.
	count := make([]int, len(v.firms)+1)
	for _, r := range v.rows {
		count[r.firm+1]++
	}
	for f := 1; f < len(count); f++ {
		count[f] += count[f-1]
	}
	sorted := make([]obsRow, len(v.rows))
	pos := slices.Clone(count[:len(v.firms)])
	for _, r := range v.rows {
		sorted[pos[r.firm]] = r
		pos[r.firm]++
	}
	v.byFirm = make([][]obsRow, len(v.firms))
	dups := make([]int32, len(v.firms)) // each firm's first repeated row; −1 when none
	stop.each(len(v.firms), 0, func(f int, _ *stopper) {
		rs := sorted[count[f]:count[f+1]]
		if !slices.IsSortedFunc(rs, cmpKeySeg) {
			slices.SortStableFunc(rs, cmpKeySeg)
		}
		dups[f] = -1
		for k := 1; k < len(rs); k++ {
			if cmpKeySeg(rs[k-1], rs[k]) == 0 && (dups[f] < 0 || rs[k].row < dups[f]) {
				dups[f] = rs[k].row
			}
		}
		v.byFirm[f] = rs
	})
	dup := -1
	for _, d := range dups {
		if d >= 0 && (dup < 0 || int(d) < dup) {
			dup = int(d)
		}
	}
	if dup >= 0 {
		return duplicateError(obs, dup)
	}
	v.keys = make([]int64, 0, len(periodOf))
	for k := range periodOf {
		v.keys = append(v.keys, k)
	}
	slices.Sort(v.keys)
	v.periods = make([]Period, len(v.keys))
	for i, k := range v.keys {
		v.periods[i] = periodOf[k]
	}
	return nil
}

func cmpKeySeg(a, b obsRow) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.seg, b.seg)
}

// firstDuplicate reports the first observation before row end (in document order) that
// repeats an earlier one's firm, period and segment; rows before end are valid.
func (v *input) firstDuplicate(obs []Observation, end int) *engine.InputError {
	seen := make(map[obsKey]struct{}, end)
	for _, r := range v.rows[:end] {
		k := obsKey{r.firm, r.seg, r.key}
		if _, dup := seen[k]; dup {
			return duplicateError(obs, int(r.row))
		}
		seen[k] = struct{}{}
	}
	return nil
}

func duplicateError(obs []Observation, i int) *engine.InputError {
	path := "observations[" + strconv.Itoa(i) + "]"
	what := "period"
	if obs[i].Segment != "" {
		what = "period and segment"
	}
	return engine.Invalid(CodeInvalidObservations, path, "object (one observation per firm and "+what+")", "object",
		"%s repeats the observation of firm %q for this %s.", path, obs[i].Firm, what)
}

func (v *input) indexBids(bids []Bid) *engine.InputError {
	firmIdx := map[string]int32{}
	tenderIdx := map[string]int32{}
	type tkey struct{ t, f int32 }
	seen := make(map[tkey]struct{}, len(bids))
	var all []tender
	form := formInvalid
	for i := range bids {
		b := &bids[i]
		if !okName(b.Tender) || !okName(b.Firm) || b.Amount == nil || !finite(*b.Amount) || *b.Amount <= 0 || b.Won == nil {
			path := "bids[" + strconv.Itoa(i) + "]"
			if err := checkName(CodeInvalidBids, path+".tender", b.Tender); err != nil {
				return err
			}
			if err := checkName(CodeInvalidBids, path+".firm", b.Firm); err != nil {
				return err
			}
			if b.Amount == nil || !finite(*b.Amount) || *b.Amount <= 0 {
				return engine.Invalid(CodeInvalidBids, path+".amount", "number (> 0)", numKind(b.Amount), "%s.amount must be a number greater than 0.", path)
			}
			return engine.Invalid(CodeInvalidBids, path+".won", "boolean", "missing", "%s.won is required.", path)
		}
		var dkey int64
		dated := !b.Date.IsZero()
		if dated {
			f, k := b.Date.parse()
			if f == formInvalid {
				path := "bids[" + strconv.Itoa(i) + "]"
				return engine.Invalid(CodeInvalidBids, path+".date", periodExpectation, b.Date.jsonKind(), "%s.date must be an integer or an RFC 3339 date or date-time.", path)
			}
			if form == formInvalid {
				form = f
			} else if f != form {
				path := "bids[" + strconv.Itoa(i) + "]"
				return engine.Invalid(CodeInvalidBids, path+".date", formName(form)+" (the form of the other dates)", b.Date.jsonKind(),
					"%s.date must have the same form as the other bids' dates.", path)
			}
			dkey = k
		}
		t, ok := tenderIdx[b.Tender]
		if !ok {
			t = int32(len(all))
			tenderIdx[b.Tender] = t
			all = append(all, tender{id: b.Tender})
		}
		f, ok := firmIdx[b.Firm]
		if !ok {
			f = int32(len(v.bidFirms))
			firmIdx[b.Firm] = f
			v.bidFirms = append(v.bidFirms, b.Firm)
		}
		if _, dup := seen[tkey{t, f}]; dup {
			path := "bids[" + strconv.Itoa(i) + "]"
			return engine.Invalid(CodeInvalidBids, path+".firm", "string (one bid per firm and tender)", "string",
				"%s.firm: firm %q already bid in tender %q.", path, b.Firm, b.Tender)
		}
		seen[tkey{t, f}] = struct{}{}
		tt := &all[t]
		tt.bids = append(tt.bids, bidRow{tender: t, firm: f, amount: *b.Amount, won: *b.Won})
		if dated && (!tt.dated || dkey < tt.dkey) {
			tt.dated, tt.dkey, tt.date = true, dkey, b.Date
		}
	}
	for _, t := range all {
		if len(t.bids) >= minBidsPerTender {
			v.tenders = append(v.tenders, t)
			v.bidsUsed += len(t.bids)
		}
	}
	return nil
}

// indexMessages checks the communications in document order and indexes them. Chunks of
// messages are units of stop's loop, each message checked on its own (the form of the
// observations' periods is known); a failure is then reported by the pass in document
// order (messagesInOrder), which finds the first one.
func (v *input) indexMessages(msgs []Communication, stop *stopper) *engine.InputError {
	chunks := rowChunks(len(msgs), stop)
	v.msgs = make([]message, len(msgs))
	var failed atomic.Bool
	stop.each(chunks, 1, func(c int, _ *stopper) {
		for i := c * len(msgs) / chunks; i < (c+1)*len(msgs)/chunks; i++ {
			m := &msgs[i]
			f, k := m.Timestamp.parse()
			if !v.validMessage(m, f) {
				failed.Store(true)
				return
			}
			v.msgs[i] = message{from: m.From, to: m.To, key: k}
		}
	})
	if failed.Load() {
		return v.messagesInOrder(msgs)
	}
	return nil
}

// validMessage reports whether message m, its timestamp of form f, passes every check.
func (v *input) validMessage(m *Communication, f periodForm) bool {
	return okName(m.From) && okName(m.To) && f != formInvalid && (v.form == formInvalid || f == v.form)
}

// messagesInOrder is indexMessages in one pass in document order: the first failure.
func (v *input) messagesInOrder(msgs []Communication) *engine.InputError {
	v.msgs = make([]message, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		f, k := m.Timestamp.parse()
		if v.validMessage(m, f) {
			v.msgs = append(v.msgs, message{from: m.From, to: m.To, key: k})
			continue
		}
		path := "communications[" + strconv.Itoa(i) + "]"
		if err := checkName(CodeInvalidCommunications, path+".from", m.From); err != nil {
			return err
		}
		if err := checkName(CodeInvalidCommunications, path+".to", m.To); err != nil {
			return err
		}
		if f == formInvalid {
			return engine.Invalid(CodeInvalidCommunications, path+".timestamp", periodExpectation, m.Timestamp.jsonKind(),
				"%s.timestamp must be an integer or an RFC 3339 date or date-time.", path)
		}
		if v.form != formInvalid && f != v.form {
			return engine.Invalid(CodeInvalidCommunications, path+".timestamp", formName(v.form)+" (the form of the observations' periods)", m.Timestamp.jsonKind(),
				"%s.timestamp must have the same form as the observations' periods.", path)
		}
		v.msgs = append(v.msgs, message{from: m.From, to: m.To, key: k})
	}
	return nil
}

func checkBenchmarks(b *Benchmarks) *engine.InputError {
	type field struct {
		name  string
		v     *float64
		price bool
	}
	fs := []field{{"competitive_price", b.CompetitivePrice, true}, {"monopoly_price", b.MonopolyPrice, true},
		{"competitive_profit", b.CompetitiveProfit, false}, {"monopoly_profit", b.MonopolyProfit, false}}
	for _, f := range fs {
		if f.v == nil {
			continue
		}
		path := "benchmarks." + f.name
		if f.price && (!finite(*f.v) || *f.v <= 0) {
			return engine.Invalid(CodeInvalidBenchmarks, path, "number (> 0)", "number", "%s must be a number greater than 0.", path)
		}
		if !f.price && (!finite(*f.v) || *f.v < 0) {
			return engine.Invalid(CodeInvalidBenchmarks, path, "number (>= 0)", "number", "%s must be a number of at least 0.", path)
		}
	}
	if b.CompetitivePrice != nil && b.MonopolyPrice != nil && *b.MonopolyPrice <= *b.CompetitivePrice {
		return engine.Invalid(CodeInvalidBenchmarks, "benchmarks.monopoly_price", "number (> competitive_price)", "number",
			"benchmarks.monopoly_price must be greater than benchmarks.competitive_price.")
	}
	if b.CompetitiveProfit != nil && b.MonopolyProfit != nil && *b.MonopolyProfit <= *b.CompetitiveProfit {
		return engine.Invalid(CodeInvalidBenchmarks, "benchmarks.monopoly_profit", "number (> competitive_profit)", "number",
			"benchmarks.monopoly_profit must be greater than benchmarks.competitive_profit.")
	}
	return nil
}

// periodIndex maps an ordering key to its period index (the first period with key ≥ k;
// len(keys) when none).
func (v *input) periodIndex(k int64) int {
	i, _ := slices.BinarySearchFunc(v.keys, k, cmp.Compare[int64])
	return i
}
