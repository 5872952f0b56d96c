package meridian

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

func TestJSONStringReader(t *testing.T) {
	for _, s := range []string{"", "plain", "a,b\n1,\"x\"\n", "tab\there\\back/slash", "é 日本 😀 \u2028", "\x01\x1f", strings.Repeat("x\"y\\z\n", 5000)} {
		quoted, err := jsontext.AppendQuote(nil, s)
		if err != nil {
			t.Fatal(err)
		}
		// Force \u escapes and escaped solidus too.
		quoted = bytes.ReplaceAll(quoted, []byte("é"), []byte(`\u00e9`))
		quoted = bytes.ReplaceAll(quoted, []byte("😀"), []byte(`\ud83d\ude00`))
		quoted = bytes.ReplaceAll(quoted, []byte("/"), []byte(`\/`))
		r, err := JSONStringReader(quoted)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(iotest.OneByteReader(r))
		if err != nil || string(got) != s {
			t.Errorf("%.40q: read %.40q, %v", s, got, err)
		}
	}
	if _, err := JSONStringReader(jsontext.Value(`12`)); err == nil {
		t.Error("a number was accepted as a string")
	}
}

// TestStreamingMatchesInline feeds the same data through the streaming API the HTTP layer
// uses (a decoder over the whole body, records read in place; the CSV read from the raw JSON
// string) and through Analyze, and expects the same result.
func TestStreamingMatchesInline(t *testing.T) {
	for _, format := range []string{FormatRecords, FormatCSV} {
		req, _ := Generate(ScenarioDirty, 11, GenParams{Format: format})
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := analyzeAt(req, testNow)
		if err != nil {
			t.Fatal(err)
		}
		// Stream: walk the top-level object; decode every member but data into the request.
		dec := jsontext.NewDecoder(bytes.NewReader(body))
		var streamed Request
		ds := NewDataset()
		if _, err := dec.ReadToken(); err != nil {
			t.Fatal(err)
		}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				t.Fatal(err)
			}
			name := tok.String()
			switch name {
			case "data":
				dec.ReadToken() // {
				for dec.PeekKind() != '}' {
					member, _ := dec.ReadToken()
					switch member.String() {
					case "records":
						if err := ds.ReadRecords(dec); err != nil {
							t.Fatal(err)
						}
					case "csv":
						v, err := dec.ReadValue()
						if err != nil {
							t.Fatal(err)
						}
						r, err := JSONStringReader(v)
						if err != nil {
							t.Fatal(err)
						}
						if err := ds.ReadCSV(r, ','); err != nil {
							t.Fatal(err)
						}
					default:
						dec.SkipValue()
					}
				}
				dec.ReadToken() // }
			default:
				v, err := dec.ReadValue()
				if err != nil {
					t.Fatal(err)
				}
				obj := append([]byte(`{"`+name+`":`), v...)
				if err := json.Unmarshal(append(obj, '}'), &streamed); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := evaluateOn(streamed, ds, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if canonJSON(t, got) != canonJSON(t, want) {
			t.Errorf("%s: streamed result differs from inline", format)
		}
	}
}

func TestAddRecord(t *testing.T) {
	ds := NewDataset()
	for _, rec := range []string{`{"a": 1, "b": "x"}`, `{"b": "y"}`, `{"c": true, "a": 1.0}`} {
		if err := ds.AddRecord(jsontext.Value(rec)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ds.AddRecord(jsontext.Value(`{"a": 1} {"a": 2}`)); err == nil {
		t.Error("trailing data after a record was accepted")
	}
	var ie *engine.InputError
	if err := ds.AddRecord(jsontext.Value(`[1]`)); !errors.As(err, &ie) || ie.Field != "data.records[3]" {
		t.Errorf("array record: %v", err)
	}
	if err := ds.ReadCSV(strings.NewReader("a\n1\n"), ','); !errors.As(err, &ie) || ie.Field != "data" {
		t.Errorf("CSV after records: %v", err)
	}
	res, err := evaluateOn(Request{SourceID: "s", Checks: []Check{{Type: CheckUnique, Column: ptrOf("a")}, {Type: CheckNotNull, Column: ptrOf("c")}}}, ds, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Columns(); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("columns %v, want a,b,c in order of first appearance", got)
	}
	if *res.Checks[0].UnexpectedCount != 2 || *res.Checks[1].UnexpectedCount != 2 {
		t.Errorf("unique a (1 and 1.0) = %d, not_null c = %d; want 2 and 2", *res.Checks[0].UnexpectedCount, *res.Checks[1].UnexpectedCount)
	}
}

func TestSyntaxErrorsPassThrough(t *testing.T) {
	ds := NewDataset()
	err := ds.ReadRecords(jsontext.NewDecoder(strings.NewReader(`[{"a": 1}, {"a": }]`)))
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *jsontext.SyntacticError", err)
	}
	var ie *engine.InputError
	if errors.As(err, &ie) {
		t.Error("malformed JSON must not be an INVALID_DATA error")
	}
	// An I/O error of the reader comes back unchanged, too.
	boom := errors.New("connection reset")
	if err := NewDataset().ReadCSV(iotest.ErrReader(boom), ','); !errors.Is(err, boom) {
		t.Errorf("got %v, want the reader's error", err)
	}
}

// TestRowLimit: the 1,000,001st row is INVALID_DATA naming its line (CSV) or index (records).
func TestRowLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("a,b\n")
	for i := 0; i <= MaxRows; i++ {
		b.WriteString("1,2\n")
	}
	var ie *engine.InputError
	err := NewDataset().ReadCSV(strings.NewReader(b.String()), ',')
	if !errors.As(err, &ie) || ie.Field != "data.csv" || !strings.Contains(ie.Message, "line 1000002") {
		t.Errorf("CSV: %v", err)
	}
	exact := strings.TrimSuffix(b.String(), "1,2\n")
	ds := NewDataset()
	if err := ds.ReadCSV(strings.NewReader(exact), ','); err != nil || ds.Rows() != MaxRows {
		t.Errorf("exactly %d rows: %v, %d rows", MaxRows, err, ds.Rows())
	}
	recs := "[" + strings.Repeat("{},", MaxRows) + "{}]"
	err = NewDataset().ReadRecords(jsontext.NewDecoder(strings.NewReader(recs)))
	if !errors.As(err, &ie) || ie.Field != "data.records[1000000]" {
		t.Errorf("records: %v", err)
	}
}

func TestCSVDetails(t *testing.T) {
	csv := "name;note\n\"a;b\";\"he said \"\"hi\"\"\"\n\"\";x\n\nc;\"multi\nline\"\r\n"
	res, err := analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &csv, Delimiter: ptrOf(";")},
		Checks: []Check{{Type: CheckNotNull, Column: ptrOf("name")}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := res.Profile
	if p.RowCount != 3 {
		t.Fatalf("rows %d, want 3 (the blank line is skipped)", p.RowCount)
	}
	if c := res.Checks[0]; *c.UnexpectedCount != 1 || c.PartialUnexpectedIndexList[0] != 1 {
		t.Errorf("a quoted empty field is null: %s", canonJSON(t, c))
	}
	tops := canonJSON(t, p.Columns[1].TopValues)
	if !strings.Contains(tops, `"he said \"hi\""`) || !strings.Contains(tops, `"multi\nline"`) {
		t.Errorf("quoted fields not unquoted: %s", tops)
	}
	// In a one-column CSV a blank line is skipped; a quoted empty field is a null row.
	one := "v\n1\n\n\"\"\n2\n"
	res = analyzeCSV(t, one, Check{Type: CheckNotNull, Column: ptrOf("v")})
	if res.Profile.RowCount != 3 || *res.Checks[0].UnexpectedCount != 1 || res.Checks[0].PartialUnexpectedIndexList[0] != 1 {
		t.Errorf("one-column CSV: %s", canonJSON(t, res.Checks[0]))
	}
	var ie *engine.InputError
	bad := "a,b\n1,\xff\n"
	if _, err := analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &bad}}, time.Now()); !errors.As(err, &ie) || !strings.Contains(ie.Message, "line 2") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

