package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	csv = bytes.Buffer{}

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

	bb, _, key := benchServer(b)
	start := time.Now()
	postLoop(b, bb, key, "/v1/meridian/quality-check", body, http.StatusOK, `"row_count":1000000`, false)
	perOp := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(pandas.Seconds, "pandas-s")
	b.ReportMetric(pandas.Seconds/perOp, "speedup")
	b.Logf("end to end %.3f s/request (%d-byte body); pandas %.3f s: %.1f× faster", perOp, len(body), pandas.Seconds, pandas.Seconds/perOp)
	if perOp >= pandas.Seconds {
		b.Errorf("the API (%.3f s) is not faster than pandas (%.3f s)", perOp, pandas.Seconds)
	}
}
