package delivery

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlite"

	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/testlog"
)

// forEachStore runs test against the embedded SQLite store and, when
// RISKAPI_TEST_POSTGRES_URL is set, against PostgreSQL (pgtest skips that subtest
// otherwise). Each gets a fresh, empty store of its own.
func forEachStore(t *testing.T, test func(t *testing.T, s store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		test(t, openSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, openPostgres(t))
	})
}

func openSQLite(tb testing.TB) store.Store {
	tb.Helper()
	return openSQLiteIn(tb, sqlitetest.Dir(tb))
}

// openSQLiteIn opens the store in dir, whose database file (dir/sqlite.FileName) another
// pool may open too.
func openSQLiteIn(tb testing.TB, dir string) store.Store {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		tb.Fatalf("open SQLite store: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func openPostgres(tb testing.TB) store.Store {
	tb.Helper()
	return openPostgresAt(tb, pgtest.NewMigratedDatabase(tb, postgres.Migrate))
}

// openPostgresAt opens the store on the database at url, which another pool may open too.
func openPostgresAt(tb testing.TB, url string) store.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		tb.Fatalf("open PostgreSQL store: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// harness is one test's account in one store, with helpers to create endpoints and events
// and to run a dispatcher. Its dispatchers use the store through a watchedStore, so that the
// test can wait for their next claim or recorded outcome.
type harness struct {
	t         testing.TB
	store     *watchedStore
	accountID string
	mode      store.Mode
}

func newHarness(t testing.TB, s store.Store) *harness {
	return &harness{t: t, store: &watchedStore{Store: s}, accountID: ident.New("acct"), mode: store.ModeTest}
}

// signal wakes every waiter at once: wait returns a channel that the next notify closes.
// Take the channel before checking the condition waited for, so that a notify between the
// check and the wait is not missed. The zero value is ready.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// watchedStore passes every call on to the store under test, and notes the dispatcher's
// claims and recorded outcomes, so that a test waits for the dispatcher's next step
// rather than sleeping.
type watchedStore struct {
	store.Store
	changed  signal // notified after every claim and every recorded outcome
	mu       sync.Mutex
	claims   []int // deliveries returned by each successful claim, in order
	recorded int   // outcomes recorded without error
	handOffs int   // deliveries handed on by RecordAttemptAndHandOff
}

func (w *watchedStore) ClaimDeliveries(ctx context.Context, p store.ClaimPolicy, now time.Time) ([]store.ClaimedDelivery, error) {
	claimed, err := w.Store.ClaimDeliveries(ctx, p, now)
	if err == nil {
		w.mu.Lock()
		w.claims = append(w.claims, len(claimed))
		w.mu.Unlock()
	}
	w.changed.notify()
	return claimed, err
}

func (w *watchedStore) RecordAttempt(ctx context.Context, owner, deliveryID string, o store.AttemptOutcome) (store.Delivery, error) {
	d, err := w.Store.RecordAttempt(ctx, owner, deliveryID, o)
	if err == nil {
		w.mu.Lock()
		w.recorded++
		w.mu.Unlock()
	}
	w.changed.notify()
	return d, err
}

func (w *watchedStore) RecordAttemptAndHandOff(ctx context.Context, owner, deliveryID string, o store.AttemptOutcome, h store.HandOff) (store.Delivery, *store.ClaimedDelivery, error) {
	d, next, err := w.Store.RecordAttemptAndHandOff(ctx, owner, deliveryID, o, h)
	if err == nil {
		w.mu.Lock()
		w.recorded++
		if next != nil {
			w.handOffs++
		}
		w.mu.Unlock()
	}
	w.changed.notify()
	return d, next, err
}

// counts returns how many claims have succeeded and how many outcomes have been recorded.
func (w *watchedStore) counts() (claims, recorded int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.claims), w.recorded
}

// waitFor waits until cond, checked now and after every claim and recorded outcome, holds;
// it fails the test with what after timeout.
func (w *watchedStore) waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		changed := w.changed.wait()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

// endpoint creates an enabled endpoint of url subscribed to every event.
func (h *harness) endpoint(url string) store.WebhookEndpoint {
	h.t.Helper()
	now := time.Now().UTC()
	e := store.WebhookEndpoint{
		ID:        ident.New("we"),
		AccountID: h.accountID,
		Mode:      h.mode,
		URL:       url,
		Events:    []string{store.AllEvents},
		Secret:    "whsec_" + ident.Random(32),
		Status:    store.EndpointEnabled,
		CreatedAt: now,
		UpdatedAt: now,
	}
	if err := h.store.CreateWebhookEndpoint(context.Background(), e, store.MaxEndpointsPerMode, nil); err != nil {
		h.t.Fatalf("create endpoint: %v", err)
	}
	return e
}

// event creates an event, due now, and returns it with its deliveries.
func (h *harness) event(eventType string) (store.Event, []store.Delivery) {
	h.t.Helper()
	ev := newEvent(h.accountID, h.mode, eventType, time.Now().UTC())
	deliveries, err := h.store.CreateEvent(context.Background(), ev)
	if err != nil {
		h.t.Fatalf("create event: %v", err)
	}
	return ev, deliveries
}

// eventTo creates an event with exactly one delivery, to endpoint e, due now.
func (h *harness) eventTo(e store.WebhookEndpoint) (store.Event, store.Delivery) {
	h.t.Helper()
	return h.eventAt(e, time.Now().UTC())
}

// eventAt creates an event created at at, with exactly one delivery, to endpoint e.
func (h *harness) eventAt(e store.WebhookEndpoint, at time.Time) (store.Event, store.Delivery) {
	h.t.Helper()
	ev := newEvent(h.accountID, h.mode, "drift.shadow_detected", at)
	d, err := h.store.CreateEventFor(context.Background(), ev, e.ID, nil)
	if err != nil {
		h.t.Fatalf("create event for %s: %v", e.ID, err)
	}
	return ev, d
}

// newEvent is an event whose payload has bytes that JSON re-encoding would change
// (spacing, key order, an escaped character), so that a body not sent verbatim shows.
func newEvent(accountID string, mode store.Mode, eventType string, now time.Time) store.Event {
	id := ident.New("evt")
	payload := fmt.Sprintf(`{"id":"%s","object":"event","type":"%s","api_version":"v1","created_at":"%s","livemode":false,`+
		`"data": {"object": {"name":"Zo\u00eb <b>", "score" : 0.25}}}`, id, eventType, now.Format(time.RFC3339Nano))
	return store.Event{ID: id, AccountID: accountID, Mode: mode, Type: eventType, Payload: []byte(payload), CreatedAt: now}
}

// start runs a dispatcher on the harness's store until the test ends (then it cancels Run
// and waits for it to return). cfg.Store is filled in; so are a loopback-allowing client
// with a 5 s timeout and a 20 ms poll interval unless cfg sets them.
func (h *harness) start(cfg DispatcherConfig) *Dispatcher {
	h.t.Helper()
	d := h.newDispatcher(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	h.t.Cleanup(func() {
		cancel()
		<-done
	})
	return d
}

func (h *harness) newDispatcher(cfg DispatcherConfig) *Dispatcher {
	h.t.Helper()
	cfg.Store = h.store
	if cfg.Client == nil {
		cfg.Client = Targets{AllowPrivate: true}.Client(5 * time.Second)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	d, err := NewDispatcher(cfg)
	if err != nil {
		h.t.Fatalf("NewDispatcher: %v", err)
	}
	return d
}

// waitDelivery reads the delivery now and after every outcome the harness's dispatchers
// record, until done reports true, and fails the test after timeout.
func (h *harness) waitDelivery(endpointID, deliveryID string, timeout time.Duration, what string, done func(store.Delivery) bool) store.Delivery {
	h.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		changed := h.store.changed.wait()
		d, err := h.store.Delivery(context.Background(), h.accountID, h.mode, endpointID, deliveryID)
		if err != nil {
			h.t.Fatalf("read delivery %s: %v", deliveryID, err)
		}
		if done(d) {
			return d
		}
		select {
		case <-changed:
		case <-deadline.C:
			h.t.Fatalf("delivery %s not %s within %s: %+v", deliveryID, what, timeout, d)
		}
	}
}

func (h *harness) waitEnded(endpointID, deliveryID string, timeout time.Duration) store.Delivery {
	h.t.Helper()
	return h.waitDelivery(endpointID, deliveryID, timeout, "ended", func(d store.Delivery) bool {
		return d.Status != store.DeliveryPending && !d.ManualRetry
	})
}

// waitEmptyClaims waits for the harness's dispatchers to finish n more claims, and fails the
// test if any of them returned a delivery: the dispatcher looked for due work n times and
// found none. A test calls it once a delivery has ended, to show that nothing follows.
func (h *harness) waitEmptyClaims(n int, timeout time.Duration) {
	h.t.Helper()
	from, _ := h.store.counts()
	h.store.waitFor(h.t, timeout, fmt.Sprintf("%d more claims", n), func() bool {
		claims, _ := h.store.counts()
		return claims >= from+n
	})
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	for i, got := range h.store.claims[from:] {
		if got != 0 {
			h.t.Fatalf("claim %d after the delivery ended took %d deliveries, want none", i+1, got)
		}
	}
}

func (h *harness) endpointNow(id string) store.WebhookEndpoint {
	h.t.Helper()
	e, err := h.store.WebhookEndpoint(context.Background(), h.accountID, h.mode, id)
	if err != nil {
		h.t.Fatalf("read endpoint %s: %v", id, err)
	}
	return e
}

// receivedRequest is what a receiver saw of one request.
type receivedRequest struct {
	at     time.Time
	method string
	header http.Header
	body   []byte
}

// receiver is a real HTTP receiver on loopback. respond chooses the answer to the n-th
// request (from 1); it may block, until ctx (ended when the test ends) is done at most.
type receiver struct {
	*httptest.Server
	mu         sync.Mutex
	requests   []receivedRequest
	current    atomic.Int64 // requests being handled now
	maxCurrent atomic.Int64 // the most handled at once
	count      atomic.Int64
	arrived    signal // notified as each request arrives
	// release ends the ctx blocking handlers wait on. It runs when the test ends; a test
	// whose dispatcher must stop while handlers hang calls it first, since the dispatcher
	// waits for its attempts in flight.
	release context.CancelFunc
}

func newReceiver(t testing.TB, respond func(ctx context.Context, n int64, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rc := &receiver{release: cancel}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := rc.current.Add(1)
		defer rc.current.Add(-1)
		for {
			seen := rc.maxCurrent.Load()
			if now <= seen || rc.maxCurrent.CompareAndSwap(seen, now) {
				break
			}
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		rc.mu.Lock()
		rc.requests = append(rc.requests, receivedRequest{at: time.Now(), method: r.Method, header: r.Header.Clone(), body: body.Bytes()})
		rc.mu.Unlock()
		n := rc.count.Add(1)
		rc.arrived.notify()
		respond(ctx, n, w, r)
	}))
	// Unblock waiting handlers first, or Close would wait for them.
	t.Cleanup(func() {
		cancel()
		rc.Server.Close()
	})
	return rc
}

// statusReceiver answers every request with status.
func statusReceiver(t testing.TB, status int) *receiver {
	return newReceiver(t, func(_ context.Context, _ int64, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
	})
}

// slowReceiver answers 200 OK to every request after holding it for hold, long enough for
// the others to pile up.
func slowReceiver(t testing.TB, hold time.Duration) *receiver {
	return newReceiver(t, func(ctx context.Context, _ int64, w http.ResponseWriter, _ *http.Request) {
		select {
		case <-time.After(hold):
		case <-ctx.Done():
		}
		w.WriteHeader(http.StatusOK)
	})
}

// failingReceiver answers status to the first failures requests and 200 OK to the rest.
func failingReceiver(t testing.TB, failures int64, status int) *receiver {
	return newReceiver(t, func(_ context.Context, n int64, w http.ResponseWriter, _ *http.Request) {
		if n <= failures {
			w.WriteHeader(status)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

func (rc *receiver) received() []receivedRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]receivedRequest(nil), rc.requests...)
}

// waitRequests waits until the receiver has seen n requests.
func (rc *receiver) waitRequests(t testing.TB, n int64, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		arrived := rc.arrived.wait()
		if rc.count.Load() >= n {
			return
		}
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("receiver saw %d requests within %s, want %d", rc.count.Load(), timeout, n)
		}
	}
}

// handlerTransport answers every request with its handler, in the calling goroutine and
// without a network, so that a dispatcher can run in a testing/synctest bubble, where
// loopback sockets do not count as blocked and the fake clock would not move.
type handlerTransport struct{ http.Handler }

func (h handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// inProcessClient is a dispatcher client whose requests go to handler (see handlerTransport),
// with a 5 s timeout.
func inProcessClient(handler http.HandlerFunc) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: handlerTransport{handler}}
}

// debugLogger logs every level of a dispatcher's output into b, for assertions.
func debugLogger(b *testlog.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func mustSchedule(t testing.TB, s string) Schedule {
	t.Helper()
	schedule, err := ParseSchedule(s)
	if err != nil {
		t.Fatal(err)
	}
	return schedule
}