// FuzzReadCSV: arbitrary input, read with each delimiter of fuzzDelimiters, never panics;
// refused input is an *engine.InputError; accepted input is what encoding/csv reads (the
// header's columns, a row per record) and yields consistent columns.
func FuzzReadCSV(f *testing.F) {
	for i, s := range []string{"a,b\n1,2\n", "a;b\n1;2\n\"x;y\";3\n", "a\tb\r\n1\t2\r\n\r\n3\t4", "a|b\n\"multi\nline\"|\"quo\"\"te\"\n",
		"a b\n1 2\n", "a§b\n1§2\n", "a\n\"x\n", "", "a,a\n", "x,y\n1,\n,2\n\"\"\"\",3\n", "a;b\n1;2", "\xff\n", "a,b\n1\n", "a\nx\"y\n"} {
		f.Add(s, uint8(i))
	}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		if len(s) > maxFuzzInput {
			t.Skip()
		}
		delim := fuzzDelimiters[int(which)%len(fuzzDelimiters)]
		ds := NewDataset()
		if err := ds.ReadCSV(strings.NewReader(s), delim); err != nil {
			requireInputError(t, err)
			return
		}
		cr := csv.NewReader(strings.NewReader(s))
		cr.Comma = delim
		records, err := cr.ReadAll()
		if err != nil || len(records) == 0 {
			t.Fatalf("accepted CSV that encoding/csv refuses: %v", err)
		}
		if !slices.Equal(ds.Columns(), records[0]) || ds.Rows() != len(records)-1 {
			t.Fatalf("read columns %q and %d rows; encoding/csv reads %q and %d", ds.Columns(), ds.Rows(), records[0], len(records)-1)
		}
		checks := []Check{}
		for _, c := range ds.Columns() {
			checks = append(checks, Check{Type: CheckUnique, Column: ptrOf(c)}, Check{Type: CheckOutliers, Column: ptrOf(c), Method: ptrOf("mad")})
		}
		if len(checks) > MaxChecks {
			checks = checks[:MaxChecks]
		}
		res, err := evaluateOn(Request{SourceID: "f", Checks: checks}, ds, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
		for _, c := range ds.cols {
			if len(c.ids) != ds.Rows() {
				t.Fatalf("column %q has %d cells for %d rows", c.name, len(c.ids), ds.Rows())
			}
		}
	})
}

