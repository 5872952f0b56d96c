package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

var _ Limiter = (*Failover)(nil)

// defaultFailoverRetryAfter is NewFailover's retryAfter when given zero or less: a dead
// Redis then costs one timed-out request (at most 500 ms with OpenRedis's timeouts) every
// 30 s, and a recovered Redis is counting again within 30 s.
const defaultFailoverRetryAfter = 30 * time.Second

// Failover counts with a primary limiter (Redis) and, when the primary fails, answers
// from a fallback (Memory) instead of failing the request: the platform fails open
// (spec §4: "If Redis is unreachable, fail open to a per-process limiter and log it;
// never 500").
//
// While failed over, each process counts on its own, so what an outage can admit is
// bounded by sharing: a process admits, per bucket, at most its share of what was left of
// the limit when it last heard from the primary — ceil((Limit − last count seen) / N), N
// being SetProcesses' number of processes (1 unless set). A bucket the process had not seen
// in this window counts as untouched (its share is ceil(Limit / N)). So with N at least the
// number of processes, an outage admits at most the limit's remainder plus N−1 requests (the
// rounding up) in a window; with N = 1 and P processes, up to P times the remainder. The
// states answered during an outage say this process's share: Remaining is what is left of
// it, and Count is Limit minus that.
//
// When the primary answers again, before it counts anything more, Failover copies back
// what it counted alone (seedScript): every counter of the current windows is raised to the
// last count this process saw and the outage's requests are added. A Redis that restarted
// empty (no persistence) so gets back the count it had, as far as any process saw it, and
// the requests of the outage still count for the rest of the window. Each process copies
// back its own requests when it retries, up to retryAfter apart: until the last one has, the
// first ones back can admit what the others used of their shares, so a window admits at
// most Limit + N − 1 when all are back before the bucket's next request, and
// Limit + (N − 1)·⌈Limit/N⌉ at worst (62 and 100 for 60 an hour over 3 processes; without
// sharing and copying back, 3 × 60 = 180).
//
// After a primary error Failover does not call the primary again until retryAfter has
// passed; then one request tries it (the others keep using the fallback meanwhile), so a
// dead Redis costs one timed-out call per retryAfter, not one per request. It logs one
// warning when it fails over and at most one per retryAfter while the primary keeps
// failing, and one info message when the primary answers again.
//
// A call whose ctx was canceled (the client went away) is answered by the fallback without
// marking the primary failed; an expired deadline does mark it, since a Redis too slow for
// the request's deadline is as good as down.
type Failover struct {
	primary  Limiter
	fallback *Memory
	// seen holds, per bucket and window, the highest count the primary answered: what was
	// used of the limit when the primary was last heard from.
	seen *Memory
	// processes is N, how many processes share a limit during an outage (at least 1).
	processes  int64
	logger     *slog.Logger
	retryAfter time.Duration
	clock      func() time.Time // when to retry and log; tests replace it

	mu sync.Mutex
	// failing is true from a primary error until the primary answers again.
	failing bool
	// failedAt is when the primary started failing.
	failedAt time.Time
	// retryAt is the earliest time a request may try the primary while failing.
	retryAt time.Time
	// warnedAt is when the last warning was logged.
	warnedAt time.Time
	// fallbackAnswers counts the calls the fallback answered since the last log message.
	fallbackAnswers int64
}

// NewFailover returns a limiter that uses primary and, after primary errors, fallback.
// logger receives the failover and recovery messages (slog.Default() if nil). retryAfter is
// how long to stay on the fallback before trying the primary again (30 s if ≤ 0).
func NewFailover(primary Limiter, fallback *Memory, logger *slog.Logger, retryAfter time.Duration) *Failover {
	if logger == nil {
		logger = slog.Default()
	}
	if retryAfter <= 0 {
		retryAfter = defaultFailoverRetryAfter
	}
	return &Failover{
		primary:    primary,
		fallback:   fallback,
		seen:       NewMemory(),
		processes:  1,
		logger:     logger,
		retryAfter: retryAfter,
		clock:      time.Now,
	}
}

