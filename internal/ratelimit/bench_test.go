package ratelimit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// accountBuckets returns, for each of n accounts, the three buckets a live request counts
// against: the product's hourly limit, the restricted key's hourly limit and the
// account's non-product hourly limit. Limits are high so every Take is admitted.
func accountBuckets(n int) [][]Bucket {
	out := make([][]Bucket, n)
	for i := range out {
		acct := fmt.Sprintf("{acct_%06d}", i)
		out[i] = []Bucket{
			{Key: acct + ":drift", Limit: 1_000_000, Window: Hour},
			{Key: acct + ":key_1", Limit: 1_000_000, Window: Hour},
			{Key: acct + ":test", Limit: 1_000_000, Window: Day},
		}
	}
	return out
}

// benchmarkTakeParallel runs Take of 3 buckets from all Ps at once, each iteration on the
// next of the given accounts.
func benchmarkTakeParallel(b *testing.B, l Limiter, accounts [][]Bucket) {
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(next.Add(1)) * 7919 // goroutines start on different accounts
		for pb.Next() {
			i++
			if _, err := l.Take(ctx, time.Now(), accounts[i%len(accounts)]...); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMemoryTake measures Memory.Take of 3 buckets with every P taking at once, for
// 1 shard (a single lock: the peer) against the shard counts considered, on 10,000 accounts
// and on one hot account.
func BenchmarkMemoryTake(b *testing.B) {
	for _, accounts := range []int{10_000, 1} {
		for _, shards := range []int{1, 4, memoryShards, 64} {
			b.Run(fmt.Sprintf("accounts=%d/shards=%d", accounts, shards), func(b *testing.B) {
				benchmarkTakeParallel(b, newMemoryWithShards(shards), accountBuckets(accounts))
			})
		}
	}
}

// BenchmarkRedisTake measures Redis.Take of 3 buckets (one script round trip) against the
// Redis at RISKAPI_TEST_REDIS_URL: one caller at a time (latency), and all Ps at once
// through the client's connection pool (throughput).
func BenchmarkRedisTake(b *testing.B) {
	r := newTestRedis(b)
	accounts := accountBuckets(10_000)
	b.Run("sequential", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := r.Take(ctx, time.Now(), accounts[i%len(accounts)]...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		benchmarkTakeParallel(b, r, accounts)
	})
}
