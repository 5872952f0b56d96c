package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// ipBuckets returns n per-IP buckets, the kind of key that churns: a new set every hour.
func ipBuckets(n int, window Window) []Bucket {
	buckets := make([]Bucket, n)
	for i := range buckets {
		buckets[i] = Bucket{Key: fmt.Sprintf("{ip_10.%d.%d.%d}:unauthenticated", i>>16&255, i>>8&255, i&255), Limit: 300, Window: window}
	}
	return buckets
}

func TestMemorySweepDropsEndedWindows(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	day := futureDay()
	ips := ipBuckets(10_000, Hour)
	daily := Bucket{Key: "{acct_1}:test", Limit: 1000, Window: Day}
	for _, b := range ips {
		take(t, m, day.Add(10*time.Hour+30*time.Minute), b)
	}
	take(t, m, day.Add(10*time.Hour), daily)
	if got := m.counters(); got != 10_001 {
		t.Fatalf("after 10,000 IP buckets and 1 day bucket: %d counters", got)
	}
	m.sweep(day.Add(11*time.Hour - time.Nanosecond))
	if got := m.counters(); got != 10_001 {
		t.Fatalf("sweep before the hour ended dropped counters: %d left, want 10,001", got)
	}
	m.sweep(day.Add(11 * time.Hour))
	if got := m.counters(); got != 1 {
		t.Fatalf("sweep at the end of the hour: %d counters left, want 1 (the day bucket)", got)
	}
	if s := peek(t, m, day.Add(23*time.Hour), daily)[0]; s.Count != 1 {
		t.Errorf("day bucket count %d after the hour sweep, want 1", s.Count)
	}
	m.sweep(day.Add(24 * time.Hour))
	if got := m.counters(); got != 0 {
		t.Fatalf("sweep at the end of the day: %d counters left, want 0", got)
	}
}

// Without Run, churning keys still do not accumulate: each hour's Takes drop the last
// hour's counters.
func TestMemoryTakeDropsEndedWindowsWithoutRun(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	day := futureDay()
	for hour := range 3 {
		now := day.Add(time.Duration(10+hour)*time.Hour + 5*time.Minute)
		for _, b := range ipBuckets(5_000, Hour) {
			take(t, m, now, b)
		}
		// Every shard has seen Takes this hour, so none holds the previous hour any more.
		if got := m.counters(); got != 5_000 {
			t.Fatalf("hour %d: %d counters held, want the 5,000 of this hour", hour, got)
		}
	}
}

func TestMemoryPeekCreatesNoCounters(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	for _, b := range ipBuckets(100, Hour) {
		peek(t, m, futureDay(), b)
	}
	if got := m.counters(); got != 0 {
		t.Errorf("100 peeks of unseen buckets created %d counters", got)
	}
}

// Run sweeps every memorySweepInterval (a minute) until its context ends. In a synctest
// bubble the fake clock runs that minute at once, and synctest.Wait shows when Run is idle.
func TestMemoryRunSweepsUntilCanceled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory()
		day := futureDay()
		for _, b := range ipBuckets(100, Hour) {
			take(t, m, day.Add(10*time.Hour), b)
		}
		m.clock = func() time.Time { return day.Add(11 * time.Hour) }

		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			m.Run(ctx)
		}()
		// The bubble's fake clock: these sleeps return at once.
		time.Sleep(memorySweepInterval - time.Nanosecond)
		synctest.Wait()
		if got := m.counters(); got != 100 {
			t.Fatalf("Run swept before its interval: %d counters left, want 100", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := m.counters(); got != 0 {
			t.Fatalf("Run's first sweep left %d counters of the ended hour", got)
		}
		cancel()
		synctest.Wait()
		select {
		case <-stopped:
		default:
			t.Fatal("Run did not return after its context was canceled")
		}
	})
}
