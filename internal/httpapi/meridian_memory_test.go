package httpapi

import (
	"bytes"
	"context"
	"io"
	"testing"

	"riskapi/internal/enginetest"
	"riskapi/meridian"
)

// TestMeridianBodyMemoryCoversTheRequest decodes the 1,000,000-row benchmark request as the
// handler does (from a reader without WriterTo, as from a socket, on 1 and 2 workers) and
// runs its checks: the measured peak of the heap (the decoder's copy of the body, the
// column store, the result) stays within what admit reserved for the body
// (product.Meridian.BodyMemory, meridian.IngestPeak), and is logged as a multiple of the
// body (docs/operations.md quotes it).
func TestMeridianBodyMemoryCoversTheRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes a 64 MB body; run without -short")
	}
	if enginetest.RaceEnabled {
		t.Skip("heap measurements are not meaningful under the race detector; CI runs this test without it (BodyMemory)")
	}
	_, body := meridianBenchRequest(t)
	for _, workers := range []int{1, 2} {
		peak := enginetest.MeasurePeakHeap(t, func() {
			ctx := withRequestInfo(context.Background(), &requestInfo{workers: workers})
			req, e := decodeQualityCheck(ctx, struct{ io.Reader }{bytes.NewReader(body)})
			if e != nil {
				t.Fatal(e)
			}
			req.Now = meridian.OrdersAsOf
			if _, err := meridian.Analyze(ctx, req.Request); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%d workers: body %d bytes, peak heap %d bytes (%.2f× the body)", workers, len(body), peak, float64(peak)/float64(len(body)))
		if bound := meridian.IngestPeak(int64(len(body))); peak > bound {
			t.Errorf("%d workers: peak heap %d above the reservation %d", workers, peak, bound)
		}
	}
}
