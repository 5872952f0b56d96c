package meridian

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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

// ReadCSV reads RFC 4180 CSV with a header row from r into the dataset. The delimiter is
// one character (',' when 0). An empty field (quoted or not) is null; fields are not
// trimmed; blank lines are skipped. Ragged rows, bad quoting, invalid UTF-8, a duplicate
// column name or more than MaxRows rows are an *engine.InputError (INVALID_DATA, field
// data.csv) whose message gives the 1-based line (the header is line 1). Errors of r itself
// are returned wrapped, unchanged.
//
// The text is read in chunks of whole records (about csvChunkSize bytes, 256 KiB), a round of
// 2 × workers chunks at a time (SetWorkers): the chunks of a round are split into fields on
// up to workers goroutines, then their values interned column by column, each column on one
// goroutine in row order, so the dataset is the same for any number of workers.
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
	src := &csvSource{r: r, line: 1, size: csvChunkSize}
	if d.chunkSize > 0 {
		src.size = d.chunkSize
	}
	sp := newCSVSplitter(delim)
	head := &csvChunk{}
	var rest, restLine int
	for src.fill(head) {
		// A chunk of blank lines holds no header: the next may.
		if rest, restLine = sp.split(head, 1); head.err != nil || len(head.lines) > 0 || head.final {
			break
		}
	}
	if head.err != nil {
		return head.err
	}
	if len(head.lines) == 0 {
		return csvErr(1, "a header row is required, but the CSV is empty.")
	}
	line := head.lines[0]
	if len(head.fields) > MaxColumns {
		return csvErr(line, "the header names %d columns; at most %d are allowed.", len(head.fields), MaxColumns)
	}
	for j, name := range head.fields {
		if !utf8.ValidString(name) {
			return csvErr(line, "column %d of the header is not valid UTF-8.", j+1)
		}
		if _, dup := d.byName[name]; dup {
			return csvErr(line, "the header names column %q twice.", name)
		}
		d.addColumn(strings.Clone(name))
	}
	// The rest of the first chunk is the first chunk of data.
	head.buf, head.line = head.buf[rest:], restLine
	return d.readRecords(src, sp, head)
}

// readRecords reads the records after the header, first the rest of the header's chunk.
// Two sets of chunks take turns: while the columns of one round are interned, one of the
// workers reads the next round's text into the other set.
func (d *Dataset) readRecords(src *csvSource, sp *csvSplitter, first *csvChunk) error {
	workers := d.workerCount()
	ncol := len(d.cols)
	sized, _ := src.r.(interface{ Len() int })
	var sets [2][]*csvChunk
	for k := range sets {
		sets[k] = make([]*csvChunk, 2*workers)
		for i := range sets[k] {
			sets[k][i] = &csvChunk{}
		}
	}
	sets[0][0] = first
	fillSet := func(set []*csvChunk, n int) int {
		for n < len(set) && src.fill(set[n]) {
			n++
		}
		return n
	}
	// The first record a round may not take: the row limits.
	limit, limitMsg := MaxRows, fmt.Sprintf("more than %d rows.", MaxRows)
	if cells := MaxCells / ncol; cells < limit {
		limit, limitMsg = cells, fmt.Sprintf("more than %d cells (rows × columns).", MaxCells)
	}
	take := make([]int, 2*workers)
	order := make([]int, ncol) // columns, costliest first
	costs := make([]int, ncol)
	for j := range order {
		order[j] = j
	}
	presized := sized == nil
	var consumed int64 // bytes of the rounds interned
	n := fillSet(sets[0], 1)
	for round := 0; n > 0; round++ {
		chunks := sets[round%2][:n]
		parallel(workers, n, func(i int) { sp.split(chunks[i], 0) })
		// The records taken, up to the first failure in record order.
		var fail error
		rows := 0
		for i, ch := range chunks {
			take[i] = 0
			if fail != nil {
				continue
			}
			g0 := d.rows + rows
			switch {
			case ch.err != nil && (g0+ch.errAt < limit || (g0+ch.errAt == limit && ch.kind == kindParse)):
				take[i], fail = ch.errAt, ch.err
			case g0+len(ch.lines) > limit:
				take[i], fail = limit-g0, csvErr(ch.lines[limit-g0], "%s", limitMsg)
			default:
				take[i] = len(ch.lines)
			}
			rows += take[i]
			consumed += int64(len(ch.buf))
		}
		// The text may go on when this round filled its set.
		next, more := 0, fail == nil && n == len(sets[0])
		readNext := func() {
			if more {
				next = fillSet(sets[(round+1)%2], 0)
			}
		}
		if rows == 0 {
			readNext()
		} else {
			if err := d.internRound(chunks, take[:n], order, costs, workers, readNext); err != nil {
				return err
			}
			d.rows += rows
			read := src.read
			if sized != nil {
				read += int64(sized.Len())
			}
			if excess := d.overIngestLimit(read); excess != "" {
				last := n - 1
				for take[last] == 0 {
					last--
				}
				return csvErr(chunks[last].lines[take[last]-1], "%s.", excess)
			}
			if !presized && d.rows >= presizeRows {
				// Reading sized text, the columns are sized for all of it once: from the
				// rows per byte so far.
				presized = true
				if consumed > 0 {
					est := float64(d.rows) * float64(src.read+int64(sized.Len())) / float64(consumed)
					d.presize(min(MaxRows, int(est*1.02)+16))
				}
			}
		}
		if fail != nil {
			return fail
		}
		n = next
	}
	return nil
}

