package drift

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// workerCounts are the worker counts every bulk-decoding test compares.
var workerCounts = []int{1, 2, 3, 8}

// bulkBody is a request body of n generated events with every kind of member: ids,
// attributes, instruction sources, depths, overrides, beneficiaries (some empty).
func bulkBody(t testing.TB, scenario string, seed int64, n int) []byte {
	t.Helper()
	in, _ := Generate(scenario, seed, GenParams{Events: n})
	in.Events = append([]Event(nil), in.Events...)
	for i := range in.Events {
		ev := &in.Events[i]
		switch i % 7 {
		case 1:
			ev.Attributes = []byte(`{"channel": "web", "n": [1, 2.5, {"k": null}]}`)
		case 3:
			ev.Beneficiaries = []Beneficiary{}
		case 5:
			ev.ID = ""
		}
	}
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// unmarshalInput decodes body as the API did before the bulk decoder, and does after it
// declines a body.
func unmarshalInput(body []byte) (Input, error) {
	var in Input
	err := json.Unmarshal(body, &in, json.RejectUnknownMembers(true))
	return in, err
}

// checkBulk decodes body with every worker count and checks that the bulk decoder either
// declines it or gives exactly what json.Unmarshal gives; it reports whether it took it.
func checkBulk(t *testing.T, body []byte) bool {
	t.Helper()
	want, err := unmarshalInput(body)
	took := false
	for _, w := range workerCounts {
		var got Input
		ok := DecodeInput(context.Background(), body, &got, w)
		switch {
		case ok && err != nil:
			t.Fatalf("workers=%d: the bulk decoder took a body json.Unmarshal refuses (%v):\n%.300s", w, err, body)
		case ok && !reflect.DeepEqual(got, want):
			t.Fatalf("workers=%d: the bulk decoder decoded a body differently from json.Unmarshal:\n%.300s", w, body)
		case w > 1 && ok != took:
			t.Fatalf("workers=%d: took=%v, but %v with one worker", w, ok, took)
		}
		took = ok
	}
	return took
}

// The bulk decoder gives json.Unmarshal's value for every worker count, and the analyses
// of what it decodes are the same bytes.
func TestWorkersDecodeLikeUnmarshal(t *testing.T) {
	t.Parallel()
	for _, scenario := range []string{ScenarioShadow, ScenarioAligned, ScenarioPromptInjection} {
		body := bulkBody(t, scenario, 3, 1200)
		if !checkBulk(t, body) {
			t.Fatalf("%s: the bulk decoder declined a generated body", scenario)
		}
		var first []byte
		for _, w := range workerCounts {
			var in Input
			DecodeInput(context.Background(), body, &in, w)
			out := analysisBytes(t, in)
			if first == nil {
				first = out
			} else if !bytes.Equal(out, first) {
				t.Fatalf("%s: workers=%d analysed the events differently", scenario, w)
			}
		}
	}
}

// Bodies the bulk decoder must decline (json.Unmarshal reports their error, or decodes a
// form the bulk decoder leaves to it) and bodies it must take, at several positions.
func TestWorkersDeclineWhatTheyCannotDecodeExactly(t *testing.T) {
	t.Parallel()
	body := bulkBody(t, ScenarioShadow, 5, 120)
	events := bytes.Index(body, []byte(`"events":[`)) + len(`"events":[`)
	// The offsets of some event starts: the first, one in the middle, the last.
	var starts []int
	for i := events; i < len(body); {
		k := bytes.Index(body[i:], []byte(`{"id":`))
		if k < 0 {
			k = bytes.Index(body[i:], []byte(`{"timestamp":`))
		}
		if k < 0 {
			break
		}
		starts = append(starts, i+k)
		i += k + 1
	}
	at := []int{starts[0], starts[len(starts)/2], starts[len(starts)-1]}
	edits := []struct {
		name string
		edit func(ev []byte) []byte
	}{
		{"unknown member", func(ev []byte) []byte { return append([]byte(`{"actoin":"x",`), ev[1:]...) }},
		{"duplicate member", func(ev []byte) []byte { return append([]byte(`{"action":"x","action":"y",`), ev[1:]...) }},
		{"wrong type", func(ev []byte) []byte { return append([]byte(`{"principal_value":"12",`), ev[1:]...) }},
		{"integer with a fraction", func(ev []byte) []byte { return append([]byte(`{"delegation_depth":1.5,`), ev[1:]...) }},
		{"bad timestamp", func(ev []byte) []byte { return append([]byte(`{"timestamp":"2026-13-01T00:00:00Z",`), ev[1:]...) }},
		{"one-digit hour", func(ev []byte) []byte { return append([]byte(`{"timestamp":"2026-01-01T1:00:00Z",`), ev[1:]...) }},
		{"null member", func(ev []byte) []byte { return append([]byte(`{"instructed_by":null,`), ev[1:]...) }},
		{"invalid escape", func(ev []byte) []byte { return append([]byte(`{"action":"p\x",`), ev[1:]...) }},
		{"escaped control character", func(ev []byte) []byte { return append([]byte("{\"action\":\"p\\\x01\","), ev[1:]...) }},
		{"invalid UTF-8", func(ev []byte) []byte { return append([]byte("{\"action\":\"p\xffx\","), ev[1:]...) }},
		{"number out of range", func(ev []byte) []byte { return append([]byte(`{"principal_value":1e999,`), ev[1:]...) }},
		{"bad attributes", func(ev []byte) []byte { return append([]byte(`{"attributes":{"a":1,"a":2},`), ev[1:]...) }},
		{"beneficiary member unknown", func(ev []byte) []byte {
			return append([]byte(`{"beneficiaries":[{"party":"a","value":1,"share":2}],`), ev[1:]...)
		}},
		{"truncated", func(ev []byte) []byte { return ev[:len(ev)/2] }},
		{"missing comma", func(ev []byte) []byte { return append([]byte(`{"action":"x" "id":"y",`), ev[1:]...) }},
		{"not an object", func(ev []byte) []byte { return append([]byte(`[1],`), ev...) }},
		{"trailing garbage in a value", func(ev []byte) []byte { return append([]byte(`{"overridden":truex,`), ev[1:]...) }},
	}
	for _, e := range edits {
		for _, pos := range at {
			end := pos + bytes.IndexByte(body[pos:], '}') + 1
			mutated := append(append(append([]byte(nil), body[:pos]...), e.edit(body[pos:end])...), body[end:]...)
			if checkBulk(t, mutated) {
				t.Errorf("%s at byte %d: the bulk decoder took it", e.name, pos)
			}
		}
	}
	// Forms it takes: whitespace anywhere between tokens, members in any order, no events
	// member at all (declined: the stored events are read instead).
	spaced := bytes.ReplaceAll(body, []byte(`,"`), []byte(" ,\n\t\"")) // no string holds `,"`
	spaced = bytes.ReplaceAll(spaced, []byte(`":`), []byte("\" : "))
	if !checkBulk(t, spaced) {
		t.Error("the bulk decoder declined a body with whitespace between tokens")
	}
	escaped := bytes.ReplaceAll(body, []byte(`"action":"`), []byte(`"act\u0069on":"\u00e9\ud83d\ude00\/\"\n`))
	if !checkBulk(t, escaped) {
		t.Error("the bulk decoder declined a body with escapes")
	}
	for _, s := range []string{`\ud800`, `\ud800x`, `\udc00\ud800`, `\u12`, "\xe9"} {
		checkBulk(t, bytes.ReplaceAll(body, []byte(`"action":"`), []byte(`"action":"`+s))) // taken or not, as json.Unmarshal
	}
	if checkBulk(t, []byte(`{"agent_id":"a","window":{"from":"2026-01-01T00:00:00Z"}}`)) {
		t.Error("the bulk decoder took a body without events")
	}
}

// Random edits of a small body: wherever a byte is dropped, doubled or replaced, the bulk
// decoder declines the body or decodes it exactly as json.Unmarshal does.
func TestWorkersRandomEdits(t *testing.T) {
	t.Parallel()
	body := bulkBody(t, ScenarioPromptInjection, 7, 40)
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "{}[],:\"\\ 0123456789.eE+-tfnaul"
	for range 1000 {
		b := append([]byte(nil), body...)
		i := r.IntN(len(b))
		switch r.IntN(3) {
		case 0:
			b = append(b[:i], b[i+1:]...)
		case 1:
			b = append(b[:i+1], b[i:]...)
		default:
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		checkBulk(t, b)
	}
}

// A context that ends stops the workers: the bulk decoder declines the body.
func TestWorkersStopWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	body := bulkBody(t, ScenarioShadow, 1, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, w := range workerCounts {
		var in Input
		if DecodeInput(ctx, body, &in, w) {
			t.Fatalf("workers=%d: decoded a body for an ended context", w)
		}
	}
}

// Batches and bare arrays of events decode as json.Unmarshal decodes them.
func TestWorkersDecodeBatchesAndArrays(t *testing.T) {
	t.Parallel()
	in, _ := Generate(ScenarioShadow, 2, GenParams{Events: 500})
	batch := EventBatch{AgentID: "agent_1", Events: in.Events}
	body, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	var want EventBatch
	if err := json.Unmarshal(body, &want, json.RejectUnknownMembers(true)); err != nil {
		t.Fatal(err)
	}
	array, err := json.Marshal(in.Events)
	if err != nil {
		t.Fatal(err)
	}
	var wantEvents []Event
	if err := json.Unmarshal(array, &wantEvents); err != nil {
		t.Fatal(err)
	}
	for _, w := range workerCounts {
		var got EventBatch
		if !DecodeEventBatch(context.Background(), body, &got, w) || !reflect.DeepEqual(got, want) {
			t.Fatalf("workers=%d: the batch decoded differently", w)
		}
		events, ok := DecodeEvents(context.Background(), append(append([]byte(" \n"), array...), '\n'), w)
		if !ok || !reflect.DeepEqual(events, wantEvents) {
			t.Fatalf("workers=%d: the array decoded differently", w)
		}
	}
	if DecodeEventBatch(context.Background(), []byte(strings.Replace(string(body), `"agent_id"`, `"agent"`, 1)), new(EventBatch), 1) {
		t.Fatal("the batch decoder took an unknown member")
	}
}

func ExampleDecodeInput() {
	body := []byte(`{"agent_id": "agent_7", "events": [
		{"timestamp": "2026-11-01T10:00:00Z", "action": "purchase", "principal_value": 12.5,
		 "beneficiaries": [{"party": "vendor_x", "value": 1.5}]}]}`)
	var in Input
	if !DecodeInput(context.Background(), body, &in, 0) {
		// json.Unmarshal decodes it and reports its error
		return
	}
	fmt.Println(in.AgentID, len(in.Events), in.Events[0].Action, *in.Events[0].PrincipalValue, in.Events[0].Beneficiaries[0].Party)
	// Output: agent_7 1 purchase 12.5 vendor_x
}

// The workers' guesses at element starts land on element starts in generated bodies, and a
// body built to mislead them (objects and strings that look like the start of an event)
// still decodes as json.Unmarshal decodes it.
func TestWorkersSplitTheEvents(t *testing.T) {
	t.Parallel()
	body := bulkBody(t, ScenarioShadow, 4, 1200)
	start := bytes.Index(body, []byte(`"events":[`)) + len(`"events":[`)
	whole := splitFrom(body, start, len(body), nil)
	if !whole.ok || len(whole.spans) != 1200 {
		t.Fatalf("split into %d events (ok %v)", len(whole.spans), whole.ok)
	}
	starts := map[int]bool{}
	for _, s := range whole.spans {
		starts[int(s.lo)] = true
	}
	for _, w := range []int{2, 3, 8} {
		for k := 1; k < w; k++ {
			from := start + (len(body)-start)*k/w
			if g := elementStart(body, from, len(body)); !starts[g] {
				t.Errorf("workers=%d: the guess from byte %d is %d, not an event's start", w, from, g)
			}
		}
		spans, end := splitParallel(body, start, w)
		if end != whole.end || !reflect.DeepEqual(spans, whole.spans) {
			t.Errorf("workers=%d: split differently from one goroutine", w)
		}
	}
	misleading := bytes.ReplaceAll(body, []byte(`"attributes":{"channel":"web"`),
		[]byte(`"attributes":{"channel": "},{\"id\":\"x\",", "list": [{"id": 1}, {"timestamp": "t"}, {"action": {"id": [{"x": 1}, {"id": 2}]}}]`))
	if bytes.Equal(misleading, body) {
		t.Fatal("no attributes to make misleading")
	}
	if !checkBulk(t, misleading) {
		t.Error("the bulk decoder declined a body with misleading attributes")
	}
}

// FuzzDecodeInput: whatever the body, the bulk decoder declines it or decodes it exactly as
// json.Unmarshal does, with one worker and with three, and never panics.
func FuzzDecodeInput(f *testing.F) {
	f.Add(bulkBody(f, ScenarioPromptInjection, 1, 3))
	f.Add([]byte(`{"agent_id":"a","events":[{"id":"x","timestamp":"2026-01-01T00:00:00Z","action":"b\u00e9",` +
		`"principal_value":-1.5e3,"best_alternative_value":0,"beneficiaries":[{"party":"p","value":2}],` +
		`"instructed_by":"p","delegation_depth":2,"overridden":false,"attributes":{"k":[1,{"a":null}]}},{}],"sensitivity":0.1}`))
	f.Add([]byte(`{"events":[{"timestamp":"2026-01-01T00:00:00+23:59"},{"beneficiaries":[]}],"window":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		want, err := unmarshalInput(body)
		for _, w := range []int{1, 3} {
			var got Input
			if !DecodeInput(context.Background(), body, &got, w) {
				continue
			}
			got.spare = nil
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("workers=%d: the bulk decoder took %q, which json.Unmarshal decodes differently (%v)", w, body, err)
			}
		}
	})
}
