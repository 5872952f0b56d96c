package meridian

import (
	"bytes"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// benchAsOf, writeBenchCSV and benchChecks are the benchmark data of benchdata.go, which
// the HTTP end-to-end benchmark shares.
var benchAsOf = OrdersAsOf

func writeBenchCSV(w io.Writer, rows int, seed uint64) error { return WriteOrdersCSV(w, rows, seed) }

func benchChecks() []Check { return OrdersChecks() }

func benchRequest() Request {
	return Request{SourceID: "bench-orders", Checks: benchChecks(), AsOf: ptrOf(benchAsOf.Format(time.RFC3339))}
}

func evalCSV(tb testing.TB, csv []byte, req Request) Result {
	ds := NewDataset()
	if err := ds.ReadCSV(bytes.NewReader(csv), ','); err != nil {
		tb.Fatal(err)
	}
	res, err := evaluateOn(req, ds, benchAsOf)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// BenchmarkCSV1M reads 1,000,000 rows × 6 columns of CSV (≈ 60 MB), runs the 10 checks and
// profiles every column. Generating the CSV is outside the timed loop.
func BenchmarkCSV1M(b *testing.B) {
	var buf bytes.Buffer
	if err := writeBenchCSV(&buf, 1_000_000, 1); err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		evalCSV(b, buf.Bytes(), req)
	}
	// Live heap of the stored data, after GC: dataset-MB after reading, eval-MB added by
	// evaluating (caches), as the request would hold them.
	var m0, m1, m2 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ds := NewDataset()
	if err := ds.ReadCSV(bytes.NewReader(buf.Bytes()), ','); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if _, err := evaluateOn(req, ds, benchAsOf); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&m2)
	runtime.KeepAlive(ds)
	runtime.KeepAlive(buf.Bytes()) // the input stays alive: the difference is the dataset
	b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/1e6, "dataset-MB")
	b.ReportMetric(float64(m2.HeapAlloc-m1.HeapAlloc)/1e6, "eval-MB")
}

// benchRecords converts the benchmark CSV to a JSON array of records (numbers as JSON
// numbers where the text is one, nulls as missing keys).
func benchRecords(tb testing.TB, rows int) []byte {
	var buf bytes.Buffer
	if err := writeBenchCSV(&buf, rows, 1); err != nil {
		tb.Fatal(err)
	}
	return csvRecords(buf.Bytes(), true)
}

// csvRecords converts a CSV without quoted fields to a JSON array of records: empty fields
// are missing keys, other fields strings, or with numbers JSON numbers where the text is one.
func csvRecords(csv []byte, numbers bool) []byte {
	lines := bytes.Split(bytes.TrimSpace(csv), []byte("\n"))
	header := bytes.Split(lines[0], []byte(","))
	out := []byte{'['}
	for i, line := range lines[1:] {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '{')
		first := true
		for j, f := range bytes.Split(line, []byte(",")) {
			if len(f) == 0 {
				continue
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = strconv.AppendQuote(out, string(header[j]))
			out = append(out, ':')
			if _, ok := parseCSVNumber(string(f)); ok && numbers {
				out = append(out, f...)
			} else {
				out = strconv.AppendQuote(out, string(f))
			}
		}
		out = append(out, '}')
	}
	return append(out, ']')
}

// BenchmarkRecords1M is BenchmarkCSV1M with the data as 1,000,000 JSON records (≈ 120 MB)
// read from a decoder, as the HTTP layer streams data.records.
func BenchmarkRecords1M(b *testing.B) {
	body := benchRecords(b, 1_000_000)
	req := benchRequest()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ds := NewDataset()
		if err := ds.ReadRecords(jsontext.NewDecoder(bytes.NewReader(body))); err != nil {
			b.Fatal(err)
		}
		if _, err := evaluateOn(req, ds, benchAsOf); err != nil {
			b.Fatal(err)
		}
	}
}
