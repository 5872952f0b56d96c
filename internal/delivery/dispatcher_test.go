package delivery

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"riskapi/internal/store"
	"riskapi/internal/testclock"

	"riskapi/webhook"

	"riskapi/internal/testlog"
)

func TestDeliverySendsSignedEventVerbatim(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := statusReceiver(t, http.StatusNoContent)
		e := h.endpoint(rc.URL + "/hooks/riskapi")
		ev, deliveries := h.event("drift.shadow_detected")
		if len(deliveries) != 1 {
			t.Fatalf("CreateEvent made %d deliveries, want 1", len(deliveries))
		}
		h.start(DispatcherConfig{})

		d := h.waitEnded(e.ID, deliveries[0].ID, 5*time.Second)
		if d.Status != store.DeliverySucceeded || d.Attempts != 1 || d.LastStatusCode != 204 || d.LastError != "" ||
			d.CompletedAt == nil || d.NextAttemptAt != nil {
			t.Errorf("delivery after a 204 = %+v; want succeeded after 1 attempt, status 204, no error, completed", d)
		}
		if got := h.endpointNow(e.ID).LastSuccessAt; got == nil {
			t.Error("endpoint LastSuccessAt not set after a successful delivery")
		}

		reqs := rc.received()
		if len(reqs) != 1 {
			t.Fatalf("receiver saw %d requests, want 1", len(reqs))
		}
		r := reqs[0]
		if r.method != http.MethodPost {
			t.Errorf("method %s, want POST", r.method)
		}
		if !bytes.Equal(r.body, ev.Payload) {
			t.Errorf("body differs from the stored payload:\n got %s\nwant %s", r.body, ev.Payload)
		}
		for header, want := range map[string]string{
			"Content-Type":       "application/json",
			"User-Agent":         "riskapi-webhooks/1",
			"X-Webhook-Id":       ev.ID,
			"X-Webhook-Delivery": deliveries[0].ID,
			"X-Webhook-Event":    "drift.shadow_detected",
		} {
			if got := r.header.Get(header); got != want {
				t.Errorf("header %s = %q, want %q", header, got, want)
			}
		}
		signature := r.header.Get("X-Webhook-Signature")
		if err := webhook.VerifyHex(r.body, signature, e.Secret); err != nil {
			t.Errorf("Verify of the received request: %v", err)
		}
		mac := hmac.New(sha256.New, []byte(e.Secret))
		mac.Write(r.body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); signature != want {
			t.Errorf("signature %s, want the HMAC-SHA256 of the body, %s", signature, want)
		}
	})
}

func TestFailedAttemptsAreRetriedWithTheSameBody(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := failingReceiver(t, 2, http.StatusInternalServerError)
		e := h.endpoint(rc.URL)
		_, dl := h.eventTo(e)
		h.start(DispatcherConfig{Schedule: mustSchedule(t, "10ms,10ms,10ms")})

		d := h.waitEnded(e.ID, dl.ID, 5*time.Second)
		if d.Status != store.DeliverySucceeded || d.Attempts != 3 || d.LastStatusCode != 200 {
			t.Fatalf("delivery = %+v; want succeeded on attempt 3", d)
		}
		reqs := rc.received()
		if len(reqs) != 3 {
			t.Fatalf("receiver saw %d requests, want 3 (500, 500, 200)", len(reqs))
		}
		for i, r := range reqs[1:] {
			if !bytes.Equal(r.body, reqs[0].body) {
				t.Errorf("attempt %d body differs from attempt 1's", i+2)
			}
			for _, header := range []string{"X-Webhook-Signature", "X-Webhook-Id", "X-Webhook-Delivery"} {
				if r.header.Get(header) != reqs[0].header.Get(header) {
					t.Errorf("attempt %d %s = %q, attempt 1's %q", i+2, header, r.header.Get(header), reqs[0].header.Get(header))
				}
			}
		}
	})
}

