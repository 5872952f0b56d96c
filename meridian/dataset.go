package meridian

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Value flags of a distinct value.
const (
	fString    uint8 = 1 << iota // a JSON string; every CSV value
	fNumber                      // a JSON number; CSV text that is a finite decimal/exponent number
	fInteger                     // a JSON number without fractional part; CSV ^[+-]?[0-9]+$
	fBool                        // JSON true/false; CSV true/false in any case
	fTimestamp                   // a string that is an RFC 3339 date-time or a YYYY-MM-DD date
	fOther                       // a JSON object or array
)

// JSON key tags: the first byte of a JSON value's dictionary key. The rest of the key is the
// unescaped string, the 8 bytes of the float64 (−0 folded into 0), "t"/"f", or the
// canonical (RFC 8785) text of an object or array.
const (
	tagString = 's'
	tagNumber = 'n'
	tagBool   = 'b'
	tagOther  = 'o'
)

const (
	formatNone = iota
	formatCSV
	formatJSON
)

// column stores one column as dictionary ids per row (0 = null) and a dictionary of its
// distinct values in order of first appearance. Equality is key equality: CSV values are
// keyed by their text, JSON values by type tag and value.
type column struct {
	name    string
	ids     []uint32
	nonNull int
	pending []pendingCell // JSON values of the current batch
	dict    dictionary
	// cacheMu guards stats and times, which checks running side by side build on first use.
	cacheMu sync.Mutex
	stats   *numericSummary // cached by numeric()
	// sink keeps the prefetching loads of addTexts from being optimised away.
	sink  uint64
	times []instant // cached by timestamps(); valid where fTimestamp
}

// dictionary interns the distinct values of a column in an open-addressing hash table
// (linear probing, load ≤ 1/2) over one byte arena, so a repeated value costs no allocation.
// Id 0 is null; slices indexed by id have a placeholder at 0.
type dictionary struct {
	arena []byte
	start []uint32 // key of id k is arena[start[k]:start[k+1]]
	count []uint32
	flags []uint8
	num   []float64 // numeric value where fNumber; nil until the first number
	table []uint64  // tableEntry(id, hash); 0 = empty slot
}

// maxArena bounds the bytes of distinct values of one column (offsets are 32-bit).
const maxArena = math.MaxUint32

func newColumn(name string, rows int) *column {
	c := &column{name: name, ids: make([]uint32, rows, max(rows, 64))}
	d := &c.dict
	d.start = []uint32{0, 0}
	d.count = []uint32{0}
	d.flags = []uint8{0}
	d.table = make([]uint64, 64)
	return c
}

// size is the number of distinct non-null values.
func (d *dictionary) size() int { return len(d.count) - 1 }

func (d *dictionary) key(id uint32) []byte { return d.arena[d.start[id]:d.start[id+1]] }

// A table entry holds the low 32 bits of the key's hash above its id: probes compare keys
// only when the hash bits match, and growing rehashes from the table alone.
func tableEntry(id uint32, h uint64) uint64 { return h<<32 | uint64(id) }

// findString returns the id of key, or 0.
func (d *dictionary) findString(key string, h uint64) uint32 {
	mask := uint64(len(d.table) - 1)
	hi := h << 32
	for i := h & mask; ; i = (i + 1) & mask {
		e := d.table[i]
		if e == 0 {
			return 0
		}
		if e&^0xFFFFFFFF == hi {
			id := uint32(e)
			if string(d.arena[d.start[id]:d.start[id+1]]) == key {
				return id
			}
		}
	}
}

// findBytes is findString for a byte key.
func (d *dictionary) findBytes(key []byte, h uint64) uint32 {
	mask := uint64(len(d.table) - 1)
	hi := h << 32
	for i := h & mask; ; i = (i + 1) & mask {
		e := d.table[i]
		if e == 0 {
			return 0
		}
		if e&^0xFFFFFFFF == hi {
			id := uint32(e)
			if string(d.arena[d.start[id]:d.start[id+1]]) == string(key) {
				return id
			}
		}
	}
}

