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
// While failed over, each process counts on its own, so the limits become per-process:
// with N server processes behind a load balancer, an account can make up to N times its
// limit. The fallback keeps counting through the window, and what it counted is not copied
// to the primary when the primary recovers, so for the rest of that window the primary's
// count is lower than the true number of requests.
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
	primary    Limiter
	fallback   Limiter
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
func NewFailover(primary, fallback Limiter, logger *slog.Logger, retryAfter time.Duration) *Failover {
	if logger == nil {
		logger = slog.Default()
	}
	if retryAfter <= 0 {
		retryAfter = defaultFailoverRetryAfter
	}
	return &Failover{
		primary:    primary,
		fallback:   fallback,
		logger:     logger,
		retryAfter: retryAfter,
		clock:      time.Now,
	}
}

// Take counts with the primary, or with the fallback while the primary is failing; see
// Failover. It returns an error only for invalid buckets or when the fallback fails too.
func (f *Failover) Take(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	return f.route(ctx, "take", func(l Limiter) ([]State, error) { return l.Take(ctx, now, buckets...) }, buckets)
}

// Peek reads from the primary, or from the fallback while the primary is failing.
func (f *Failover) Peek(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	return f.route(ctx, "peek", func(l Limiter) ([]State, error) { return l.Peek(ctx, now, buckets...) }, buckets)
}

// UsingFallback reports whether the fallback is answering because the primary failed; a
// readiness check or a metric can expose it.
func (f *Failover) UsingFallback() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failing
}

// route runs call against the primary when it is healthy or due for a retry, and against
// the fallback otherwise or when the primary fails.
func (f *Failover) route(ctx context.Context, op string, call func(Limiter) ([]State, error), buckets []Bucket) ([]State, error) {
	// An invalid bucket is the caller's bug: every limiter would refuse it, and it says
	// nothing about the primary's health.
	if err := validateBuckets(buckets); err != nil {
		return nil, err
	}
	if !f.primaryDue() {
		return f.answerFromFallback(op, call, nil)
	}
	states, err := call(f.primary)
	if err == nil {
		f.primaryAnswered(ctx)
		return states, nil
	}
	// A request whose client went away cancels its context; that is not the primary
	// failing, so answer without marking it failed. A deadline that expired is counted as
	// a failure: a Redis too slow for the request's deadline is as good as down.
	if errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
		return f.answerFromFallback(op, call, err)
	}
	f.primaryFailed(ctx, op, err)
	return f.answerFromFallback(op, call, err)
}

// primaryDue reports whether this call should use the primary: always while it is
// healthy; while failing, only the first call after retryAt, which moves retryAt on so
// that concurrent calls keep using the fallback while this one tries.
func (f *Failover) primaryDue() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.failing {
		return true
	}
	now := f.clock()
	if now.Before(f.retryAt) {
		return false
	}
	f.retryAt = now.Add(f.retryAfter)
	return true
}

func (f *Failover) primaryAnswered(ctx context.Context) {
	f.mu.Lock()
	if !f.failing {
		f.mu.Unlock()
		return
	}
	f.failing = false
	downFor := f.clock().Sub(f.failedAt)
	answers := f.fallbackAnswers
	f.fallbackAnswers = 0
	f.mu.Unlock()
	f.logger.LogAttrs(ctx, slog.LevelInfo, "rate limiter: primary answering again; counts are shared across processes again",
		slog.Duration("failed_for", downFor),
		slog.Int64("fallback_answers", answers))
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
	f.logger.LogAttrs(ctx, slog.LevelWarn, "rate limiter: primary failed; counting per process until it answers",
		slog.String("op", op),
		slog.String("error", err.Error()),
		slog.Duration("failing_for", failingFor),
		slog.Duration("retry_after", f.retryAfter),
		slog.Int64("fallback_answers", answers))
}

// answerFromFallback runs call against the fallback; primaryErr, if any, is joined to the
// error returned when the fallback fails too.
func (f *Failover) answerFromFallback(op string, call func(Limiter) ([]State, error), primaryErr error) ([]State, error) {
	states, err := call(f.fallback)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: failover %s: fallback: %w", op, errors.Join(err, primaryErr))
	}
	f.mu.Lock()
	f.fallbackAnswers++
	f.mu.Unlock()
	return states, nil
}
