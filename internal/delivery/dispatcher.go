package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// Dispatcher defaults. DefaultTimeout is the contract's 10 s per attempt
// (RISKAPI_WEBHOOK_TIMEOUT overrides it).
const (
	DefaultTimeout             = 10 * time.Second
	defaultPollInterval        = time.Second
	defaultWorkers             = 32
	defaultLeaseMargin         = 30 * time.Second
	defaultAutoDisableAfter    = 5 * 24 * time.Hour
	defaultAutoDisableFailures = 10
)

// Timing of the store calls the dispatcher makes itself.
const (
	// claimTimeout bounds one ClaimDeliveries call, which normally takes milliseconds; a
	// claim stuck behind a lock is abandoned and retried rather than stalling the loop.
	claimTimeout = 10 * time.Second
	// recordTimeout bounds one RecordAttempt call, and recordTries how often it is tried:
	// a store that is briefly unavailable (a PostgreSQL failover, a busy SQLite writer)
	// should not cost a delivery its recorded outcome, and the 30 s lease margin covers
	// 2 × 5 s plus the pause between them.
	recordTimeout = 5 * time.Second
	recordTries   = 2
	recordPause   = 200 * time.Millisecond
	// Store errors from ClaimDeliveries are retried after a pause that doubles from 250 ms
	// to 10 s, so a store outage costs a handful of queries a minute, not a busy loop.
	minStoreBackoff = 250 * time.Millisecond
	maxStoreBackoff = 10 * time.Second
	// queueDepthInterval is how often PendingDeliveries is counted for the gauge: a count
	// over the delivery table is cheap but not free, and scrapes come every 15 s or more.
	queueDepthInterval = 5 * time.Second
)

// DispatcherConfig configures NewDispatcher. Store is required; every other field has a
// default, given with it.
type DispatcherConfig struct {
	// Store holds the delivery queue.
	Store store.WebhookStore
	// Client sends the attempts; its Timeout bounds each one and must be set. Default:
	// Targets{}.Client(DefaultTimeout), which refuses private addresses.
	Client *http.Client
	// Schedule of automatic retries; a zero Schedule (no Delays) is DefaultSchedule.
	Schedule Schedule
	// Owner names this dispatcher in the leases it takes, and must differ between
	// processes sharing a store; default NewOwner().
	Owner string
	// Logger receives every attempt's outcome (debug); endpoint disablings, deliveries out of
	// attempts and lost leases (info); store errors (error). Default: discard. Secrets and
	// endpoint URLs are never logged.
	Logger *slog.Logger
	// Metrics, when not nil, registers riskapi_webhook_attempts_total{outcome},
	// riskapi_webhook_attempt_duration_seconds and riskapi_webhook_queue_depth.
	Metrics prometheus.Registerer
	// PollInterval is how long an idle dispatcher waits before looking for due deliveries
	// again (Notify cuts it short); default 1 s. Retries come due while nobody calls
	// Notify, so this is also the lateness of a retry, at most.
	PollInterval time.Duration
	// Workers bounds the attempts in flight at once; default 32.
	Workers int
	// PerEndpoint bounds the attempts in flight to one endpoint, at most MaxPerEndpoint (8,
	// the contract's limit) and the default.
	PerEndpoint int
	// Lease is how long a claimed delivery stays this dispatcher's; after it, another
	// dispatcher may send it again. It must exceed Client.Timeout; default Client.Timeout
	// + 30 s, room for recording the outcome.
	Lease time.Duration
	// AutoDisableAfter and AutoDisableFailures: an endpoint whose delivery ends failed is
	// disabled if it has had no success for AutoDisableAfter and at least
	// AutoDisableFailures failed deliveries since; defaults 5 days and 10 (the contract).
	AutoDisableAfter    time.Duration
	AutoDisableFailures int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Random places the retry jitter, returning a number in [0, 1); it is called from
	// several goroutines at once. Default math/rand/v2's Float64.
	Random func() float64
}

