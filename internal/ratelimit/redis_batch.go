package ratelimit

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Concurrent Takes share round trips: a Take that finds fewer than maxTakePipelines
// pipelines in flight sends at once, together with every Take waiting at that moment;
// one that finds them all busy waits for the next to start, and is sent in it. Each Take
// is still its own script run, atomic and answered with its own counts, so counting stays
// exact across processes; only the round trips are shared. Alone, a Take is sent at once
// and costs the one round trip it always did. Under load, one round trip and one pair of
// socket calls on either side carry up to maxTakeBatch Takes. With 32 requests at once on
// a 2-core machine, GET /v1/account with the Redis limiter keeps 0.70-0.78 of the
// in-process limiter's throughput, against 0.37 when every request made its own round
// trips (BenchmarkLoopbackAccountRedis; docs/operations.md, "Request overhead"). One, two
// and four pipelines in flight measured alike within the machine's noise (0.5-0.6 in one
// busy period); two keep a Take from waiting behind a slow batch.
const (
	// maxTakePipelines is how many pipelines of Takes may be in flight at once. Two keep one
	// batch filling while the other is on the wire, so a Take waits at most about one round
	// trip before it is sent; more would only make smaller batches.
	maxTakePipelines = 2
	// maxTakeBatch bounds one pipeline: 256 three-bucket Takes are about 60 KB of
	// commands, sent in one write, and a second of Redis's work at worst far less.
	maxTakeBatch = 256
)

// takeCall is one Take waiting for its script run: the keys and arguments of takeScript,
// and, once done is closed, the counts or the error.
type takeCall struct {
	ctx    context.Context
	keys   []string
	args   []any
	counts []int64
	err    error
	done   chan struct{}
}

// takeBatcher pipelines the takeScript runs of concurrent Takes (see maxTakePipelines).
type takeBatcher struct {
	client redis.UniversalClient
	script *redis.Script

	mu      sync.Mutex
	pending []*takeCall
	sending int // pipelines in flight, or goroutines about to send one
}

// take runs takeScript over keys with args and returns its counts. It returns when its
// own run is answered, or with ctx's error when ctx ends first; the script may then still
// run (it is already on its way), as a call cut short by its deadline always could.
func (t *takeBatcher) take(ctx context.Context, keys []string, args []any) ([]int64, error) {
	c := &takeCall{ctx: ctx, keys: keys, args: args, done: make(chan struct{})}
	t.mu.Lock()
	t.pending = append(t.pending, c)
	lead := t.sending < maxTakePipelines
	if lead {
		t.sending++
	}
	t.mu.Unlock()
	if lead {
		t.send(c)
	}
	select {
	case <-c.done:
		return c.counts, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send sends pipelines of pending Takes until own is answered, then leaves what is left
// to a goroutine of its own, so that no caller waits on others' round trips after its own.
func (t *takeBatcher) send(own *takeCall) {
	for {
		batch := t.next()
		if batch == nil {
			return
		}
		t.run(batch)
		select {
		case <-own.done:
			t.mu.Lock()
			more := len(t.pending) > 0
			if !more {
				t.sending--
			}
			t.mu.Unlock()
			if more {
				go t.send(&takeCall{done: closedChan})
			}
			return
		default:
		}
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// next takes up to maxTakeBatch pending Takes, or returns nil, giving up its slot, when
// none is pending.
func (t *takeBatcher) next() []*takeCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		t.sending--
		return nil
	}
	n := min(len(t.pending), maxTakeBatch)
	batch := t.pending[:n:n]
	t.pending = append([]*takeCall(nil), t.pending[n:]...)
	return batch
}

// run sends batch in one pipeline and answers each of its Takes. The scripts go by digest
// (EVALSHA); those Redis answers NOSCRIPT for (after a restart or SCRIPT FLUSH) did not
// run, and are sent again in full (EVAL) in a second pipeline. A Take whose context ended
// before it was sent is answered with that error and not sent.
func (t *takeBatcher) run(batch []*takeCall) {
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	// The pipeline serves several requests: none of their cancellations may cut it short.
	// The client's read and write timeouts bound it instead.
	ctx := context.WithoutCancel(live[0].ctx)
	cmds := make([]*redis.Cmd, len(live))
	pipe := t.client.Pipeline()
	for i, c := range live {
		cmds[i] = t.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own answer or error
	var again []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		pipe = t.client.Pipeline()
		for _, i := range again {
			cmds[i] = t.script.Eval(ctx, pipe, live[i].keys, live[i].args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, c := range live {
		c.counts, c.err = cmds[i].Int64Slice()
		close(c.done)
	}
}
