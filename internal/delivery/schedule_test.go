package delivery

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var scheduleEpoch = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	valid := []struct {
		in   string
		want []time.Duration
	}{
		{"1s,1s,1s", []time.Duration{time.Second, time.Second, time.Second}},
		{" 500ms , 1m,2h30m ", []time.Duration{500 * time.Millisecond, time.Minute, 150 * time.Minute}},
		{"10ms", []time.Duration{10 * time.Millisecond}},
	}
	for _, tt := range valid {
		s, err := ParseSchedule(tt.in)
		if err != nil {
			t.Errorf("ParseSchedule(%q): %v", tt.in, err)
			continue
		}
		if s.Jitter != 0 {
			t.Errorf("ParseSchedule(%q).Jitter = %g; an override must not be jittered", tt.in, s.Jitter)
		}
		if !slices.Equal(s.Delays, tt.want) {
			t.Errorf("ParseSchedule(%q).Delays = %v, want %v", tt.in, s.Delays, tt.want)
		}
	}

	invalid := []struct{ in, mention string }{
		{"", "empty"},
		{"  ", "empty"},
		{"1s,,1s", `delay 2 ""`},
		{"5", `"5"`},          // a number without a unit is ambiguous
		{"1s,fast", `"fast"`}, // not a duration
		{"-1s", "greater than zero"},
		{"1s,0s", "greater than zero"},
		{strings.Repeat("1s,", 100) + "1s", "at most 100"},
	}
	for _, tt := range invalid {
		_, err := ParseSchedule(tt.in)
		if err == nil {
			t.Errorf("ParseSchedule(%q) succeeded, want an error", tt.in)
			continue
		}
		if !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("ParseSchedule(%q) = %q, want it to mention %q", tt.in, err, tt.mention)
		}
	}
}

func TestNextWithoutJitter(t *testing.T) {
	t.Parallel()
	s, err := ParseSchedule("1s,2s,3s")
	if err != nil {
		t.Fatal(err)
	}
	neverCalled := func() float64 { t.Fatal("random called for a schedule without jitter"); return 0 }
	if at, ok := s.Next(0, scheduleEpoch, neverCalled); !ok || !at.Equal(scheduleEpoch) {
		t.Errorf("Next(0) = %v, %v; the first attempt is due at once", at, ok)
	}
	for failed, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 3 * time.Second} {
		at, ok := s.Next(failed, scheduleEpoch, neverCalled)
		if !ok || at.Sub(scheduleEpoch) != want {
			t.Errorf("Next(%d) = +%s, %v; want +%s, true", failed, at.Sub(scheduleEpoch), ok, want)
		}
	}
	if at, ok := s.Next(4, scheduleEpoch, neverCalled); ok {
		t.Errorf("Next(4) = %v, true; 3 delays allow 4 attempts, so the schedule is exhausted", at)
	}
}

func TestDefaultScheduleMatchesContract(t *testing.T) {
	t.Parallel()
	want := []time.Duration{
		5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
		10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
	}
	if !slices.Equal(DefaultSchedule.Delays, want) || DefaultSchedule.Jitter != 0.1 {
		t.Fatalf("DefaultSchedule = %v ±%g, want %v ±0.1", DefaultSchedule.Delays, DefaultSchedule.Jitter, want)
	}
	// Ten automatic attempts in all, the last about 3 days after the first.
	half := func() float64 { return 0.5 } // no jitter: factor 1 + 0.1×(2×0.5−1)
	at, attempts := scheduleEpoch, 1
	for {
		next, ok := DefaultSchedule.Next(attempts, at, half)
		if !ok {
			break
		}
		at, attempts = next, attempts+1
	}
	if attempts != 10 {
		t.Errorf("DefaultSchedule allows %d automatic attempts, want 10", attempts)
	}
	if span := at.Sub(scheduleEpoch); span != 75*time.Hour+35*time.Minute+5*time.Second {
		t.Errorf("last attempt %s after the first, want 75h35m5s", span)
	}
}

func TestNextJitterStaysWithinTenPercent(t *testing.T) {
	t.Parallel()
	for failed, delay := range DefaultSchedule.Delays {
		low := time.Duration(float64(delay) * 0.9)
		high := time.Duration(float64(delay) * 1.1)
		var seenLow, seenHigh bool
		for i := range 1000 {
			r := float64(i) / 1000 // covers [0, 1) evenly
			at, ok := DefaultSchedule.Next(failed+1, scheduleEpoch, func() float64 { return r })
			if !ok {
				t.Fatalf("Next(%d) exhausted", failed+1)
			}
			wait := at.Sub(scheduleEpoch)
			if wait < low || wait > high {
				t.Fatalf("Next(%d) with random %g waits %s, outside [%s, %s]", failed+1, r, wait, low, high)
			}
			seenLow = seenLow || wait < time.Duration(float64(delay)*0.91)
			seenHigh = seenHigh || wait > time.Duration(float64(delay)*1.09)
		}
		if !seenLow || !seenHigh {
			t.Errorf("Next(%d): jitter does not spread over ±10%% of %s (low end reached %v, high end %v)", failed+1, delay, seenLow, seenHigh)
		}
	}
	// The default random source is used when none is given, and stays in bounds.
	for range 100 {
		at, _ := DefaultSchedule.Next(1, scheduleEpoch, nil)
		if wait := at.Sub(scheduleEpoch); wait < 4500*time.Millisecond || wait > 5500*time.Millisecond {
			t.Fatalf("Next(1) with the default random waits %s, outside [4.5s, 5.5s]", wait)
		}
	}
}