// Dispatcher sends due webhook deliveries from the store's queue and records what
// happened. Several dispatchers (one per process) may share a store: leases keep them from
// sending the same attempt twice. Create it with NewDispatcher and start it with Run.
type Dispatcher struct {
	store               store.WebhookStore
	client              *http.Client
	timeout             time.Duration
	schedule            Schedule
	owner               string
	log                 *slog.Logger
	metrics             *dispatcherMetrics
	reportQueueDepth    bool
	pollInterval        time.Duration
	workers             int
	perEndpoint         int
	lease               time.Duration
	autoDisableAfter    time.Duration
	autoDisableFailures int
	now                 func() time.Time
	random              func() float64

	wake    chan struct{} // Notify's signal; buffered 1, so a signal is kept until Run takes it
	running atomic.Bool
	// load mirrors Run's counts of attempts in flight, in all and per endpoint, for the
	// workers' hand-off decision (see attempt).
	load struct {
		sync.Mutex
		inFlight    int
		perEndpoint map[string]int
	}
}

// NewDispatcher checks cfg, fills in the defaults and registers the metrics. It returns an
// error for a missing Store, a Client without Timeout, a negative or out-of-range setting, a
// Lease not longer than the timeout, or metrics already registered.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("webhook dispatcher: Store is required")
	}
	client := cfg.Client
	if client == nil {
		client = Targets{}.Client(DefaultTimeout)
	}
	if client.Timeout <= 0 {
		return nil, errors.New("webhook dispatcher: Client.Timeout must be set, so that every attempt has a deadline")
	}
	schedule := cfg.Schedule
	if len(schedule.Delays) == 0 {
		schedule = DefaultSchedule
	}
	if schedule.Jitter < 0 || schedule.Jitter >= 1 {
		return nil, fmt.Errorf("webhook dispatcher: Schedule.Jitter %g is outside [0, 1)", schedule.Jitter)
	}
	for i, delay := range schedule.Delays {
		if delay <= 0 {
			return nil, fmt.Errorf("webhook dispatcher: Schedule.Delays[%d] = %s must be greater than zero", i, delay)
		}
	}
	for _, c := range []struct {
		name  string
		value int64
	}{
		{"PollInterval", int64(cfg.PollInterval)},
		{"Workers", int64(cfg.Workers)},
		{"PerEndpoint", int64(cfg.PerEndpoint)},
		{"Lease", int64(cfg.Lease)},
		{"AutoDisableAfter", int64(cfg.AutoDisableAfter)},
		{"AutoDisableFailures", int64(cfg.AutoDisableFailures)},
	} {
		if c.value < 0 {
			return nil, fmt.Errorf("webhook dispatcher: %s must not be negative", c.name)
		}
	}
	if cfg.PerEndpoint > MaxPerEndpoint {
		return nil, fmt.Errorf("webhook dispatcher: PerEndpoint %d exceeds the contract's %d concurrent requests per endpoint", cfg.PerEndpoint, MaxPerEndpoint)
	}
	d := &Dispatcher{
		store:               cfg.Store,
		client:              client,
		timeout:             client.Timeout,
		schedule:            schedule,
		owner:               orDefault(cfg.Owner, NewOwner()),
		log:                 cfg.Logger,
		metrics:             newDispatcherMetrics(),
		pollInterval:        orDefault(cfg.PollInterval, defaultPollInterval),
		workers:             orDefault(cfg.Workers, defaultWorkers),
		perEndpoint:         orDefault(cfg.PerEndpoint, MaxPerEndpoint),
		lease:               orDefault(cfg.Lease, client.Timeout+defaultLeaseMargin),
		autoDisableAfter:    orDefault(cfg.AutoDisableAfter, defaultAutoDisableAfter),
		autoDisableFailures: orDefault(cfg.AutoDisableFailures, defaultAutoDisableFailures),
		now:                 cfg.Now,
		random:              cfg.Random,
		wake:                make(chan struct{}, 1),
	}
	d.load.perEndpoint = make(map[string]int)
	if d.lease <= d.timeout {
		return nil, fmt.Errorf("webhook dispatcher: Lease %s must be longer than Client.Timeout %s, or a slow attempt's delivery could be claimed and sent again while it runs", d.lease, d.timeout)
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.random == nil {
		d.random = rand.Float64
	}
	if cfg.Metrics != nil {
		if err := d.metrics.register(cfg.Metrics); err != nil {
			return nil, err
		}
		d.reportQueueDepth = true
	}
	return d, nil
}

