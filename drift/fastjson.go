package drift

import (
	"bytes"
	"context"
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The bulk decoder: a request of up to 100,000 events is 27 MB of JSON, and decoding it
// through reflection (json.go) took most of the time of POST /v1/drift/analyze. DecodeInput,
// DecodeEventBatch and DecodeEvents take the common form of a body directly
// (docs/methods/drift.md §8.1):
//
//  1. the byte range of every element of "events" is found without parsing (strings are
//     skipped by their quotes, brackets counted), on the workers (splitParallel);
//  2. the elements are parsed into a slice made at its final size, in contiguous parts on
//     the workers; the members an event held are recorded in its presence bits (sent), its
//     optional numbers, booleans and beneficiaries come from slabs of slabSize values, the
//     ids of a part from one string, and the names that repeat (actions, parties,
//     instruction sources) are shared strings;
//  3. the other top-level members are decoded by json.Unmarshal.
//
// It takes only what it can decode exactly as json.Unmarshal with json.RejectUnknownMembers
// does (json.go): the member names of the contract (top-level ones without escapes), no
// null where a value is expected, no member twice, valid strings, numbers and timestamps.
// Anything else — an error of any kind included — makes it answer false, and the caller
// decodes the body with json.Unmarshal, which reports the first error in document order
// with its path. The result does not depend on the number of workers: each event is parsed
// from its own bytes alone.

// minEventsPerWorker is the least number of events a worker is given: below it, starting a
// goroutine costs more than the parsing it takes over.
const minEventsPerWorker = 512

// Workers is how many goroutines DecodeInput and DecodeEventBatch use for n events at most
// (GOMAXPROCS, at most 64, and one for each minEventsPerWorker events).
func Workers(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), 64, n/minEventsPerWorker))
}

// DecodeInput decodes body, a JSON object, into in on at most workers goroutines (0 or
// less: Workers of the events), as json.Unmarshal(body, in, json.RejectUnknownMembers(true))
// would. It returns false when the body is not in the form it takes or is not valid, and
// when ctx ends: the caller then decodes into the same in with json.Unmarshal, which
// reports the error, and which reuses the memory of the events this decoder made (a body
// declined at its last event is not held twice).
func DecodeInput(ctx context.Context, body []byte, in *Input, workers int) bool {
	var w inputJSON
	events, ok := decodeObject(ctx, body, workers, []member{{"agent_id", &w.AgentID}, {"principal_id", &w.PrincipalID},
		{"window", &w.Window}, {"baseline", &w.Baseline}, {"sensitivity", &w.Sensitivity}})
	if !ok {
		*in = Input{spare: events}
		return false
	}
	*in = Input{PrincipalID: w.PrincipalID, Events: events, Window: w.Window, Baseline: w.Baseline,
		Sensitivity: w.Sensitivity, sent: sentDecoded}
	take(&in.AgentID, w.AgentID, &in.sent, sentAgentID)
	return true
}

// DecodeEventBatch is DecodeInput for the body of POST /v1/drift/events.
func DecodeEventBatch(ctx context.Context, body []byte, b *EventBatch, workers int) bool {
	var agentID *string
	events, ok := decodeObject(ctx, body, workers, []member{{"agent_id", &agentID}})
	if !ok {
		return false
	}
	*b = EventBatch{Events: events, sent: sentDecoded}
	take(&b.AgentID, agentID, &b.sent, sentAgentID)
	return true
}

// member is a top-level member other than "events": its name and where json.Unmarshal
// decodes its value.
type member struct {
	name string
	dst  any
}

// decodeObject decodes the object body: its "events" with the bulk decoder, the members
// others with json.Unmarshal. It returns false when any member is unknown, sent twice or
// not decoded, and when "events" is missing.
func decodeObject(ctx context.Context, body []byte, workers int, others []member) ([]Event, bool) {
	var seen uint64 // bit k: others[k]; the last bit: events
	const eventsBit = 1 << 63
	var events []Event
	ok := topLevel(body, func(name []byte, i int) int {
		if string(name) == "events" {
			if seen&eventsBit != 0 {
				return -1
			}
			seen |= eventsBit
			var end int
			events, end = decodeEvents(ctx, body, i, workers)
			return end
		}
		for k, m := range others {
			if string(name) != m.name || seen&(1<<k) != 0 {
				continue
			}
			seen |= 1 << k
			end := skipValue(body, i)
			if end < 0 || json.Unmarshal(body[i:end], m.dst, json.RejectUnknownMembers(true)) != nil {
				return -1
			}
			return end
		}
		return -1
	})
	if !ok || events == nil {
		clear(events)
		return events[:0:cap(events)], false
	}
	return events, true
}