// insert adds a new key (known to be absent) and returns its id; 0 when the column's
// distinct values would exceed maxArena bytes.
func (d *dictionary) insert(key []byte, keyStr string, h uint64, flags uint8, num float64) uint32 {
	if uint64(len(d.arena))+uint64(len(key))+uint64(len(keyStr)) > maxArena {
		return 0
	}
	id := uint32(len(d.count))
	if len(d.count) == cap(d.count) {
		d.growArrays(len(d.count))
	}
	if n := len(key) + len(keyStr); len(d.arena)+n > cap(d.arena) {
		d.arena = slices.Grow(d.arena, max(len(d.arena), n))
	}
	if key != nil {
		d.arena = append(d.arena, key...)
	} else {
		d.arena = append(d.arena, keyStr...)
	}
	d.start = append(d.start, uint32(len(d.arena)))
	d.count = append(d.count, 0)
	d.flags = append(d.flags, flags)
	if d.num == nil && flags&fNumber != 0 {
		d.num = make([]float64, id, cap(d.count))
	}
	if d.num != nil {
		d.num = append(d.num, num)
	}
	if 2*len(d.count) > len(d.table) {
		d.grow(2 * len(d.table))
	}
	d.place(tableEntry(id, h))
	return id
}

func (d *dictionary) place(e uint64) {
	mask := uint64(len(d.table) - 1)
	i := (e >> 32) & mask
	for d.table[i] != 0 {
		i = (i + 1) & mask
	}
	d.table[i] = e
}

// reserve makes room for n more distinct values without reallocating. Growing by doubling
// (append grows large slices by only 1.25×) keeps the copying to about the final size.
func (d *dictionary) reserve(n int) {
	d.growArrays(n)
	if want := 2 * (len(d.count) + n); want > len(d.table) {
		size := len(d.table)
		for size < want {
			size *= 2
		}
		d.grow(size)
	}
}

// growArrays makes room for n more ids in the per-id slices.
func (d *dictionary) growArrays(n int) {
	d.start = slices.Grow(d.start, n)
	d.count = slices.Grow(d.count, n)
	d.flags = slices.Grow(d.flags, n)
	if d.num != nil {
		d.num = slices.Grow(d.num, n)
	}
}

// grow rehashes the table into size slots (a power of two).
func (d *dictionary) grow(size int) {
	old := d.table
	d.table = make([]uint64, size)
	for _, e := range old {
		if e != 0 {
			d.place(e)
		}
	}
}

// Dataset is the data of a request, stored by column. Feed it with exactly one of
// ReadCSV, or ReadRecords/AddRecord (any number of calls), then pass it to Analyze as Request.Dataset. After
// an error a Dataset holds partial data and must not be evaluated. A Dataset is not safe for
// concurrent use.
type Dataset struct {
	format int
	rows   int
	cols   []*column
	byName map[string]int
	seed   maphash.Seed
	// JSON records are interned in batches of csvBatch rows: batchRows records have been
	// read whose values wait in their columns' pending lists, keyed in keys.
	batchRows int
	keys      []byte
	name      []byte // scratch for member names
	// sink keeps the prefetching loads of flushJSON from being optimised away.
	sink uint64
	// workers is the most goroutines ReadCSV may use (SetWorkers); 0 is GOMAXPROCS.
	workers int
	// chunkSize replaces csvChunkSize where set (tests cut the text into small chunks).
	chunkSize int
	// read counts the bytes of JSON records read, which bound the column store (ingestLimit).
	read int64
}

// NewDataset returns an empty dataset.
func NewDataset() *Dataset {
	return &Dataset{byName: map[string]int{}, seed: maphash.MakeSeed()}
}

// Rows is the number of rows ingested so far.
func (d *Dataset) Rows() int { return d.rows }

// Columns returns the column names in order of first appearance (CSV: header order).
func (d *Dataset) Columns() []string {
	names := make([]string, len(d.cols))
	for i, c := range d.cols {
		names[i] = c.name
	}
	return names
}

func (d *Dataset) column(name string) *column {
	if i, ok := d.byName[name]; ok {
		return d.cols[i]
	}
	return nil
}

func (d *Dataset) addColumn(name string) *column {
	c := newColumn(name, d.rows)
	d.byName[name] = len(d.cols)
	d.cols = append(d.cols, c)
	return c
}

