package usage

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
)

func TestMeterBatchesAndKeepsUnitsOnFailure(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlitetest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewMeter(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	day := time.Date(2026, 11, 21, 23, 59, 59, 0, time.UTC)
	for range 5 {
		m.Record("acct_a", "drift", "POST /v1/drift/analyze", day)
	}
	m.Record("acct_a", "drift", "POST /v1/drift/analyze", day.Add(2*time.Second)) // the next UTC day
	m.Record("acct_b", "cascade", "POST /v1/cascade/simulate", day.In(time.FixedZone("x", 3600)))

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Flush(cancelled); err == nil {
		t.Fatal("flush with a cancelled context succeeded")
	}
	m.Record("acct_a", "drift", "POST /v1/drift/analyze", day)
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := st.Usage(context.Background(), "acct_a", day.AddDate(0, 0, -1), day.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := []store.UsageUnits{
		{AccountID: "acct_a", Day: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), Product: "drift", Endpoint: "POST /v1/drift/analyze", Units: 6},
		{AccountID: "acct_a", Day: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), Product: "drift", Endpoint: "POST /v1/drift/analyze", Units: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("usage = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Units != want[i].Units || !got[i].Day.Equal(want[i].Day) || got[i].Product != want[i].Product {
			t.Fatalf("usage[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	b, _ := st.Usage(context.Background(), "acct_b", day, day)
	if len(b) != 1 || b[0].Units != 1 {
		t.Fatalf("acct_b usage = %+v (a non-UTC time must count on its UTC day)", b)
	}
	// Nothing pending: a flush writes nothing and succeeds.
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRunFlushesOnStop(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := NewMeter(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx, time.Hour); close(done) }()
	now := time.Now()
	m.Record("acct_a", "meridian", "POST /v1/meridian/quality-check", now)
	cancel()
	<-done
	got, _ := st.Usage(context.Background(), "acct_a", now, now)
	if len(got) != 1 || got[0].Units != 1 {
		t.Fatalf("units after stop = %+v, want 1", got)
	}
}
