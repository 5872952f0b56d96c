package meridian

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"riskapi/engine"
)

// readCSVOracle is ReadCSV as it was on encoding/csv, the oracle of the byte-level
// splitter (FuzzReadCSV compares the two). It reads RFC 4180 CSV with a header row from r, row by row, into the dataset. The
// delimiter is one character (',' when 0). An empty field (quoted or not) is null; fields are
// not trimmed; blank lines are skipped. Ragged rows, bad quoting, invalid UTF-8, a duplicate
// column name or more than MaxRows rows are an *engine.InputError (INVALID_DATA, field data.csv)
// whose message gives the 1-based line (the header is line 1). Errors of r itself are
// returned wrapped, unchanged.
func (d *Dataset) readCSVOracle(r io.Reader, delim rune) error {
	if delim == 0 {
		delim = ','
	}
	if !validDelim(delim) {
		_, err := ParseDelimiter(string(delim))
		return err
	}
	if d.format != formatNone {
		return engine.Invalid(codeData, "data", "object (records or csv, not both)", "object", "data must hold either records or csv, not both.")
	}
	d.format = formatCSV
	cr := csv.NewReader(r)
	cr.Comma = delim
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return csvErr(1, "a header row is required, but the CSV is empty.")
	}
	if err != nil {
		return csvReadErr(err)
	}
	line, _ := cr.FieldPos(0)
	if len(header) > MaxColumns {
		return csvErr(line, "the header names %d columns; at most %d are allowed.", len(header), MaxColumns)
	}
	for j, name := range header {
		if !utf8.ValidString(name) {
			return csvErr(line, "column %d of the header is not valid UTF-8.", j+1)
		}
		if _, dup := d.byName[name]; dup {
			return csvErr(line, "the header names column %q twice.", name)
		}
		d.addColumn(name)
	}
	cols := d.cols
	ncol := len(cols)
	// A batch holds up to csvBatch rows, fewer for wide tables so that its fields stay
	// within csvBatchFields (1 MiB of string headers).
	batchRows := max(16, min(csvBatch, csvBatchFields/max(ncol, 1)))
	batch := make([]string, 0, batchRows*ncol)
	lines := make([]int, 0, batchRows)
	// sized readers (strings.Reader, bytes.Reader, JSONStringReader) let the columns be
	// allocated once after the first csvBatch rows.
	sized, _ := r.(interface{ Len() int })
	presized := sized == nil
	flush := func() error {
		for j, c := range cols {
			if r := d.addTexts(c, batch, j, ncol); r >= 0 {
				return csvErr(lines[r], "the distinct values of column %q exceed 4 GiB.", c.name)
			}
		}
		d.rows += len(lines)
		// The column store is bounded by the bytes of the whole input where the reader
		// knows them (the columns are sized for all of it), else by the bytes read.
		read := cr.InputOffset()
		if sized != nil {
			read += int64(sized.Len())
		}
		if excess := d.overIngestLimit(read); excess != "" {
			at := line
			if len(lines) > 0 {
				at = lines[len(lines)-1]
			}
			return csvErr(at, "%s.", excess)
		}
		batch, lines = batch[:0], lines[:0]
		return nil
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return csvReadErr(err)
		}
		line, _ := cr.FieldPos(0)
		if d.rows+len(lines) == MaxRows {
			return csvErr(line, "more than %d rows.", MaxRows)
		}
		if (d.rows+len(lines)+1)*ncol > MaxCells {
			return csvErr(line, "more than %d cells (rows × columns).", MaxCells)
		}
		for j, f := range rec {
			if !utf8.ValidString(f) {
				line, _ := cr.FieldPos(j)
				return csvErr(line, "field %d is not valid UTF-8.", j+1)
			}
		}
		batch = append(batch, rec...)
		lines = append(lines, line)
		if len(lines) == batchRows {
			if err := flush(); err != nil {
				return err
			}
			if !presized && d.rows >= csvBatch {
				presized = true
				if done := cr.InputOffset(); done > 0 {
					est := float64(d.rows) * float64(done+int64(sized.Len())) / float64(done)
					d.presize(min(MaxRows, int(est*1.02)+csvBatch))
				}
			}
		}
	}
}

