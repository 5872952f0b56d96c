package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/auth"
	"riskapi/internal/store"
)

// echoRequest is a request type that exists only in tests: it has the shapes product
// requests have (a constrained required string, an optional integer, an array of objects
// with timestamps, a free-form object) so the one decoder is tested on all of them.
type echoRequest struct {
	AgentID *string     `json:"agent_id"`
	Count   *int        `json:"count"`
	Events  []echoEvent `json:"events"`
}

type echoEvent struct {
	Timestamp  time.Time      `json:"timestamp"`
	Value      *float64       `json:"value"`
	Attributes map[string]any `json:"attributes"`
}

var echoAgentID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

const echoAgentIDExpected = "string (1-128 chars of [A-Za-z0-9._:-])"

func (r *echoRequest) validate() *Error {
	switch {
	case r.AgentID == nil:
		return invalidField("agent_id", echoAgentIDExpected, "missing", "agent_id is required.")
	case !echoAgentID.MatchString(*r.AgentID):
		return invalidField("agent_id", echoAgentIDExpected, "string", "agent_id must be 1-128 characters of letters, digits and . _ : -.")
	case r.Count != nil && (*r.Count < 1 || *r.Count > 100):
		return invalidField("count", "integer (1-100)", "number", "count must be between 1 and 100.")
	}
	return nil
}

// mountEcho adds POST /v1/_test/echo, which needs drift:write and echoes the decoded body.
func mountEcho(s *Server) {
	s.mux.Handle("POST /v1/_test/echo", s.protected("drift:write", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req echoRequest
		if err := decodeBody(r, &req); err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, req)
	})))
}

func (b *bundle) post(path, contentType, body string) response {
	b.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + b.testKey}
	if contentType != "" {
		h["Content-Type"] = contentType
	}
	return b.do(http.MethodPost, path, strings.NewReader(body), h)
}

func TestDecodeValidationErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, mountEcho)
	cases := []struct {
		name, body                string
		code, field, exp, receive string
	}{
		{"number for a string", `{"agent_id": 123}`, "INVALID_AGENT_ID", "agent_id", "string", "number"},
		{"missing required", `{}`, "INVALID_AGENT_ID", "agent_id", echoAgentIDExpected, "missing"},
		{"empty body reads as {}", ``, "INVALID_AGENT_ID", "agent_id", echoAgentIDExpected, "missing"},
		{"constraint", `{"agent_id": "has space"}`, "INVALID_AGENT_ID", "agent_id", echoAgentIDExpected, "string"},
		{"array for a string", `{"agent_id": ["a"]}`, "INVALID_AGENT_ID", "agent_id", "string", "array"},
		{"boolean for an integer", `{"agent_id": "a", "count": true}`, "INVALID_COUNT", "count", "integer", "boolean"},
		{"fraction for an integer", `{"agent_id": "a", "count": 1.5}`, "INVALID_COUNT", "count", "integer", "number"},
		{"integer out of range", `{"agent_id": "a", "count": 1e30}`, "INVALID_COUNT", "count", "integer", "number"},
		{"integer constraint", `{"agent_id": "a", "count": 101}`, "INVALID_COUNT", "count", "integer (1-100)", "number"},
		{"object for an array", `{"agent_id": "a", "events": {}}`, "INVALID_EVENTS", "events", "array", "object"},
		{"nested bad timestamp", `{"agent_id": "a", "events": [{"timestamp": "2026-11-21T10:00:00Z"}, {"timestamp": "yesterday"}]}`,
			"INVALID_EVENTS", "events[1].timestamp", "string (RFC 3339 timestamp)", "string"},
		{"nested wrong type", `{"agent_id": "a", "events": [{"timestamp": "2026-11-21T10:00:00Z", "value": "3"}]}`,
			"INVALID_EVENTS", "events[0].value", "number", "string"},
		{"unknown field", `{"agnt_id": "a"}`, "UNKNOWN_FIELD", "agnt_id", "no such field", "string"},
		{"nested unknown field", `{"agent_id": "a", "events": [{"timestamp": "2026-11-21T10:00:00Z", "valeu": 1}]}`,
			"UNKNOWN_FIELD", "events[0].valeu", "no such field", "number"},
		{"first failure in document order", `{"count": "x", "agent_id": 5}`, "INVALID_COUNT", "count", "integer", "string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.post("/v1/_test/echo", "application/json", c.body)
			r.wantError(t, http.StatusBadRequest, "validation_error", c.code)
			d := r.field("error.details").(map[string]any)
			if d["field"] != c.field || d["expected"] != c.exp || d["received"] != c.receive {
				t.Fatalf("details = %v, want field %q expected %q received %q", d, c.field, c.exp, c.receive)
			}
			if msg, _ := r.field("error.message").(string); !strings.Contains(msg, strings.SplitN(c.field, "[", 2)[0]) {
				t.Fatalf("message does not name the field: %q", msg)
			}
		})
	}
}

