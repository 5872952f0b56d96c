package admission

import (
	"runtime"
	"sync"
)

// Cores bounds the goroutines that requests run their work on side by side: a process-wide
// pool of core grants (GOMAXPROCS by default). A request that can split its work (Meridian's
// CSV, checks and profile) takes what it can use of the grants free when it starts, never
// waiting for more, and runs on that many goroutines, or on its own goroutine alone when
// none is free; it gives them back when it ends. So the goroutines of all requests' split
// work never outnumber the cores by more than one per request, and a request alone on the
// process uses every core.
type Cores struct {
	mu    sync.Mutex
	limit int
	free  int
}

// NewCores returns a pool of limit grants; zero or less means runtime.GOMAXPROCS(0).
func NewCores(limit int) *Cores {
	if limit <= 0 {
		limit = runtime.GOMAXPROCS(0)
	}
	return &Cores{limit: limit, free: limit}
}

// Limit is the number of grants of the pool.
func (c *Cores) Limit() int { return c.limit }

// Take grants up to want of the free cores at once (none when none is free) and returns
// how many, at least 1 (the caller's own goroutine), and the function that gives them back.
func (c *Cores) Take(want int) (workers int, release func()) {
	c.mu.Lock()
	n := min(max(want, 0), c.free)
	c.free -= n
	c.mu.Unlock()
	var once sync.Once
	return max(n, 1), func() {
		once.Do(func() {
			c.mu.Lock()
			c.free += n
			c.mu.Unlock()
		})
	}
}
