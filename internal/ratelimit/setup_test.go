package ratelimit

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisURLEnv names the Redis the Redis suite runs against, e.g. redis://127.0.0.1:6379/0.
const redisURLEnv = "RISKAPI_TEST_REDIS_URL"

// testRedisURL returns the test Redis URL, or skips the test when none is configured.
func testRedisURL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(redisURLEnv)
	if url == "" {
		tb.Skipf("%s is not set: skipping the Redis suite (set it to e.g. redis://127.0.0.1:6379/0 to run it)", redisURLEnv)
	}
	return url
}

// openTestRedis opens a client with OpenRedis, closed when the test ends. A configured but
// unreachable Redis fails the test: a suite that silently skips cannot catch anything.
func openTestRedis(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	url := testRedisURL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err := OpenRedis(ctx, url)
	if client != nil {
		tb.Cleanup(func() { _ = client.Close() })
	}
	if err != nil {
		tb.Fatalf("%s is set but that Redis is unusable: %v", redisURLEnv, err)
	}
	return client
}

// testKeyPrefix returns a key prefix no other test or run shares, and deletes every key
// under it (with client) when the test ends, so runs never see each other's counters.
func testKeyPrefix(tb testing.TB, client redis.UniversalClient) string {
	tb.Helper()
	prefix := "riskapitest:" + strings.ToLower(rand.Text()) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("scan test keys %s*: %v", prefix, err)
			return
		}
		if len(keys) > 0 {
			if err := client.Del(ctx, keys...).Err(); err != nil {
				tb.Errorf("delete test keys %s*: %v", prefix, err)
			}
		}
	})
	return prefix
}

// newTestRedis returns a Redis limiter on its own client and its own key prefix.
func newTestRedis(tb testing.TB) *Redis {
	tb.Helper()
	client := openTestRedis(tb)
	return NewRedis(client, testKeyPrefix(tb, client))
}

// futureDay returns the start of a UTC day two days ahead. The suite's explicit times sit
// in it because Redis expires a counter at its window's end by the Redis server's clock: a
// count taken "at" a past hour would be deleted as soon as it was written.
func futureDay() time.Time {
	return Day.Start(time.Now()).Add(48 * time.Hour)
}
