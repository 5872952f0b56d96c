package meridian

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

// The DuckDB peer: testdata/duckdb/duckdb_bench.mjs on DuckDB's Node package
// (@duckdb/node-api, pinned exactly in testdata/duckdb/package.json and its lock file;
// install it with `npm ci --prefix meridian/testdata/duckdb`). RISKAPI_TEST_DUCKDB_DIR names
// another directory holding that install (CI's cache); where it is set, a peer that cannot
// run fails the tests instead of skipping them. The benchmarks always fail without it: their
// claim is the comparison.

// duckdbThreads is the peer's thread count: DuckDB runs with SET threads=2.
const duckdbThreads = 2

func duckdbDir(tb testing.TB) string {
	tb.Helper()
	if dir := os.Getenv("RISKAPI_TEST_DUCKDB_DIR"); dir != "" {
		return dir
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "duckdb"))
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// requireDuckDB fails (or, for a test where RISKAPI_TEST_DUCKDB_DIR is unset, skips) when
// node or the pinned @duckdb/node-api cannot be loaded.
func requireDuckDB(tb testing.TB, mayskip bool) string {
	tb.Helper()
	dir := duckdbDir(tb)
	cmd := exec.Command("node", "-e", "require.resolve('@duckdb/node-api')")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := "the DuckDB peer cannot run: node cannot load @duckdb/node-api in " + dir + " (" + err.Error() + "): run `npm ci --prefix meridian/testdata/duckdb`\n" + string(out)
		if mayskip && os.Getenv("RISKAPI_TEST_DUCKDB_DIR") == "" {
			tb.Skip(msg)
		}
		tb.Fatal(msg)
	}
	return dir
}

// runDuckDB runs testdata/duckdb/duckdb_bench.mjs on the CSV file with duckdbThreads threads
// and returns its output (in pandas_bench.py's form) and the wall time of the whole process.
func runDuckDB(tb testing.TB, dir, path string) (pandasOutput, time.Duration) {
	tb.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "duckdb", "duckdb_bench.mjs"))
	if err != nil {
		tb.Fatal(err)
	}
	if dir != filepath.Dir(script) {
		// The script resolves its import from its own directory: run a copy beside the install.
		copyPath := filepath.Join(dir, "duckdb_bench.mjs")
		src, err := os.ReadFile(script)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(copyPath, src, 0o644); err != nil {
			tb.Fatal(err)
		}
		script = copyPath
	}
	start := time.Now()
	cmd := exec.Command("node", script, path, benchAsOf.Format(time.RFC3339), strconv.Itoa(duckdbThreads))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	wall := time.Since(start)
	if err != nil {
		tb.Fatalf("duckdb_bench.mjs: %v\n%s", err, stderr.String())
	}
	var p pandasOutput
	if err := json.Unmarshal(out, &p); err != nil {
		tb.Fatalf("duckdb_bench.mjs output: %v\n%s", err, out)
	}
	return p, wall
}

// TestDuckDBAgreement: on 20,000 benchmark rows the engine and the DuckDB peer report the
// same counts, rows and statistics, so the benchmark compares the same work.
func TestDuckDBAgreement(t *testing.T) {
	dir := requireDuckDB(t, true)
	path := writeBenchFile(t, 20_000)
	p, _ := runDuckDB(t, dir, path)
	comparePandas(t, evalFile(t, path), p)
}

// BenchmarkCSV1MVsDuckDB runs the engine (file → streamed CSV → checks → profile) and the
// DuckDB peer (read_csv into a table → the same checks → the same profile, in SQL, with 2
// threads) on the same 1,000,000-row file in the same run; the file was just written, so
// both read it from the page cache. Metrics: duckdb-s (DuckDB's own timing of the work),
// duckdb-read-s (read_csv alone), duckdb-wall-s (the whole process), speedup (duckdb-s over
// the engine's time per op). It fails when the engine is slower than DuckDB, or when the
// peer cannot run.
func BenchmarkCSV1MVsDuckDB(b *testing.B) {
	dir := requireDuckDB(b, false)
	path := writeBenchFile(b, 1_000_000)
	p, wall := runDuckDB(b, dir, path)
	perOp := benchFileAgainst(b, path, p)
	b.ReportMetric(p.Seconds, "duckdb-s")
	b.ReportMetric(p.ReadSeconds, "duckdb-read-s")
	b.ReportMetric(wall.Seconds(), "duckdb-wall-s")
	b.ReportMetric(p.Seconds/perOp, "speedup")
	b.Logf("engine %.3f s/op; DuckDB (%d threads) %.3f s (read_csv alone %.3f s, %.3f s with node start): %.2f× faster", perOp, duckdbThreads, p.Seconds, p.ReadSeconds, wall.Seconds(), p.Seconds/perOp)
	if perOp >= p.Seconds {
		b.Errorf("the engine (%.3f s) is slower than DuckDB with %d threads (%.3f s)", perOp, duckdbThreads, p.Seconds)
	}
}
