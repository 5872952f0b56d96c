package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var _ Limiter = (*Redis)(nil)

// keyExpiryGrace is how long a Redis counter outlives its window. The key names its window,
// so a later window never reads it; the grace only covers clock skew between the server
// that set the expiry (from its own now) and the Redis server that enforces it. Were the
// Redis clock ahead of a server's by more than this, that server's counters would expire
// before its window ends and restart at 1. NTP keeps skew to milliseconds; 60 s of an
// hour's keys is the memory this costs.
const keyExpiryGrace = 60 * time.Second

// takeScript increments every key and, on a key's first request in its window, sets the
// key to expire at the window end plus grace (ARGV[i], Unix milliseconds; PEXPIREAT rather
// than PEXPIRE so every server computes the same instant). A script is atomic in Redis, so
// the INCR and its PEXPIREAT cannot be separated by a crash and no key is left without an
// expiry. It returns the counts in KEYS order.
const takeScript = `
local counts = {}
for i, key in ipairs(KEYS) do
	local n = redis.call('INCR', key)
	if n == 1 then
		redis.call('PEXPIREAT', key, ARGV[i])
	end
	counts[i] = n
end
return counts
`

// Redis counts in Redis, so that every server process sharing the Redis shares the
// counts: each Take is one script run (one round trip) that increments all its buckets
// atomically, and each Peek is one MGET.
//
// A counter's Redis key is prefix + Key + ":" + window + ":" + window start in Unix
// seconds, e.g. "rl:{acct_123}:drift:hour:1795168800". The window's name is part of the
// key because an hour and a day that start at the same instant (00:00 UTC) are different
// counters. Keys expire a minute (keyExpiryGrace) after their window ends.
//
// With Redis Cluster, all the keys of one Take or Peek must hash to one slot: put a hash
// tag in Bucket.Key (see Bucket) and none in prefix, or Redis answers CROSSSLOT.
type Redis struct {
	client redis.UniversalClient
	prefix string
	take   *takeBatcher
}

// NewRedis returns a limiter that counts in the Redis behind client, under keys that start
// with prefix (e.g. "riskapi:rl:"). The caller owns client and closes it.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix, take: &takeBatcher{client: client, script: redis.NewScript(takeScript)}}
}

// redisKey returns the Redis key of a bucket's counter in the window starting at start (Unix seconds).
func (r *Redis) redisKey(key string, w Window, start int64) string {
	return r.prefix + key + ":" + w.String() + ":" + strconv.FormatInt(start, 10)
}

// Take counts one request in the window containing now of every bucket, in one round
// trip, which concurrent Takes share (takeBatcher); see Limiter. The script is sent by
// digest (EVALSHA), and in full (EVAL) only when the Redis server answers that it has not
// cached it: a second round trip once after each Redis restart or SCRIPT FLUSH.
func (r *Redis) Take(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	if err := validateBuckets(buckets); err != nil {
		return nil, err
	}
	if len(buckets) == 0 {
		return []State{}, nil
	}
	keys := make([]string, len(buckets))
	expireAt := make([]any, len(buckets))
	states := make([]State, len(buckets))
	for i, b := range buckets {
		start := b.Window.startUnix(now)
		reset := time.Unix(start+b.Window.Seconds(), 0).UTC()
		keys[i] = r.redisKey(b.Key, b.Window, start)
		expireAt[i] = reset.Add(keyExpiryGrace).UnixMilli()
		states[i] = State{Bucket: b, Reset: reset}
	}
	counts, err := r.take.take(ctx, keys, expireAt)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis take: %w", err)
	}
	if len(counts) != len(buckets) {
		return nil, fmt.Errorf("ratelimit: redis take: %d counts for %d buckets", len(counts), len(buckets))
	}
	for i := range states {
		states[i].Count = counts[i]
	}
	return states, nil
}

// Peek returns the buckets' counts in the window containing now with one MGET, without
// counting.
func (r *Redis) Peek(ctx context.Context, now time.Time, buckets ...Bucket) ([]State, error) {
	if err := validateBuckets(buckets); err != nil {
		return nil, err
	}
	if len(buckets) == 0 {
		return []State{}, nil
	}
	keys := make([]string, len(buckets))
	states := make([]State, len(buckets))
	for i, b := range buckets {
		start := b.Window.startUnix(now)
		keys[i] = r.redisKey(b.Key, b.Window, start)
		states[i] = State{Bucket: b, Reset: time.Unix(start+b.Window.Seconds(), 0).UTC()}
	}
	values, err := r.client.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis peek: %w", err)
	}
	if len(values) != len(buckets) {
		return nil, fmt.Errorf("ratelimit: redis peek: %d values for %d buckets", len(values), len(buckets))
	}
	for i, v := range values {
		if v == nil { // no request counted in this window yet
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("ratelimit: redis peek: key %q holds %T, not a count", keys[i], v)
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ratelimit: redis peek: key %q holds %q, not a count", keys[i], s)
		}
		states[i].Count = n
	}
	return states, nil
}

