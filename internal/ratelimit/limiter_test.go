package ratelimit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// runLimiterSuite runs the behaviour every Limiter must have against the limiters that
// newLimiter returns, a fresh one (with fresh counters) per test.
func runLimiterSuite(t *testing.T, newLimiter func(t *testing.T) Limiter) {
	ctx := context.Background()
	day := futureDay()
	at := func(d time.Duration) time.Time { return day.Add(d) }

	t.Run("CountsEachTake", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		b := Bucket{Key: "{acct_1}:drift", Limit: 3, Window: Hour}
		wantReset := at(11 * time.Hour)
		for i, want := range []struct {
			count, remaining   int64
			allowed, exhausted bool
		}{
			{1, 2, true, false},
			{2, 1, true, false},
			{3, 0, true, true},
			{4, 0, false, true},
			{5, 0, false, true},
		} {
			s := takeOne(t, l, at(10*time.Hour+time.Duration(i)*time.Minute), b)
			if s.Count != want.count || s.Remaining() != want.remaining || s.Allowed() != want.allowed || s.Exhausted() != want.exhausted {
				t.Errorf("take %d: count %d remaining %d allowed %v exhausted %v, want %d %d %v %v",
					i+1, s.Count, s.Remaining(), s.Allowed(), s.Exhausted(), want.count, want.remaining, want.allowed, want.exhausted)
			}
			if !s.Reset.Equal(wantReset) || s.Reset.Location() != time.UTC {
				t.Errorf("take %d: reset %s, want %s UTC", i+1, s.Reset, wantReset)
			}
			if s.Bucket != b {
				t.Errorf("take %d: state of bucket %+v, want %+v", i+1, s.Bucket, b)
			}
		}
	})

	t.Run("StatesInTheOrderGiven", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		now := at(10 * time.Hour)
		a := Bucket{Key: "{acct_1}:a", Limit: 10, Window: Hour}
		b := Bucket{Key: "{acct_1}:b", Limit: 20, Window: Day}
		c := Bucket{Key: "{acct_1}:c", Limit: 30, Window: Hour}
		take(t, l, now, c)
		take(t, l, now, c)
		take(t, l, now, b)
		states := take(t, l, now, a, b, c)
		assertCounts(t, states, []Bucket{a, b, c}, []int64{1, 2, 3})
		if want := at(24 * time.Hour); !states[1].Reset.Equal(want) {
			t.Errorf("day bucket reset %s, want %s", states[1].Reset, want)
		}
	})

	t.Run("RefusedRequestCountsInEveryBucket", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		tight := Bucket{Key: "{acct_1}:key_restricted", Limit: 1, Window: Hour}
		loose := Bucket{Key: "{acct_1}:drift", Limit: 100, Window: Hour}
		for i := int64(1); i <= 3; i++ {
			states := take(t, l, at(10*time.Hour), tight, loose)
			assertCounts(t, states, []Bucket{tight, loose}, []int64{i, i})
			if states[0].Allowed() != (i == 1) || !states[1].Allowed() {
				t.Errorf("take %d: allowed %v/%v, want %v/true", i, states[0].Allowed(), states[1].Allowed(), i == 1)
			}
		}
	})

	t.Run("HourRollsOverAtTheClockHour", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		hourly := Bucket{Key: "{acct_1}:drift", Limit: 1, Window: Hour}
		daily := Bucket{Key: "{acct_1}:test", Limit: 1000, Window: Day}
		for _, step := range []struct {
			now                 time.Time
			hourCount, dayCount int64
			hourReset           time.Time
		}{
			{at(10*time.Hour + 59*time.Minute + 59*time.Second + 999*time.Millisecond), 1, 1, at(11 * time.Hour)},
			{at(11 * time.Hour), 1, 2, at(12 * time.Hour)},
			{at(11*time.Hour + 30*time.Minute), 2, 3, at(12 * time.Hour)},
			{at(12 * time.Hour), 1, 4, at(13 * time.Hour)},
		} {
			states := take(t, l, step.now, hourly, daily)
			assertCounts(t, states, []Bucket{hourly, daily}, []int64{step.hourCount, step.dayCount})
			if !states[0].Reset.Equal(step.hourReset) {
				t.Errorf("at %s: hour reset %s, want %s", step.now, states[0].Reset, step.hourReset)
			}
		}
	})

	t.Run("DayRollsOverAtMidnightUTC", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		daily := Bucket{Key: "{acct_1}:test", Limit: 1000, Window: Day}
		lastInstant := at(24*time.Hour - time.Nanosecond)
		take(t, l, lastInstant, daily)
		if s := takeOne(t, l, lastInstant, daily); s.Count != 2 {
			t.Fatalf("second take on the first day: count %d, want 2", s.Count)
		}
		s := takeOne(t, l, at(24*time.Hour), daily)
		if s.Count != 1 || !s.Reset.Equal(at(48*time.Hour)) {
			t.Errorf("first take of the next day: count %d reset %s, want 1 and %s", s.Count, s.Reset, at(48*time.Hour))
		}
	})

	t.Run("HourAndDayOfOneKeyAreSeparateCounters", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		// From 00:00 to 01:00 UTC the hour and the day start at the same instant.
		hourly := Bucket{Key: "{acct_1}:all", Limit: 10, Window: Hour}
		daily := Bucket{Key: "{acct_1}:all", Limit: 10, Window: Day}
		take(t, l, at(30*time.Minute), hourly, daily)
		states := take(t, l, at(30*time.Minute), hourly, daily)
		assertCounts(t, states, []Bucket{hourly, daily}, []int64{2, 2})
	})

	t.Run("PeekDoesNotCount", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		now := at(10 * time.Hour)
		b := Bucket{Key: "{acct_1}:drift", Limit: 2, Window: Hour}
		other := Bucket{Key: "{acct_1}:never-taken", Limit: 5, Window: Day}
		for range 3 {
			states := peek(t, l, now, b, other)
			assertCounts(t, states, []Bucket{b, other}, []int64{0, 0})
			if states[0].Exhausted() || !states[0].Reset.Equal(at(11*time.Hour)) || !states[1].Reset.Equal(at(24*time.Hour)) {
				t.Errorf("peek before any take: exhausted %v, resets %s %s", states[0].Exhausted(), states[0].Reset, states[1].Reset)
			}
		}
		take(t, l, now, b)
		take(t, l, now, b)
		for range 3 {
			s := peek(t, l, now, b)[0]
			if s.Count != 2 || !s.Exhausted() || s.Remaining() != 0 {
				t.Errorf("peek after 2 takes of limit 2: count %d exhausted %v remaining %d, want 2 true 0", s.Count, s.Exhausted(), s.Remaining())
			}
		}
		if s := takeOne(t, l, now, b); s.Count != 3 || s.Allowed() {
			t.Errorf("take after peeks: count %d allowed %v, want 3 false", s.Count, s.Allowed())
		}
		if s := peek(t, l, at(11*time.Hour), b)[0]; s.Count != 0 {
			t.Errorf("peek in the next hour: count %d, want 0", s.Count)
		}
	})

	t.Run("NowInAnyTimeZone", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		b := Bucket{Key: "{acct_1}:drift", Limit: 10, Window: Hour}
		utcNow := at(10*time.Hour + 15*time.Minute)
		kolkata := utcNow.In(time.FixedZone("IST", 5*3600+1800))              // 15:45 local
		newYork := utcNow.In(time.FixedZone("EST", -5*3600)).Add(time.Minute) // 05:16 local
		take(t, l, utcNow, b)
		take(t, l, kolkata, b)
		s := takeOne(t, l, newYork, b)
		if s.Count != 3 {
			t.Errorf("three takes in one UTC hour from three zones: count %d, want 3", s.Count)
		}
		if !s.Reset.Equal(at(11*time.Hour)) || s.Reset.Location() != time.UTC {
			t.Errorf("reset %s, want %s in UTC", s.Reset, at(11*time.Hour))
		}
	})

	t.Run("ExactUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		b := Bucket{Key: "{acct_1}:drift", Limit: 50, Window: Hour}
		counts := takeConcurrently(t, 200, at(10*time.Hour), func(int) Limiter { return l }, b)
		assertExactlyCounted(t, counts, 200, 50)
		if s := peek(t, l, at(10*time.Hour), b)[0]; s.Count != 200 {
			t.Errorf("peek after 200 takes: count %d", s.Count)
		}
	})

	t.Run("RejectsInvalidBucketsBeforeCounting", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		now := at(10 * time.Hour)
		valid := Bucket{Key: "{acct_1}:drift", Limit: 10, Window: Hour}
		for _, invalid := range []Bucket{
			{Key: "", Limit: 10, Window: Hour},
			{Key: "{acct_1}:x", Limit: -1, Window: Hour},
			{Key: "{acct_1}:x", Limit: 10, Window: Window(0)},
			{Key: "{acct_1}:x", Limit: 10, Window: Window(3)},
		} {
			if _, err := l.Take(ctx, now, valid, invalid); !errors.Is(err, ErrInvalidBucket) {
				t.Errorf("Take with %+v: error %v, want ErrInvalidBucket", invalid, err)
			}
			if _, err := l.Peek(ctx, now, invalid); !errors.Is(err, ErrInvalidBucket) {
				t.Errorf("Peek with %+v: error %v, want ErrInvalidBucket", invalid, err)
			}
		}
		if s := peek(t, l, now, valid)[0]; s.Count != 0 {
			t.Errorf("valid bucket counted %d times by Takes that returned an error", s.Count)
		}
	})

	t.Run("NoBuckets", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t)
		if states := take(t, l, at(0)); len(states) != 0 {
			t.Errorf("Take of no buckets: %d states", len(states))
		}
		if states := peek(t, l, at(0)); len(states) != 0 {
			t.Errorf("Peek of no buckets: %d states", len(states))
		}
	})
}

