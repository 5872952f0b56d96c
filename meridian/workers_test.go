package meridian

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// The result bytes do not depend on how many goroutines read the CSV, ran the checks and
// profiled the columns: 1, 2, 4 and 7 workers give the same bytes, for every generated
// scenario (CSV and records, the generator's checks) and for the benchmark table with its
// 10 checks cut into chunks of 4 KiB (many rounds, records split across goroutines).
// Named TestWorkers… so that CI runs it under the race detector.
func TestWorkersGiveTheSameBytes(t *testing.T) {
	workers := []int{1, 2, 4, 7}
	check := func(t *testing.T, name string, analyze func(workers int) (Result, error)) {
		t.Helper()
		var want []byte
		for _, w := range workers {
			res, err := analyze(w)
			if err != nil {
				t.Fatalf("%s, %d workers: %v", name, w, err)
			}
			got, err := json.Marshal(res, json.Deterministic(true))
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = got
			} else if !bytes.Equal(got, want) {
				t.Fatalf("%s: %d workers give other bytes than 1:\n%s\n%s", name, w, got, want)
			}
		}
	}
	for _, scenario := range TestModeScenarios() {
		for seed := range int64(3) {
			req, _ := Generate(scenario, seed, GenParams{})
			check(t, fmt.Sprintf("%s/%d", scenario, seed), func(w int) (Result, error) {
				r := req
				r.Workers = w
				return Analyze(context.Background(), r)
			})
		}
	}
	var csv bytes.Buffer
	if err := writeBenchCSV(&csv, 20_000, 3); err != nil {
		t.Fatal(err)
	}
	// Quoted fields, doubled quotes and line breaks within fields, CRLF and blank lines.
	text := strings.Replace(csv.String(), "\n", "\r\n", 500)
	text = strings.Replace(text, ",paid,", `,"pa""id",`, 200)
	text = strings.Replace(text, ",shipped,", ",\"ship\nped\",", 200)
	text = strings.Replace(text, "\r\n", "\r\n\r\n", 50)
	check(t, "orders", func(w int) (Result, error) {
		req := benchRequest()
		req.Workers = w
		req.Dataset = NewDataset()
		req.Dataset.chunkSize = 4 << 10
		req.Dataset.SetWorkers(w)
		if err := req.Dataset.ReadCSV(strings.NewReader(text), ','); err != nil {
			return Result{}, err
		}
		return Analyze(context.Background(), req)
	})
}

// Errors are the same for any number of workers: the first failure in the text, whichever
// goroutine split the chunk it is in.
func TestWorkersReportTheFirstError(t *testing.T) {
	var csv bytes.Buffer
	if err := writeBenchCSV(&csv, 5_000, 4); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(csv.String(), "\n")
	broken := func(at int, with string) string {
		l := append([]string(nil), lines...)
		l[at] = with
		return strings.Join(l, "")
	}
	for _, text := range []string{
		broken(3000, "a,b\n"), // ragged
		broken(1200, "x,\"y\"z,1,2,paid,2026-01-01\n") + "\n1,\"",          // bad quoting, then an unclosed quote
		broken(4000, "x,\xff,1,2,paid,2026-01-01\n"),                       // invalid UTF-8
		broken(2500, "x,a\"b,1,2,paid,2026-01-01\n"),                       // a bare quote
		broken(4999, "x,\"unclosed,1,2,paid,2026-01-01\n"),                 // an unclosed quote at the end
		broken(10, "x,y,1,2,paid,2026-01-01\n") + strings.Repeat("\n", 10), // blank lines after the end
	} {
		var want error
		for i, w := range []int{1, 2, 4, 7} {
			ds := NewDataset()
			ds.chunkSize, ds.workers = 2<<10, w
			err := ds.ReadCSV(strings.NewReader(text), ',')
			oracle := NewDataset().readCSVOracle(strings.NewReader(text), ',')
			if fmt.Sprint(err) != fmt.Sprint(oracle) {
				t.Fatalf("%d workers: %v; encoding/csv: %v", w, err, oracle)
			}
			if i == 0 {
				want = err
			}
			if fmt.Sprint(err) != fmt.Sprint(want) {
				t.Fatalf("%d workers: %v; 1 worker: %v", w, err, want)
			}
		}
	}
}

// emptyReader returns nothing, forever.
type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// A reader that returns nothing is an error, as encoding/csv's bufio made it, not a hang.
func TestReadCSVGivesUpOnAReaderThatReturnsNothing(t *testing.T) {
	err := NewDataset().ReadCSV(emptyReader{}, ',')
	oracle := NewDataset().readCSVOracle(emptyReader{}, ',')
	if err == nil || fmt.Sprint(err) != fmt.Sprint(oracle) {
		t.Fatalf("error %v; encoding/csv's %v", err, oracle)
	}
}
