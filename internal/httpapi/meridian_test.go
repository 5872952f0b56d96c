package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const qualityChecks = `[{"id": "price_present", "type": "not_null", "column": "price"},
	{"id": "price_range", "type": "between", "column": "price", "min": 0, "max": 100},
	{"id": "sku_unique", "type": "unique", "column": "sku", "severity": "warning"}]`

// Records with nulls fail an error check: passed false, the failing counts exact, the check
// stored (GET returns the same bytes) and meridian.quality_check_failed emitted.
func TestMeridianRecordsFailingCheck(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	var recs []string
	for i := range 50 {
		price := fmt.Sprint(i)
		if i%10 == 3 {
			price = "null"
		}
		recs = append(recs, fmt.Sprintf(`{"sku": "s%d", "price": %s}`, i%45, price))
	}
	body := `{"source_id": "prices-feed", "checks": ` + qualityChecks + `, "data": {"records": [` + strings.Join(recs, ",") + `]}}`
	r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, body)
	if r.status != http.StatusOK || r.field("data.passed") != false || r.field("data.object") != "meridian.quality_check" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	checks := r.field("data.checks").([]any)
	notNull := checks[0].(map[string]any)
	if notNull["unexpected_count"] != 5.0 || notNull["element_count"] != 50.0 || notNull["success"] != false {
		t.Fatalf("not_null: %v", notNull)
	}
	if idx := notNull["partial_unexpected_index_list"].([]any); len(idx) != 5 || idx[0] != 3.0 {
		t.Fatalf("not_null index list: %v", idx)
	}
	between := checks[1].(map[string]any)
	if between["unexpected_count"] != 0.0 || between["success"] != true {
		t.Fatalf("between: %v", between)
	}
	unique := checks[2].(map[string]any)
	if unique["unexpected_count"] != 10.0 { // s0..s4 occur twice: every occurrence counts
		t.Fatalf("unique: %v", unique)
	}
	id := r.field("data.id").(string)
	if got := b.get("/v1/meridian/quality-checks/"+id, b.testKey); !bytes.Equal(rawData(t, got.raw), rawData(t, r.raw)) {
		t.Fatal("GET differs from POST")
	}
	if n := b.get("/v1/events?type=meridian.quality_check_failed", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("%v events, want 1", n)
	}
	if n := b.get("/v1/meridian/quality-checks?source_id=prices-feed", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("source filter: %v", n)
	}
	if n := b.get("/v1/meridian/quality-checks?source_id=other", b.testKey).field("pagination.total_count"); n != 0.0 {
		t.Fatalf("other source: %v", n)
	}
}

