package convergence

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Options tune how Analyze and Validate run; they never change the result.
type Options struct {
	// Workers is the most goroutines one analysis (or validation) works on at once; 0 means
	// GOMAXPROCS, and it is at most maxWorkers.
	Workers int
}

// maxWorkers bounds Options.Workers (as Cascade's): more goroutines than that only add the
// cost of handing work out.
const maxWorkers = 64

// Resolve returns opt with Workers set to the number of goroutines Analyze would work on now
// (GOMAXPROCS when 0, which the runtime may change while a process runs), so that an
// Estimate and the Analyze after it count the same workers: the memory admitted for a
// request's analysis covers the workers it runs on.
func (opt Options) Resolve() Options {
	opt.Workers = opt.workers()
	return opt
}

// workers is the number of goroutines an analysis works on at most.
func (opt Options) workers() int {
	w := opt.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return max(1, min(w, maxWorkers))
}

// crew bounds the goroutines of one analysis: the caller's and at most Workers − 1 helpers,
// each holding one of tokens while it works. The analysis's screens (prices, regimes,
// welfare, division, communication, bids) run as units of one parallel loop, and the long
// loops inside them (firms, pairs, coordinated changes) as units of their own: a loop
// started in a helper takes the tokens other loops have given back, never more than the
// crew holds, so nested loops never run more than Workers goroutines at once.
//
// Every unit writes only its own slot of the loop's output, and the caller combines the
// slots in input order once the loop has ended, so the result's bytes do not depend on the
// number of workers or on which goroutine ran which unit. The engine draws random numbers
// only in the ring search's null draws, from a generator seeded by the market itself
// (nullPValue), inside one unit.
type crew struct {
	tokens chan struct{}
}

// newCrew returns the crew of an analysis on opt's workers (nil when it has one: every loop
// then runs in the caller, as a plain loop).
func newCrew(opt Options) *crew {
	w := opt.workers()
	if w <= 1 {
		return nil
	}
	return &crew{tokens: make(chan struct{}, w-1)}
}

// each calls fn(i, st) for every i in [0, n), in chunks of grain units (0: about a
// sixteenth of n per worker, at most 256 units) taken in turn by the caller and by the
// helpers it starts while tokens are free and chunks remain. st is the goroutine's own
// stopper over stop's context (stop itself in the caller), so that the loops' counts of
// work are never shared. Once a goroutine's stopper has stopped, no new chunk starts; each
// returns after every helper has returned (a panic in a helper is raised again in the
// caller), and the caller learns of a cancel from stop.check(). Without a crew it is a
// plain loop in the caller.
func (stop *stopper) each(n, grain int, fn func(i int, st *stopper)) {
	if n <= 0 {
		return
	}
	c := stop.crew
	if grain <= 0 && c != nil {
		grain = min(256, n/(16*(cap(c.tokens)+1)))
	}
	grain = max(1, grain)
	chunks := (n + grain - 1) / grain
	if c == nil || chunks == 1 {
		for i := 0; i < n; i++ {
			if fn(i, stop); stop.err != nil {
				return
			}
		}
		return
	}
	var (
		next     atomic.Int64
		quit     atomic.Bool
		wg       sync.WaitGroup
		panicMu  sync.Mutex
		panicked any
	)
	take := func() (lo int, ok bool) {
		if quit.Load() {
			return 0, false
		}
		lo = int(next.Add(int64(grain))) - grain
		return lo, lo < n
	}
	run := func(st *stopper, lo int) {
		defer func() {
			if p := recover(); p != nil {
				quit.Store(true)
				panicMu.Lock()
				defer panicMu.Unlock()
				if panicked == nil {
					panicked = p
				}
			}
		}()
		for i := lo; i < min(lo+grain, n); i++ {
			if fn(i, st); st.err != nil {
				quit.Store(true)
				return
			}
		}
	}
	// The caller starts a helper for every chunk beyond its own while tokens are free, and
	// looks again for free tokens between its chunks (other loops give theirs back).
	helpers := 0
	grow := func() {
		for helpers < chunks-1 && int(next.Load()) < n-grain {
			select {
			case c.tokens <- struct{}{}:
			default:
				return
			}
			helpers++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-c.tokens }()
				st := &stopper{ctx: stop.ctx, crew: c}
				for lo, ok := take(); ok; lo, ok = take() {
					run(st, lo)
				}
			}()
		}
	}
	grow()
	for lo, ok := take(); ok; lo, ok = take() {
		run(stop, lo)
		grow()
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
	if quit.Load() {
		stop.check() // a helper's stopper stopped: ctx has ended
	}
}