func TestMemory(t *testing.T) {
	t.Parallel()
	runLimiterSuite(t, func(*testing.T) Limiter { return NewMemory() })
}

func take(t *testing.T, l Limiter, now time.Time, buckets ...Bucket) []State {
	t.Helper()
	states, err := l.Take(context.Background(), now, buckets...)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if len(states) != len(buckets) {
		t.Fatalf("Take of %d buckets returned %d states", len(buckets), len(states))
	}
	return states
}

func takeOne(t *testing.T, l Limiter, now time.Time, b Bucket) State {
	t.Helper()
	return take(t, l, now, b)[0]
}

func peek(t *testing.T, l Limiter, now time.Time, buckets ...Bucket) []State {
	t.Helper()
	states, err := l.Peek(context.Background(), now, buckets...)
	if err != nil {
		t.Fatalf("Peek: %v", err)
	}
	if len(states) != len(buckets) {
		t.Fatalf("Peek of %d buckets returned %d states", len(buckets), len(states))
	}
	return states
}

func assertCounts(t *testing.T, states []State, buckets []Bucket, want []int64) {
	t.Helper()
	for i, s := range states {
		if s.Bucket != buckets[i] || s.Count != want[i] {
			t.Errorf("state %d: %s/%v count %d, want %s/%v count %d",
				i, s.Bucket.Key, s.Bucket.Window, s.Count, buckets[i].Key, buckets[i].Window, want[i])
		}
	}
}

