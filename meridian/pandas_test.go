package meridian

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

// pythonPath is Debian's interpreter, which has python3-pandas (apt-get install python3-pandas).
const pythonPath = "/usr/bin/python3"

type pandasOutput struct {
	Seconds     float64 `json:"seconds"`
	ReadSeconds float64 `json:"read_seconds"`
	FrameBytes  int64   `json:"frame_bytes"`
	Rows        int     `json:"rows"`
	Checks      map[string]struct {
		UnexpectedCount *int     `json:"unexpected_count"`
		Index           []int    `json:"index"`
		ObservedValue   *float64 `json:"observed_value"`
	} `json:"checks"`
	Profile map[string]struct {
		NullCount     int      `json:"null_count"`
		DistinctCount int      `json:"distinct_count"`
		TopCounts     []int    `json:"top_counts"`
		InferredType  string   `json:"inferred_type"`
		Min           *float64 `json:"min"`
		Max           *float64 `json:"max"`
		Mean          *float64 `json:"mean"`
		Stddev        *float64 `json:"stddev"`
		P05           *float64 `json:"p05"`
		P50           *float64 `json:"p50"`
		P95           *float64 `json:"p95"`
		MinLength     *int     `json:"min_length"`
		MaxLength     *int     `json:"max_length"`
	} `json:"profile"`
}

func requirePandas(tb testing.TB) {
	tb.Helper()
	if err := exec.Command(pythonPath, "-c", "import pandas").Run(); err != nil {
		tb.Skipf("skipping the pandas comparison: %s cannot import pandas (%v); install it with apt-get install -y python3-pandas", pythonPath, err)
	}
}

// runPandas runs testdata/pandas_bench.py on the CSV file and returns its output and the
// wall time of the whole process (interpreter start and imports included).
func runPandas(tb testing.TB, path string) (pandasOutput, time.Duration) {
	tb.Helper()
	start := time.Now()
	cmd := exec.Command(pythonPath, filepath.Join("testdata", "pandas_bench.py"), path, benchAsOf.Format(time.RFC3339))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	wall := time.Since(start)
	if err != nil {
		tb.Fatalf("pandas_bench.py: %v\n%s", err, stderr.String())
	}
	var p pandasOutput
	if err := json.Unmarshal(out, &p); err != nil {
		tb.Fatalf("pandas_bench.py output: %v", err)
	}
	return p, wall
}