// CSV: the delimiter is used wherever it stands in data; the same data as records and as CSV give the same
// counts; a passing check emits nothing.
func TestMeridianCSV(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	csv := "sku;price\\ns1;10\\ns2;20\\ns3;\\ns4;30\\n"
	r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey,
		`{"source_id": "csv-feed", "data": {"delimiter": ";", "csv": "`+csv+`"}, "checks": [{"type": "not_null", "column": "price", "mostly": 0.75}]}`)
	if r.status != http.StatusOK || r.field("data.passed") != true {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	c := r.field("data.checks").([]any)[0].(map[string]any)
	if c["id"] != "check_0" || c["unexpected_count"] != 1.0 || c["unexpected_percent"] != 25.0 {
		t.Fatalf("check: %v", c)
	}
	if rows := r.field("data.profile.row_count"); rows != 4.0 {
		t.Fatalf("profile row_count %v", rows)
	}
	if n := b.get("/v1/events", b.testKey).field("pagination.total_count"); n != 0.0 {
		t.Fatalf("a passing check emitted %v events", n)
	}
	// JSON members are unordered: the delimiter applies wherever it stands in data. After
	// the csv it is read ahead in the decoder's buffer; after a megabyte of whitespace the
	// decoder has not buffered it yet, and the text waits for the end of the data object.
	for name, data := range map[string]string{
		"after":             `{"csv": "` + csv + `", "delimiter": ";"}`,
		"after, unbuffered": `{"csv": "` + csv + `"` + strings.Repeat(" ", 1<<20) + `, "delimiter": ";"}`,
		"after a null":      `{"delimiter": null, "csv": "` + csv + `", "delimiter2": 1}`,
		"comma, no member":  `{"csv": "sku,price\ns1,10\ns2,20\ns3,\ns4,30\n"}`,
		"comma, after":      `{"csv": "sku,price\ns1,10\ns2,20\ns3,\ns4,30\n", "delimiter": ","}`,
		"tab, unbuffered":   `{"csv": "sku\tprice\ns1\t10\ns2\t20\ns3\t\ns4\t30\n"` + strings.Repeat("\n", 1<<20) + `, "delimiter": "\t"}`,
	} {
		r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey,
			`{"source_id": "csv-feed", "data": `+data+`, "checks": [{"type": "not_null", "column": "price", "mostly": 0.75}]}`)
		if name == "after a null" {
			// An unknown member is still refused, wherever the csv stands.
			r.wantError(t, http.StatusBadRequest, "validation_error", "UNKNOWN_FIELD")
			continue
		}
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", name, r.status, r.raw)
		}
		c := r.field("data.checks").([]any)[0].(map[string]any)
		cols := r.field("data.profile.columns").([]any)
		if c["unexpected_count"] != 1.0 || c["missing_count"] != 1.0 || r.field("data.profile.row_count") != 4.0 ||
			len(cols) != 2 || cols[1].(map[string]any)["name"] != "price" {
			t.Fatalf("%s: %s", name, r.raw)
		}
	}
	// A delimiter that is not one character is reported where it stands, before or after.
	for _, data := range []string{`{"csv": "a;b\n1;2\n", "delimiter": ";;"}`, `{"delimiter": ";;", "csv": "a;b\n1;2\n"}`,
		`{"csv": "a;b\n1;2\n"` + strings.Repeat(" ", 1<<20) + `, "delimiter": ""}`} {
		r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "csv-feed", "data": `+data+`}`)
		r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_DATA")
		if r.field("error.details.field") != "data.delimiter" {
			t.Fatalf("bad delimiter %.60s: %s", data, r.raw)
		}
	}
	// A CSV error after a late delimiter says which delimiter read the text.
	r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "csv-feed", "data": {"csv": "a;b\n1;2\n3\n", "delimiter": ";"}}`)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_DATA")
	if msg := r.field("error.message").(string); !strings.Contains(msg, `";"`) || r.field("error.details.field") != "data.csv" {
		t.Fatalf("ragged row after a late delimiter: %s", r.raw)
	}
	// A ragged row names its line.
	r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "csv-feed", "data": {"csv": "a,b\n1,2\n3\n"}}`)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_DATA")
	if msg := r.field("error.message").(string); !strings.Contains(msg, "3") || r.field("error.details.field") != "data.csv" {
		t.Fatalf("ragged row: %s", r.raw)
	}
}

func TestMeridianValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxBodyBytes = 4096 }, nil)
	data := `"data": {"records": [{"a": 1}]}`
	cases := []struct{ name, body, code, field string }{
		{"no source_id", `{` + data + `}`, "INVALID_SOURCE_ID", "source_id"},
		{"bad source_id", `{"source_id": "a b", ` + data + `}`, "INVALID_SOURCE_ID", "source_id"},
		{"numeric source_id", `{"source_id": 5, ` + data + `}`, "INVALID_SOURCE_ID", "source_id"},
		{"no data nor signals", `{"source_id": "s"}`, "INVALID_DATA", "data"},
		{"data not an object", `{"source_id": "s", "data": []}`, "INVALID_DATA", "data"},
		{"records and csv", `{"source_id": "s", "data": {"records": [], "csv": "a\n"}}`, "INVALID_DATA", "data.csv"},
		{"record not an object", `{"source_id": "s", "data": {"records": [{"a": 1}, 7]}}`, "INVALID_DATA", "data.records[1]"},
		{"unknown check type", `{"source_id": "s", ` + data + `, "checks": [{"type": "not_null", "column": "a"}, {"type": "not_nul", "column": "a"}]}`, "INVALID_CHECKS", "checks[1].type"},
		{"check without column", `{"source_id": "s", ` + data + `, "checks": [{"type": "not_null"}]}`, "INVALID_CHECKS", "checks[0].column"},
		{"policy wrong type", `{"source_id": "s", ` + data + `, "policy": {"block_below": "low"}}`, "INVALID_POLICY", "policy.block_below"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, c.body)
			r.wantError(t, http.StatusBadRequest, "validation_error", c.code)
			if r.field("error.details.field") != c.field {
				t.Fatalf("field %v, want %s: %s", r.field("error.details.field"), c.field, r.raw)
			}
		})
	}
	r := b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "s", `+data+`, "checks": [{"type": "nope", "column": "a"}]}`)
	if msg := r.field("error.message").(string); !strings.Contains(msg, "not_null") || !strings.Contains(msg, "statistic_between") {
		t.Fatalf("unknown type message does not name the known ones: %s", msg)
	}
	r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "s", "data": {"record": []}}`)
	r.wantError(t, http.StatusBadRequest, "validation_error", "UNKNOWN_FIELD")
	if r.field("error.details.field") != "data.record" || !strings.Contains(r.field("error.message").(string), `"records"`) {
		t.Fatalf("unknown data member: %s", r.raw)
	}
	b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "s", "chekcs": []}`).
		wantError(t, http.StatusBadRequest, "validation_error", "UNKNOWN_FIELD")
	r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "s", "data": {"records": [{"a": 1},]}}`)
	r.wantError(t, http.StatusBadRequest, "invalid_request_error", "BAD_REQUEST")
	if _, ok := r.field("error.details.offset").(float64); !ok {
		t.Fatalf("malformed JSON without offset: %s", r.raw)
	}
	b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "s"} {}`).
		wantError(t, http.StatusBadRequest, "invalid_request_error", "BAD_REQUEST")
	big := `{"source_id": "s", "data": {"records": [` + strings.Repeat(`{"a": 1},`, 1000) + `{"a": 1}]}}`
	b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, big).
		wantError(t, http.StatusRequestEntityTooLarge, "invalid_request_error", "PAYLOAD_TOO_LARGE")
	// Signals alone are enough; no data means no profile.
	r = b.send(http.MethodPost, "/v1/meridian/quality-check", b.testKey, `{"source_id": "s", "signals": {"error_rate": 0.02, "completeness": 0.99}}`)
	if r.status != http.StatusOK || r.field("data.profile") != nil || r.field("data.score") == nil {
		t.Fatalf("signals only: %d %s", r.status, r.raw)
	}
	if n := b.get("/v1/meridian/quality-checks", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("%v stored checks, want 1 (invalid requests store nothing)", n)
	}
}

// The streamed body is fingerprinted like any other: a replay returns the stored answer, a
// different body under the same key is 422.
func TestMeridianIdempotency(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	h := map[string]string{"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json", "Idempotency-Key": "mqc-1"}
	body := `{"source_id": "s", "data": {"records": [{"a": 1}, {"a": null}]}, "checks": [{"type": "not_null", "column": "a"}]}`
	first := b.do(http.MethodPost, "/v1/meridian/quality-check", strings.NewReader(body), h)
	again := b.do(http.MethodPost, "/v1/meridian/quality-check", strings.NewReader(body), h)
	if first.status != http.StatusOK || !bytes.Equal(first.raw, again.raw) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.status, again.raw)
	}
	other := b.do(http.MethodPost, "/v1/meridian/quality-check", strings.NewReader(strings.Replace(body, `"s"`, `"t"`, 1)), h)
	other.wantError(t, http.StatusUnprocessableEntity, "idempotency_error", "IDEMPOTENCY_KEY_REUSED")
	if n := b.get("/v1/events", b.testKey).field("pagination.total_count"); n != 1.0 {
		t.Fatalf("%v events after a replay, want 1", n)
	}
}