func TestUnknownFieldSuggestsTheClosestName(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, mountEcho)
	r := b.post("/v1/_test/echo", "application/json", `{"agnt_id": "a"}`)
	if msg := r.field("error.message").(string); !strings.Contains(msg, `"agent_id"`) {
		t.Fatalf("no suggestion: %q", msg)
	}
	r = b.post("/v1/_test/echo", "application/json", `{"agent_id": "a", "zzzzzzzzzz": 1}`)
	if msg := r.field("error.message").(string); strings.Contains(msg, "did you mean") {
		t.Fatalf("suggested a name for an unrelated field: %q", msg)
	}
}

func TestMalformedBodiesAreBadRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, mountEcho)
	for body, offset := range map[string]float64{
		`{"agent_id": "a",}`:                 16,
		`  {"agent_id": "a"`:                 18,
		`{"agent_id": "a"} {}`:               18,
		`[1, 2]`:                             0,
		` "text"`:                            1,
		`{"agent_id": "x", "agent_id": "y"}`: 18,
		"{\"agent_id\": \"\xff\"}":           14,
	} {
		r := b.post("/v1/_test/echo", "application/json", body)
		r.wantError(t, http.StatusBadRequest, "invalid_request_error", CodeBadRequest)
		if got := r.field("error.details.offset"); got != offset {
			t.Errorf("%q: offset %v, want %v (%v)", body, got, offset, r.field("error.message"))
		}
	}
}

func TestValidBodyIsDecoded(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, mountEcho)
	r := b.post("/v1/_test/echo", "application/json; charset=utf-8",
		`{"agent_id": "agent_7", "count": 3, "events": [{"timestamp": "2026-11-21T10:00:00+01:00", "value": 2.5, "attributes": {"k": [1]}}]}`)
	if r.status != http.StatusOK || r.field("data.agent_id") != "agent_7" || r.field("data.count") != 3.0 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	// null reads as an absent member: optional fields stay unset.
	if r := b.post("/v1/_test/echo", "application/json", `{"agent_id": "a", "count": null}`); r.status != http.StatusOK || r.field("data.count") != nil {
		t.Fatalf("null count: %d %s", r.status, r.raw)
	}
}

func TestContentTypeAndSize(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxBodyBytes = 1024 }, mountEcho)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "application/jsonx"} {
		r := b.post("/v1/_test/echo", ct, `{"agent_id": "a"}`)
		r.wantError(t, http.StatusUnsupportedMediaType, "invalid_request_error", CodeUnsupportedMediaType)
	}
	// A POST without a body needs no Content-Type: it reads as {} and reports the missing field.
	b.post("/v1/_test/echo", "", "").wantError(t, http.StatusBadRequest, "validation_error", "INVALID_AGENT_ID")

	big := `{"agent_id": "` + strings.Repeat("a", 2000) + `"}`
	b.post("/v1/_test/echo", "application/json", big).wantError(t, http.StatusRequestEntityTooLarge, "invalid_request_error", CodePayloadTooLarge)
	// Without a declared length (chunked), the body is cut off at the limit while reading.
	chunked := b.do(http.MethodPost, "/v1/_test/echo", io.MultiReader(strings.NewReader(big)), map[string]string{
		"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json"})
	chunked.wantError(t, http.StatusRequestEntityTooLarge, "invalid_request_error", CodePayloadTooLarge)
	// Exactly at the limit is accepted by the size check (and then validated).
	exact := `{"agent_id": "` + strings.Repeat("a", 1024-16) + `"}`
	if len(exact) != 1024 {
		t.Fatalf("test body is %d bytes", len(exact))
	}
	b.post("/v1/_test/echo", "application/json", exact).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_AGENT_ID")
}

