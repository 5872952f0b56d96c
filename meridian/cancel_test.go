package meridian

import (
	"bytes"
	"context"
	"testing"

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
