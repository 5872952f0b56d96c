package meridian

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// SetWorkers sets the most goroutines ReadCSV may run at once to split the text and intern
// its columns: the request's admitted concurrency. 0 (the default) is runtime.GOMAXPROCS;
// 1 runs everything on the caller's goroutine. The dataset is the same for any number.
func (d *Dataset) SetWorkers(n int) { d.workers = max(n, 0) }

func (d *Dataset) workerCount() int { return workerCount(d.workers) }

// workerCount is n, or GOMAXPROCS when n is 0.
func workerCount(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// parallel runs fn(0) … fn(n−1) on up to workers goroutines (the caller's among them), each
// index once, and returns when every call has returned. With one worker or one index it
// runs them in order on the caller's goroutine.
func parallel(workers, n int, fn func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(i)
		}
	}
	var wg sync.WaitGroup
	for range min(workers, n) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}