func TestOrderOfChecks(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, mountEcho)
	// 401 comes before 415 and 400.
	r := b.do(http.MethodPost, "/v1/_test/echo", strings.NewReader("not json"), map[string]string{"Content-Type": "text/plain"})
	r.wantError(t, http.StatusUnauthorized, "authentication_error", CodeUnauthorized)
	// 403 (scope) comes before 415.
	readOnly := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Scopes: []string{"drift:read"}})
	r = b.do(http.MethodPost, "/v1/_test/echo", strings.NewReader("not json"), map[string]string{
		"Authorization": "Bearer " + readOnly, "Content-Type": "text/plain"})
	r.wantError(t, http.StatusForbidden, "permission_error", CodeForbidden)
	if r.field("error.details.required_scope") != "drift:write" {
		t.Fatalf("403 does not name the scope: %s", r.raw)
	}
	// A wildcard scope grants it.
	wild := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Scopes: []string{"drift:*"}})
	r = b.do(http.MethodPost, "/v1/_test/echo", strings.NewReader(`{"agent_id":"a"}`), map[string]string{
		"Authorization": "Bearer " + wild, "Content-Type": "application/json"})
	if r.status != http.StatusOK {
		t.Fatalf("drift:* key: %d %s", r.status, r.raw)
	}
}

// FuzzDecodeJSON: whatever the body, the decoder answers nil or a 400/413 *Error with a
// code of the contract, and never panics.
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"agent_id":"a"}`, `{"agent_id":1}`, `{"events":[{"timestamp":"x"}]}`,
		`[`, `{"a":`, `{"events":[{"attributes":{"1":[{}]}}]}`, "\xff", `{"count":-0.0e-1}`} {
		f.Add([]byte(seed))
	}
	code := regexp.MustCompile(`^(BAD_REQUEST|UNKNOWN_FIELD|INVALID_[A-Z0-9_]+)$`)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req echoRequest
		err := decodeJSON(bytes.Clone(body), &req)
		if err == nil {
			return
		}
		if status, _ := errorStatus(err.Code); status != http.StatusBadRequest || !code.MatchString(err.Code) {
			t.Fatalf("body %q: code %s (status %d)", body, err.Code, status)
		}
		if err.Message == "" || err.Details == nil {
			t.Fatalf("body %q: empty message or details", body)
		}
	})
}

// Field paths and suggestions reach into inlined structs, without end on none: a type that
// embeds a pointer to itself still answers.
func TestFieldPathsThroughInlinedStructs(t *testing.T) {
	type self struct {
		*self
		Name string `json:"name"`
	}
	type inner struct {
		Items []struct {
			Price float64 `json:"price"`
		} `json:"items"`
	}
	type outer struct {
		inner
		Name string `json:"name"`
	}
	if got := memberType(reflect.TypeFor[self](), "absent"); got != nil {
		t.Errorf("memberType on a self-embedding type = %v, want nil", got)
	}
	if got, ok := fieldPath(reflect.TypeFor[outer](), jsontext.Pointer("/items/3/price")); !ok || got != "items[3].price" {
		t.Errorf("fieldPath = %q, %v; want items[3].price", got, ok)
	}
	if names := jsonFieldNames(reflect.TypeFor[outer]()); !slices.Equal(names, []string{"items", "name"}) {
		t.Errorf("jsonFieldNames = %v", names)
	}
}

// data.delimiter applies wherever it stands in the data object: read ahead in the
// decoder's buffer when the rest of the object is there (a whole body at once), or with
// the csv held until the object ends when it is not (a body arriving a byte at a time).
func TestQualityCheckDelimiterInAnyPosition(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"source_id": "s", "data": {"delimiter": ";", "csv": "a;b\n1;2\n3;4\n"}}`,
		`{"source_id": "s", "data": {"csv": "a;b\n1;2\n3;4\n", "delimiter": ";"}}`,
		`{"source_id": "s", "data": {"csv": "a;b\n1;2\n3;4\n"  ,  "delimiter" : ";" }, "profile": false}`,
	} {
		for name, r := range map[string]io.Reader{"whole": strings.NewReader(body), "byte by byte": iotest.OneByteReader(strings.NewReader(body))} {
			req, e := decodeQualityCheck(context.Background(), r)
			if e != nil {
				t.Fatalf("%s %s: %v", name, body, e)
			}
			if cols := req.Dataset.Columns(); req.Dataset.Rows() != 2 || len(cols) != 2 || cols[1] != "b" {
				t.Errorf("%s %s: %d rows, columns %v", name, body, req.Dataset.Rows(), cols)
			}
		}
	}
}

func TestDelimiterAhead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		buf   string
		delim rune
		known bool
	}{
		{`}`, ',', true},
		{` , "delimiter": "|" } , "checks": []}`, '|', true},
		{`, "delimiter": null}`, ',', true},
		{`, "delimiter": ";;"}`, 0, false},
		{`, "delimiter": ";"`, 0, false}, // the object does not end in the buffer
		{``, 0, false},
		{`   `, 0, false},
	} {
		if d, ok := delimiterAhead([]byte(c.buf)); d != c.delim || ok != c.known {
			t.Errorf("%q: %q %v, want %q %v", c.buf, d, ok, c.delim, c.known)
		}
	}
}