// DecodeEvents decodes a JSON array of events (stored events, as the store returns them)
// as json.Unmarshal into a []Event would, on at most workers goroutines; false as for
// DecodeInput.
func DecodeEvents(ctx context.Context, body []byte, workers int) ([]Event, bool) {
	events, end := decodeEvents(ctx, body, skipSpace(body, 0), workers)
	if end < 0 || skipSpace(body, end) != len(body) || events == nil {
		return nil, false
	}
	return events, true
}

// topLevel walks the members of the JSON object body (which must be all of it, without
// surrounding whitespace), calling member with each plain name and the index of its value,
// which returns the index past the value (-1: refused). It returns false when body is not
// an object of that form or member refuses one.
func topLevel(body []byte, member func(name []byte, i int) int) bool {
	if len(body) == 0 || body[0] != '{' {
		return false
	}
	i := skipSpace(body, 1)
	if i < len(body) && body[i] == '}' {
		return i+1 == len(body)
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return false
		}
		end := skipString(body, i)
		if end < 0 {
			return false
		}
		name := body[i+1 : end-1]
		if !plainName(name) {
			return false
		}
		i = skipSpace(body, end)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipSpace(body, i+1)
		if end = member(name, i); end < 0 {
			return false
		}
		var done, ok bool
		if i, done, ok = nextMember(body, end, '}'); !ok || done {
			return ok && i == len(body)
		}
	}
}

