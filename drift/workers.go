package drift

import "sync"

// minPartiesPerWorker is the fewest parties a goroutine of the per-party tests is started
// for: a party's test takes tens to hundreds of microseconds, a goroutine about one.
const minPartiesPerWorker = 2

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