func TestDeliveryFailsWhenScheduleIsExhausted(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := statusReceiver(t, http.StatusInternalServerError)
		e := h.endpoint(rc.URL)
		_, dl := h.eventTo(e)
		h.start(DispatcherConfig{Schedule: mustSchedule(t, "10ms,10ms")})

		d := h.waitEnded(e.ID, dl.ID, 5*time.Second)
		if d.Status != store.DeliveryFailed || d.Attempts != 3 || d.LastStatusCode != 500 || d.LastError != "HTTP 500" ||
			d.NextAttemptAt != nil || d.CompletedAt == nil {
			t.Fatalf("delivery = %+v; want failed after 3 attempts with HTTP 500, no next attempt", d)
		}
		h.waitEmptyClaims(2, 5*time.Second) // the dispatcher looks for due work twice and finds none
		if n := rc.count.Load(); n != 3 {
			t.Fatalf("receiver saw %d requests, want 1 + 2 retries", n)
		}
		if got := h.endpointNow(e.ID).Status; got != store.EndpointEnabled {
			t.Errorf("endpoint status %s after one failed delivery, want enabled", got)
		}
	})
}

func TestGoneDisablesEndpoint(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := statusReceiver(t, http.StatusGone)
		e := h.endpoint(rc.URL)
		_, dl := h.eventTo(e)
		h.start(DispatcherConfig{Schedule: mustSchedule(t, "10ms,10ms")})

		d := h.waitEnded(e.ID, dl.ID, 5*time.Second)
		if d.Status != store.DeliveryFailed || d.Attempts != 1 || d.LastStatusCode != 410 {
			t.Errorf("delivery after 410 = %+v; want failed after one attempt", d)
		}
		if got := h.endpointNow(e.ID); got.Status != store.EndpointDisabled || got.DisabledReason != store.DisabledGone {
			t.Errorf("endpoint after 410: status %s, reason %q; want disabled, gone", got.Status, got.DisabledReason)
		}
		h.waitEmptyClaims(2, 5*time.Second)
		if n := rc.count.Load(); n != 1 {
			t.Errorf("receiver saw %d requests, want 1: 410 ends the delivery", n)
		}
	})
}

func TestRedirectIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		target := statusReceiver(t, http.StatusOK)
		redirector := newReceiver(t, func(_ context.Context, _ int64, w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL, http.StatusFound)
		})
		e := h.endpoint(redirector.URL)
		_, dl := h.eventTo(e)
		h.start(DispatcherConfig{Schedule: mustSchedule(t, "1h")})

		d := h.waitDelivery(e.ID, dl.ID, 5*time.Second, "attempted", func(d store.Delivery) bool { return d.Attempts == 1 })
		if d.Status != store.DeliveryPending || d.LastStatusCode != 302 || d.LastError != "redirect not followed (HTTP 302)" || d.NextAttemptAt == nil {
			t.Errorf("delivery after a 302 = %+v; want pending with a retry, error %q", d, "redirect not followed (HTTP 302)")
		}
		if n := target.count.Load(); n != 0 {
			t.Errorf("redirect target saw %d requests; redirects must not be followed", n)
		}
	})
}

