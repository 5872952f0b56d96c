package httpapi

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// typoProbe is one misspelt member at some depth of a request body: the body holding it, and
// the name the answer must suggest.
type typoProbe struct {
	path, body, want string
}

// typoProbes misspells every member of t (dropping its second letter) at every depth the
// request types nest to (objects and arrays of objects, three levels down), each in a body
// of its own with the misspelt member the only one at its level.
func typoProbes(t reflect.Type, depth int) []typoProbe {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth > 3 || t == timeType {
		return nil
	}
	var probes []typoProbe
	for _, name := range jsonFieldNames(t) {
		if len(name) >= 4 {
			typo := name[:1] + name[2:]
			probes = append(probes, typoProbe{typo, `{"` + typo + `": 1}`, name})
		}
		member := memberType(t, name)
		wrap := func(inner string) string { return inner }
		for member != nil && (member.Kind() == reflect.Pointer || member.Kind() == reflect.Slice) {
			if member.Kind() == reflect.Slice {
				prev := wrap
				wrap = func(inner string) string { return prev("[" + inner + "]") }
			}
			member = member.Elem()
		}
		if member == nil {
			continue
		}
		for _, p := range typoProbes(member, depth+1) {
			probes = append(probes, typoProbe{name + "." + p.path, `{"` + name + `": ` + wrap(p.body) + `}`, p.want})
		}
	}
	return probes
}

// TestUnknownFieldSuggestsTheClosestNameEverywhere: every endpoint that takes a body answers
// a misspelt member, at any depth, with UNKNOWN_FIELD whose message suggests the member meant
// (platform contract §2).
func TestUnknownFieldSuggestsTheClosestNameEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	endpoints := []struct {
		path string
		typ  reflect.Type
	}{
		{"/v1/convergence/analyze-market", reflect.TypeFor[analyzeMarketRequest]()},
		{"/v1/drift/analyze", reflect.TypeFor[analyzeDriftRequest]()},
		{"/v1/drift/events", reflect.TypeFor[ingestDriftEventsRequest]()},
		{"/v1/cascade/simulate", reflect.TypeFor[simulateRequest]()},
		{"/v1/meridian/quality-check", reflect.TypeFor[qualityCheckRequest]()},
		{"/v1/webhooks", reflect.TypeFor[createWebhookRequest]()},
		{"/v1/test/generate", reflect.TypeFor[testGenerateRequest]()},
	}
	probes := 0
	for _, e := range endpoints {
		for _, p := range typoProbes(e.typ, 0) {
			probes++
			r := b.send(http.MethodPost, e.path, b.testKey, p.body)
			if r.field("error.code") != "UNKNOWN_FIELD" || !strings.Contains(r.field("error.message").(string), `did you mean "`+p.want+`"`) {
				t.Errorf("%s %s: %d %s; want UNKNOWN_FIELD suggesting %q", e.path, p.body, r.status, r.raw, p.want)
			}
		}
	}
	t.Logf("%d probes", probes)
	if probes < 40 {
		t.Fatalf("only %d misspelt members probed: the request types were not walked", probes)
	}
}