// orDefault returns value unless it is the zero value, else fallback.
func orDefault[T comparable](value, fallback T) T {
	var zero T
	if value == zero {
		return fallback
	}
	return value
}

// NewOwner returns a lease owner name unique to this process and call:
// "<hostname>-<pid>-<8 random characters>". The random part keeps two processes apart even
// when hostname and pid repeat (containers often run as pid 1 on identical hostnames).
func NewOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	if len(host) > 64 {
		host = host[:64]
	}
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + ident.Random(8)
}

// Owner returns the name this dispatcher's leases are taken under.
func (d *Dispatcher) Owner() string { return d.owner }

// Notify asks Run to look for due deliveries now instead of at the end of its poll
// interval. It never blocks, and any number of calls while Run is busy amount to one look.
// The API calls it after committing an event or a manual retry, so the first attempt
// starts within milliseconds; without it the attempt still starts within PollInterval.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run claims due deliveries and sends them, at most Workers at once and PerEndpoint per
// endpoint, until ctx ends. When the queue is empty it waits PollInterval, or until Notify.
// Store errors are logged and retried after a pause; they never stop Run.
//
// When ctx ends Run stops claiming, lets the attempts in flight finish (each bounded by
// Client.Timeout, since a cancelled request would count as a failed attempt for no fault of
// the receiver) and record their outcomes, then returns. A second Run of the same
// Dispatcher while one is running returns at once.
func (d *Dispatcher) Run(ctx context.Context) {
	if !d.running.CompareAndSwap(false, true) {
		d.log.Error("webhook dispatcher: Run called while it is already running; ignoring the second call")
		return
	}
	defer d.running.Store(false)

	var background sync.WaitGroup
	defer background.Wait()
	if d.reportQueueDepth {
		background.Go(func() { d.refreshQueueDepth(ctx) })
	}

	// Attempts run in goroutines of their own, at most d.workers at once, each sending its
	// endpoint id on finished when done. finished holds d.workers ids, so an attempt never
	// blocks on it, even after Run has stopped reading.
	var attempts sync.WaitGroup
	defer attempts.Wait()
	finished := make(chan string, d.workers)

	var (
		inFlight    int
		perEndpoint = make(map[string]int)
		// lastClaim is when the last claim was made (real time: it paces store calls);
		// lastFull that it took all it asked for, so more may be due at once; wanted that
		// something since asked for a claim: Notify, the poll interval, or an attempt ending
		// at an endpoint that was at the PerEndpoint cap (its next delivery may be due).
		lastClaim     time.Time
		lastClaimTook time.Duration
		lastFull      bool
		wanted        = true
		backoff       time.Duration
	)
	book := func(endpointID string) {
		inFlight--
		d.mirrorLoad(endpointID, -1)
		if perEndpoint[endpointID] >= d.perEndpoint {
			wanted = true
		}
		if perEndpoint[endpointID]--; perEndpoint[endpointID] == 0 {
			delete(perEndpoint, endpointID)
		}
	}

	timer := time.NewTimer(d.pollInterval)
	defer timer.Stop()
	for {
		// Book every attempt that has finished, without waiting.
		for drained := false; !drained; {
			select {
			case id := <-finished:
				book(id)
			default:
				drained = true
			}
		}
		if ctx.Err() != nil {
			return
		}

		// Claim now, or work out until when to wait. A claim is a store transaction whose
		// cost grows with the size of the deliveries table (on SQLite it also holds the single
		// writer that records outcomes), so claims are paced: the next one waits at least as
		// long as the last one took, and at least claimCooldown, unless every worker is idle.
		// While a backlog drains, that lets workers free up into one large claim rather than
		// many small ones; a burst of Notify calls (one per API request) or of freed endpoint
		// slots costs one claim per cooldown.
		free := d.workers - inFlight
		sinceClaim := time.Since(lastClaim)
		cooldown := max(claimCooldown, lastClaimTook)
		var wait time.Duration
		switch {
		case free == 0:
			wait = -1 // until an attempt ends
		case (lastFull || wanted) && free == d.workers:
			wait = 0
		case lastFull || wanted:
			wait = max(cooldown-sinceClaim, 0)
		default:
			wait = d.pollInterval - sinceClaim
			if wait <= 0 {
				wanted, wait = true, max(cooldown-sinceClaim, 0)
			}
		}
		if wait == 0 {
			claimStarted := time.Now()
			claimed, err := d.claim(ctx, free)
			lastClaim, wanted = time.Now(), false
			lastClaimTook = lastClaim.Sub(claimStarted)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				backoff = min(max(2*backoff, minStoreBackoff), maxStoreBackoff)
				d.log.Error("webhook dispatcher: claiming due deliveries failed; retrying", "error", err, "retry_in", backoff)
				timer.Reset(backoff)
				select {
				case <-ctx.Done():
					return
				case <-timer.C:
				}
				lastFull, wanted = false, true
				continue
			}
			backoff = 0
			lastFull = len(claimed) == free
			for _, c := range claimed {
				inFlight++
				d.mirrorLoad(c.EndpointID, 1)
				perEndpoint[c.EndpointID]++
				attempts.Go(func() {
					defer func() { finished <- c.EndpointID }()
					d.deliver(ctx, c)
				})
			}
			continue
		}

		var expired <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			expired = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
			wanted = true
		case id := <-finished:
			book(id)
		case <-expired:
		}
	}
}