// csvBatch is the number of CSV rows ingested together, column by column; csvBatchFields
// bounds the fields of a batch of a wide table.
const (
	csvBatch       = 512
	csvBatchFields = 1 << 16
)

// addTexts appends the CSV fields fields[j], fields[j+stride], … ("" is null) to column c.
// Hashing the batch first and touching every target slot before the lookups lets the CPU
// overlap the cache misses of a large table instead of waiting for each in turn. It returns
// the index (in the batch) of a value that does not fit maxArena, or −1.
func (d *Dataset) addTexts(c *column, fields []string, j, stride int) int {
	var hs [csvBatch]uint64
	n := 0
	for k := j; k < len(fields); k += stride {
		if fields[k] != "" {
			hs[n] = maphash.String(d.seed, fields[k])
		}
		n++
	}
	if len(c.dict.table) > 1<<15 {
		dict := &c.dict
		mask := uint64(len(dict.table) - 1)
		var cand [csvBatch]uint32
		var acc uint64
		for r, h := range hs[:n] {
			e := dict.table[h&mask]
			if e&^0xFFFFFFFF == h<<32 {
				cand[r] = uint32(e)
			}
		}
		for _, id := range cand[:n] {
			if id != 0 {
				acc += uint64(dict.start[id])
			}
		}
		for _, id := range cand[:n] {
			if id != 0 {
				acc += uint64(dict.arena[dict.start[id]])
			}
		}
		c.sink += acc
	}
	if len(c.ids)+n > cap(c.ids) {
		c.ids = slices.Grow(c.ids, max(len(c.ids), n))
	}
	r := 0
	for k := j; k < len(fields); k, r = k+stride, r+1 {
		s := fields[k]
		if s == "" {
			c.ids = append(c.ids, 0)
			continue
		}
		h := hs[r]
		id := c.dict.findString(s, h)
		if id == 0 {
			fl, f := textFlags(s)
			if id = c.dict.insert(nil, s, h, fl, f); id == 0 {
				return r
			}
		}
		c.dict.count[id]++
		c.nonNull++
		c.ids = append(c.ids, id)
	}
	return -1
}

// textFlags infers the types CSV text s can be read as, and its number where it is one.
func textFlags(s string) (uint8, float64) {
	fl := fString
	if f, ok := smallInteger(s); ok {
		// Neither a boolean nor a timestamp, and exact without strconv.ParseFloat (about
		// a fifth of reading a column of distinct integers).
		return fl | fInteger | fNumber, f
	}
	return anyTextFlags(s)
}

// anyTextFlags is textFlags without the integer fast path.
func anyTextFlags(s string) (uint8, float64) {
	fl := fString
	if isIntegerText(s) {
		fl |= fInteger
	}
	f, ok := parseCSVNumber(s)
	if ok {
		fl |= fNumber
	}
	if isBoolText(s) {
		fl |= fBool
	}
	if _, ok := parseTimestamp(s); ok {
		fl |= fTimestamp
	}
	return fl, f
}

// jsonKey appends the dictionary key of the raw JSON value v to dst and returns it with the
// value's flags and number. It returns a non-empty reason when the value cannot be keyed.
// Null has no key (isNull).
func jsonKey(dst []byte, v jsontext.Value) (key []byte, fl uint8, num float64, isNull bool, reason string) {
	if len(v) == 0 {
		return dst, 0, 0, false, "empty value"
	}
	k := dst
	switch v[0] {
	case 'n':
		return dst, 0, 0, true, ""
	case 't':
		k = append(k, tagBool, 't')
		fl = fBool
	case 'f':
		k = append(k, tagBool, 'f')
		fl = fBool
	case '"':
		k = append(k, tagString)
		body := v[1 : len(v)-1]
		if hasBackslash(body) {
			var err error
			k, err = jsontext.AppendUnquote(k, v)
			if err != nil {
				return dst, 0, 0, false, "invalid string"
			}
		} else {
			k = append(k, body...)
		}
		fl = fString
	case '{', '[':
		cv := jsontext.Value(append([]byte(nil), v...))
		if err := cv.Canonicalize(); err != nil {
			return dst, 0, 0, false, "invalid value"
		}
		k = append(k, tagOther)
		k = append(k, cv...)
		fl = fOther
	default:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return dst, 0, 0, false, "number outside the range of a 64-bit float"
		}
		if f == 0 {
			f = 0 // fold −0 into 0: JSON numbers are equal when numerically equal
		}
		k = append(k, tagNumber)
		k = binary.LittleEndian.AppendUint64(k, math.Float64bits(f))
		fl = fNumber
		if f == math.Trunc(f) {
			fl |= fInteger
		}
		num = f
	}
	return k, fl, num, false, ""
}