// FuzzReadRecords: arbitrary JSON never panics; refused input is malformed JSON or an
// *engine.InputError; accepted records give consistent columns
// and a result that marshals (no NaN or Inf).
func FuzzReadRecords(f *testing.F) {
	for _, s := range []string{`[{"a": 1, "b": "x"}, {"a": null}]`, `[]`, ``, `[{"a":1e400}]`, `[{"a":1,"a":2}]`, `[{"a":`, `[{"a":1}]]`, "[{\"\xff\":1}]", `[{"a": {"b": [1, 2.0]}}, {"a": 1e308}, {"a": 1e308}]`, `[1]`, `{"a": 1}`, `[{"a": "\u00e9", "": -0}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzInput {
			t.Skip()
		}
		ds := NewDataset()
		if err := ds.ReadRecords(jsontext.NewDecoder(strings.NewReader(s))); err != nil {
			var syntax *jsontext.SyntacticError
			if !errors.As(err, &syntax) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				requireInputError(t, err) // malformed or missing JSON is the API's 400 (streamError); the rest the engine's
			}
			return
		}
		var checks []Check
		for _, c := range ds.Columns() {
			checks = append(checks, Check{Type: CheckUnique, Column: ptrOf(c)}, Check{Type: CheckOutliers, Column: ptrOf(c), Method: ptrOf("iqr")},
				Check{Type: CheckStatisticBetween, Column: ptrOf(c), Statistic: ptrOf("stddev")})
		}
		if len(checks) > MaxChecks {
			checks = checks[:MaxChecks]
		}
		res, err := evaluateOn(Request{SourceID: "f", Checks: checks}, ds, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
		for _, c := range ds.cols {
			if len(c.ids) != ds.Rows() {
				t.Fatalf("column %q has %d cells for %d rows", c.name, len(c.ids), ds.Rows())
			}
		}
	})
}

// The integer fast path of CSV type inference gives the flags and the number (bits
// included: "-0" is negative zero) the general path gives.
func TestSmallIntegerIsTheGeneralPath(t *testing.T) {
	texts := []string{"0", "-0", "+0", "007", "-007", "1", "+1", "-1", "999999999999999", "-999999999999999",
		"1000000000000000", "9007199254740993", "12345678901234567890", "+", "-", "", "1-2", "1e5", "1.0", " 1", "2026-01-01", "１"}
	for i := range 2000 {
		v := int64(i) * 7_919_393_131
		texts = append(texts, strconv.FormatInt(v%1_000_000_000_000_000, 10), strconv.FormatInt(-v%100_000, 10))
	}
	for _, s := range texts {
		wantFl, wantF := anyTextFlags(s)
		fl, f := textFlags(s)
		if fl != wantFl || math.Float64bits(f) != math.Float64bits(wantF) {
			t.Errorf("textFlags(%q) = %b, %v; the general path gives %b, %v", s, fl, f, wantFl, wantF)
		}
	}
}