// presizeRows is the fewest rows read from which the rows per byte of sized text size the
// columns for the rest: a round of a wide table may hold only tens of rows (two chunks of
// 256 KiB of 1,000 columns hold about 100).
const presizeRows = 64

// internRound interns the first take[i] records of each chunk, column by column on up to
// workers goroutines, the costliest columns of the last round first (order, by costs), and
// runs also on one of them meanwhile (first).
func (d *Dataset) internRound(chunks []*csvChunk, take []int, order, costs []int, workers int, also func()) error {
	ncol := len(d.cols)
	slices.SortStableFunc(order, func(a, b int) int { return costs[b] - costs[a] })
	type overflow struct{ chunk, row int }
	over := make([]overflow, ncol)
	roundRows := 0
	for _, n := range take {
		roundRows += n
	}
	parallel(workers, ncol+1, func(k int) {
		if k == 0 {
			also()
			return
		}
		j := order[k-1]
		c := d.cols[j]
		before := c.dict.size()
		over[j] = overflow{-1, -1}
		if len(c.ids)+roundRows > cap(c.ids) {
			// Doubling, as addTexts grows them: unsized text (a socket's) grows by rounds.
			c.ids = slices.Grow(c.ids, max(len(c.ids), roundRows))
		}
		rows := 0
		for i, ch := range chunks {
			fields := ch.fields[:take[i]*ncol]
			for b := 0; b < len(fields); b += csvBatch * ncol {
				if r := d.addTexts(c, fields[b:min(len(fields), b+csvBatch*ncol)], j, ncol); r >= 0 {
					over[j] = overflow{i, b/ncol + r}
					return
				}
			}
			rows += take[i]
			if before == 0 && i == 0 && rows > 0 && rows < roundRows {
				// A new column's first chunk tells how many distinct values the rest of
				// the round brings: room for them at once rather than the dictionary's
				// doublings (of a table of 1,000 columns × 300 distinct numbers, 25 of
				// the 48 MB its reading allocated).
				c.dict.reserve((roundRows - rows) * c.dict.size() / rows)
			}
		}
		// Interning a new value costs about four times a value seen before.
		costs[j] = rows + 4*(c.dict.size()-before)
	})
	first := -1
	for j, o := range over {
		if o.chunk >= 0 && (first < 0 || o.chunk < over[first].chunk || (o.chunk == over[first].chunk && o.row < over[first].row)) {
			first = j
		}
	}
	if first >= 0 {
		o := over[first]
		return csvErr(chunks[o.chunk].lines[o.row], "the distinct values of column %q exceed 4 GiB.", d.cols[first].name)
	}
	return nil
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