func csvReadErr(err error) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return fmt.Errorf("read csv: %w", err)
	}
	switch {
	case errors.Is(pe.Err, csv.ErrFieldCount):
		return csvErr(pe.Line, "the row does not have as many fields as the header.")
	case errors.Is(pe.Err, csv.ErrBareQuote):
		return csvErr(pe.Line, "column %d: a double quote in an unquoted field (quote the field and double the quote).", pe.Column)
	case errors.Is(pe.Err, csv.ErrQuote):
		return csvErr(pe.Line, "column %d: a quoted field is not closed properly.", pe.Column)
	}
	return csvErr(pe.Line, "%v.", pe.Err)
}

// sameDataset reports how two datasets differ ("" when they hold the same columns, rows,
// ids and dictionaries).
func sameDataset(a, b *Dataset) string {
	if a.rows != b.rows || len(a.cols) != len(b.cols) {
		return fmt.Sprintf("%d rows × %d columns against %d × %d", a.rows, len(a.cols), b.rows, len(b.cols))
	}
	for j, ca := range a.cols {
		cb := b.cols[j]
		switch {
		case ca.name != cb.name:
			return fmt.Sprintf("column %d named %q against %q", j, ca.name, cb.name)
		case ca.nonNull != cb.nonNull || !slices.Equal(ca.ids, cb.ids):
			return fmt.Sprintf("column %q: ids differ", ca.name)
		case !bytes.Equal(ca.dict.arena, cb.dict.arena) || !slices.Equal(ca.dict.start, cb.dict.start) || !slices.Equal(ca.dict.count, cb.dict.count) ||
			!slices.Equal(ca.dict.flags, cb.dict.flags) || !slices.EqualFunc(ca.dict.num, cb.dict.num, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }):
			return fmt.Sprintf("column %q: dictionaries differ", ca.name)
		}
	}
	return ""
}

// checkAgainstOracle reads s with ReadCSV (in chunks of chunkSize bytes on workers
// goroutines) and with readCSVOracle: both must fail with the same message or read the same
// dataset.
func checkAgainstOracle(t *testing.T, s string, delim rune, chunkSize, workers int) {
	t.Helper()
	want := NewDataset()
	wantErr := want.readCSVOracle(strings.NewReader(s), delim)
	got := NewDataset()
	got.chunkSize, got.workers = chunkSize, workers
	gotErr := got.ReadCSV(strings.NewReader(s), delim)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("delimiter %q, chunks of %d, %d workers, on %q:\nerror %v\nencoding/csv's %v", delim, chunkSize, workers, s, gotErr, wantErr)
	}
	if gotErr == nil {
		if diff := sameDataset(got, want); diff != "" {
			t.Fatalf("delimiter %q, chunks of %d, %d workers, on %q: %s", delim, chunkSize, workers, s, diff)
		}
	}
}

// FuzzReadCSVOracle: the byte-level splitter reads what encoding/csv read, with the same
// errors on the same lines and columns, for any chunk size and number of workers.
func FuzzReadCSVOracle(f *testing.F) {
	for i, s := range []string{"a,b\n1,2\n", "a;b\n1;2\n\"x;y\";3\n", "a\tb\r\n1\t2\r\n\r\n3\t4", "a|b\n\"multi\nline\"|\"quo\"\"te\"\n",
		"a b\n1 2\n", "a§b\n1§2\n", "a\n\"x\n", "", "a,a\n", "x,y\n1,\n,2\n\"\"\"\",3\n", "a;b\n1;2", "\xff\n", "a,b\n1\n", "a\nx\"y\n",
		"a,b\n\"x\"y,2\n", "a,b\r\n\"1\r\n2\",3\r\n\r", "\n\n\r\na,b\n\n1,2\r\n\n", "a,b\n1,\xff\n\"\xfe\",2\n", "a\n\"\"\n\"\n\"\n", "a,b\n1,2\r"} {
		f.Add(s, uint8(i), uint8(i*7))
	}
	f.Fuzz(func(t *testing.T, s string, which, cut uint8) {
		if len(s) > maxFuzzInput {
			t.Skip()
		}
		delim := fuzzDelimiters[int(which)%len(fuzzDelimiters)]
		checkAgainstOracle(t, s, delim, 1+int(cut%64), 1+int(which/8)%4)
		checkAgainstOracle(t, s, delim, csvChunkSize, 1)
	})
}