func TestSlowReceiverTimesOut(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := newReceiver(t, func(ctx context.Context, _ int64, w http.ResponseWriter, _ *http.Request) {
			<-ctx.Done() // never answers while the test runs
		})
		e := h.endpoint(rc.URL)
		_, dl := h.eventTo(e)
		started := time.Now()
		h.start(DispatcherConfig{
			Client:   Targets{AllowPrivate: true}.Client(200 * time.Millisecond),
			Schedule: mustSchedule(t, "1h"),
		})

		d := h.waitDelivery(e.ID, dl.ID, 5*time.Second, "attempted", func(d store.Delivery) bool { return d.Attempts == 1 })
		if elapsed := time.Since(started); elapsed > 3*time.Second {
			t.Errorf("attempt recorded %s after start; the 200ms timeout did not apply", elapsed)
		}
		if d.LastError != "timeout after 200ms" || d.LastStatusCode != 0 || d.Status != store.DeliveryPending || d.NextAttemptAt == nil {
			t.Errorf("delivery after a timeout = %+v; want pending, no status, error %q", d, "timeout after 200ms")
		}
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := newReceiver(t, func(_ context.Context, n int64, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		e := h.endpoint(rc.URL)
		_, dl := h.eventTo(e)
		h.start(DispatcherConfig{Schedule: mustSchedule(t, "10ms,10ms")})

		d := h.waitDelivery(e.ID, dl.ID, 5*time.Second, "attempted", func(d store.Delivery) bool { return d.Attempts >= 1 })
		if d.Attempts == 1 && (d.LastError != "HTTP 429 (Retry-After 1s)" || d.NextAttemptAt == nil) {
			t.Errorf("delivery after 429 = %+v; want error %q and a next attempt", d, "HTTP 429 (Retry-After 1s)")
		}
		d = h.waitEnded(e.ID, dl.ID, 5*time.Second)
		if d.Status != store.DeliverySucceeded || d.Attempts != 2 {
			t.Fatalf("delivery = %+v; want succeeded on attempt 2", d)
		}
		reqs := rc.received()
		// The store keeps milliseconds; allow for the truncation of both times.
		if gap := reqs[1].at.Sub(reqs[0].at); gap < time.Second-5*time.Millisecond {
			t.Errorf("second attempt %s after the first; Retry-After asked for 1s (the schedule's 10ms must not win)", gap)
		}
	})
}

func TestPerEndpointConcurrencyIsCapped(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := slowReceiver(t, 30*time.Millisecond)
		e := h.endpoint(rc.URL)
		var ids []string
		for range 50 {
			_, d := h.eventTo(e)
			ids = append(ids, d.ID)
		}
		h.start(DispatcherConfig{Workers: 32})

		for _, id := range ids {
			if d := h.waitEnded(e.ID, id, 20*time.Second); d.Status != store.DeliverySucceeded {
				t.Fatalf("delivery %s = %+v, want succeeded", id, d)
			}
		}
		if n := rc.count.Load(); n != 50 {
			t.Errorf("receiver saw %d requests for 50 deliveries", n)
		}
		if most := rc.maxCurrent.Load(); most > MaxPerEndpoint || most < MaxPerEndpoint/2 {
			t.Errorf("at most %d requests at once to one endpoint; want up to %d and the pool used (at least %d)",
				most, MaxPerEndpoint, MaxPerEndpoint/2)
		}
	})
}

func TestSlowEndpointDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		slow := newReceiver(t, func(ctx context.Context, _ int64, w http.ResponseWriter, _ *http.Request) {
			<-ctx.Done() // hangs until the test ends
		})
		fast := statusReceiver(t, http.StatusOK)
		slowEndpoint, fastEndpoint := h.endpoint(slow.URL), h.endpoint(fast.URL)
		defer slow.release() // before the dispatcher stops: it waits for the hanging attempts
		// A second older than the fast delivery (the store keeps milliseconds), so first in line.
		older := time.Now().UTC().Add(-time.Second)
		for range 20 {
			h.eventAt(slowEndpoint, older)
		}
		_, fastDelivery := h.eventTo(fastEndpoint)
		started := time.Now()
		h.start(DispatcherConfig{Client: Targets{AllowPrivate: true}.Client(30 * time.Second)})

		h.waitEnded(fastEndpoint.ID, fastDelivery.ID, 2*time.Second)
		slow.waitRequests(t, MaxPerEndpoint, 2*time.Second)
		if n := slow.maxCurrent.Load(); n > MaxPerEndpoint {
			t.Errorf("slow endpoint got %d requests at once, want at most %d", n, MaxPerEndpoint)
		}
		t.Logf("fast delivery succeeded %s after start, with %d requests hanging at the slow endpoint", time.Since(started), slow.current.Load())
	})
}

