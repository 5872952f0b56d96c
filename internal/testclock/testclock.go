// Package testclock is a clock that moves only when a test tells it to, for code that takes
// its time from a now func (the authenticator, the rate limiter, the HTTP server), so tests
// of expiry and windows neither sleep nor depend on when they run.
package testclock

import (
	"sync"
	"time"
)

// Clock is safe for concurrent use; Now is the func to hand to the code under test.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
