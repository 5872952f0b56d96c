package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"riskapi/meridian"
)

// BenchmarkMeridianCSV1MVsPandas is the Meridian contract's speed target end to end: POST
// /v1/meridian/quality-check with 1,000,000 rows × 6 columns of CSV (about 62 MB, inside the
// default 64 MiB body limit), 10 checks and profiling, over a loopback socket to a server on
// the embedded store — against pandas (Debian's python3-pandas) doing the same work on the
// same file in the same run (meridian/testdata/pandas_bench.py; its time covers reading the
// file and the work, not interpreter start). It fails when pandas is faster, or the request
// does not fit the default body limit; it is skipped only when pandas is not installed.
func BenchmarkMeridianCSV1MVsPandas(b *testing.B) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import pandas").Run(); err != nil {
		b.Skipf("%s cannot import pandas (%v): apt-get install -y python3-pandas", python, err)
	}
	path, body := meridianBenchRequest(b)

	out, err := exec.Command(python, "../../meridian/testdata/pandas_bench.py", path, meridian.OrdersAsOf.Format(time.RFC3339)).Output()
	if err != nil {
		b.Fatalf("pandas_bench.py: %v", err)
	}
	var pandas struct {
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal(out, &pandas); err != nil {
		b.Fatal(err)
	}

	qualityCheckAgainst(b, body, "pandas", pandas.Seconds)
}

// qualityCheckAgainst times the quality-check request body end to end, b.N times over a
// loopback socket, and reports it against the peer's seconds for the same work (metrics
// <peer>-s and speedup); it fails when the peer is as fast or faster.
func qualityCheckAgainst(b *testing.B, body []byte, peer string, peerSeconds float64) {
	bb, _, key := benchServer(b)
	start := time.Now()
	postLoop(b, bb, key, "/v1/meridian/quality-check", body, http.StatusOK, `"row_count":1000000`, false)
	perOp := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(peerSeconds, peer+"-s")
	b.ReportMetric(peerSeconds/perOp, "speedup")
	b.Logf("end to end %.3f s/request (%d-byte body, GOMAXPROCS %d); %s %.3f s: %.2f× faster", perOp, len(body), runtime.GOMAXPROCS(0), peer, peerSeconds, peerSeconds/perOp)
	if perOp >= peerSeconds {
		b.Errorf("the API (%.3f s) is not faster than %s (%.3f s)", perOp, peer, peerSeconds)
	}
}

// meridianBenchRequest writes the 1,000,000-row orders table to a file (for the peer) and
// returns its path and the quality-check request carrying it as data.csv; it fails when the
// request does not fit the default body limit.
func meridianBenchRequest(b testing.TB) (string, []byte) {
	var csv bytes.Buffer
	if err := meridian.WriteOrdersCSV(&csv, 1_000_000, 1); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "orders.csv")
	if err := os.WriteFile(path, csv.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{
		"source_id": "bench-orders", "as_of": meridian.OrdersAsOf.Format(time.RFC3339),
		"checks": meridian.OrdersChecks(), "data": map[string]string{"csv": csv.String()},
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(body) > DefaultMaxBodyBytes {
		b.Fatalf("the request is %d bytes, over the default limit of %d", len(body), DefaultMaxBodyBytes)
	}
	return path, body
}

// BenchmarkMeridianCSV1MVsDuckDB is BenchmarkMeridianCSV1MVsPandas against DuckDB with 2
// threads (meridian/testdata/duckdb/duckdb_bench.mjs on @duckdb/node-api, pinned in its
// package-lock.json: `npm ci --prefix meridian/testdata/duckdb`, or RISKAPI_TEST_DUCKDB_DIR
// naming an install) doing the same work in SQL on the same file, read from the page cache
// (the file was just written), in the same run; its time covers reading the file and the
// work, not starting node or opening the database. Metrics: duckdb-s, speedup (duckdb-s
// over the API's seconds per request), body-MB. It fails when DuckDB is faster, and when
// the peer cannot run: never skipped.
func BenchmarkMeridianCSV1MVsDuckDB(b *testing.B) {
	dir := os.Getenv("RISKAPI_TEST_DUCKDB_DIR")
	if dir == "" {
		dir = "../../meridian/testdata/duckdb"
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		b.Fatal(err)
	}
	script, err := filepath.Abs("../../meridian/testdata/duckdb/duckdb_bench.mjs")
	if err != nil {
		b.Fatal(err)
	}
	if filepath.Dir(script) != dir {
		// The script resolves its import from its own directory: run a copy beside the install.
		src, err := os.ReadFile(script)
		if err != nil {
			b.Fatal(err)
		}
		script = filepath.Join(dir, "duckdb_bench.mjs")
		if err := os.WriteFile(script, src, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	path, body := meridianBenchRequest(b)
	cmd := exec.Command("node", script, path, meridian.OrdersAsOf.Format(time.RFC3339), "2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("the DuckDB peer cannot run (npm ci --prefix meridian/testdata/duckdb, or RISKAPI_TEST_DUCKDB_DIR): %v\n%s", err, stderr.String())
	}
	var duck struct {
		Seconds float64 `json:"seconds"`
		Rows    int     `json:"rows"`
		Threads int     `json:"threads"`
	}
	if err := json.Unmarshal(out, &duck); err != nil {
		b.Fatal(err)
	}
	if duck.Rows != 1_000_000 || duck.Threads != 2 {
		b.Fatalf("DuckDB read %d rows with %d threads; want 1000000 with 2", duck.Rows, duck.Threads)
	}

	b.ReportMetric(float64(len(body))/1e6, "body-MB")
	qualityCheckAgainst(b, body, "duckdb", duck.Seconds)
}