// An idle dispatcher waits out its poll interval (an hour here) unless Notify wakes it. The
// test runs in a synctest bubble on SQLite, with the receiver in process: the fake clock
// lets most of the hour pass at once, and synctest.Wait shows when the dispatcher is idle.
func TestNotifyStartsDeliveryBeforeThePoll(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, openSQLite(t))
		var requests atomic.Int64
		client := inProcessClient(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
			w.WriteHeader(http.StatusOK)
		})
		e := h.endpoint("https://receiver.test/hook")
		d := h.start(DispatcherConfig{PollInterval: time.Hour, Client: client})
		synctest.Wait() // Run has made its first, empty, claim and waits for the poll

		// Without Notify the delivery waits for the hourly poll.
		_, first := h.eventTo(e)
		time.Sleep(59 * time.Minute) // on the bubble's fake clock: returns at once
		synctest.Wait()
		if n := requests.Load(); n != 0 {
			t.Fatalf("receiver saw %d requests 59 minutes into a 1-hour poll interval without Notify", n)
		}
		notified := time.Now()
		d.Notify()
		synctest.Wait()
		if got := h.waitEnded(e.ID, first.ID, time.Second); got.Status != store.DeliverySucceeded {
			t.Fatalf("delivery after Notify = %+v, want succeeded", got)
		}
		if waited := time.Since(notified); waited > claimCooldown {
			t.Errorf("delivered %s after Notify, want at once", waited)
		}

		// Notify never blocks, however often it is called.
		for range 1000 {
			d.Notify()
		}
		_, second := h.eventTo(e)
		d.Notify()
		synctest.Wait()
		if got := h.waitEnded(e.ID, second.ID, time.Second); got.Status != store.DeliverySucceeded {
			t.Fatalf("second delivery after Notify = %+v, want succeeded", got)
		}
		if n := requests.Load(); n != 2 {
			t.Errorf("receiver saw %d requests for 2 deliveries", n)
		}
	})
}

func TestRunReturnsAfterRecordingAttemptsInFlight(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		release := make(chan struct{})
		rc := newReceiver(t, func(ctx context.Context, _ int64, w http.ResponseWriter, _ *http.Request) {
			select { // in flight until the test has cancelled Run
			case <-release:
			case <-ctx.Done():
			}
			w.WriteHeader(http.StatusOK)
		})
		e := h.endpoint(rc.URL)
		_, dl := h.eventTo(e)
		d := h.newDispatcher(DispatcherConfig{})
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			d.Run(ctx)
		}()
		rc.waitRequests(t, 1, 5*time.Second)
		cancel()
		select {
		case <-returned:
			t.Fatal("Run returned while an attempt was in flight")
		default:
		}
		close(release)
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return within 5s of its attempt's answer")
		}
		got, err := s.Delivery(context.Background(), h.accountID, h.mode, e.ID, dl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.DeliverySucceeded || got.Attempts != 1 {
			t.Errorf("delivery when Run returned = %+v; the attempt in flight must finish and be recorded", got)
		}

		// An idle dispatcher returns at once.
		ctx, cancel = context.WithCancel(context.Background())
		returned = make(chan struct{})
		claims, _ := h.store.counts()
		go func() {
			defer close(returned)
			d.Run(ctx)
		}()
		h.store.waitFor(t, 5*time.Second, "the idle dispatcher's first claim", func() bool {
			n, _ := h.store.counts()
			return n > claims
		})
		cancelled := time.Now()
		cancel()
		<-returned
		if took := time.Since(cancelled); took > 500*time.Millisecond {
			t.Errorf("idle Run took %s to return after cancel", took)
		}
	})
}

