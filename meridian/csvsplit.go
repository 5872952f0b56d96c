package meridian

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// The CSV reader splits RFC 4180 text at the byte level, as encoding/csv does (the same
// fields, the same errors on the same lines and columns; csv_oracle_test.go compares the two)
// but without copying a field that it can point to: a field is a string over the chunk of
// text it was read from, valid until the chunk is refilled, and only a quoted field holding
// a doubled quote or a line break is copied (into the chunk's side buffer). The text is read
// in chunks cut at record boundaries, so that chunks can be split into fields on several
// cores, each from its own start (csvSource).

// csvChunkSize is the text read at once: a chunk is cut after the last record that ends in
// it, so it holds whole records (a record longer than a chunk makes the chunk grow).
const csvChunkSize = 256 << 10

// kindParse and kindUTF8 order the failures of one record as ReadCSV meets them: a record
// that cannot be split fails before the row limits are checked, and those before its UTF-8.
const (
	kindParse = iota // bad quoting, a ragged row, or the reader's error
	kindUTF8         // a field that is not valid UTF-8
)

// csvChunk is a run of whole records of the text and, once split, their fields.
type csvChunk struct {
	buf     []byte
	line    int   // line of buf[0] (1-based)
	final   bool  // the text ends with buf
	readErr error // the reader's error after buf (final only); nil at EOF

	fields []string // the records' fields, ncol each
	lines  []int    // the line where each record starts
	side   []byte   // copies of quoted fields with a doubled quote or a line break
	err    error    // the first failure, at record errAt of the chunk
	errAt  int
	kind   int
}

// reset empties the chunk's results for a new split.
func (ch *csvChunk) reset() {
	ch.fields, ch.lines, ch.side = ch.fields[:0], ch.lines[:0], ch.side[:0]
	ch.err, ch.errAt, ch.kind = nil, 0, 0
}

// csvSource reads the text into chunks that end at record boundaries.
type csvSource struct {
	r     io.Reader
	carry []byte // text read after the last cut, the start of the next chunk
	line  int    // line of carry[0]
	done  bool   // r returned EOF or an error (err)
	err   error
	read  int64 // bytes read from r
	size  int   // the chunk size (csvChunkSize; tests make it small)
}

// fill makes ch the next chunk: the carried text and more, up to about csvChunkSize bytes,
// cut after the last line break outside quotes. Outside quotes means after an even number
// of double quotes since the chunk's start: true at every record boundary of well-formed
// text; in text that is not, the cut may fall inside a record, but only after the first bad
// quote, whose error the split of this or an earlier chunk reports first. It returns false
// when no text is left.
func (s *csvSource) fill(ch *csvChunk) bool {
	if s.done && len(s.carry) == 0 {
		return false
	}
	size := s.size
	if sized, ok := s.r.(interface{ Len() int }); ok {
		// No larger than the text left (and one byte to meet its end).
		size = max(min(size, len(s.carry)+sized.Len()+1), 64)
	}
	for {
		buf := ch.buf[:0]
		if cap(buf) < size {
			buf = make([]byte, 0, size)
		}
		buf = append(buf, s.carry...)
		for empty := 0; !s.done && len(buf) < cap(buf); {
			n, err := s.r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			s.read += int64(n)
			if empty = empty + 1; n > 0 {
				empty = 0
			}
			switch {
			case err == io.EOF:
				s.done = true
			case err != nil:
				s.done, s.err = true, err
			case empty == 100: // as bufio gives up on a reader that returns nothing
				s.done, s.err = true, io.ErrNoProgress
			}
		}
		ch.buf, ch.line = buf, s.line
		if s.done {
			ch.final, ch.readErr = true, s.err
			s.carry = s.carry[:0]
			return true
		}
		if cut := recordCut(buf); cut > 0 {
			ch.final, ch.readErr = false, nil
			s.carry = append(s.carry[:0], buf[cut:]...)
			ch.buf = buf[:cut]
			s.line += bytes.Count(ch.buf, []byte{'\n'})
			return true
		}
		// One record fills the chunk: read it into a larger one.
		s.carry = append(s.carry[:0], buf...)
		size *= 2
	}
}

