package ratelimit

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedis(t *testing.T) {
	t.Parallel()
	testRedisURL(t)
	runLimiterSuite(t, func(t *testing.T) Limiter { return newTestRedis(t) })
}

// Two Redis limiters on two clients stand for two server processes: together they must
// admit exactly the limit.
func TestRedisExactAcrossProcesses(t *testing.T) {
	t.Parallel()
	clientA, clientB := openTestRedis(t), openTestRedis(t)
	prefix := testKeyPrefix(t, clientA)
	processes := []Limiter{NewRedis(clientA, prefix), NewRedis(clientB, prefix)}
	b := Bucket{Key: "{acct_1}:drift", Limit: 50, Window: Hour}
	now := futureDay().Add(10 * time.Hour)

	counts := takeConcurrently(t, 200, now, func(i int) Limiter { return processes[i%2] }, b)
	assertExactlyCounted(t, counts, 200, 50)
	for i, p := range processes {
		if s := peek(t, p, now, b)[0]; s.Count != 200 {
			t.Errorf("process %d peeks count %d, want 200", i, s.Count)
		}
	}
}

func TestRedisKeysExpireSoonAfterTheirWindow(t *testing.T) {
	t.Parallel()
	client := openTestRedis(t)
	prefix := testKeyPrefix(t, client)
	r := NewRedis(client, prefix)
	ctx := context.Background()
	hourly := Bucket{Key: "{acct_1}:drift", Limit: 10, Window: Hour}
	daily := Bucket{Key: "{acct_1}:test", Limit: 10, Window: Day}

	before := time.Now()
	take(t, r, before, hourly, daily)
	take(t, r, before, hourly, daily) // a second Take must not remove or extend the expiry
	after := time.Now()

	for _, b := range []Bucket{hourly, daily} {
		key := prefix + b.Key + ":" + b.Window.String() + ":" + strconv.FormatInt(b.Window.Start(before).Unix(), 10)
		pttl, err := client.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		expireAt := b.Window.End(before).Add(keyExpiryGrace)
		// Redis measures the TTL from its own clock, which it reads once per event-loop
		// iteration: it may lag this process's by a millisecond or so. A wrong expiry is off
		// by the grace (a minute) or a window (an hour) at least, so a second of slack on
		// either side still catches it.
		const slack = time.Second
		if pttl <= 0 || pttl > expireAt.Sub(before)+slack || pttl < expireAt.Sub(time.Now())-slack {
			t.Errorf("%s: PTTL %s, want about %s (window end + %s grace); took at %s..%s",
				key, pttl, time.Until(expireAt).Round(time.Millisecond), keyExpiryGrace, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
		}
	}
}

// commandCounter is a go-redis hook that counts the commands a client sends and records
// their names; a pipeline counts each command in it.
type commandCounter struct {
	mu    sync.Mutex
	names []string
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.record(cmd)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.record(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *commandCounter) record(cmd redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names = append(c.names, cmd.Name())
}

// take returns the command names recorded since the last call and forgets them.
func (c *commandCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.names
	c.names = nil
	return names
}

func TestRedisOneRoundTripPerCall(t *testing.T) {
	t.Parallel()
	client := openTestRedis(t)
	r := NewRedis(client, testKeyPrefix(t, client))
	counter := &commandCounter{}
	client.AddHook(counter)
	buckets := []Bucket{
		{Key: "{acct_1}:drift", Limit: 100, Window: Hour},
		{Key: "{acct_1}:key_1", Limit: 10, Window: Hour},
		{Key: "{acct_1}:all", Limit: 1000, Window: Day},
	}
	now := futureDay().Add(10 * time.Hour)

	// The first Take may need EVAL after EVALSHA if this Redis has not cached the script.
	take(t, r, now, buckets...)
	counter.take()

	for i := range 10 {
		take(t, r, now, buckets...)
		if names := counter.take(); len(names) != 1 || names[0] != "evalsha" {
			t.Fatalf("Take %d of 3 buckets sent %v, want one evalsha", i+2, names)
		}
	}
	peek(t, r, now, buckets...)
	if names := counter.take(); len(names) != 1 || names[0] != "mget" {
		t.Fatalf("Peek of 3 buckets sent %v, want one mget", names)
	}
}

func TestOpenRedisFailsWhenUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := OpenRedis(ctx, unreachableRedisURL)
	if client == nil {
		t.Fatalf("OpenRedis of a closed port returned no client (error %v); the caller needs it to start on a fallback", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	if err == nil {
		t.Fatal("OpenRedis of a closed port reported no error")
	}
	if _, err := NewRedis(client, "riskapitest:unreachable:").Take(ctx, time.Now(), Bucket{Key: "k", Limit: 1, Window: Hour}); err == nil {
		t.Error("Take through an unreachable Redis reported no error")
	}

	invalid, err := OpenRedis(ctx, "http://127.0.0.1:6379/0")
	if invalid != nil || err == nil || !strings.Contains(err.Error(), "parse redis url") {
		t.Errorf("OpenRedis of an http:// URL: client %v, error %v, want no client and a parse error", invalid, err)
	}
}

func TestOpenRedisDefaultsYieldToTheURL(t *testing.T) {
	t.Parallel()
	plain, err := redis.ParseURL("redis://127.0.0.1:6379/0")
	if err != nil {
		t.Fatal(err)
	}
	applyLimiterDefaults(plain)
	if plain.DialTimeout != 500*time.Millisecond || plain.ReadTimeout != 250*time.Millisecond ||
		plain.WriteTimeout != 250*time.Millisecond || plain.MaxRetries != -1 || plain.DialerRetries != 1 ||
		!plain.ContextTimeoutEnabled {
		t.Errorf("defaults: dial %s read %s write %s retries %d dial attempts %d context timeouts %v",
			plain.DialTimeout, plain.ReadTimeout, plain.WriteTimeout, plain.MaxRetries, plain.DialerRetries, plain.ContextTimeoutEnabled)
	}
	tuned, err := redis.ParseURL("rediss://127.0.0.1:6380/1?dial_timeout=2s&read_timeout=1s&write_timeout=1s&max_retries=2")
	if err != nil {
		t.Fatal(err)
	}
	applyLimiterDefaults(tuned)
	if tuned.DialTimeout != 2*time.Second || tuned.ReadTimeout != time.Second || tuned.WriteTimeout != time.Second || tuned.MaxRetries != 2 {
		t.Errorf("URL settings overridden: dial %s read %s write %s retries %d", tuned.DialTimeout, tuned.ReadTimeout, tuned.WriteTimeout, tuned.MaxRetries)
	}
}

// unreachableRedisURL points at a loopback port nothing listens on (port 1 is reserved
// and unused), so connecting fails at once with "connection refused".
const unreachableRedisURL = "redis://127.0.0.1:1/0"

// newUnreachableRedis returns a Redis limiter on a client from OpenRedis pointed at a closed
// port: every call fails with a connection error.
func newUnreachableRedis(t *testing.T) *Redis {
	t.Helper()
	client, err := OpenRedis(context.Background(), unreachableRedisURL)
	if client == nil || err == nil {
		t.Fatalf("OpenRedis(%s) = %v, %v; want a client and a ping error", unreachableRedisURL, client, err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return NewRedis(client, "riskapitest:unreachable:")
}
