// Package ratelimit counts requests in fixed windows aligned to UTC (clock hours and UTC
// days), exactly under concurrency: in process memory (Memory), in Redis so that several
// server processes share one count (Redis), or in Redis with a per-process fallback when
// Redis is unreachable (Failover). Deciding which buckets a request counts against and
// writing the X-RateLimit-* headers belong to the HTTP layer, not to this package.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Window is a fixed window aligned to UTC. Fixed (not sliding) windows are what the
// platform promises (spec §4: "per clock hour, UTC"), and they make X-RateLimit-Reset the
// same instant for every client and every server process.
type Window int

const (
	// Hour is a clock hour in UTC: 10:00:00.000–10:59:59.999 is one window.
	Hour Window = iota + 1
	// Day is a UTC day: 00:00:00.000–23:59:59.999 UTC is one window.
	Day
)

// Start returns the start of the window containing t, in UTC. Time zones of t do not
// matter: 15:30 in UTC+05:30 is 10:00 UTC, so its hour starts at 10:00 UTC. Start panics
// for a Window other than Hour or Day; Take and Peek reject such buckets before calling it.
func (w Window) Start(t time.Time) time.Time {
	return time.Unix(w.startUnix(t), 0).UTC()
}

// End returns the end (exclusive) of the window containing t: the next window's start.
// UTC has no daylight saving, so every window is exactly Seconds() long.
func (w Window) End(t time.Time) time.Time {
	return time.Unix(w.startUnix(t)+w.Seconds(), 0).UTC()
}

// startUnix returns Start(t) in Unix seconds. Unix time counts every UTC day as exactly
// 86,400 seconds from a midnight, so flooring to a multiple of the window length lands on
// a UTC hour or midnight; it is several times cheaper than building the date with
// time.Date, and Take does it for every bucket.
func (w Window) startUnix(t time.Time) int64 {
	n := w.Seconds()
	if n == 0 {
		panic(fmt.Sprintf("ratelimit: %v has no start", w))
	}
	sec := t.Unix()
	offset := sec % n
	if offset < 0 { // before 1970: % truncates toward zero, the window starts earlier
		offset += n
	}
	return sec - offset
}

// String returns "hour" or "day"; it is also the window's part of a Redis key.
func (w Window) String() string {
	switch w {
	case Hour:
		return "hour"
	case Day:
		return "day"
	}
	return fmt.Sprintf("Window(%d)", int(w))
}

// Seconds returns the window's length: 3600 for Hour, 86400 for Day, 0 for an invalid Window.
func (w Window) Seconds() int64 {
	switch w {
	case Hour:
		return 3600
	case Day:
		return 86400
	}
	return 0
}

func (w Window) valid() bool { return w == Hour || w == Day }

// Bucket is one counter: a key, its limit per window, and the window.
//
// The caller builds Key, e.g. "{acct_123}:drift". Put the account id (or client IP) in a
// Redis Cluster hash tag ("{…}") so that all the buckets of one request live in one slot:
// Redis.Take runs one script over all of them, and a cluster refuses a script whose keys
// span slots (CROSSSLOT). This package does not enforce it, so a single-node Redis works
// with any keys.
//
// A counter is identified by Key and Window together; Limit is only compared against the
// count. Two buckets with the same Key and Window but different limits share one counter,
// so give a per-key custom limit its own Key.
type Bucket struct {
	Key    string
	Limit  int64
	Window Window
}

// ErrInvalidBucket is returned (wrapped) by Take and Peek for a bucket with an empty key,
// a negative limit or an unknown window: a bug in the caller, not a limiter failure, so
// Failover returns it without failing over.
var ErrInvalidBucket = errors.New("ratelimit: invalid bucket")

func validateBuckets(buckets []Bucket) error {
	for i, b := range buckets {
		switch {
		case b.Key == "":
			return fmt.Errorf("%w: bucket %d has an empty key", ErrInvalidBucket, i)
		case b.Limit < 0:
			return fmt.Errorf("%w: bucket %q has negative limit %d", ErrInvalidBucket, b.Key, b.Limit)
		case !b.Window.valid():
			return fmt.Errorf("%w: bucket %q has unknown window %v", ErrInvalidBucket, b.Key, b.Window)
		}
	}
	return nil
}

// State is a bucket's counter in the window containing the time of the call.
//
// After Take, Count includes the request just counted: the first request of a window sees
// Count 1. After Peek, Count is what has been counted so far.
type State struct {
	Bucket Bucket
	Count  int64     // requests counted in this window (after the Take that returned it)
	Reset  time.Time // end of the window (exclusive), UTC: X-RateLimit-Reset is Reset.Unix()
}

// Remaining returns how many more requests this window admits: max(0, Limit-Count). After
// the Take that admitted the last allowed request it is 0 (and Allowed is still true).
func (s State) Remaining() int64 { return max(0, s.Bucket.Limit-s.Count) }

// Allowed reports whether the request that Take just counted is within the limit:
// Count <= Limit. With limit 50, requests 1–50 of a window are allowed and 51 onwards are
// refused (they are counted all the same). Use it on states returned by Take; on a Peek
// state it only says that no request of this window has been refused yet, so ask
// Exhausted instead.
func (s State) Allowed() bool { return s.Count <= s.Bucket.Limit }

// Exhausted reports whether the next request in this window would be refused:
// Count >= Limit (Remaining is 0). Use it on states returned by Peek ("would one more be
// admitted?" is !Exhausted), or after Take to know that the following request will fail.
func (s State) Exhausted() bool { return s.Count >= s.Bucket.Limit }

// Tightest returns the state that constrains the client longest, for the one set of
// X-RateLimit-* headers a response carries when several buckets apply: the fewest
// Remaining, and among equals the latest Reset. So when any bucket is exhausted the
// answer is an exhausted one, and it is the one whose window ends last — the earliest
// moment a retry can succeed, which is what Retry-After must say on a 429. It returns
// the zero State for an empty slice.
func Tightest(states []State) State {
	var tightest State
	for i, s := range states {
		if i == 0 ||
			s.Remaining() < tightest.Remaining() ||
			(s.Remaining() == tightest.Remaining() && s.Reset.After(tightest.Reset)) {
			tightest = s
		}
	}
	return tightest
}

// Limiter counts requests against buckets. Memory, Redis and Failover implement it.
//
// Both methods take now from the caller (the time the request arrived), so tests and
// replays decide which window a request falls in; Redis still sets key expiry on the
// Redis server's clock, so now must be close to real time there (see Redis).
type Limiter interface {
	// Take counts one request in the current window of every bucket (each increment atomic)
	// and returns the states after counting, in the order given. A request refused by one
	// bucket is still counted in all of them ("every request that passes authentication
	// counts"). A bucket listed twice is counted twice. It returns an error wrapping
	// ErrInvalidBucket for an invalid bucket (nothing is counted then), and the store's
	// error when counting failed (Redis unreachable or too slow); after a timeout the
	// request may or may not have been counted.
	Take(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error)
	// Peek returns the current states without counting, in the order given. A bucket
	// nothing was counted in yet has Count 0.
	Peek(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error)
}
