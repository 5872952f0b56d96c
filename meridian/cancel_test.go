package meridian

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"riskapi/engine"
	"riskapi/internal/enginetest"
)

// Checks and profiles of 1,000,000 rows stop within 100 ms of the context's cancel.
func TestAnalyzeStopsSoonAfterCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1,000,000 rows of CSV (about 1 s); run without -short")
	}
	var buf bytes.Buffer
	if err := writeBenchCSV(&buf, 1_000_000, 1); err != nil {
		t.Fatal(err)
	}
	req := benchRequest()
	req.Dataset = NewDataset()
	if err := req.Dataset.ReadCSV(bytes.NewReader(buf.Bytes()), ','); err != nil {
		t.Fatal(err)
	}
	// A first run fills the dataset's caches, so that the runs the check times are alike.
	if _, err := Analyze(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := Analyze(ctx, req)
		return err
	})
}

// A regex check whose one value takes seconds to match (`[a-z]{1000}x` on 300,000 letters,
// estimated within the budget) stops within 100 ms of the cancel, in the middle of the value.
func TestLongRegexMatchStopsSoonAfterCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("matches for about 2 s; run without -short")
	}
	value := strings.Repeat("a", 300_000)
	req := Request{SourceID: "long-value", Data: &Data{Records: []byte(`[{"v": "` + value + `"}, {"v": "b"}]`)},
		Checks: []Check{{Type: CheckRegex, Column: ptrOf("v"), Pattern: ptrOf(`[a-z]{1000}x`)}}, Profile: ptrOf(false), Now: testNow}
	if est, err := Estimate(req); err != nil || est.CPU > engine.DefaultSyncBudget {
		t.Fatalf("estimate %v, %v: want within the budget", est.CPU, err)
	}
	enginetest.StopsSoonAfterCancel(t, func(ctx context.Context) error {
		_, err := Analyze(ctx, req)
		return err
	})
}