// takeConcurrently starts n goroutines that each Take b once at now, all released at the
// same moment, with goroutine i using limiterFor(i), and returns the counts they saw.
func takeConcurrently(t *testing.T, n int, now time.Time, limiterFor func(i int) Limiter, b Bucket) []int64 {
	t.Helper()
	counts := make([]int64, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			states, err := limiterFor(i).Take(context.Background(), now, b)
			if err != nil {
				errs[i] = err
				return
			}
			counts[i] = states[0].Count
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent takes: %v", err)
	}
	return counts
}

// assertExactlyCounted checks that n concurrent takes saw the counts 1..n, each exactly
// once (no lost or doubled increment), so exactly limit of them were allowed.
func assertExactlyCounted(t *testing.T, counts []int64, n int, limit int64) {
	t.Helper()
	allowed := 0
	for _, c := range counts {
		if c <= limit {
			allowed++
		}
	}
	if allowed != int(limit) {
		t.Errorf("%d of %d concurrent takes allowed under limit %d, want exactly %d", allowed, n, limit, limit)
	}
	sorted := slices.Sorted(slices.Values(counts))
	for i, c := range sorted {
		if c != int64(i+1) {
			t.Fatalf("concurrent takes saw counts %v, want each of 1..%d once", sorted, n)
		}
	}
}
