package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/testclock"

	"riskapi/internal/testlog"
)

// countingLimiter passes calls to a replaceable target and counts them, so a test can see
// when Failover tries its primary and can make the primary recover.
type countingLimiter struct {
	calls  atomic.Int64
	mu     sync.Mutex
	target Limiter
}

func (c *countingLimiter) use(target Limiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.target = target
}

func (c *countingLimiter) current() Limiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.target
}

func (c *countingLimiter) Take(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	c.calls.Add(1)
	return c.current().Take(ctx, now, buckets...)
}

func (c *countingLimiter) Peek(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	c.calls.Add(1)
	return c.current().Peek(ctx, now, buckets...)
}

type failoverFixture struct {
	failover *Failover
	primary  *countingLimiter
	fallback *Memory
	clock    *testclock.Clock
	log      *testlog.Buffer
}

const testRetryAfter = 10 * time.Second

// newFailoverFixture returns a Failover whose primary is a Redis limiter on a real client
// pointed at a closed port, with a Memory fallback, a fake clock and a captured log.
func newFailoverFixture(t *testing.T) failoverFixture {
	t.Helper()
	primary := &countingLimiter{}
	primary.use(newUnreachableRedis(t))
	fallback := NewMemory()
	log := &testlog.Buffer{}
	f := NewFailover(primary, fallback, slog.New(slog.NewTextHandler(log, nil)), testRetryAfter)
	clock := testclock.New(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	f.clock = clock.Now
	return failoverFixture{failover: f, primary: primary, fallback: fallback, clock: clock, log: log}
}

func TestFailoverAnswersFromFallbackAndRetriesAfterRetryAfter(t *testing.T) {
	t.Parallel()
	fx := newFailoverFixture(t)
	b := Bucket{Key: "{acct_1}:drift", Limit: 50, Window: Hour}
	now := futureDay().Add(10 * time.Hour)

	for i := int64(1); i <= 100; i++ {
		if s := takeOne(t, fx.failover, now, b); s.Count != i || s.Allowed() != (i <= 50) {
			t.Fatalf("take %d while Redis is down: count %d allowed %v, want %d %v", i, s.Count, s.Allowed(), i, i <= 50)
		}
	}
	if got := fx.primary.calls.Load(); got != 1 {
		t.Errorf("100 takes with a dead primary called it %d times, want 1", got)
	}
	if got := fx.log.Count("level=WARN"); got != 1 {
		t.Errorf("%d warnings logged for 100 takes, want 1:\n%s", got, fx.log.String())
	}
	if !fx.failover.UsingFallback() {
		t.Error("UsingFallback is false while the primary is down")
	}
	if s := peek(t, fx.failover, now, b)[0]; s.Count != 100 {
		t.Errorf("peek while failed over: count %d, want the fallback's 100", s.Count)
	}

	fx.clock.Advance(testRetryAfter - time.Millisecond)
	take(t, fx.failover, now, b)
	if got := fx.primary.calls.Load(); got != 1 {
		t.Errorf("primary called %d times before retryAfter passed, want 1", got)
	}

	fx.clock.Advance(time.Millisecond)
	for range 50 {
		take(t, fx.failover, now, b)
	}
	if got := fx.primary.calls.Load(); got != 2 {
		t.Errorf("primary called %d times once retryAfter passed, want 2 (one retry)", got)
	}
	if got := fx.log.Count("level=WARN"); got != 2 {
		t.Errorf("%d warnings after a failed retry one retryAfter later, want 2", got)
	}

	// Redis comes back: the next retry uses it, and every call after that.
	recovered := NewMemory()
	fx.primary.use(recovered)
	fx.clock.Advance(testRetryAfter)
	for i := int64(1); i <= 5; i++ {
		if s := takeOne(t, fx.failover, now, b); s.Count != i {
			t.Fatalf("take %d after recovery: count %d, want %d from the recovered primary", i, s.Count, i)
		}
	}
	if got := fx.primary.calls.Load(); got != 7 {
		t.Errorf("primary called %d times, want 7 (2 failed, 5 after recovery)", got)
	}
	if fx.failover.UsingFallback() {
		t.Error("UsingFallback is true after the primary answered")
	}
	if got := fx.log.Count("level=INFO"); got != 1 || !strings.Contains(fx.log.String(), "primary answering again") {
		t.Errorf("%d recovery messages, want 1:\n%s", got, fx.log.String())
	}
	if got := fx.log.Count("level=WARN"); got != 2 {
		t.Errorf("%d warnings after recovery, want still 2", got)
	}

	// A new outage is reported at once, without waiting a retryAfter after the last warning.
	fx.primary.use(newUnreachableRedis(t))
	take(t, fx.failover, now, b)
	if got := fx.log.Count("level=WARN"); got != 3 {
		t.Errorf("%d warnings after a second outage, want 3", got)
	}
}

// While failing, concurrent requests that arrive after retryAfter try the primary once
// between them; the rest keep answering from the fallback.
func TestFailoverRetriesOnceAmongConcurrentCalls(t *testing.T) {
	t.Parallel()
	fx := newFailoverFixture(t)
	b := Bucket{Key: "{acct_1}:drift", Limit: 50, Window: Hour}
	now := futureDay().Add(10 * time.Hour)
	take(t, fx.failover, now, b)
	fx.clock.Advance(testRetryAfter)

	counts := takeConcurrently(t, 200, now, func(int) Limiter { return fx.failover }, b)
	if got := fx.primary.calls.Load(); got != 2 {
		t.Errorf("200 concurrent takes after retryAfter called the primary %d times in all, want 2", got)
	}
	// The fallback counted all of them exactly, starting after the first take.
	for i := range counts {
		counts[i]--
	}
	assertExactlyCounted(t, counts, 200, 49)
}

func TestFailoverRejectsInvalidBucketsWithoutFailingOver(t *testing.T) {
	t.Parallel()
	fx := newFailoverFixture(t)
	_, err := fx.failover.Take(context.Background(), futureDay(), Bucket{Key: "", Limit: 1, Window: Hour})
	if !errors.Is(err, ErrInvalidBucket) {
		t.Errorf("Take of an invalid bucket: error %v, want ErrInvalidBucket", err)
	}
	if fx.primary.calls.Load() != 0 || fx.failover.UsingFallback() || fx.log.Count("level=") != 0 {
		t.Errorf("an invalid bucket reached the primary (%d calls) or failed over (%v, log %q)",
			fx.primary.calls.Load(), fx.failover.UsingFallback(), fx.log.String())
	}
}

// A request whose client went away cancels its context; that says nothing about Redis.
func TestFailoverIgnoresCanceledRequests(t *testing.T) {
	t.Parallel()
	fx := newFailoverFixture(t)
	healthy := NewMemory()
	fx.primary.use(&cancelingLimiter{Limiter: healthy})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	states, err := fx.failover.Take(ctx, futureDay(), Bucket{Key: "{acct_1}:drift", Limit: 1, Window: Hour})
	if err != nil || len(states) != 1 || states[0].Count != 1 {
		t.Fatalf("canceled Take: states %v, error %v, want the fallback's count 1", states, err)
	}
	if fx.failover.UsingFallback() || fx.log.Count("level=WARN") != 0 {
		t.Errorf("a canceled request failed the primary over (log %q)", fx.log.String())
	}
}

// cancelingLimiter fails with the context's error when it is done, as a network call would.
type cancelingLimiter struct{ Limiter }

func (c *cancelingLimiter) Take(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.Limiter.Take(ctx, now, buckets...)
}

// With a healthy primary the fallback is never used.
func TestFailoverUsesHealthyPrimary(t *testing.T) {
	t.Parallel()
	fx := newFailoverFixture(t)
	primary := NewMemory()
	fx.primary.use(primary)
	b := Bucket{Key: "{acct_1}:drift", Limit: 5, Window: Hour}
	now := futureDay()
	for range 3 {
		take(t, fx.failover, now, b)
	}
	if p, f := peek(t, primary, now, b)[0].Count, peek(t, fx.fallback, now, b)[0].Count; p != 3 || f != 0 {
		t.Errorf("primary counted %d and fallback %d, want 3 and 0", p, f)
	}
	if fx.log.Count("level=") != 0 {
		t.Errorf("logged with a healthy primary: %s", fx.log.String())
	}
}

// When Redis dies under load, every request in flight fails at once; that is one outage
// and one warning, not one per request.
func TestFailoverWarnsOnceWhenRequestsFailTogether(t *testing.T) {
	t.Parallel()
	fx := newFailoverFixture(t)
	const inFlight = 20
	fx.primary.use(newFailTogetherLimiter(inFlight))
	b := Bucket{Key: "{acct_1}:drift", Limit: 50, Window: Hour}
	now := futureDay()

	counts := takeConcurrently(t, inFlight, now, func(int) Limiter { return fx.failover }, b)
	assertExactlyCounted(t, counts, inFlight, inFlight) // all answered by the fallback
	if got := fx.primary.calls.Load(); got != inFlight {
		t.Fatalf("primary saw %d calls, want all %d in flight", got, inFlight)
	}
	if got := fx.log.Count("level=WARN"); got != 1 {
		t.Errorf("%d warnings for %d requests failing together, want 1:\n%s", got, inFlight, fx.log.String())
	}
	take(t, fx.failover, now, b)
	if got := fx.primary.calls.Load(); got != inFlight {
		t.Errorf("a call after the outage began went to the primary (%d calls)", got)
	}
}

// failTogetherLimiter fails every call, but only once n calls are waiting (or 10 s have
// passed), so that n callers see the failure at the same moment.
type failTogetherLimiter struct {
	n       int
	mu      sync.Mutex
	waiting int
	all     chan struct{} // closed when n calls are waiting
}

func newFailTogetherLimiter(n int) *failTogetherLimiter {
	return &failTogetherLimiter{n: n, all: make(chan struct{})}
}

func (f *failTogetherLimiter) wait() error {
	f.mu.Lock()
	f.waiting++
	if f.waiting == f.n {
		close(f.all)
	}
	f.mu.Unlock()
	select {
	case <-f.all:
	case <-time.After(10 * time.Second):
	}
	return errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}

func (f *failTogetherLimiter) Take(context.Context, time.Time, ...Bucket) ([]State, error) {
	return nil, f.wait()
}

func (f *failTogetherLimiter) Peek(context.Context, time.Time, ...Bucket) ([]State, error) {
	return nil, f.wait()
}
