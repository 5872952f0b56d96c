package meridian

import (
	"fmt"
	"unsafe"
)

// The column store takes more memory than the text it was read from: each row costs a
// 4-byte id per column, and each distinct value its bytes, a 4-byte offset, a 4-byte count,
// a flag byte, a float64 once the column holds a number, and two to four 8-byte slots of
// its hash table. Repeated values cost little (an id), short distinct values the most.
// Measured peak heap of ReadCSV and ReadRecords per byte of data (TestCostIngestPeakHolds,
// MeasurePeakHeap):
//
//	                                                  CSV   records
//	4 columns × 200,000 distinct base-36 numbers     18.4   5.3
//	1,000 columns × 2,000 distinct numbers           16.7   6.7
//	1,000 columns × 4,000 repeated digits             2.9   1.5
//	1,000 columns × 8,000 nulls                       5.4   0 (no keys)
//	2 columns × 40,000 distinct 100-byte strings      2.2   2.5
//	orders table (benchmark data)                     3.5   1.9
//
// JSON records are sparser in bytes per cell, but a missing key still costs its 4-byte id:
// a record "{}" of 3 bytes under 1,000 columns would claim 4,000 bytes. So the column store
// is bounded while it is read: beyond ingestLimit of the bytes read, reading stops with
// INVALID_DATA. Data that is neither very sparse nor nearly all distinct short values stays
// far below it.
const (
	// ingestPerByte is the most bytes the column store may hold per byte of data: above
	// the densest realistic data measured (17.8 for the base-36 numbers' store).
	ingestPerByte = 24
	// ingestBase covers what a dataset holds before its first rows: up to MaxColumns
	// columns of about 1.2 KiB each (struct, name, first slices, a 64-slot table) and the
	// batch of fields being interned.
	ingestBase = 4 << 20
	// ingestTransientPerByte is what the heap may hold beyond the column store while
	// reading, per byte of data: the old copy of a slice or table being grown, the batch of
	// CSV lines or JSON keys waiting to be interned (measured at most 1.1).
	ingestTransientPerByte = 4
)

// IngestPeak is an upper bound of the heap a Dataset takes to read bodyBytes bytes of data
// (a request body's data.csv or data.records; the body bounds it): ReadCSV and ReadRecords
// refuse data whose column store would exceed ingestLimit of the bytes read, and reading
// holds at most ingestTransientPerByte more per byte: 28 bytes per byte of body plus 4 MiB
// (1.8 GiB for the 64 MiB body limit; realistic data takes 2 to 18 per byte). The HTTP layer
// admits a quality-check request against its memory budget by IngestPeak of its body
// (Content-Length, or the body limit) before reading it, and by the Memory of Estimate
// before analysing it.
func IngestPeak(bodyBytes int64) int64 {
	n := max(bodyBytes, 0)
	return ingestLimit(n) + ingestTransientPerByte*n
}

// ingestLimit is the most bytes the column store may hold after reading dataBytes bytes.
func ingestLimit(dataBytes int64) int64 {
	return ingestBase + ingestPerByte*dataBytes
}

// columnOverhead is what a column costs besides its slices: the struct, its entry in
// byName and the Dataset's list.
const columnOverhead = int64(unsafe.Sizeof(column{})) + 64

// footprint is the bytes the columns hold: the capacities of their slices.
func (d *Dataset) footprint() int64 {
	n := int64(cap(d.keys)) + int64(cap(d.cols))*8
	for _, c := range d.cols {
		dict := &c.dict
		n += columnOverhead + int64(len(c.name)) +
			4*int64(cap(c.ids)) + int64(unsafe.Sizeof(pendingCell{}))*int64(cap(c.pending)) +
			int64(cap(dict.arena)) + 4*int64(cap(dict.start)) + 4*int64(cap(dict.count)) +
			int64(cap(dict.flags)) + 8*int64(cap(dict.num)) + 8*int64(cap(dict.table))
	}
	return n
}

// overIngestLimit returns a description of the excess when the column store holds more
// than ingestLimit(dataBytes), else "".
func (d *Dataset) overIngestLimit(dataBytes int64) string {
	held, limit := d.footprint(), ingestLimit(dataBytes)
	if held <= limit {
		return ""
	}
	return fmt.Sprintf("the data takes %d bytes in the column store, above the limit of %d bytes for %d bytes of data (%d per byte, plus %d): send fewer columns, or records that leave fewer keys out",
		held, limit, dataBytes, ingestPerByte, ingestBase)
}