// SetProcesses sets N, how many server processes share each limit while the primary is
// unreachable (see Failover); less than 1 counts as 1. Call it before the first request.
func (f *Failover) SetProcesses(n int) {
	f.processes = max(1, int64(n))
}

// Take counts with the primary, or with the fallback while the primary is failing; see
// Failover. It returns an error only for invalid buckets or when the fallback fails too.
func (f *Failover) Take(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	return f.route(ctx, now, "take", func(l Limiter) ([]State, error) { return l.Take(ctx, now, buckets...) }, buckets)
}

// Peek reads from the primary, or from the fallback while the primary is failing.
func (f *Failover) Peek(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	return f.route(ctx, now, "peek", func(l Limiter) ([]State, error) { return l.Peek(ctx, now, buckets...) }, buckets)
}

// UsingFallback reports whether the fallback is answering because the primary failed; a
// readiness check or a metric can expose it.
func (f *Failover) UsingFallback() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failing
}

// route runs call against the primary when it is healthy or due for a retry, and against
// the fallback otherwise or when the primary fails. A retry first copies the outage's
// counts back to the primary (restore), so the call it then makes counts on top of them.
func (f *Failover) route(ctx context.Context, now time.Time, op string, call func(Limiter) ([]State, error), buckets []Bucket) ([]State, error) {
	// An invalid bucket is the caller's bug: every limiter would refuse it, and it says
	// nothing about the primary's health.
	if err := validateBuckets(buckets); err != nil {
		return nil, err
	}
	due, retrying := f.primaryDue()
	if !due {
		return f.answerFromFallback(now, op, call, buckets, nil)
	}
	if retrying {
		if err := f.restore(ctx, now, true); err != nil {
			f.primaryFailed(ctx, "seed", err)
			return f.answerFromFallback(now, op, call, buckets, err)
		}
	}
	states, err := call(f.primary)
	if err == nil {
		f.seen.raise(now, states)
		if f.primaryAnswered(ctx) {
			// Requests answered by the fallback while restore ran: few, but counted.
			if err := f.restore(ctx, now, false); err != nil {
				f.logger.LogAttrs(ctx, slog.LevelWarn, "rate limiter: copying the last outage counts to the primary failed",
					slog.String("error", err.Error()))
			}
		}
		return states, nil
	}
	// A request whose client went away cancels its context; that is not the primary
	// failing, so answer without marking it failed. A deadline that expired is counted as
	// a failure: a Redis too slow for the request's deadline is as good as down.
	if errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
		return f.answerFromFallback(now, op, call, buckets, err)
	}
	f.primaryFailed(ctx, op, err)
	return f.answerFromFallback(now, op, call, buckets, err)
}

// seed is one counter to copy to the primary after an outage: raise it to at least floor,
// then add add.
type seed struct {
	key   string
	id    windowID
	floor int64
	add   int64
}

// seeder is a primary that can take counts back after an outage (Redis).
type seeder interface {
	seed(ctx context.Context, seeds []seed, done func([]seed)) error
}

// restoreTimeout bounds one copy of the outage's counts back to the primary: 5 s is 100,000
// keys at 200 pipelined round trips of 25 ms, far slower than a healthy Redis; a copy cut
// short leaves the rest for the next retry without counting anything twice.
const restoreTimeout = 5 * time.Second

