package ratelimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slowPipelines is a go-redis hook that counts pipelines and the commands in them, and holds
// the first pipeline back until released, so that the Takes started meanwhile queue behind it.
type slowPipelines struct {
	mu                  sync.Mutex
	pipelines, commands int
	first               sync.Once
	release             chan struct{}
}

func (h *slowPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *slowPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *slowPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.pipelines++
		h.commands += len(cmds)
		h.mu.Unlock()
		h.first.Do(func() { <-h.release })
		return next(ctx, cmds)
	}
}

// Concurrent Takes share pipelines, and each still gets its own exact count: 120 Takes over
// two processes, limit 50, admit exactly 50 and see the counts 1..120 once each.
func TestRedisConcurrentTakesSharePipelines(t *testing.T) {
	t.Parallel()
	clientA, clientB := openTestRedis(t), openTestRedis(t)
	prefix := testKeyPrefix(t, clientA)
	hook := &slowPipelines{release: make(chan struct{})}
	clientA.AddHook(hook)
	processes := []Limiter{NewRedis(clientA, prefix), NewRedis(clientB, prefix)}
	b := Bucket{Key: "{acct_1}:drift", Limit: 50, Window: Hour}
	now := futureDay().Add(10 * time.Hour)

	go func() {
		time.Sleep(100 * time.Millisecond) // the Takes of process A queue behind its first pipeline
		close(hook.release)
	}()
	counts := takeConcurrently(t, 120, now, func(i int) Limiter { return processes[i%2] }, b)
	assertExactlyCounted(t, counts, 120, 50)
	hook.mu.Lock()
	pipelines, commands := hook.pipelines, hook.commands
	hook.mu.Unlock()
	if commands < 60 {
		t.Fatalf("process A sent %d commands in pipelines for its 60 Takes", commands)
	}
	if pipelines >= 60 {
		t.Errorf("process A's 60 concurrent Takes took %d pipelines, want them to share", pipelines)
	}
	t.Logf("process A: 60 Takes in %d pipelines (%d commands)", pipelines, commands)
}

// After Redis forgets its scripts (a restart or SCRIPT FLUSH), a pipeline's EVALSHAs are
// refused with NOSCRIPT without running; they are sent again in full and count once.
func TestRedisTakeAfterScriptFlush(t *testing.T) {
	client := openTestRedis(t)
	r := NewRedis(client, testKeyPrefix(t, client))
	b := Bucket{Key: "{acct_1}:drift", Limit: 1000, Window: Hour}
	now := futureDay().Add(10 * time.Hour)
	take(t, r, now, b) // the script is cached now
	if err := client.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	counts := takeConcurrently(t, 40, now, func(int) Limiter { return r }, b)
	for i, c := range counts {
		if c < 2 || c > 41 {
			t.Fatalf("take %d counted %d, want 2..41", i, c)
		}
	}
	if s := peek(t, r, now, b)[0]; s.Count != 41 {
		t.Fatalf("count %d after 41 takes", s.Count)
	}
}

// A Take whose context has ended is answered with its error, and the batcher keeps serving.
func TestRedisTakeCanceled(t *testing.T) {
	t.Parallel()
	r := newTestRedis(t)
	b := Bucket{Key: "{acct_1}:drift", Limit: 10, Window: Hour}
	now := futureDay().Add(10 * time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Take(ctx, now, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("Take with a canceled context: %v, want context.Canceled", err)
	}
	if s := take(t, r, now, b)[0]; s.Count > 2 {
		t.Fatalf("count %d after one canceled and one completed Take", s.Count)
	}
}
