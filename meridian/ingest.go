package meridian

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

const codeData = "INVALID_DATA"

// ParseDelimiter checks the data.delimiter member: exactly one character that can separate
// CSV fields (not a quote, CR, LF or the replacement character).
func ParseDelimiter(s string) (rune, error) {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || size != len(s) || !validDelim(r) {
		return 0, engine.Invalid(codeData, "data.delimiter", "string (one character other than a quote or line break)", "string",
			"data.delimiter must be exactly one character other than a double quote or a line break; got %q.", s)
	}
	return r, nil
}

func validDelim(r rune) bool {
	return r != 0 && r != '"' && r != '\r' && r != '\n' && utf8.ValidRune(r) && r != utf8.RuneError
}

func csvErr(line int, format string, args ...any) *engine.InputError {
	return engine.Invalid(codeData, "data.csv", "string (RFC 4180 CSV with a header row)", "string",
		"data.csv line %d: %s", line, fmt.Sprintf(format, args...))
}

// ReadCSV reads RFC 4180 CSV with a header row from r, row by row, into the dataset. The
// delimiter is one character (',' when 0). An empty field (quoted or not) is null; fields are
// not trimmed; blank lines are skipped. Ragged rows, bad quoting, invalid UTF-8, a duplicate
// column name or more than MaxRows rows are an *engine.InputError (INVALID_DATA, field data.csv)
// whose message gives the 1-based line (the header is line 1). Errors of r itself are
// returned wrapped, unchanged.
func (d *Dataset) ReadCSV(r io.Reader, delim rune) error {
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

// presize reserves room for rows rows in every column, and for as many distinct values in
// columns whose values have all been distinct so far.
func (d *Dataset) presize(rows int) {
	for _, c := range d.cols {
		if more := rows - len(c.ids); more > 0 {
			c.ids = slices.Grow(c.ids, more)
			if c.dict.size() == c.nonNull && c.nonNull > len(c.ids)/2 {
				c.dict.reserve(more)
				if n := c.dict.size(); n > 0 {
					c.dict.arena = slices.Grow(c.dict.arena, more*len(c.dict.arena)/n)
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

// kindName names a JSON kind as the API's "received" does.
func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

func recordsPath(i int) string { return "data.records[" + strconv.Itoa(i) + "]" }

// ReadRecords consumes a JSON array of record objects from dec (the value of data.records)
// into the dataset, record by record. A missing key and JSON null are null. A record that is
// not an object, a number outside the float64 range or more than MaxRows records are an
// *engine.InputError (INVALID_DATA, field data.records[i]…); syntax errors of dec are returned
// wrapped, unchanged (a *jsontext.SyntacticError for malformed JSON).
func (d *Dataset) ReadRecords(dec *jsontext.Decoder) error {
	if err := d.startJSON(); err != nil {
		return err
	}
	k := dec.PeekKind()
	if k != '[' {
		if _, err := dec.ReadValue(); err != nil {
			return fmt.Errorf("read data.records: %w", err)
		}
		return engine.Invalid(codeData, "data.records", "array of objects", kindName(k), "data.records must be an array of objects, not %s.", kindName(k))
	}
	if _, err := dec.ReadToken(); err != nil {
		return fmt.Errorf("read data.records: %w", err)
	}
	start, before := dec.InputOffset(), d.read
	for dec.PeekKind() != ']' {
		if err := d.readRecord(dec); err != nil {
			return err
		}
		d.read = before + dec.InputOffset() - start
	}
	if _, err := dec.ReadToken(); err != nil {
		return fmt.Errorf("read data.records: %w", err)
	}
	return d.flushRecords()
}

func (d *Dataset) flushRecords() error {
	if d.batchRows == 0 {
		return nil
	}
	first := d.rows
	if r := d.flushJSON(); r >= 0 {
		path := recordsPath(first + r)
		return engine.Invalid(codeData, path, "object", "object", "%s: a column's distinct values exceed 4 GiB.", path)
	}
	if excess := d.overIngestLimit(d.read); excess != "" {
		path := recordsPath(d.rows - 1)
		return engine.Invalid(codeData, path, "object", "object", "data.records up to %s: %s.", path, excess)
	}
	return nil
}

// AddRecord adds one record: a JSON object of column to value. The record's index in
// error paths is the number of rows added before it.
func (d *Dataset) AddRecord(rec jsontext.Value) error {
	if err := d.startJSON(); err != nil {
		return err
	}
	dec := jsontext.NewDecoder(bytes.NewReader(rec))
	_, err := dec.ReadValue()
	if err == nil {
		if _, err = dec.ReadToken(); err == io.EOF {
			err = nil
		} else if err == nil {
			err = errors.New("data after the record object")
		}
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", recordsPath(d.rows), err)
	}
	if err := d.readRecord(jsontext.NewDecoder(bytes.NewReader(rec))); err != nil {
		return err
	}
	d.read += int64(len(rec))
	return d.flushRecords()
}

func (d *Dataset) startJSON() error {
	switch d.format {
	case formatNone:
		d.format = formatJSON
	case formatCSV:
		return engine.Invalid(codeData, "data", "object (records or csv, not both)", "object", "data must hold either records or csv, not both.")
	}
	return nil
}

func (d *Dataset) readRecord(dec *jsontext.Decoder) error {
	i := d.rows + d.batchRows
	k := dec.PeekKind()
	if k == 0 {
		_, err := dec.ReadToken()
		return fmt.Errorf("read %s: %w", recordsPath(i), err)
	}
	if k != '{' {
		if _, err := dec.ReadValue(); err != nil {
			return fmt.Errorf("read %s: %w", recordsPath(i), err)
		}
		return engine.Invalid(codeData, recordsPath(i), "object", kindName(k), "%s must be an object of column to value, not %s.", recordsPath(i), kindName(k))
	}
	if i == MaxRows {
		return engine.Invalid(codeData, recordsPath(i), "array (at most 1,000,000 records)", "object", "data.records holds more than %d records.", MaxRows)
	}
	if (i+1)*len(d.cols) > MaxCells {
		return engine.Invalid(codeData, recordsPath(i), "array (at most 50,000,000 cells: records × columns)", "object", "data.records holds more than %d cells (records × columns).", MaxCells)
	}
	if _, err := dec.ReadToken(); err != nil {
		return fmt.Errorf("read %s: %w", recordsPath(i), err)
	}
	row := int32(d.batchRows)
	name := d.name
	defer func() { d.name = name }()
	for dec.PeekKind() != '}' {
		nv, err := dec.ReadValue()
		if err != nil {
			return fmt.Errorf("read %s: %w", recordsPath(i), err)
		}
		name = name[:0]
		if hasBackslash(nv) {
			if name, err = jsontext.AppendUnquote(name, nv); err != nil {
				return fmt.Errorf("read %s: %w", recordsPath(i), err)
			}
		} else {
			name = append(name, nv[1:len(nv)-1]...)
		}
		ci, ok := d.byName[string(name)]
		var c *column
		if ok {
			c = d.cols[ci]
		} else {
			if len(d.cols) == MaxColumns || (i+1)*(len(d.cols)+1) > MaxCells {
				path := recordsPath(i)
				return engine.Invalid(codeData, path, fmt.Sprintf("object (at most %d columns, %d cells in all)", MaxColumns, MaxCells), "object",
					"%s adds column %q beyond the limits of %d columns and %d cells (records × columns).", path, name, MaxColumns, MaxCells)
			}
			c = d.addColumn(string(name))
		}
		v, err := dec.ReadValue()
		if err != nil {
			return fmt.Errorf("read %s: %w", recordsPath(i), err)
		}
		if np := len(c.pending); np > 0 && c.pending[np-1].row == row {
			// Only reachable with a decoder that allows duplicate names.
			path := recordsPath(i)
			return engine.Invalid(codeData, path, "object (each column once)", "object", "%s names column %q twice.", path, c.name)
		}
		if reason := d.addJSON(c, v); reason != "" {
			path := recordsPath(i) + "." + c.name
			return engine.Invalid(codeData, path, "a JSON value", kindName(v.Kind()), "%s: %s.", path, reason)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return fmt.Errorf("read %s: %w", recordsPath(i), err)
	}
	d.batchRows++
	if d.batchRows == csvBatch {
		return d.flushRecords()
	}
	return nil
}

// JSONStringReader returns a reader of the text of a JSON string literal v (with its quotes,
// as a decoder's ReadValue returns it), unescaping as it reads, so the CSV of data.csv can be
// parsed straight from the request's buffer without a second copy.
func JSONStringReader(v jsontext.Value) (io.Reader, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, engine.Invalid(codeData, "data.csv", "string", kindName(v.Kind()), "data.csv must be a string.")
	}
	return &jsonStringReader{src: v[1 : len(v)-1]}, nil
}

type jsonStringReader struct {
	src     []byte
	pending []byte // bytes of a decoded escape not yet returned
	buf     [4]byte
}

var errBadEscape = errors.New("invalid escape in JSON string")

// Len is the number of raw bytes not yet read (an upper bound of the text left).
func (r *jsonStringReader) Len() int { return len(r.src) + len(r.pending) }

func (r *jsonStringReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.pending) > 0 {
			c := copy(p[n:], r.pending)
			r.pending = r.pending[c:]
			n += c
			continue
		}
		if len(r.src) == 0 {
			break
		}
		j := bytes.IndexByte(r.src, '\\')
		if j != 0 {
			if j < 0 {
				j = len(r.src)
			}
			c := copy(p[n:], r.src[:j])
			r.src = r.src[c:]
			n += c
			continue
		}
		consumed, out, ok := decodeEscape(r.src, r.buf[:0])
		if !ok {
			return n, errBadEscape
		}
		r.src = r.src[consumed:]
		r.pending = out
	}
	if n == 0 && len(r.src) == 0 && len(r.pending) == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// decodeEscape decodes the escape sequence at the start of s (s[0] == '\\') into dst.
func decodeEscape(s []byte, dst []byte) (int, []byte, bool) {
	if len(s) < 2 {
		return 0, nil, false
	}
	switch s[1] {
	case '"', '\\', '/':
		return 2, append(dst, s[1]), true
	case 'b':
		return 2, append(dst, '\b'), true
	case 'f':
		return 2, append(dst, '\f'), true
	case 'n':
		return 2, append(dst, '\n'), true
	case 'r':
		return 2, append(dst, '\r'), true
	case 't':
		return 2, append(dst, '\t'), true
	case 'u':
		r1, ok := hex4(s[2:])
		if !ok {
			return 0, nil, false
		}
		if r1 >= 0xD800 && r1 < 0xDC00 {
			if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
				if r2, ok := hex4(s[8:]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
					r := (r1-0xD800)<<10 | (r2 - 0xDC00) + 0x10000
					return 12, utf8.AppendRune(dst, r), true
				}
			}
			return 6, utf8.AppendRune(dst, utf8.RuneError), true
		}
		if r1 >= 0xDC00 && r1 < 0xE000 {
			return 6, utf8.AppendRune(dst, utf8.RuneError), true
		}
		return 6, utf8.AppendRune(dst, r1), true
	}
	return 0, nil, false
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}
