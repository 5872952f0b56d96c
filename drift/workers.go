package drift

import (
	"runtime"
	"sync"
)

// minPartiesPerWorker is the fewest parties a goroutine of the per-party tests is started
// for: a party's test takes tens to hundreds of microseconds, a goroutine about one.
const minPartiesPerWorker = 2

// minEventsPerValidator is the fewest events a goroutine of the validation is started for
// (an event takes about 50 ns to validate).
const minEventsPerValidator = 8192

// workers is the most goroutines the analysis of in may use: Workers, or GOMAXPROCS.
func (in *Input) workers() int {
	if in.Workers > 0 {
		return in.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// parallel runs fn(0), …, fn(workers−1) side by side, fn(0) on the calling goroutine, and
// returns when all have.
func parallel(workers int, fn func(w int)) {
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { fn(w) })
	}
	fn(0)
	wg.Wait()
}