// pendingCell is a JSON value read but not yet interned: its key is keys[off:end] of the
// dataset's batch.
type pendingCell struct {
	row      int32 // row within the batch
	off, end uint32
	flags    uint8
	null     bool
	num      float64
}

// addJSON keys the raw JSON value v (a complete value from a decoder) for column c in the
// current batch. It returns a non-empty reason when the value cannot be stored.
func (d *Dataset) addJSON(c *column, v jsontext.Value) string {
	off := len(d.keys)
	k, fl, num, isNull, reason := jsonKey(d.keys, v)
	if reason != "" {
		return reason
	}
	d.keys = k
	c.pending = append(c.pending, pendingCell{row: int32(d.batchRows), off: uint32(off), end: uint32(len(k)), flags: fl, null: isNull, num: num})
	return ""
}

// flushJSON interns the batch of JSON records read so far, column by column, as addTexts
// does for CSV. It returns the batch row of a value that does not fit maxArena, or −1.
func (d *Dataset) flushJSON() int {
	n := d.batchRows
	for _, c := range d.cols {
		p := c.pending
		var hs [csvBatch]uint64
		for i, cell := range p {
			if !cell.null {
				hs[i] = maphash.Bytes(d.seed, d.keys[cell.off:cell.end])
			}
		}
		if len(c.dict.table) > 1<<15 {
			dict := &c.dict
			mask := uint64(len(dict.table) - 1)
			var acc uint64
			for _, h := range hs[:len(p)] {
				acc += dict.table[h&mask]
			}
			d.sink += acc
		}
		if len(c.ids)+n > cap(c.ids) {
			c.ids = slices.Grow(c.ids, max(len(c.ids), n))
		}
		pi := 0
		for r := 0; r < n; r++ {
			if pi == len(p) || int(p[pi].row) != r || p[pi].null {
				if pi < len(p) && int(p[pi].row) == r {
					pi++
				}
				c.ids = append(c.ids, 0)
				continue
			}
			cell, h := p[pi], hs[pi]
			pi++
			k := d.keys[cell.off:cell.end]
			id := c.dict.findBytes(k, h)
			if id == 0 {
				fl := cell.flags
				if fl&fString != 0 {
					if _, ok := parseTimestamp(k[1:]); ok {
						fl |= fTimestamp
					}
				}
				if id = c.dict.insert(k, "", h, fl, cell.num); id == 0 {
					return r
				}
			}
			c.dict.count[id]++
			c.nonNull++
			c.ids = append(c.ids, id)
		}
		c.pending = p[:0]
	}
	d.rows += n
	d.batchRows = 0
	d.keys = d.keys[:0]
	return -1
}

func hasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// text returns the string content of a value: the CSV text, or the JSON string (empty for
// other JSON values).
func (d *Dataset) text(c *column, id uint32) []byte {
	k := c.dict.key(id)
	if d.format == formatJSON {
		if len(k) == 0 || k[0] != tagString {
			return nil
		}
		return k[1:]
	}
	return k
}

// display returns the value of id as it appears in the output: nil for null, the text for
// CSV, the JSON value in its type for records.
func (d *Dataset) display(c *column, id uint32) any {
	if id == 0 {
		return nil
	}
	k := c.dict.key(id)
	if d.format != formatJSON {
		return string(k)
	}
	switch k[0] {
	case tagString:
		return string(k[1:])
	case tagNumber:
		return c.dict.num[id]
	case tagBool:
		return k[1] == 't'
	}
	return jsontext.Value(append([]byte(nil), k[1:]...))
}

// runeLen counts code points.
func runeLen(b []byte) int { return utf8.RuneCount(b) }