// restore copies to the primary what the fallback counted in the windows in progress and,
// with floors, the last count seen of every bucket this process saw in them; each batch the
// primary accepted is taken off the fallback, so a failure part-way counts nothing twice.
func (f *Failover) restore(ctx context.Context, now time.Time, floors bool) error {
	primary, ok := f.primary.(seeder)
	if !ok {
		return nil
	}
	type counterID struct {
		key string
		id  windowID
	}
	index := make(map[counterID]int)
	var seeds []seed
	add := func(c counter, floor bool) {
		at, ok := index[counterID{c.key, c.id}]
		if !ok {
			at = len(seeds)
			index[counterID{c.key, c.id}] = at
			seeds = append(seeds, seed{key: c.key, id: c.id})
		}
		if floor {
			seeds[at].floor = c.count
		} else {
			seeds[at].add = c.count
		}
	}
	for _, c := range f.fallback.snapshot(now) {
		add(c, false)
	}
	if floors {
		for _, c := range f.seen.snapshot(now) {
			add(c, true)
		}
	}
	// The copy is the process's, not the request's: a client leaving must not cut it short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	return primary.seed(ctx, seeds, func(done []seed) {
		counted := make([]counter, 0, len(done))
		for _, s := range done {
			if s.add > 0 {
				counted = append(counted, counter{key: s.key, id: s.id, count: s.add})
			}
		}
		f.fallback.subtract(counted)
	})
}

// primaryDue reports whether this call should use the primary: always while it is
// healthy; while failing, only the first call after retryAt (retrying is then true), which
// moves retryAt on so that concurrent calls keep using the fallback while this one tries.
func (f *Failover) primaryDue() (due, retrying bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.failing {
		return true, false
	}
	now := f.clock()
	if now.Before(f.retryAt) {
		return false, false
	}
	f.retryAt = now.Add(f.retryAfter)
	return true, true
}

// primaryAnswered marks the primary healthy and reports whether it was failing.
func (f *Failover) primaryAnswered(ctx context.Context) bool {
	f.mu.Lock()
	if !f.failing {
		f.mu.Unlock()
		return false
	}
	f.failing = false
	downFor := f.clock().Sub(f.failedAt)
	answers := f.fallbackAnswers
	f.fallbackAnswers = 0
	f.mu.Unlock()
	f.logger.LogAttrs(ctx, slog.LevelInfo, "rate limiter: primary answering again; counts are shared across processes again",
		slog.Duration("failed_for", downFor),
		slog.Int64("fallback_answers", answers))
	return true
}

func (f *Failover) primaryFailed(ctx context.Context, op string, err error) {
	f.mu.Lock()
	now := f.clock()
	if !f.failing {
		f.failing = true
		f.failedAt = now
		f.retryAt = now.Add(f.retryAfter)
		f.warnedAt = time.Time{} // the first failure is always logged
	}
	if !f.warnedAt.IsZero() && now.Sub(f.warnedAt) < f.retryAfter {
		f.mu.Unlock()
		return
	}
	f.warnedAt = now
	answers := f.fallbackAnswers
	f.fallbackAnswers = 0
	failingFor := now.Sub(f.failedAt)
	f.mu.Unlock()
	f.logger.LogAttrs(ctx, slog.LevelWarn, "rate limiter: primary failed; each process admits its share of the limit until it answers",
		slog.String("op", op),
		slog.String("error", err.Error()),
		slog.Duration("failing_for", failingFor),
		slog.Duration("retry_after", f.retryAfter),
		slog.Int64("processes", f.processes),
		slog.Int64("fallback_answers", answers))
}

// answerFromFallback runs call against the fallback and turns its per-process counts into
// this process's share of the limit (see Failover); primaryErr, if any, is joined to the
// error returned when the fallback fails too.
func (f *Failover) answerFromFallback(now time.Time, op string, call func(Limiter) ([]State, error), buckets []Bucket, primaryErr error) ([]State, error) {
	states, err := call(f.fallback)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: failover %s: fallback: %w", op, errors.Join(err, primaryErr))
	}
	seen, err := f.seen.Peek(context.Background(), now, buckets...)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: failover %s: last counts seen: %w", op, err)
	}
	for i := range states {
		limit := states[i].Bucket.Limit
		share := (max(0, limit-seen[i].Count) + f.processes - 1) / f.processes
		states[i].Count += limit - share
	}
	f.mu.Lock()
	f.fallbackAnswers++
	f.mu.Unlock()
	return states, nil
}
