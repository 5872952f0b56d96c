package meridian

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

// FuzzReadCSV, FuzzReadRecords (ingest_test.go) and FuzzJSONStringReader feed untrusted
// bytes to the dataset's readers, what data.csv and data.records of a quality-check request
// reach: bad input is an *engine.InputError with a code, never a panic. .ci/run fuzzes each
// for a few seconds.

// maxFuzzInput bounds a fuzzed input: 64 KiB keeps each input's work to milliseconds.
const maxFuzzInput = 64 << 10

// fuzzDelimiters are the delimiters FuzzReadCSV reads with: the default, the usual others,
// and a multi-byte one.
var fuzzDelimiters = []rune{',', ';', '\t', '|', ' ', '§'}

// requireInputError fails unless err is an *engine.InputError with a code, a field and a
// message: what the API answers as a 400.
func requireInputError(t *testing.T, err error) {
	t.Helper()
	var invalid *engine.InputError
	if !errors.As(err, &invalid) {
		t.Fatalf("error %T %v is not an *engine.InputError", err, err)
	}
	if invalid.Code == "" || invalid.Field == "" || invalid.Message == "" {
		t.Fatalf("input error without code, field or message: %+v", invalid)
	}
}

// FuzzJSONStringReader checks the reader that unescapes data.csv as the CSV parser reads it
// against the JSON decoder's own unescaping.
func FuzzJSONStringReader(f *testing.F) {
	for _, text := range []string{`""`, `"plain"`, `"a,b\n1,\"x\"\n"`, `"\u00e9\ud83d\ude00\u2028\t\\\/"`, `"\ud800"`, `"é 日本"`} {
		f.Add([]byte(text))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if len(v) > maxFuzzInput {
			t.Skip()
		}
		// The API hands the reader only what the decoder read as one string value.
		dec := jsontext.NewDecoder(bytes.NewReader(v))
		if dec.PeekKind() != '"' {
			return
		}
		value, err := dec.ReadValue()
		if err != nil {
			return
		}
		var want string
		if err := json.Unmarshal(value, &want); err != nil {
			t.Fatalf("decoder read %q, which does not unmarshal: %v", value, err)
		}
		r, err := JSONStringReader(value)
		if err != nil {
			t.Fatalf("JSONStringReader(%q): %v", value, err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("read %q: %v", value, err)
		}
		if string(got) != want {
			t.Fatalf("read %q as %q, want %q", value, got, want)
		}
	})
}
