package simulation

import (
	"context"
	"errors"
	"sync"
	"time"

	"riskapi/cascade"
	"riskapi/internal/admission"
)

// memoryWait bounds how long a job waits for room in the memory budget before it puts itself
// back in the queue (errMemoryBusy): well under a job's time limit, so that waiting for memory
// never counts as an interrupted attempt.
const memoryWait = 5 * time.Second

// errMemoryBusy: the process's memory budget had no room for the simulation within memoryWait.
var errMemoryBusy = errors.New("the memory budget is full")

// maxPlans is how many simulations' plans a process keeps between their chunks: a plan holds
// the simulation's network (about 100 bytes a node and edge, so ≈ 100 MB at a million edges),
// built once per process rather than once per chunk. Plans in use are never evicted, so a
// process working more simulations at once keeps them all. A plan unused for planIdle is
// evicted too (its simulation was finished by another process, or this one has no more of
// its chunks), so that its memory reservation does not outlive the work.
const (
	maxPlans = 4
	planIdle = 30 * time.Second
)

// plans caches the plans of the simulations whose chunks this process works, each holding the
// simulation's estimated peak memory against the process's budget while it is cached.
type plans struct {
	memory *admission.Memory
	mu     sync.Mutex
	tick   uint64
	byID   map[string]*planEntry
}

type planEntry struct {
	ready    chan struct{} // closed once plan or err is set
	plan     *cascade.Plan
	err      error
	reserve  *admission.Reservation
	users    int
	used     uint64
	lastUsed time.Time
	dropped  bool // the simulation ended here: evict once unused
}

func newPlans(memory *admission.Memory) *plans {
	return &plans{memory: memory, byID: map[string]*planEntry{}}
}

// get returns simulation id's plan of in, building it (once, however many chunks ask at the
// same time) and reserving its memory; release hands it back to the cache.
func (p *plans) get(ctx context.Context, id string, in cascade.Input) (plan *cascade.Plan, release func(), err error) {
	p.mu.Lock()
	e, ok := p.byID[id]
	if !ok {
		e = &planEntry{ready: make(chan struct{})}
		p.byID[id] = e
	}
	e.users++
	p.tick++
	e.used = p.tick
	p.mu.Unlock()
	release = func() { p.put(id, e) }
	if !ok {
		e.plan, e.reserve, e.err = p.build(ctx, in)
		close(e.ready)
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	if e.err != nil {
		release()
		p.drop(id)
		return nil, nil, e.err
	}
	return e.plan, release, nil
}

// build makes the plan once the process's memory budget has room for the simulation's
// estimated peak (all of the budget when the estimate exceeds it, so that it runs alone).
func (p *plans) build(ctx context.Context, in cascade.Input) (*cascade.Plan, *admission.Reservation, error) {
	var reserve *admission.Reservation
	if p.memory != nil {
		cost, err := cascade.Estimate(in)
		if err != nil {
			return nil, nil, err
		}
		wait, cancel := context.WithTimeout(ctx, memoryWait)
		reserve, err = p.memory.ReserveWhenFree(wait, min(cost.Memory, p.memory.Limit()))
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				err = errMemoryBusy
			}
			return nil, nil, err
		}
	}
	plan, err := newPlanGuarded(ctx, in)
	if err != nil && reserve != nil {
		reserve.Release()
		reserve = nil
	}
	return plan, reserve, err
}

// newPlanGuarded builds the plan, turning an engine panic into an error (a background job
// must fail its simulation, not the process).
func newPlanGuarded(ctx context.Context, in cascade.Input) (plan *cascade.Plan, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &engineError{v}
		}
	}()
	return cascade.NewPlan(ctx, in)
}

// put hands an entry back and evicts the least recently used unused plans beyond maxPlans.
func (p *plans) put(id string, e *planEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.users--
	e.lastUsed = time.Now()
	if e.dropped && e.users == 0 && p.byID[id] == e {
		p.evictLocked(id)
	}
	for len(p.byID) > maxPlans {
		var oldest string
		for k, v := range p.byID {
			if v.users == 0 && (oldest == "" || v.used < p.byID[oldest].used) {
				oldest = k
			}
		}
		if oldest == "" {
			return
		}
		p.evictLocked(oldest)
	}
}

// drop evicts simulation id's plan as soon as nothing uses it (the simulation ended here).
func (p *plans) drop(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.byID[id]
	if !ok {
		return
	}
	e.dropped = true
	if e.users == 0 {
		p.evictLocked(id)
	}
}

// expire evicts the unused plans whose last use is older than planIdle.
func (p *plans) expire(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, e := range p.byID {
		if e.users == 0 && now.Sub(e.lastUsed) > planIdle {
			p.evictLocked(id)
		}
	}
}

func (p *plans) evictLocked(id string) {
	e := p.byID[id]
	delete(p.byID, id)
	if e.reserve != nil {
		e.reserve.Release()
	}
}
