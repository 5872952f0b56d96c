package ratelimit

import (
	"testing"
	"time"
)

func TestWindowStartAndEnd(t *testing.T) {
	t.Parallel()
	utc := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	tests := []struct {
		name       string
		window     Window
		at         string // RFC 3339, any offset
		start, end string // UTC
	}{
		{"hour, middle", Hour, "2026-11-21T10:30:00Z", "2026-11-21T10:00:00Z", "2026-11-21T11:00:00Z"},
		{"hour, exact start", Hour, "2026-11-21T10:00:00Z", "2026-11-21T10:00:00Z", "2026-11-21T11:00:00Z"},
		{"hour, last nanosecond", Hour, "2026-11-21T10:59:59.999999999Z", "2026-11-21T10:00:00Z", "2026-11-21T11:00:00Z"},
		{"hour, end is the next start", Hour, "2026-11-21T11:00:00Z", "2026-11-21T11:00:00Z", "2026-11-21T12:00:00Z"},
		{"hour, across midnight", Hour, "2026-12-31T23:59:59.5Z", "2026-12-31T23:00:00Z", "2027-01-01T00:00:00Z"},
		{"hour, half-hour offset zone", Hour, "2026-11-21T15:45:00+05:30", "2026-11-21T10:00:00Z", "2026-11-21T11:00:00Z"},
		{"hour, negative offset zone", Hour, "2026-11-21T05:10:00-05:00", "2026-11-21T10:00:00Z", "2026-11-21T11:00:00Z"},
		{"day, middle", Day, "2026-11-21T10:30:00Z", "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"},
		{"day, exact start", Day, "2026-11-21T00:00:00Z", "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"},
		{"day, last nanosecond", Day, "2026-11-21T23:59:59.999999999Z", "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"},
		{"hour, before 1970", Hour, "1969-12-31T23:30:00Z", "1969-12-31T23:00:00Z", "1970-01-01T00:00:00Z"},
		{"day, before 1970", Day, "1969-12-31T00:00:00.5Z", "1969-12-31T00:00:00Z", "1970-01-01T00:00:00Z"},
		{"day, leap day", Day, "2028-02-29T12:00:00Z", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"},
		// 01:00 on the 22nd in UTC+05:30 is still the 21st in UTC.
		{"day, local date ahead of UTC", Day, "2026-11-22T01:00:00+05:30", "2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"},
		// 20:00 on the 21st in UTC-05:00 is already the 22nd in UTC.
		{"day, local date behind UTC", Day, "2026-11-21T20:00:00-05:00", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, err := time.Parse(time.RFC3339Nano, tt.at)
			if err != nil {
				t.Fatal(err)
			}
			start, end := tt.window.Start(at), tt.window.End(at)
			if !start.Equal(utc(tt.start)) || start.Location() != time.UTC {
				t.Errorf("%v.Start(%s) = %s, want %s in UTC", tt.window, tt.at, start, tt.start)
			}
			if !end.Equal(utc(tt.end)) || end.Location() != time.UTC {
				t.Errorf("%v.End(%s) = %s, want %s in UTC", tt.window, tt.at, end, tt.end)
			}
			if got := end.Sub(start); got != time.Duration(tt.window.Seconds())*time.Second {
				t.Errorf("window length %s, want %d s", got, tt.window.Seconds())
			}
		})
	}
}

func TestWindowNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		window  Window
		name    string
		seconds int64
	}{
		{Hour, "hour", 3600},
		{Day, "day", 86400},
		{Window(0), "Window(0)", 0},
	} {
		if got := tt.window.String(); got != tt.name {
			t.Errorf("Window(%d).String() = %q, want %q", int(tt.window), got, tt.name)
		}
		if got := tt.window.Seconds(); got != tt.seconds {
			t.Errorf("%v.Seconds() = %d, want %d", tt.window, got, tt.seconds)
		}
	}
}

func TestStateSemantics(t *testing.T) {
	t.Parallel()
	b := Bucket{Key: "k", Limit: 2, Window: Hour}
	for _, tt := range []struct {
		count              int64
		remaining          int64
		allowed, exhausted bool
	}{
		{0, 2, true, false},
		{1, 1, true, false},
		{2, 0, true, true}, // the last admitted request: allowed, and the next one will not be
		{3, 0, false, true},
	} {
		s := State{Bucket: b, Count: tt.count}
		if s.Remaining() != tt.remaining || s.Allowed() != tt.allowed || s.Exhausted() != tt.exhausted {
			t.Errorf("count %d of limit 2: Remaining %d Allowed %v Exhausted %v, want %d %v %v",
				tt.count, s.Remaining(), s.Allowed(), s.Exhausted(), tt.remaining, tt.allowed, tt.exhausted)
		}
	}
}

func TestTightest(t *testing.T) {
	t.Parallel()
	hourEnd := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)
	dayEnd := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	state := func(key string, limit, count int64, reset time.Time) State {
		return State{Bucket: Bucket{Key: key, Limit: limit}, Count: count, Reset: reset}
	}
	tests := []struct {
		name   string
		states []State
		want   string
	}{
		{"none", nil, ""},
		{"fewest remaining", []State{state("a", 100, 10, hourEnd), state("b", 20, 15, hourEnd), state("c", 50, 5, hourEnd)}, "b"},
		{"equal remaining: the later reset", []State{state("hour", 10, 5, hourEnd), state("day", 10, 5, dayEnd)}, "day"},
		// The request was refused by the hour bucket, but the day bucket is exhausted too and
		// keeps refusing after the hour ends: Retry-After must point at the day's end.
		{"refused and exhausted: the one that ends last", []State{state("hour", 10, 11, hourEnd), state("day", 10, 10, dayEnd)}, "day"},
	}
	for _, tt := range tests {
		if got := Tightest(tt.states).Bucket.Key; got != tt.want {
			t.Errorf("%s: Tightest chose %q, want %q", tt.name, got, tt.want)
		}
	}
}
