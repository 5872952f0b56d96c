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
// their estimated peak (RISKAPI_MEMORY_LIMIT). A request reserves twice: for its body before
// reading it (Reserve), then for its work once the body is decoded and the work estimated
// (Grow). Waiters are served in order, growths before new reservations: a request that already
// holds memory finishes and gives it back sooner than a new one, and serving new arrivals
// first could leave every admitted request waiting on memory that only the newcomers' waits
// running out would free. Within each class it is first come, first served (a large
// reservation is not starved by a stream of small ones), and a reservation larger than the
// whole budget is refused at once: it could never fit.
type Memory struct {
	limit int64
	wait  time.Duration

	mu      sync.Mutex
	held    int64
	waiters list.List // of *waiter: growths first, then new reservations, each in arrival order
}

type waiter struct {
	n     int64
	grow  bool
	ready chan struct{} // closed once the bytes are held for this waiter
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

// acquire waits until n bytes are held for the caller, at most m.wait or until ctx ends.
func (m *Memory) acquire(ctx context.Context, n int64, grow bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.held+n <= m.limit && !m.queuedAhead(grow) {
		m.held += n
		m.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, grow: grow, ready: make(chan struct{})}
	var elem *list.Element
	if grow {
		mark := m.waiters.Front()
		for mark != nil && mark.Value.(*waiter).grow {
			mark = mark.Next()
		}
		if mark != nil {
			elem = m.waiters.InsertBefore(w, mark)
		} else {
			elem = m.waiters.PushBack(w)
		}
	} else {
		elem = m.waiters.PushBack(w)
	}
	m.mu.Unlock()

	timer := time.NewTimer(m.wait)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = ErrMemoryBusy
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-w.ready: // granted while giving up: give it back
		m.held -= n
	default:
		m.waiters.Remove(elem)
	}
	m.grant() // the waiters behind this one may fit now
	return err
}

// queuedAhead reports whether a waiter would be served before a new caller of the class.
func (m *Memory) queuedAhead(grow bool) bool {
	front := m.waiters.Front()
	return front != nil && (!grow || front.Value.(*waiter).grow)
}

// grant serves waiters in order while the first one fits. m.mu is held.
func (m *Memory) grant() {
	for {
		front := m.waiters.Front()
		if front == nil {
			return
		}
		w := front.Value.(*waiter)
		if m.held+w.n > m.limit {
			return
		}
		m.held += w.n
		m.waiters.Remove(front)
		close(w.ready)
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
	return r, r.add(ctx, n, false)
}

// ErrTooLarge reports a reservation larger than the whole budget.
var ErrTooLarge = errors.New("admission: the reservation exceeds the whole memory budget")

// Grow adds n bytes to the reservation, waiting as Reserve does but ahead of new
// reservations; on error the reservation is as it was.
func (r *Reservation) Grow(ctx context.Context, n int64) error { return r.add(ctx, n, true) }

func (r *Reservation) add(ctx context.Context, n int64, grow bool) error {
	if n <= 0 {
		return nil
	}
	r.mu.Lock()
	held := r.bytes
	r.mu.Unlock()
	if held+n > r.m.limit {
		return ErrTooLarge
	}
	if err := r.m.acquire(ctx, n, grow); err != nil {
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
