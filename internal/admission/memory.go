package admission

import (
	"bufio"
	"container/list"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMemoryWait is how long a request waits for memory before it is refused with 503.
const DefaultMemoryWait = 10 * time.Second

// ErrMemoryBusy reports that a reservation did not fit the budget within the wait: the
// request gets 503 SERVICE_UNAVAILABLE with Retry-After.
var ErrMemoryBusy = errors.New("admission: the memory budget stayed full for the whole wait")

// Memory is the process-wide memory budget that heavy requests are admitted against by
// their estimated peak (RISKAPI_MEMORY_LIMIT). A request reserves for its body before reading
// it (Reserve), then grows the reservation for its work once the body is decoded and the work
// estimated (Grow). Growths are served before new reservations, any growth that fits in
// arrival order (a request that holds memory finishes and gives it back sooner than a new one
// would); new reservations first come, first served (a large one is not starved by a stream
// of small ones), and only while no growth waits. When every byte held belongs to requests
// waiting to grow, none can ever be served: the newest of them is refused at once (its request
// answers 503 and gives its memory back), so the others go on. A reservation larger than the
// whole budget is refused at once: it could never fit.
type Memory struct {
	limit int64
	wait  time.Duration

	mu      sync.Mutex
	held    int64
	waiters list.List // of *waiter, in arrival order
	// growing is how many waiters are growths, and stuck the bytes their reservations hold.
	growing int
	stuck   int64
}

type waiter struct {
	n     int64
	grow  bool
	holds int64         // for a growth: what its reservation already holds
	ready chan struct{} // closed once the waiter is served or refused
	err   error         // set before ready closes when refused
}

// NewMemory returns a budget of limit bytes whose reservations wait up to wait (zero or
// less: DefaultMemoryWait).
func NewMemory(limit int64, wait time.Duration) *Memory {
	if wait <= 0 {
		wait = DefaultMemoryWait
	}
	return &Memory{limit: limit, wait: wait}
}

// Limit is the budget in bytes.
func (m *Memory) Limit() int64 { return m.limit }

// acquire waits until n bytes are held for the caller, at most wait (none when wait is 0)
// or until ctx ends. holds is what a growth's reservation already holds.
func (m *Memory) acquire(ctx context.Context, n int64, grow bool, holds int64, wait time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.held+n <= m.limit && (grow || m.waiters.Len() == 0) {
		m.held += n
		m.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, grow: grow, holds: holds, ready: make(chan struct{})}
	elem := m.waiters.PushBack(w)
	if grow {
		m.growing++
		m.stuck += holds
	}
	m.breakDeadlock()
	m.mu.Unlock()

	var timeout <-chan time.Time
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		timeout = timer.C
	}
	var err error
	select {
	case <-w.ready:
		return w.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = ErrMemoryBusy
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-w.ready: // served or refused while giving up
		if w.err == nil {
			m.held -= n
		}
	default:
		m.leave(elem)
	}
	m.grant() // the waiters behind this one may be served now
	return err
}

// leave takes a waiter off the queue. m.mu is held.
func (m *Memory) leave(elem *list.Element) {
	w := m.waiters.Remove(elem).(*waiter)
	if w.grow {
		m.growing--
		m.stuck -= w.holds
	}
}

// grant serves the growths that fit, then, while no growth waits, new reservations in order
// while the first fits. m.mu is held.
func (m *Memory) grant() {
	for e := m.waiters.Front(); e != nil; {
		next := e.Next()
		if w := e.Value.(*waiter); w.grow && m.held+w.n <= m.limit {
			m.held += w.n
			m.leave(e)
			close(w.ready)
		}
		e = next
	}
	for m.growing == 0 {
		front := m.waiters.Front()
		if front == nil {
			break
		}
		w := front.Value.(*waiter)
		if m.held+w.n > m.limit {
			break
		}
		m.held += w.n
		m.leave(front)
		close(w.ready)
	}
	m.breakDeadlock()
}

// breakDeadlock refuses the newest waiting growth while every byte held belongs to waiting
// growths: nothing running will give memory back, so none of them could be served. m.mu is
// held.
func (m *Memory) breakDeadlock() {
	for m.growing > 0 && m.stuck >= m.held {
		for e := m.waiters.Back(); e != nil; e = e.Prev() {
			if w := e.Value.(*waiter); w.grow {
				w.err = ErrMemoryBusy
				m.leave(e)
				close(w.ready)
				break
			}
		}
	}
}

// release gives n bytes back and serves the waiters that fit.
func (m *Memory) release(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held -= n
	m.grant()
}

// Reservation is memory held against the budget until Release.
type Reservation struct {
	m     *Memory
	mu    sync.Mutex
	bytes int64
}

// Reserve waits until n bytes fit the budget, at most the budget's wait or until ctx ends,
// and holds them. It returns ErrMemoryBusy when the wait ran out, ctx's error when ctx
// ended, and ErrTooLarge when n exceeds the whole budget. n ≤ 0 reserves nothing.
func (m *Memory) Reserve(ctx context.Context, n int64) (*Reservation, error) {
	r := &Reservation{m: m}
	return r, r.add(ctx, n, false, m.wait)
}

// ReserveWhenFree is Reserve without the wait's end, for background work that has no client
// to answer: it keeps its place until the bytes fit or ctx ends.
func (m *Memory) ReserveWhenFree(ctx context.Context, n int64) (*Reservation, error) {
	r := &Reservation{m: m}
	return r, r.add(ctx, n, false, 0)
}

// ErrTooLarge reports a reservation larger than the whole budget.
var ErrTooLarge = errors.New("admission: the reservation exceeds the whole memory budget")

// Grow adds n bytes to the reservation, waiting as Reserve does but ahead of new
// reservations; on error the reservation is as it was.
func (r *Reservation) Grow(ctx context.Context, n int64) error {
	return r.add(ctx, n, true, r.m.wait)
}

func (r *Reservation) add(ctx context.Context, n int64, grow bool, wait time.Duration) error {
	if n <= 0 {
		return nil
	}
	r.mu.Lock()
	held := r.bytes
	r.mu.Unlock()
	if held+n > r.m.limit {
		return ErrTooLarge
	}
	if err := r.m.acquire(ctx, n, grow, held, wait); err != nil {
		return err
	}
	r.mu.Lock()
	r.bytes += n
	r.mu.Unlock()
	return nil
}

// Release gives every reserved byte back; it may be called more than once.
func (r *Reservation) Release() {
	r.mu.Lock()
	n := r.bytes
	r.bytes = 0
	r.mu.Unlock()
	if n > 0 {
		r.m.release(n)
	}
}

// Bytes is how much the reservation holds.
func (r *Reservation) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

// DefaultMemoryLimit is the contract's default budget: half of the memory this process may
// use, the cgroup's limit when it runs in a container that has one, else the machine's.
// It returns 0 when neither can be read.
func DefaultMemoryLimit() int64 {
	total := machineMemory()
	if c := cgroupMemoryLimit(); c > 0 && (total == 0 || c < total) {
		total = c
	}
	return total / 2
}

// cgroupMemoryLimit reads the cgroup v2 (memory.max) or v1 (memory.limit_in_bytes) limit;
// 0 when there is none.
func cgroupMemoryLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && v > 0 && v < 1<<60 { // v1 reports "no limit" as a huge number
			return v
		}
	}
	return 0
}

// machineMemory reads MemTotal from /proc/meminfo; 0 when it cannot.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kib << 10
			}
		}
	}
	return 0
}