// secretUnavailableText is the error an attempt records when the endpoint's secret cannot be
// decrypted: the customer sees that the fault is the service's, not their receiver's.
const secretUnavailableText = "not sent: the signing secret cannot be decrypted on the server"

// claimCooldown is the least time between the end of one claim and the start of the next,
// unless every worker is idle: at most 200 claims a second, a delay no one would notice.
const claimCooldown = 5 * time.Millisecond

// claim leases up to limit due deliveries.
func (d *Dispatcher) claim(ctx context.Context, limit int) ([]store.ClaimedDelivery, error) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	return d.store.ClaimDeliveries(ctx, store.ClaimPolicy{
		Owner:       d.owner,
		Lease:       d.lease,
		Limit:       limit,
		PerEndpoint: d.perEndpoint,
	}, d.now())
}

// deliver makes one attempt of c and records its outcome, then attempts the deliveries the
// store hands on to it (see attempt), one after another. It does not stop when runCtx ends:
// the attempt in flight is bounded by the client's timeout instead, and no more are handed on.
func (d *Dispatcher) deliver(runCtx context.Context, c store.ClaimedDelivery) {
	for {
		next := d.attempt(runCtx, c)
		if next == nil {
			return
		}
		c = *next
	}
}

// handOffMinLeft is how long a released lease must still run for RecordAttemptAndHandOff to
// pass it on (store.HandOff.MinLeft): the next attempt's timeout and its recording, both
// tries. The default lease (timeout + 30 s) leaves it about 40 s − the attempt's time.
func (d *Dispatcher) handOffMinLeft() time.Duration {
	return d.timeout + recordTries*recordTimeout + recordPause
}

// mirrorLoad adds delta to the mirrored counts of attempts in flight, in all and to the
// endpoint.
func (d *Dispatcher) mirrorLoad(endpointID string, delta int) {
	d.load.Lock()
	defer d.load.Unlock()
	d.load.inFlight += delta
	if d.load.perEndpoint[endpointID] += delta; d.load.perEndpoint[endpointID] <= 0 {
		delete(d.load.perEndpoint, endpointID)
	}
}