// Timeouts for a Redis that sits on every request's path. A healthy Redis on the same
// network answers in well under a millisecond, so anything slower than these is a failing
// Redis, and waiting longer would only add the wait to every request: Failover then
// answers from process memory instead. 500 ms to dial leaves room for a TLS handshake
// (rediss://) across availability zones; 250 ms per read or write is hundreds of normal
// round trips, yet the worst a failing Redis adds to a request (a dial, a write and a
// read: 1 s) stays well below clients' own timeouts.
const (
	redisDialTimeout  = 500 * time.Millisecond
	redisReadTimeout  = 250 * time.Millisecond
	redisWriteTimeout = 250 * time.Millisecond
	// redisPoolTimeout bounds the wait for a free connection when every pooled one is
	// busy; the go-redis default (read timeout + 1 s) would hold requests for 1.25 s.
	redisPoolTimeout = 500 * time.Millisecond
)

// OpenRedis connects to the Redis at url ("redis://[user:password@]host:port/db" or
// "rediss://…" for TLS, parsed by redis.ParseURL) and pings it once.
//
// An invalid URL returns a nil client and the error. A server that does not answer the
// ping returns the client together with the error, so the caller decides: close the
// client and fail start-up, or keep it behind a Failover, which counts in process memory
// until Redis answers and then moves to it. Whoever holds a non-nil client closes it.
//
// Unless the URL sets them (dial_timeout, read_timeout, write_timeout, pool_timeout,
// max_retries query parameters), the client gets limiter-sized settings: see the
// redis*Timeout constants, and no command retries, because Take is not idempotent — a
// retry after a read timeout re-runs a script that may already have counted, so one
// request would count twice. It also dials once per attempt instead of go-redis's five
// dials with 100 ms backoffs, so an unreachable Redis costs one dial timeout (500 ms), not
// nearly three seconds.
func OpenRedis(ctx context.Context, url string) (redis.UniversalClient, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: parse redis url: %w", err)
	}
	applyLimiterDefaults(opt)
	client := redis.NewClient(opt)
	if err := client.Ping(ctx).Err(); err != nil {
		return client, fmt.Errorf("ratelimit: ping redis at %s: %w", opt.Addr, err)
	}
	return client, nil
}

// applyLimiterDefaults sets the OpenRedis settings that the URL left at zero.
func applyLimiterDefaults(opt *redis.Options) {
	if opt.DialTimeout == 0 {
		opt.DialTimeout = redisDialTimeout
	}
	if opt.ReadTimeout == 0 {
		opt.ReadTimeout = redisReadTimeout
	}
	if opt.WriteTimeout == 0 {
		opt.WriteTimeout = redisWriteTimeout
	}
	if opt.PoolTimeout == 0 {
		opt.PoolTimeout = redisPoolTimeout
	}
	if opt.MaxRetries == 0 {
		opt.MaxRetries = -1 // go-redis: -1 disables retries, 0 means its default of 3
	}
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1
	}
	// A request's deadline also bounds its Redis call, so a client that gave up does not
	// keep a pooled connection waiting.
	opt.ContextTimeoutEnabled = true
}

// seedScript raises a counter to at least ARGV[1] (the last count this process saw in Redis
// before an outage), then adds ARGV[2] (what the process counted on its own during the
// outage), and sets its expiry as takeScript does (ARGV[3], Unix milliseconds). Taking the
// larger of the two before adding makes it right whether Redis kept its data (the floor is
// already met, the outage's requests are added) or restarted empty (the count before the
// outage comes back as the highest count any process saw, plus every process's outage
// requests). One key per run, so it works on Redis Cluster whatever the keys' slots.
const seedScript = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = math.max(cur, tonumber(ARGV[1])) + tonumber(ARGV[2])
if n ~= cur then
	redis.call('SET', KEYS[1], n)
	redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
return n
`

// seedBatch is how many counters one pipelined round trip seeds: a process that saw
// 100,000 keys in the hour seeds them in 200 round trips, well under a second on a local
// network.
const seedBatch = 500

// seed copies counters into Redis after an outage (see seedScript), in pipelined batches.
// done is called with the counters of each batch Redis accepted, so that the caller can
// forget what is now counted in Redis before a later batch fails. With nothing to seed it
// makes no call.
func (r *Redis) seed(ctx context.Context, seeds []seed, done func([]seed)) error {
	for len(seeds) > 0 {
		batch := seeds[:min(seedBatch, len(seeds))]
		seeds = seeds[len(batch):]
		pipe := r.client.Pipeline()
		for _, s := range batch {
			key := r.redisKey(s.key, s.id.window, s.id.start)
			expireAt := time.Unix(s.id.end(), 0).Add(keyExpiryGrace).UnixMilli()
			pipe.Eval(ctx, seedScript, []string{key}, s.floor, s.add, expireAt)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("ratelimit: redis seed: %w", err)
		}
		done(batch)
	}
	return nil
}