func TestManualRetryIsSent(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := failingReceiver(t, 1, http.StatusBadRequest)
		e := h.endpoint(rc.URL)
		_, dl := h.eventTo(e)
		// No automatic retries: the delivery fails after its first attempt.
		d := h.start(DispatcherConfig{Schedule: Schedule{Delays: []time.Duration{time.Hour}}, PollInterval: time.Hour})
		d.Notify()
		h.waitDelivery(e.ID, dl.ID, 5*time.Second, "attempted", func(d store.Delivery) bool { return d.Attempts == 1 })

		if _, err := s.RequestManualRetry(context.Background(), h.accountID, h.mode, e.ID, dl.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		d.Notify()
		got := h.waitDelivery(e.ID, dl.ID, 5*time.Second, "retried by hand", func(d store.Delivery) bool { return d.Attempts == 2 && !d.ManualRetry })
		if got.Status != store.DeliverySucceeded || got.LastStatusCode != 200 {
			t.Errorf("delivery after a successful manual retry = %+v, want succeeded", got)
		}
	})
}

func TestEndpointFailingForDaysIsDisabled(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := statusReceiver(t, http.StatusInternalServerError)
		e := h.endpoint(rc.URL)
		// A clock running 6 days ahead: the endpoint, created now, has had no success for
		// longer than the default 5 days.
		sixDaysOn := func() time.Time { return time.Now().Add(6 * 24 * time.Hour) }
		h.start(DispatcherConfig{Schedule: mustSchedule(t, "1ms"), AutoDisableFailures: 3, Now: sixDaysOn, PollInterval: 5 * time.Millisecond})
		for i := 1; i <= 3; i++ {
			_, dl := h.eventTo(e)
			got := h.waitDelivery(e.ID, dl.ID, 5*time.Second, "failed", func(d store.Delivery) bool { return d.Status == store.DeliveryFailed })
			wantStatus := store.EndpointEnabled
			if i == 3 {
				wantStatus = store.EndpointDisabled
			}
			if ep := h.endpointNow(e.ID); ep.Status != wantStatus {
				t.Fatalf("after %d failed deliveries (%+v) endpoint is %s, want %s", i, got, ep.Status, wantStatus)
			}
		}
		if ep := h.endpointNow(e.ID); ep.DisabledReason != store.DisabledFailing {
			t.Errorf("disabled reason %q, want %q", ep.DisabledReason, store.DisabledFailing)
		}
	})
}

// TestLeaseLostIsLoggedAndSkipped: dispatcher A's attempt outlives its lease, dispatcher B
// claims and delivers the delivery, and A's late outcome is refused by the store and
// dropped without disturbing B's.
func TestLeaseLostIsLoggedAndSkipped(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		release := make(chan struct{})
		rc := newReceiver(t, func(ctx context.Context, n int64, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				select { // A's request: held until B has delivered
				case <-release:
				case <-ctx.Done():
				}
			}
			w.WriteHeader(http.StatusOK)
		})
		e := h.endpoint(rc.URL)
		_, dl := h.eventTo(e)
		clock := testclock.New(time.Now())
		var logsA testlog.Buffer
		h.start(DispatcherConfig{Owner: "dispatcher-a", Now: clock.Now, Logger: debugLogger(&logsA)})
		rc.waitRequests(t, 1, 5*time.Second)

		clock.Advance(time.Hour) // A's lease (5s timeout + 30s) has expired
		h.start(DispatcherConfig{Owner: "dispatcher-b", Now: clock.Now})
		rc.waitRequests(t, 2, 5*time.Second)
		h.waitEnded(e.ID, dl.ID, 5*time.Second)
		close(release)

		if !logsA.WaitFor("another dispatcher owns the delivery now", 5*time.Second) {
			t.Fatalf("dispatcher A did not log its lost lease; its log:\n%s", logsA.String())
		}
		if n := logsA.Count("level=ERROR"); n != 0 {
			t.Errorf("a lost lease is routine, not an error; dispatcher A logged %d errors:\n%s", n, logsA.String())
		}
		got, err := s.Delivery(context.Background(), h.accountID, h.mode, e.ID, dl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.DeliverySucceeded || got.Attempts != 1 {
			t.Errorf("delivery = %+v; want B's single recorded success, A's outcome discarded", got)
		}
	})
}