// handOff reports whether the outcome of an attempt to the endpoint should be recorded with
// a hand-off: when this dispatcher holds the endpoint's every slot (PerEndpoint attempts in
// flight) and some worker is free. An endpoint at its cap is the case claims serve badly:
// each claim can take only the slots freed since the last, one every few milliseconds on
// PostgreSQL, where a hand-off moves a slot from one delivery to the next in the transaction
// that records the first. Below the cap, claims take many deliveries at once, and a hand-off
// per delivery would cost the store more (on SQLite's single writer, 30 % of the throughput
// with 8 endpoints). With every worker busy, the worker goes back to the pool, so that Run's
// claims, which take the oldest due deliveries of every endpoint, are not starved by busy
// endpoints passing slots on among themselves.
func (d *Dispatcher) handOff(endpointID string) bool {
	d.load.Lock()
	defer d.load.Unlock()
	return d.load.inFlight < d.workers && d.load.perEndpoint[endpointID] >= d.perEndpoint
}

// attempt makes one attempt of c and records its outcome; while runCtx lasts and handOff
// says so, with a hand-off: in the same transaction the store leases this worker the
// endpoint's next due delivery, returned for attempt to be called on.
func (d *Dispatcher) attempt(runCtx context.Context, c store.ClaimedDelivery) *store.ClaimedDelivery {
	ctx := context.WithoutCancel(runCtx)
	started := time.Now()
	var result attemptResult
	if c.SecretErr != nil {
		// Sending unsigned, or signed with anything else, would teach the receiver to accept
		// what it should refuse: the attempt fails here, and the retries go out once the key
		// is configured again.
		result = attemptResult{errText: secretUnavailableText}
		d.log.Error("webhook dispatcher: the endpoint's signing secret cannot be decrypted; attempt failed without sending (configure its key in RISKAPI_SECRET_KEY or RISKAPI_SECRET_KEY_PREVIOUS)",
			"delivery_id", c.ID, "endpoint_id", c.EndpointID, "error", c.SecretErr)
	} else {
		result = send(ctx, d.client, d.timeout, d.now, c)
	}
	elapsed := time.Since(started)
	d.metrics.attempts.WithLabelValues(result.outcomeLabel()).Inc()
	d.metrics.duration.Observe(elapsed.Seconds())

	outcome := d.outcome(c, result, d.now())
	d.logAttempt(c, result, outcome, elapsed)
	return d.record(ctx, c, outcome, runCtx.Err() == nil && d.handOff(c.EndpointID))
}

// outcome applies the retry schedule to an attempt's result. The attempt just made is
// automatic attempt c.Attempts+1 (Attempts also counts manual attempts, so a delivery
// retried by hand while pending reaches the end of its schedule that much sooner). For a
// manual attempt the store ignores NextAttemptAt.
func (d *Dispatcher) outcome(c store.ClaimedDelivery, r attemptResult, at time.Time) store.AttemptOutcome {
	o := store.AttemptOutcome{
		At:                  at,
		StatusCode:          r.statusCode,
		Error:               r.errText,
		Succeeded:           r.succeeded,
		AutoDisableAfter:    d.autoDisableAfter,
		AutoDisableFailures: d.autoDisableFailures,
	}
	switch {
	case r.succeeded:
		return o
	case r.gone:
		o.DisableEndpoint = store.DisabledGone
		return o
	}
	next, ok := d.schedule.Next(c.Attempts+1, at, d.random)
	if ok && r.retryAfter > 0 {
		if r.retryAfter > maxRetryAfter {
			ok = false
			o.Error = fmt.Sprintf("HTTP %d (Retry-After %s exceeds the %s limit; no further attempts)", r.statusCode, r.retryAfter, maxRetryAfter)
		} else if earliest := at.Add(r.retryAfter); earliest.After(next) {
			next = earliest
		}
	}
	if ok {
		o.NextAttemptAt = &next
	}
	return o
}