// recordCut is the length of the longest prefix of buf that ends with a line break after an
// even number of double quotes, or 0.
func recordCut(buf []byte) int {
	quotes := bytes.Count(buf, []byte{'"'})
	end := len(buf)
	for {
		i := bytes.LastIndexByte(buf[:end], '\n')
		if i < 0 {
			return 0
		}
		quotes -= bytes.Count(buf[i+1:end], []byte{'"'})
		if quotes%2 == 0 {
			return i + 1
		}
		end = i
	}
}

// csvSplitter splits chunks into fields with one delimiter and field count.
type csvSplitter struct {
	comma []byte // the delimiter, UTF-8 encoded
	ncol  int    // fields per record; 0 before the header, which sets it
}

func newCSVSplitter(delim rune) *csvSplitter {
	return &csvSplitter{comma: utf8.AppendRune(nil, delim)}
}

// lineReader hands out the lines of a chunk as encoding/csv's readLine does: each with its
// line break, "\r\n" made "\n", and a last line without one; a trailing "\r" of the text is
// dropped at EOF.
type lineReader struct {
	buf     []byte
	off     int
	numLine int
	eof     bool  // the chunk is the end of the text
	readErr error // the reader's error after the chunk
}

// next returns the next line, or an empty line with io.EOF (end of the chunk or the text),
// or with the reader's error when the text ended with one.
func (lr *lineReader) next() ([]byte, error) {
	rest := lr.buf[lr.off:]
	lr.numLine++
	i := bytes.IndexByte(rest, '\n')
	var line []byte
	var err error
	if i >= 0 {
		line = rest[:i+1]
	} else {
		line = rest
		if lr.readErr != nil {
			err = lr.readErr
		} else if len(line) == 0 {
			err = io.EOF
		} else if lr.eof && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
	}
	lr.off += len(rest[:len(line)])
	if i < 0 {
		lr.off = len(lr.buf)
	}
	if n := len(line); n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
		line[n-2] = '\n'
		line = line[:n-1]
	}
	return line, err
}

func lengthNL(b []byte) int {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return 1
	}
	return 0
}

// str is b as a string without a copy: b must not change while the string is in use.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// split splits the records of ch into ch.fields and ch.lines, stopping at the first
// failure (ch.err, at record ch.errAt) or, with most > 0, after most records, and returns
// the offset in ch.buf after the records split and the line there. It changes ch.buf where
// a line ends in "\r\n", as encoding/csv does to its lines.
func (sp *csvSplitter) split(ch *csvChunk, most int) (off, line int) {
	ch.reset()
	lr := lineReader{buf: ch.buf, numLine: ch.line - 1, eof: ch.final, readErr: ch.readErr}
	checkUTF8 := sp.ncol > 0 && !utf8.Valid(ch.buf) // the header is checked by ReadCSV
	if most <= 0 && sp.ncol > 0 && bytes.IndexByte(ch.buf, '"') < 0 {
		// Without quotes each delimiter and line break ends at most one field: room for
		// them all at once. Growing by append's doublings made most of the garbage of
		// reading a wide table (18 of 77 MB for 1,000 columns × 300 rows).
		n := bytes.Count(ch.buf, sp.comma) + bytes.Count(ch.buf, []byte{'\n'}) + 1
		ch.fields = slices.Grow(ch.fields, n)
		ch.lines = slices.Grow(ch.lines, n/sp.ncol+1)
	}
	defer func() { off, line = lr.off, lr.numLine+1 }()
	for rec := 0; most <= 0 || rec < most; rec++ {
		n0 := len(ch.fields)
		recLine, badField, badLine, err := sp.record(&lr, ch, checkUTF8)
		if err == io.EOF {
			return
		}
		if err != nil {
			ch.fields = ch.fields[:n0]
			ch.err, ch.errAt, ch.kind = err, rec, kindParse
			return
		}
		nf := len(ch.fields) - n0
		if sp.ncol == 0 {
			sp.ncol = nf
		} else if nf != sp.ncol {
			ch.fields = ch.fields[:n0]
			ch.err, ch.errAt, ch.kind = csvErr(recLine, "the row does not have as many fields as the header."), rec, kindParse
			return
		}
		ch.lines = append(ch.lines, recLine)
		if badField >= 0 {
			ch.err, ch.errAt, ch.kind = csvErr(badLine, "field %d is not valid UTF-8.", badField+1), rec, kindUTF8
			return
		}
	}
	return
}