// plainName reports whether a member name is printable ASCII without escapes: such a name
// means what its bytes say.
func plainName(name []byte) bool {
	for _, c := range name {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// nextMember moves past the member or element whose value ended at b[end]: to the start of
// the next one after a comma (done false), or past the closing bracket (done true); ok is
// false when neither follows.
func nextMember(b []byte, end int, closing byte) (i int, done, ok bool) {
	i = skipSpace(b, end)
	switch {
	case i >= len(b):
		return i, false, false
	case b[i] == ',':
		return skipSpace(b, i+1), false, true
	case b[i] == closing:
		return i + 1, true, true
	}
	return i, false, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts with the quote at b[i],
// or -1 when it does not end. Its content is not checked.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// The quote ends the string unless an odd number of backslashes escape it.
		escapes := 0
		for b[j-1-escapes] == '\\' {
			escapes++
		}
		if escapes%2 == 0 {
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just past the value that starts at b[i], or -1 when there is
// none: strings by their quotes, objects and arrays by their brackets, anything else up to
// the next delimiter. Nothing else is checked: the parts are parsed (and validated) after.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch structural[b[j]] {
			case 0:
				continue
			case '"':
				// The string's bytes, inline: most are short, and a call costs more than
				// the loop.
				for j++; j < len(b) && b[j] != '"'; j++ {
					if b[j] == '\\' {
						j++
					}
				}
			case '{':
				depth++
			case '}':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// structural classes the bytes that skipValue looks at: '"' for a quote, '{' for an
// opening bracket, '}' for a closing one, 0 for the rest.
var structural = [256]byte{'"': '"', '{': '{', '[': '{', '}': '}', ']': '}'}

// rangeBytesPerEvent is about the size of an event as the contract's examples write it (270
// bytes), a little under: the room made for the byte ranges of a body's events.
const rangeBytesPerEvent = 200

// splitRegion is what splitFrom found from one start.
type splitRegion struct {
	first int    // the start it was given
	spans []span // the elements from first on
	next  int    // the start of the element after the last of spans, at or past limit (-1: none)
	end   int    // past the array's ']' when the array ended (-1: it did not)
	ok    bool   // false: not an array of objects from first on
}

// splitFrom finds the byte ranges of the elements of an array from the element at b[start]
// on, until one starts at or past limit or the array ends, appending them to spans.
func splitFrom(b []byte, start, limit int, spans []span) splitRegion {
	r := splitRegion{first: start, spans: spans, next: -1, end: -1}
	for i := start; ; {
		if i >= limit {
			r.next, r.ok = i, true
			return r
		}
		end := skipValue(b, i)
		if end < 0 || b[i] != '{' {
			return r
		}
		r.spans = append(r.spans, span{int32(i), int32(end)})
		var done, ok bool
		if i, done, ok = nextMember(b, end, ']'); !ok {
			return r
		} else if done {
			r.end, r.ok = i, true
			return r
		}
	}
}

// splitParallel finds the byte ranges of the elements of the array whose first element
// starts at b[start] on workers goroutines, each from a guess at an element start in its
// share of the bytes: the first '{' there after "}," that opens an object whose first
// member is an event's. Each follows the elements from its guess until it passes the
// next one's guess; a guess is right when the worker before arrives at it, element by
// element, from a start that was right. When one is not (a guess inside a string or a
// nested object), the ranges are found by one goroutine. It returns -1 for a body that
// is not an array of objects.
func splitParallel(b []byte, start, workers int) ([]span, int) {
	guesses := make([]int, workers+1)
	for w := range guesses {
		guesses[w] = start + (len(b)-start)*w/workers
	}
	guesses[workers] = len(b)
	regions := make([]splitRegion, workers)
	perWorker := (len(b)-start)/workers/rangeBytesPerEvent + 1
	parallel(workers, func(w int) {
		first := start
		if w > 0 {
			if first = elementStart(b, guesses[w], guesses[w+1]); first < 0 {
				regions[w] = splitRegion{first: -1, next: -1, end: -1, ok: true}
				return
			}
		}
		regions[w] = splitFrom(b, first, guesses[w+1], make([]span, 0, perWorker))
	})
	total := 0
	for w, r := range regions {
		if !r.ok {
			break
		}
		total += len(r.spans)
		if r.end >= 0 {
			spans := make([]span, 0, total)
			for _, r := range regions[:w+1] {
				spans = append(spans, r.spans...)
			}
			return spans, r.end
		}
		if w+1 == workers || regions[w+1].first != r.next {
			break
		}
	}
	r := splitFrom(b, start, len(b), make([]span, 0, (len(b)-start)/rangeBytesPerEvent+1))
	if !r.ok {
		return nil, -1
	}
	return r.spans, r.end
}

// elementStart is the first guess at an element start in b[from:limit] (see
// splitParallel), or -1.
func elementStart(b []byte, from, limit int) int {
	for j := from; j < limit; j++ {
		k := bytes.IndexByte(b[j:limit], '{')
		if k < 0 {
			return -1
		}
		j += k
		p := j - 1
		for p > 0 && isSpace(b[p]) {
			p--
		}
		if p <= 0 || b[p] != ',' {
			continue
		}
		for p--; p > 0 && isSpace(b[p]); p-- {
		}
		if b[p] != '}' {
			continue
		}
		name, end := plainString(b, skipSpace(b, j+1))
		if end >= 0 && eventMember(name) {
			return j
		}
	}
	return -1
}

// eventMember reports whether name is a member of an event.
func eventMember(name []byte) bool {
	switch string(name) {
	case "id", "timestamp", "action", "principal_value", "best_alternative_value", "beneficiaries",
		"instructed_by", "delegation_depth", "overridden", "attributes":
		return true
	}
	return false
}

// decodeEvents parses the JSON array at b[i] into events on at most workers goroutines and
// returns them with the index past the array. When it declines the array (-1) after making
// the slice, it returns the slice emptied, for json.Unmarshal to fill (see Input.spare).
func decodeEvents(ctx context.Context, b []byte, i int, workers int) ([]Event, int) {
	if i >= len(b) || b[i] != '[' {
		return nil, -1
	}
	if len(b) > math.MaxInt32 {
		return nil, -1
	}
	// The elements' byte ranges, found on the workers when there are several.
	var spans []span
	var end int
	switch i = skipSpace(b, i+1); {
	case i < len(b) && b[i] == ']':
		end = i + 1
	case workers == 1 || workers <= 0 && Workers((len(b)-i)/rangeBytesPerEvent) == 1:
		r := splitFrom(b, i, len(b), make([]span, 0, (len(b)-i)/rangeBytesPerEvent+1))
		if !r.ok {
			return nil, -1
		}
		spans, end = r.spans, r.end
	default:
		if workers <= 0 {
			workers = Workers((len(b) - i) / rangeBytesPerEvent)
		}
		if spans, end = splitParallel(b, i, workers); end < 0 {
			return nil, -1
		}
	}
	n := len(spans)
	events := make([]Event, n)
	if workers <= 0 {
		workers = Workers(n)
	}
	workers = max(1, min(workers, n))
	// part parses events [lo, hi) into their places; it gives up once another part failed
	// or ctx ended.
	var failed atomic.Bool
	part := func(lo, hi int) {
		p := eventParser{names: make(map[string]string, 64), idBytes: make([]byte, 0, 16*(hi-lo)), ids: make([]idRef, 0, hi-lo)}
		for k := lo; k < hi; k++ {
			if (k-lo)%1024 == 0 && (failed.Load() || ctx.Err() != nil) || !p.event(b[spans[k].lo:spans[k].hi], &events[k]) {
				failed.Store(true)
				return
			}
		}
		p.setIDs()
	}
	parallel(workers, func(w int) { part(n*w/workers, n*(w+1)/workers) })
	if failed.Load() {
		// What was parsed is dropped; the slice is left to the decoding that follows.
		clear(events)
		return events[:0], -1
	}
	return events, end
}

// span is the byte range of an element of an array.
type span struct{ lo, hi int32 }

// slabSize is the number of values of a slab: one allocation for a few thousand events,
// and little left unused when a body is declined after its events were parsed.
const slabSize = 4096

// eventParser parses events of one part: its slabs and shared names are the part's own.
type eventParser struct {
	floats []float64
	ints   []int
	bools  []bool
	bens   []Beneficiary
	names  map[string]string
	// The ids of the part's events, all in one string once the part is parsed (setIDs):
	// one allocation for the part, not one an event.
	idBytes []byte
	ids     []idRef
}

// idRef is an event whose id is idBytes[lo:hi].
type idRef struct {
	ev     *Event
	lo, hi int32
}

// setIDs gives the events parsed their ids.
func (p *eventParser) setIDs() {
	all := string(p.idBytes)
	for _, r := range p.ids {
		r.ev.ID = all[r.lo:r.hi]
	}
}

// maxSharedNames bounds the names a parser shares, so that events with a distinct name
// each do not fill a map.
const maxSharedNames = 4096

// name returns b as a string, shared with earlier equal names.
func (p *eventParser) name(b []byte) string {
	if s, ok := p.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(p.names) < maxSharedNames {
		p.names[s] = s
	}
	return s
}

// slabValue stores v in the slab and returns its address; a full slab is replaced by a new
// one (the values already handed out stay where they are).
func slabValue[T any](slab *[]T, v T) *T {
	if len(*slab) == cap(*slab) {
		*slab = make([]T, 0, slabSize)
	}
	*slab = append(*slab, v)
	return &(*slab)[len(*slab)-1]
}

// sharedName parses the string at b[i] into *dst, shared with earlier equal names, and
// records it in *s; it returns the index past it, or -1.
func (p *eventParser) sharedName(b []byte, i int, dst *string, s *sent, member sent) int {
	v, end := plainString(b, i)
	if end >= 0 {
		*dst, *s = p.name(v), *s|member
	}
	return end
}

// optionalFloat parses the number at b[i] into a value of the slab that *dst points to; it
// returns the index past it, or -1.
func (p *eventParser) optionalFloat(b []byte, i int, dst **float64) int {
	v, end := parseFloat(b, i)
	if end >= 0 {
		*dst = slabValue(&p.floats, v)
	}
	return end
}

// Members of an event, as bits of the set of members seen.
const (
	memberID = 1 << iota
	memberTimestamp
	memberAction
	memberPrincipalValue
	memberBestAlternativeValue
	memberBeneficiaries
	memberInstructedBy
	memberDelegationDepth
	memberOverridden
	memberAttributes
)

// event parses the JSON object b (nothing around it) into ev, as Event.UnmarshalJSONFrom
// decodes it; false when b is not in the form the bulk decoder takes.
func (p *eventParser) event(b []byte, ev *Event) bool {
	*ev = Event{sent: sentDecoded}
	var seen uint16
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == '}' {
		return i+1 == len(b)
	}
	for {
		name, end := plainString(b, i)
		if end < 0 {
			return false
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		var bit uint16
		switch string(name) {
		case "id":
			bit = memberID
			var s []byte
			if s, end = plainString(b, i); end >= 0 {
				p.ids = append(p.ids, idRef{ev, int32(len(p.idBytes)), int32(len(p.idBytes) + len(s))})
				p.idBytes = append(p.idBytes, s...)
				ev.sent |= sentID
			}
		case "timestamp":
			bit = memberTimestamp
			var s []byte
			if s, end = plainString(b, i); end >= 0 && !parseTime(s, &ev.Timestamp) {
				end = -1
			}
			ev.sent |= sentTimestamp
		case "action":
			bit, end = memberAction, p.sharedName(b, i, &ev.Action, &ev.sent, sentAction)
		case "instructed_by":
			bit, end = memberInstructedBy, p.sharedName(b, i, &ev.InstructedBy, &ev.sent, sentInstructedBy)
		case "principal_value":
			bit, end = memberPrincipalValue, p.optionalFloat(b, i, &ev.PrincipalValue)
		case "best_alternative_value":
			bit, end = memberBestAlternativeValue, p.optionalFloat(b, i, &ev.BestAlternativeValue)
		case "delegation_depth":
			bit = memberDelegationDepth
			var v int
			if v, end = parseInt(b, i); end >= 0 {
				ev.DelegationDepth = slabValue(&p.ints, v)
			}
		case "overridden":
			bit = memberOverridden
			switch {
			case hasPrefixAt(b, i, "true"):
				ev.Overridden, end = slabValue(&p.bools, true), i+4
			case hasPrefixAt(b, i, "false"):
				ev.Overridden, end = slabValue(&p.bools, false), i+5
			default:
				end = -1
			}
		case "beneficiaries":
			bit = memberBeneficiaries
			ev.Beneficiaries, end = p.beneficiaries(b, i)
		case "attributes":
			bit = memberAttributes
			end = -1
			if i < len(b) && b[i] == '{' {
				if end = skipValue(b, i); end >= 0 {
					raw := jsontext.Value(b[i:end])
					if raw.IsValid() {
						ev.Attributes = raw.Clone()
					} else {
						end = -1
					}
				}
			}
		}
		if bit == 0 || seen&bit != 0 || end < 0 {
			return false
		}
		seen |= bit
		var done, ok bool
		if i, done, ok = nextMember(b, end, '}'); !ok || done {
			return ok && i == len(b)
		}
	}
}

// beneficiaries parses the array of beneficiaries at b[i] into a part of the parser's slab;
// it returns the index past it, or -1.
func (p *eventParser) beneficiaries(b []byte, i int) ([]Beneficiary, int) {
	if i >= len(b) || b[i] != '[' {
		return nil, -1
	}
	first := len(p.bens)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return []Beneficiary{}, i + 1
	}
	for {
		if i >= len(b) || b[i] != '{' {
			return nil, -1
		}
		var ben Beneficiary
		var end int
		if ben, end = p.beneficiary(b, i); end < 0 {
			return nil, -1
		}
		if len(p.bens) == cap(p.bens) {
			// A new slab: the beneficiaries of this event so far move with it.
			grown := make([]Beneficiary, 0, max(slabSize, 2*(len(p.bens)-first+1)))
			p.bens = append(grown, p.bens[first:]...)
			first = 0
		}
		p.bens = append(p.bens, ben)
		var done, ok bool
		if i, done, ok = nextMember(b, end, ']'); !ok {
			return nil, -1
		} else if done {
			return p.bens[first:len(p.bens):len(p.bens)], i
		}
	}
}

// beneficiary parses the object {party, value} at b[i].
func (p *eventParser) beneficiary(b []byte, i int) (Beneficiary, int) {
	ben := Beneficiary{sent: sentDecoded}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return ben, i + 1
	}
	for {
		name, end := plainString(b, i)
		if end < 0 {
			return ben, -1
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return ben, -1
		}
		i = skipSpace(b, i+1)
		switch string(name) {
		case "party":
			if ben.sent&sentParty != 0 {
				return ben, -1
			}
			var s []byte
			if s, end = plainString(b, i); end >= 0 {
				ben.Party = p.name(s)
			}
			ben.sent |= sentParty
		case "value":
			if ben.sent&sentValue != 0 {
				return ben, -1
			}
			ben.Value, end = parseFloat(b, i)
			ben.sent |= sentValue
		default:
			return ben, -1
		}
		if end < 0 {
			return ben, -1
		}
		var done, ok bool
		if i, done, ok = nextMember(b, end, '}'); !ok {
			return ben, -1
		} else if done {
			return ben, i
		}
	}
}

func hasPrefixAt(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

// plainString returns the content of the string at b[i], its escapes decoded, and the
// index past it, or -1 when there is no string there or it is not valid: a control
// character, invalid UTF-8 or an invalid escape (json.Unmarshal reports those).
func plainString(b []byte, i int) ([]byte, int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	j := i + 1
	for j < len(b) && !stringSpecial[b[j]] {
		j++
	}
	if j < len(b) && b[j] == '"' { // printable ASCII: the common case
		return b[i+1 : j], j + 1
	}
	ascii, escaped := true, false
	for ; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			switch {
			case escaped:
				// The JSON package's own unquoting, which refuses what its decoder refuses.
				var err error
				if s, err = jsontext.AppendUnquote(nil, b[i:j+1]); err != nil {
					return nil, -1
				}
			case !ascii && !utf8.Valid(s):
				return nil, -1
			}
			return s, j + 1
		case c < 0x20:
			return nil, -1
		case c == '\\':
			escaped = true
			j++
			if j < len(b) && b[j] < 0x20 {
				return nil, -1
			}
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, -1
}

// stringSpecial marks the bytes that end a run of printable ASCII in a string: the quote,
// the backslash, control characters and the bytes of multi-byte UTF-8.
var stringSpecial = func() (t [256]bool) {
	for c := range t {
		t[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80
	}
	return t
}()

// numberEnd returns the index past the JSON number at b[i] and whether it is an integer
// (no fraction, no exponent), or -1 when there is none.
func numberEnd(b []byte, i int) (int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		n := k - j
		j = k
		return n
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case digits() == 0:
		return -1, false
	}
	integer := true
	if j < len(b) && b[j] == '.' {
		j++
		if digits() == 0 {
			return -1, false
		}
		integer = false
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return -1, false
		}
		integer = false
	}
	return j, integer
}

// parseFloat parses the number at b[i] as json.Unmarshal parses a float64 (out of range:
// -1, the error being json.Unmarshal's to report).
func parseFloat(b []byte, i int) (float64, int) {
	end, _ := numberEnd(b, i)
	if end < 0 {
		return 0, -1
	}
	v, err := strconv.ParseFloat(string(b[i:end]), 64)
	if err != nil {
		return 0, -1
	}
	return v, end
}

// parseInt parses the integer at b[i]: digits only, at most 18 of them, as json.Unmarshal
// parses an int within range.
func parseInt(b []byte, i int) (int, int) {
	end, integer := numberEnd(b, i)
	if end < 0 || !integer || end-i > 18 {
		return 0, -1
	}
	v, err := strconv.Atoi(string(b[i:end]))
	if err != nil {
		return 0, -1
	}
	return v, end
}

// parseTime parses an RFC 3339 timestamp as json.Unmarshal parses a time.Time: the time
// package's parser and the stricter checks of the JSON package.
func parseTime(s []byte, t *time.Time) bool {
	if err := t.UnmarshalText(s); err != nil {
		return false
	}
	switch {
	case s[len("2006-01-02T")+1] == ':', s[len("2006-01-02T15:04:05")] == ',':
		return false
	case s[len(s)-1] != 'Z':
		return twoDigits(s[len(s)-len("07:00"):]) < 24 && twoDigits(s[len(s)-len("00"):]) < 60
	}
	return true
}

func twoDigits(b []byte) int {
	if len(b) < 2 || b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
		return 100
	}
	return int(b[0]-'0')*10 + int(b[1]-'0')
}