// record stores the outcome, trying twice, with a hand-off of the lease to the endpoint's
// next due delivery if handOff (returned; nil if none). ErrLeaseLost means another
// dispatcher claimed the delivery after our lease expired and owns it now; ErrNotFound that
// the endpoint was deleted meanwhile. Neither is ours to fix. If recording fails, the lease
// expires and the delivery is sent again (at least once).
func (d *Dispatcher) record(ctx context.Context, c store.ClaimedDelivery, o store.AttemptOutcome, handOff bool) *store.ClaimedDelivery {
	for try := 1; ; try++ {
		recordCtx, cancel := context.WithTimeout(ctx, recordTimeout)
		var (
			next *store.ClaimedDelivery
			err  error
		)
		if handOff {
			_, next, err = d.store.RecordAttemptAndHandOff(recordCtx, d.owner, c.ID, o,
				store.HandOff{Lease: d.lease, MinLeft: d.handOffMinLeft()})
		} else {
			_, err = d.store.RecordAttempt(recordCtx, d.owner, c.ID, o)
		}
		cancel()
		switch {
		case err == nil:
			return next
		case errors.Is(err, store.ErrNotFound): // checked first: the store wraps it in ErrLeaseLost
			d.log.Debug("webhook dispatcher: delivery deleted with its endpoint before its outcome was recorded",
				"delivery_id", c.ID, "endpoint_id", c.EndpointID)
			return nil
		case errors.Is(err, store.ErrLeaseLost):
			d.log.Info("webhook dispatcher: lease lost before the outcome was recorded; another dispatcher owns the delivery now",
				"delivery_id", c.ID, "endpoint_id", c.EndpointID)
			return nil
		case try == recordTries:
			d.log.Error("webhook dispatcher: recording an attempt failed; the delivery will be sent again when its lease expires",
				"delivery_id", c.ID, "endpoint_id", c.EndpointID, "lease", d.lease, "error", err)
			return nil
		}
		time.Sleep(recordPause)
	}
}

func (d *Dispatcher) logAttempt(c store.ClaimedDelivery, r attemptResult, o store.AttemptOutcome, elapsed time.Duration) {
	attrs := []any{
		"delivery_id", c.ID, "endpoint_id", c.EndpointID, "event_id", c.EventID, "event_type", c.EventType,
		"attempt", c.Attempts + 1, "manual", c.ManualRetry, "status_code", r.statusCode,
		"duration_ms", elapsed.Milliseconds(),
	}
	switch {
	case r.succeeded:
		d.log.Debug("webhook attempt succeeded", attrs...)
	case r.gone:
		d.log.Info("webhook endpoint answered 410 Gone; disabling it", attrs...)
	case o.NextAttemptAt != nil:
		d.log.Debug("webhook attempt failed; retrying later", append(attrs, "error", o.Error, "next_attempt_at", *o.NextAttemptAt)...)
	default:
		d.log.Info("webhook attempt failed; no automatic attempts left", append(attrs, "error", o.Error)...)
	}
}

// refreshQueueDepth sets the queue-depth gauge now and every queueDepthInterval until ctx
// ends.
func (d *Dispatcher) refreshQueueDepth(ctx context.Context) {
	ticker := time.NewTicker(queueDepthInterval)
	defer ticker.Stop()
	for {
		countCtx, cancel := context.WithTimeout(ctx, queueDepthInterval)
		n, err := d.store.PendingDeliveries(countCtx)
		cancel()
		switch {
		case err == nil:
			d.metrics.queueDepth.Set(float64(n))
		case ctx.Err() == nil:
			d.log.Warn("webhook dispatcher: counting pending deliveries failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// String describes the dispatcher's settings for a startup log line; it has no secrets.
func (d *Dispatcher) String() string {
	return strings.Join([]string{
		"owner=" + d.owner,
		"workers=" + strconv.Itoa(d.workers),
		"per_endpoint=" + strconv.Itoa(d.perEndpoint),
		"timeout=" + d.timeout.String(),
		"lease=" + d.lease.String(),
		"poll=" + d.pollInterval.String(),
		"schedule=" + d.schedule.String(),
	}, " ")
}