// record splits one record, as encoding/csv's readRecord does, appending its fields to
// ch.fields. It returns io.EOF when no record is left, a *engine.InputError for bad
// quoting, the reader's error (wrapped) for a record the reader's failure cut short, and,
// with checkUTF8, the first field that is not valid UTF-8 (its index and line, or −1).
func (sp *csvSplitter) record(lr *lineReader, ch *csvChunk, checkUTF8 bool) (recLine, badField, badLine int, err error) {
	badField = -1
	var line []byte
	var errRead error
	for errRead == nil {
		line, errRead = lr.next()
		if errRead == nil && len(line) == lengthNL(line) {
			line = nil
			continue // skip empty lines
		}
		break
	}
	if errRead == io.EOF {
		return 0, -1, 0, io.EOF
	}
	comma := sp.comma
	recLine = lr.numLine
	posLine, posCol := lr.numLine, 1
	n0 := len(ch.fields)
	emitAt := func(f []byte, fieldLine int) {
		if checkUTF8 && badField < 0 && !utf8.Valid(f) {
			badField, badLine = len(ch.fields)-n0, fieldLine
		}
		ch.fields = append(ch.fields, str(f))
	}
parseField:
	for {
		if len(line) == 0 || line[0] != '"' {
			// An unquoted field.
			i := bytes.Index(line, comma)
			field := line
			if i >= 0 {
				field = field[:i]
			} else {
				field = field[:len(field)-lengthNL(field)]
			}
			if j := bytes.IndexByte(field, '"'); j >= 0 {
				err = csvErr(lr.numLine, "column %d: a double quote in an unquoted field (quote the field and double the quote).", posCol+j)
				break parseField
			}
			emitAt(field, posLine)
			if i >= 0 {
				line = line[i+len(comma):]
				posCol += i + len(comma)
				continue parseField
			}
			break parseField
		}
		// A quoted field: one piece of the text while it has no doubled quote and no line
		// break, else copied piece by piece into ch.side.
		fieldLine := posLine
		line = line[1:]
		posCol++
		var piece []byte
		copied, sideStart := false, 0
		add := func(b []byte) {
			switch {
			case copied:
				ch.side = append(ch.side, b...)
			case piece == nil:
				piece = b
			default:
				sideStart = len(ch.side)
				ch.side = append(append(ch.side, piece...), b...)
				copied = true
			}
		}
		for {
			i := bytes.IndexByte(line, '"')
			if i >= 0 {
				add(line[:i:i])
				line = line[i+1:]
				posCol += i + 1
				switch {
				case len(line) > 0 && line[0] == '"':
					add([]byte{'"'})
					line = line[1:]
					posCol++
				case bytes.HasPrefix(line, comma):
					line = line[len(comma):]
					posCol += len(comma)
					emitAt(quoted(ch, piece, copied, sideStart), fieldLine)
					continue parseField
				case len(line) == lengthNL(line):
					emitAt(quoted(ch, piece, copied, sideStart), fieldLine)
					break parseField
				default:
					err = csvErr(lr.numLine, "column %d: a quoted field is not closed properly.", posCol-1)
					break parseField
				}
			} else if len(line) > 0 {
				add(line[:len(line):len(line)])
				if errRead != nil {
					break parseField
				}
				posCol += len(line)
				line, errRead = lr.next()
				if len(line) > 0 {
					posLine++
					posCol = 1
				}
				if errRead == io.EOF {
					errRead = nil
				}
			} else {
				if errRead == nil {
					err = csvErr(posLine, "column %d: a quoted field is not closed properly.", posCol)
					break parseField
				}
				emitAt(quoted(ch, piece, copied, sideStart), fieldLine)
				break parseField
			}
		}
	}
	if err == nil && errRead != nil {
		err = fmt.Errorf("read csv: %w", errRead)
	}
	return recLine, badField, badLine, err
}

// quoted is the text of a quoted field: its one piece, or its copy in ch.side.
func quoted(ch *csvChunk, piece []byte, copied bool, sideStart int) []byte {
	if copied {
		return ch.side[sideStart:len(ch.side):len(ch.side)]
	}
	return piece
}