// A failing store is retried after a pause that doubles from 250 ms, not in a busy loop, and
// Run still stops when asked. The fake clock of a synctest bubble measures the pauses.
func TestStoreErrorsDoNotStopOrSpinTheDispatcher(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := openSQLite(t)
		var logs testlog.Buffer
		d, err := NewDispatcher(DispatcherConfig{Store: s, Logger: debugLogger(&logs), PollInterval: time.Millisecond,
			Client: inProcessClient(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil { // every store call now fails
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			d.Run(ctx)
		}()
		time.Sleep(1500 * time.Millisecond) // on the bubble's fake clock: returns at once
		synctest.Wait()
		// Claims at 0, 250 ms and 750 ms; the next waits for 1.75 s.
		if failures := logs.Count("claiming due deliveries failed"); failures != 3 {
			t.Errorf("%d failed claims logged in 1.5s; want 3, backed off 250ms, 500ms, 1s, not none or a busy loop", failures)
		}
		cancel()
		synctest.Wait()
		select {
		case <-returned:
		default:
			t.Fatal("Run did not return after cancel while the store was failing")
		}
	})
}

func TestSecretIsNeverLoggedOrStored(t *testing.T) {
	t.Parallel()
	s := openSQLite(t)
	h := newHarness(t, s)
	var logs testlog.Buffer
	// Every kind of outcome: refused connection, 500, redirect, 410.
	endpoints := []store.WebhookEndpoint{
		h.endpoint(refusedURL(t)),
		h.endpoint(statusReceiver(t, http.StatusInternalServerError).URL),
		h.endpoint(statusReceiver(t, http.StatusMovedPermanently).URL),
		h.endpoint(statusReceiver(t, http.StatusGone).URL),
	}
	var deliveries []store.Delivery
	for _, e := range endpoints {
		_, d := h.eventTo(e)
		deliveries = append(deliveries, d)
	}
	h.start(DispatcherConfig{Logger: debugLogger(&logs), Schedule: mustSchedule(t, "1ms")})
	wantErrors := []string{"connection refused", "HTTP 500", "redirect not followed (HTTP 301)", "HTTP 410 Gone: endpoint disabled"}
	for i, e := range endpoints {
		got := h.waitEnded(e.ID, deliveries[i].ID, 5*time.Second)
		if got.LastError != wantErrors[i] {
			t.Errorf("endpoint %d: last error %q, want %q", i, got.LastError, wantErrors[i])
		}
		if strings.Contains(got.LastError, e.Secret) {
			t.Errorf("endpoint %d: the delivery's error contains the secret", i)
		}
	}
	output := logs.String()
	if output == "" {
		t.Fatal("nothing logged at debug level; the test would prove nothing")
	}
	for _, e := range endpoints {
		if strings.Contains(output, e.Secret) || strings.Contains(output, e.Secret[len("whsec_"):]) {
			t.Fatalf("the log contains an endpoint secret:\n%s", output)
		}
	}
}

func TestMetricsCountAttemptsByOutcome(t *testing.T) {
	t.Parallel()
	s := openSQLite(t)
	h := newHarness(t, s)
	reg := prometheus.NewRegistry()
	ok, failing, gone := statusReceiver(t, http.StatusOK), statusReceiver(t, http.StatusInternalServerError), statusReceiver(t, http.StatusGone)
	eOK, eFailing, eGone := h.endpoint(ok.URL), h.endpoint(failing.URL), h.endpoint(gone.URL)
	_, d1 := h.eventTo(eOK)
	_, d2 := h.eventTo(eFailing)
	_, d3 := h.eventTo(eGone)
	// One more, to an endpoint no dispatcher reaches in time: it stays in the queue.
	parked := h.endpoint("http://127.0.0.1:9/never")
	parked.Status = store.EndpointDisabled
	if err := s.UpdateWebhookEndpoint(context.Background(), parked); err != nil {
		t.Fatal(err)
	}
	h.eventTo(parked)

	h.start(DispatcherConfig{Metrics: reg, Schedule: mustSchedule(t, "1ms")})
	h.waitEnded(eOK.ID, d1.ID, 5*time.Second)
	h.waitEnded(eFailing.ID, d2.ID, 5*time.Second)
	h.waitEnded(eGone.ID, d3.ID, 5*time.Second)

	values := gatherMetrics(t, reg)
	for name, want := range map[string]float64{
		`riskapi_webhook_attempts_total{outcome="succeeded"}`: 1,
		`riskapi_webhook_attempts_total{outcome="failed"}`:    2, // 500, then the one retry
		`riskapi_webhook_attempts_total{outcome="gone"}`:      1,
		`riskapi_webhook_attempt_duration_seconds_count`:      4,
	} {
		if got := values[name]; got != want {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	// The gauge was set at start, when all four deliveries were pending.
	if got := values["riskapi_webhook_queue_depth"]; got < 1 || got > 4 {
		t.Errorf("riskapi_webhook_queue_depth = %g, want the pending count at start (1 to 4)", got)
	}

	// A second dispatcher on the same registry is a configuration error.
	if _, err := NewDispatcher(DispatcherConfig{Store: s, Metrics: reg}); err == nil {
		t.Error("NewDispatcher registered its metrics twice on one registry without an error")
	}
}

// gatherMetrics returns every sample of reg by name{labels}, and name_count for histograms.
func gatherMetrics(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestNewDispatcherRefusesBadConfig(t *testing.T) {
	t.Parallel()
	s := openSQLite(t)
	noTimeout := &http.Client{}
	tests := []struct {
		name string
		cfg  DispatcherConfig
		want string
	}{
		{"no store", DispatcherConfig{}, "Store is required"},
		{"client without timeout", DispatcherConfig{Store: s, Client: noTimeout}, "Timeout must be set"},
		{"lease not longer than timeout", DispatcherConfig{Store: s, Lease: DefaultTimeout}, "Lease"},
		{"more than 8 per endpoint", DispatcherConfig{Store: s, PerEndpoint: 9}, "PerEndpoint 9"},
		{"negative workers", DispatcherConfig{Store: s, Workers: -1}, "Workers must not be negative"},
		{"jitter of 100%", DispatcherConfig{Store: s, Schedule: Schedule{Delays: []time.Duration{time.Second}, Jitter: 1}}, "Jitter"},
		{"zero delay", DispatcherConfig{Store: s, Schedule: Schedule{Delays: []time.Duration{time.Second, 0}}}, "Delays[1]"},
	}
	for _, tt := range tests {
		_, err := NewDispatcher(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewDispatcher error %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}

	d, err := NewDispatcher(DispatcherConfig{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	if d.workers != 32 || d.perEndpoint != 8 || d.pollInterval != time.Second || d.timeout != 10*time.Second ||
		d.lease != 40*time.Second || d.autoDisableAfter != 5*24*time.Hour || d.autoDisableFailures != 10 ||
		len(d.schedule.Delays) != 9 || d.owner == "" {
		t.Errorf("defaults: %s; want 32 workers, 8 per endpoint, 1s poll, 10s timeout, 40s lease, 5 days/10 failures, the default schedule", d)
	}
	if other := NewOwner(); other == d.owner {
		t.Errorf("two NewOwner calls gave the same name %q", other)
	}
}

func TestOutcomeForDeletedEndpointIsDroppedQuietly(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		release := make(chan struct{})
		rc := newReceiver(t, func(ctx context.Context, _ int64, w http.ResponseWriter, _ *http.Request) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			w.WriteHeader(http.StatusOK)
		})
		e := h.endpoint(rc.URL)
		h.eventTo(e)
		var logs testlog.Buffer
		h.start(DispatcherConfig{Logger: debugLogger(&logs)})
		rc.waitRequests(t, 1, 5*time.Second)
		if err := s.DeleteWebhookEndpoint(context.Background(), h.accountID, h.mode, e.ID); err != nil {
			t.Fatal(err)
		}
		close(release)

		if !logs.WaitFor("deleted with its endpoint", 5*time.Second) {
			t.Fatalf("no record of the deleted delivery in the log:\n%s", logs.String())
		}
		if n := logs.Count("level=ERROR") + logs.Count("level=INFO"); n != 0 {
			t.Errorf("a delivery deleted with its endpoint is routine; logged %d info/error lines:\n%s", n, logs.String())
		}
	})
}

// Two dispatchers on one store, each with a free pool, pass one endpoint's leases on from
// delivery to delivery (store.RecordAttemptAndHandOff) and still keep it to 8 requests at
// once, sending each delivery once.
func TestHandOffKeepsTheCapAcrossDispatchers(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := slowReceiver(t, 10*time.Millisecond)
		e := h.endpoint(rc.URL)
		var ids []string
		for range 80 {
			_, d := h.eventTo(e)
			ids = append(ids, d.ID)
		}
		h.start(DispatcherConfig{Workers: 32})
		h.start(DispatcherConfig{Workers: 32})

		for _, id := range ids {
			if d := h.waitEnded(e.ID, id, 20*time.Second); d.Status != store.DeliverySucceeded || d.Attempts != 1 {
				t.Fatalf("delivery %s = %+v, want succeeded at the first attempt", id, d)
			}
		}
		if n := rc.count.Load(); n != 80 {
			t.Errorf("receiver saw %d requests for 80 deliveries", n)
		}
		if most := rc.maxCurrent.Load(); most > MaxPerEndpoint {
			t.Errorf("%d requests at once to one endpoint, want at most %d", most, MaxPerEndpoint)
		}
		h.store.mu.Lock()
		handOffs := h.store.handOffs
		h.store.mu.Unlock()
		if handOffs == 0 {
			t.Error("no delivery was handed on from one attempt to the next")
		}
	})
}

// A worker whose pool is full goes back to it instead of taking its endpoint's next
// delivery: with one worker, every delivery comes from a claim.
func TestNoHandOffWhenThePoolIsFull(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := statusReceiver(t, http.StatusNoContent)
		e := h.endpoint(rc.URL)
		var ids []string
		for range 5 {
			_, d := h.eventTo(e)
			ids = append(ids, d.ID)
		}
		h.start(DispatcherConfig{Workers: 1})
		for _, id := range ids {
			if d := h.waitEnded(e.ID, id, 10*time.Second); d.Status != store.DeliverySucceeded {
				t.Fatalf("delivery %s = %+v, want succeeded", id, d)
			}
		}
		h.store.mu.Lock()
		handOffs, claimed := h.store.handOffs, 0
		for _, n := range h.store.claims {
			claimed += n
		}
		h.store.mu.Unlock()
		if handOffs != 0 || claimed != 5 {
			t.Errorf("one worker: %d deliveries handed on and %d claimed, want 0 and 5", handOffs, claimed)
		}
	})
}

// Below an endpoint's cap claims serve it, not hand-offs: 4 endpoints with 3 deliveries each
// never have 8 attempts in flight.
func TestNoHandOffBelowTheCap(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, s store.Store) {
		h := newHarness(t, s)
		rc := slowReceiver(t, 5*time.Millisecond)
		type sent struct{ endpointID, id string }
		var all []sent
		for range 4 {
			e := h.endpoint(rc.URL)
			for range 3 {
				_, d := h.eventTo(e)
				all = append(all, sent{e.ID, d.ID})
			}
		}
		h.start(DispatcherConfig{Workers: 32})
		for _, d := range all {
			if got := h.waitEnded(d.endpointID, d.id, 10*time.Second); got.Status != store.DeliverySucceeded {
				t.Fatalf("delivery %s = %+v, want succeeded", d.id, got)
			}
		}
		h.store.mu.Lock()
		handOffs := h.store.handOffs
		h.store.mu.Unlock()
		if handOffs != 0 {
			t.Errorf("%d deliveries handed on to endpoints below their cap, want 0", handOffs)
		}
	})
}