func writeBenchFile(tb testing.TB, rows int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "orders.csv")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := writeBenchCSV(f, rows, 1); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// evalFile streams the CSV file through the engine, as the HTTP layer streams a body.
func evalFile(tb testing.TB, path string) Result {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	ds := NewDataset()
	if err := ds.ReadCSV(bufio.NewReaderSize(f, 1<<16), ','); err != nil {
		tb.Fatal(err)
	}
	res, err := evaluateOn(benchRequest(), ds, benchAsOf)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// comparePandas reports every number on which the engine and pandas disagree: the two did
// the same work only if they agree.
func comparePandas(tb testing.TB, res Result, p pandasOutput) {
	tb.Helper()
	if p.Rows != res.Profile.RowCount {
		tb.Fatalf("rows: engine %d, pandas %d", res.Profile.RowCount, p.Rows)
	}
	near := func(a, b *float64, rel float64) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return math.Abs(*a-*b) <= rel*math.Max(math.Abs(*a), math.Abs(*b))
	}
	for _, c := range res.Checks {
		pc, ok := p.Checks[c.ID]
		if !ok {
			tb.Errorf("pandas has no result for %s", c.ID)
			continue
		}
		if c.UnexpectedCount != nil {
			if pc.UnexpectedCount == nil || *pc.UnexpectedCount != *c.UnexpectedCount || !slices.Equal(pc.Index, c.PartialUnexpectedIndexList) {
				tb.Errorf("%s: engine %d at %v, pandas %v at %v", c.ID, *c.UnexpectedCount, c.PartialUnexpectedIndexList, canonJSON(tb, pc.UnexpectedCount), pc.Index)
			}
			continue
		}
		obs, _ := c.ObservedValue.(float64)
		if !near(&obs, pc.ObservedValue, 1e-12) {
			tb.Errorf("%s: engine observed %v, pandas %v", c.ID, c.ObservedValue, pc.ObservedValue)
		}
	}
	for _, col := range res.Profile.Columns {
		pp := p.Profile[col.Name]
		var tops []int
		for _, tv := range col.TopValues {
			tops = append(tops, tv.Count)
		}
		if pp.NullCount != col.NullCount || pp.DistinctCount != col.DistinctCount || !slices.Equal(pp.TopCounts, tops) || pp.InferredType != *col.InferredType {
			tb.Errorf("%s: engine nulls %d distinct %d tops %v type %s; pandas %d %d %v %s", col.Name, col.NullCount, col.DistinctCount, tops, *col.InferredType, pp.NullCount, pp.DistinctCount, pp.TopCounts, pp.InferredType)
		}
		for _, f := range []struct {
			name string
			a, b *float64
			rel  float64
		}{{"min", col.Min, pp.Min, 0}, {"max", col.Max, pp.Max, 0}, {"p05", col.P05, pp.P05, 1e-12}, {"p50", col.P50, pp.P50, 1e-12},
			{"p95", col.P95, pp.P95, 1e-12}, {"mean", col.Mean, pp.Mean, 1e-12}, {"stddev", col.Stddev, pp.Stddev, 1e-9}} {
			if !near(f.a, f.b, f.rel) {
				tb.Errorf("%s %s: engine %v, pandas %v", col.Name, f.name, fmtPtr(f.a), fmtPtr(f.b))
			}
		}
		if !eqIntPtr(col.MinLength, pp.MinLength) || !eqIntPtr(col.MaxLength, pp.MaxLength) {
			tb.Errorf("%s lengths: engine %v-%v, pandas %v-%v", col.Name, col.MinLength, col.MaxLength, pp.MinLength, pp.MaxLength)
		}
	}
}

func fmtPtr(f *float64) string {
	if f == nil {
		return "null"
	}
	return fmt.Sprint(*f)
}

// TestPandasAgreement: on 20,000 benchmark rows the engine and testdata/pandas_bench.py
// report the same counts, rows and statistics, so the benchmark compares the same work.
func TestPandasAgreement(t *testing.T) {
	requirePandas(t)
	path := writeBenchFile(t, 20_000)
	p, _ := runPandas(t, path)
	comparePandas(t, evalFile(t, path), p)
}

// BenchmarkCSV1MVsPandas runs the engine (file → streamed CSV → checks → profile) and
// testdata/pandas_bench.py (read_csv → the same checks → the same profile) on the same
// 1,000,000-row file in the same run. Metrics: pandas-s (pandas' own timing of the work),
// pandas-wall-s (the whole process, interpreter start included), speedup (pandas-s over the
// engine's time per op), pandas-read-s (read_csv alone), pandas-frame-MB (the DataFrame's
// deep memory usage; compare BenchmarkCSV1M's dataset-MB).
func BenchmarkCSV1MVsPandas(b *testing.B) {
	requirePandas(b)
	path := writeBenchFile(b, 1_000_000)
	p, wall := runPandas(b, path)
	perOp := benchFileAgainst(b, path, p)
	b.ReportMetric(p.Seconds, "pandas-s")
	b.ReportMetric(p.ReadSeconds, "pandas-read-s")
	b.ReportMetric(float64(p.FrameBytes)/1e6, "pandas-frame-MB")
	b.ReportMetric(wall.Seconds(), "pandas-wall-s")
	b.ReportMetric(p.Seconds/perOp, "speedup")
	b.Logf("engine %.3f s/op; pandas %.3f s (read_csv alone %.3f s, %.3f s with interpreter start): %.1f× faster", perOp, p.Seconds, p.ReadSeconds, wall.Seconds(), p.Seconds/perOp)
}

// benchFileAgainst times the engine on the CSV file (evalFile) for b.N runs, checks that the
// result agrees with the peer's output, and returns the seconds per run.
func benchFileAgainst(b *testing.B, path string, peer pandasOutput) float64 {
	var res Result
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		res = evalFile(b, path)
	}
	perOp := time.Since(start).Seconds() / float64(b.N)
	comparePandas(b, res, peer)
	return perOp
}
