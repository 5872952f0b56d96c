package storetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

func testUsage(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := ident.New("acct"), ident.New("acct")
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	add := func(units ...store.UsageUnits) {
		t.Helper()
		if err := s.AddUsage(ctx, units); err != nil {
			t.Fatal(err)
		}
	}
	add(store.UsageUnits{AccountID: a, Day: day, Product: "drift", Endpoint: "POST /v1/drift/analyze", Units: 3},
		store.UsageUnits{AccountID: a, Day: day.AddDate(0, 0, 1), Product: "meridian", Endpoint: "POST /v1/meridian/quality-check", Units: 1},
		store.UsageUnits{AccountID: b, Day: day, Product: "drift", Endpoint: "POST /v1/drift/analyze", Units: 100})
	// Totals add up across flushes, including concurrent ones.
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := s.AddUsage(ctx, []store.UsageUnits{{AccountID: a, Day: day, Product: "drift", Endpoint: "POST /v1/drift/analyze", Units: 2}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.Usage(ctx, a, day, day.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := "2026-11-20 drift POST /v1/drift/analyze 23\n2026-11-21 meridian POST /v1/meridian/quality-check 1\n"
	var buf bytes.Buffer
	for _, u := range got {
		fmt.Fprintf(&buf, "%s %s %s %d\n", u.Day.Format("2006-01-02"), u.Product, u.Endpoint, u.Units)
	}
	if buf.String() != want {
		t.Fatalf("Usage:\n%s\nwant:\n%s", buf.String(), want)
	}
	// The range is inclusive and filters by day.
	one, err := s.Usage(ctx, a, day.AddDate(0, 0, 1), day.AddDate(0, 0, 1))
	if err != nil || len(one) != 1 || one[0].Product != "meridian" {
		t.Fatalf("Usage(one day) = %+v, %v", one, err)
	}
	if none, err := s.Usage(ctx, ident.New("acct"), day, day); err != nil || len(none) != 0 {
		t.Fatalf("Usage(unknown account) = %+v, %v", none, err)
	}
}

func testSecret(t *testing.T, s store.Store) {
	ctx := context.Background()
	name := "cursor-" + ident.Random(8)
	first, err := s.Secret(ctx, name, []byte("first-candidate"))
	if err != nil || string(first) != "first-candidate" {
		t.Fatalf("Secret = %q, %v", first, err)
	}
	again, err := s.Secret(ctx, name, []byte("second-candidate"))
	if err != nil || string(again) != "first-candidate" {
		t.Fatalf("second Secret = %q, %v; want the stored first value", again, err)
	}
}
