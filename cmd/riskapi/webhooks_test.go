package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/webhook"
)

const receiverSecret = "whsec_abcdefghijklmnopqrstuvwxyz012345"

// receiver is a webhook receiver on loopback that records every request it gets.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []receivedRequest
	arrived  chan struct{} // closed, and replaced, as each request arrives
	// answer decides the status of the n-th request (0-based); nil answers 200.
	answer func(n int) int
	// held, when not nil, keeps the requests from the holdFrom-th (0-based) on unanswered
	// until it is closed or their connection ends; see hold.
	held     chan struct{}
	holdFrom int
}

type receivedRequest struct {
	at                         time.Time
	body                       []byte
	header                     http.Header
	eventID, deliveryID, event string
	signature, userAgent       string
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.requests)
		rc.requests = append(rc.requests, receivedRequest{at: time.Now(), body: body, header: r.Header.Clone(),
			eventID: r.Header.Get("X-Webhook-Id"), deliveryID: r.Header.Get("X-Webhook-Delivery"), event: r.Header.Get("X-Webhook-Event"),
			signature: r.Header.Get("X-Webhook-Signature"), userAgent: r.Header.Get("User-Agent")})
		answer, held := rc.answer, rc.held
		if n < rc.holdFrom {
			held = nil
		}
		if rc.arrived != nil {
			close(rc.arrived)
			rc.arrived = nil
		}
		rc.mu.Unlock()
		if held != nil {
			select {
			case <-held:
			case <-r.Context().Done():
			}
		}
		status := http.StatusOK
		if answer != nil {
			status = answer(n)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) received() []receivedRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]receivedRequest(nil), rc.requests...)
}

// hold leaves the requests from the from-th (0-based) on unanswered, each until release is
// called or its connection ends (the sender was killed). Call it before anything is sent.
func (rc *receiver) hold(from int) (release func()) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	held := make(chan struct{})
	rc.held, rc.holdFrom = held, from
	var once sync.Once
	return func() { once.Do(func() { close(held) }) }
}

// waitFor checks cond now and as each request arrives until it holds, and fails the test
// with what after within.
func (rc *receiver) waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		rc.mu.Lock()
		if rc.arrived == nil {
			rc.arrived = make(chan struct{})
		}
		arrived := rc.arrived
		rc.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

// githubStyleVerify is the check a stock GitHub-style verifier makes: "sha256=" followed by
// the hex HMAC-SHA256 of the raw body under the secret, compared in constant time. Written
// here independently of package webhook.
func githubStyleVerify(body []byte, header, secret string) bool {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(header))
}

// verifyWithOctokit checks a delivery with verify() of @octokit/webhooks-methods, the stock
// verifier of GitHub webhooks, when RISKAPI_TEST_OCTOKIT_DIR names a directory where it is
// installed (CI installs it; locally the check is skipped).
func verifyWithOctokit(t *testing.T, body []byte, signature, secret string) {
	t.Helper()
	dir := os.Getenv("RISKAPI_TEST_OCTOKIT_DIR")
	if dir == "" {
		t.Log("RISKAPI_TEST_OCTOKIT_DIR is not set; skipping the check with @octokit/webhooks-methods")
		return
	}
	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, body, 0o600); err != nil {
		t.Fatal(err)
	}
	script := `import { verify } from "@octokit/webhooks-methods";
import { readFileSync } from "node:fs";
const [secret, file, signature] = process.argv.slice(2);
const ok = await verify(secret, readFileSync(file, "utf8"), signature);
const bad = await verify(secret, readFileSync(file, "utf8") + " ", signature);
console.log(ok && !bad ? "verified" : "rejected");`
	scriptFile := filepath.Join(dir, "verify-riskapi.mjs")
	if err := os.WriteFile(scriptFile, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", scriptFile, secret, bodyFile, signature).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "verified" {
		t.Fatalf("@octokit/webhooks-methods verify: %v\n%s", err, out)
	}
}

// apiCall sends a request with the key and decodes the envelope's data.
func apiCall(t *testing.T, svc *service, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	return svc.call(t, method, path, "Bearer "+key, r)
}

func TestWebhookTestEventArrivesSignedWithinOneSecond(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	svc := startServe(t, env{"RISKAPI_DATA_DIR": sqlitetest.Dir(t), "RISKAPI_ALLOW_PRIVATE_WEBHOOKS": "true"})
	key := testKeyPattern.FindString(svc.stdout.String())
	status, created := apiCall(t, svc, http.MethodPost, "/v1/webhooks", key,
		fmt.Sprintf(`{"url": %q, "events": ["drift.shadow_detected"], "secret": %q}`, rc.URL+"/hook", receiverSecret))
	if status != http.StatusCreated {
		t.Fatalf("create webhook: %d %v", status, created)
	}
	id := dig(created, "data.id").(string)
	start := time.Now()
	status, res := apiCall(t, svc, http.MethodPost, "/v1/webhooks/"+id+"/test", key, "")
	if status != http.StatusAccepted {
		t.Fatalf("test: %d %v", status, res)
	}
	rc.waitFor(t, time.Second, "webhook.test delivery", func() bool { return len(rc.received()) == 1 })
	got := rc.received()[0]
	t.Logf("delivered %s after the test call", got.at.Sub(start).Round(time.Millisecond))
	if got.event != "webhook.test" || got.eventID != dig(res, "data.event_id") || got.deliveryID != dig(res, "data.delivery_id") ||
		got.userAgent != "riskapi-webhooks/1" {
		t.Fatalf("headers: %+v", got)
	}
	if !githubStyleVerify(got.body, got.signature, receiverSecret) {
		t.Fatalf("signature %q does not verify GitHub-style", got.signature)
	}
	if err := webhook.VerifyHex(got.body, got.signature, receiverSecret); err != nil {
		t.Fatalf("webhook.VerifyHex: %v", err)
	}
	if err := webhook.Verify(got.body, got.header, receiverSecret); err != nil || got.header.Get("webhook-id") != got.eventID {
		t.Fatalf("webhook.Verify (Standard Webhooks, webhook-id %q): %v", got.header.Get("webhook-id"), err)
	}
	if githubStyleVerify(append(bytes.Clone(got.body), ' '), got.signature, receiverSecret) {
		t.Fatal("a changed body still verifies")
	}
	verifyWithOctokit(t, got.body, got.signature, receiverSecret)
	var ev map[string]any
	if err := json.Unmarshal(got.body, &ev); err != nil || ev["type"] != "webhook.test" || dig(ev, "data.object.id") != id {
		t.Fatalf("body: %s", got.body)
	}
	// The delivery log shows it succeeded; the body equals GET /v1/events/{id}.
	pollUntil(t, 10*time.Millisecond, 2*time.Second, "delivery recorded", func() bool {
		_, log := apiCall(t, svc, http.MethodGet, "/v1/webhooks/"+id+"/deliveries", key, "")
		items, _ := log["data"].([]any)
		return len(items) == 1 && items[0].(map[string]any)["status"] == "succeeded"
	})
	if strings.Contains(svc.stderr.String(), receiverSecret) || strings.Contains(svc.stdout.String(), receiverSecret) {
		t.Fatal("the webhook secret appears in the server's output")
	}
	res2, err := http.Get(svc.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(res2.Body)
	res2.Body.Close()
	for _, want := range []string{`riskapi_webhook_attempts_total{outcome="succeeded"} 1`, "riskapi_webhook_attempt_duration_seconds_count", "riskapi_webhook_queue_depth"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestFailedAttemptsAreRetriedWithTheSameBody(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	rc.answer = func(n int) int {
		if n < 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	svc := startServe(t, env{"RISKAPI_DATA_DIR": sqlitetest.Dir(t), "RISKAPI_ALLOW_PRIVATE_WEBHOOKS": "true",
		"RISKAPI_WEBHOOK_RETRY_SCHEDULE": "100ms,100ms,100ms"})
	key := testKeyPattern.FindString(svc.stdout.String())
	_, created := apiCall(t, svc, http.MethodPost, "/v1/webhooks", key,
		fmt.Sprintf(`{"url": %q, "events": ["*"], "secret": %q}`, rc.URL, receiverSecret))
	id := dig(created, "data.id").(string)
	_, res := apiCall(t, svc, http.MethodPost, "/v1/webhooks/"+id+"/test", key, "")
	deliveryID := dig(res, "data.delivery_id").(string)
	rc.waitFor(t, 10*time.Second, "three attempts", func() bool { return len(rc.received()) == 3 })
	var delivery map[string]any
	pollUntil(t, 10*time.Millisecond, 5*time.Second, "delivery succeeded", func() bool {
		_, log := apiCall(t, svc, http.MethodGet, "/v1/webhooks/"+id+"/deliveries", key, "")
		items, _ := log["data"].([]any)
		if len(items) == 1 {
			delivery = items[0].(map[string]any)
		}
		return delivery != nil && delivery["status"] == "succeeded"
	})
	if delivery["id"] != deliveryID || delivery["attempts"] != 3.0 || delivery["last_status_code"] != 200.0 || delivery["completed_at"] == nil || delivery["next_attempt_at"] != nil {
		t.Fatalf("delivery: %v", delivery)
	}
	got := rc.received()
	if len(got) != 3 {
		t.Fatalf("%d attempts reached the receiver, want 3", len(got))
	}
	for i := range got {
		if !bytes.Equal(got[i].body, got[0].body) || got[i].deliveryID != deliveryID || !githubStyleVerify(got[i].body, got[i].signature, receiverSecret) {
			t.Fatalf("attempt %d differs or does not verify", i+1)
		}
	}
}

// countByEvent tallies the received requests by X-Webhook-Id.
func countByEvent(reqs []receivedRequest) map[string]int {
	n := map[string]int{}
	for _, r := range reqs {
		n[r.eventID]++
	}
	return n
}

// queueEvents stores an endpoint for the receiver and n events for it, as products would
// emit them, straight into the store (the server need not run).
func queueEvents(t *testing.T, st store.Store, accountID, url string, n int) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	endpoint := store.WebhookEndpoint{ID: ident.New("we"), AccountID: accountID, Mode: store.ModeTest, URL: url,
		Events: []string{store.AllEvents}, Secret: receiverSecret, Status: store.EndpointEnabled, CreatedAt: now, UpdatedAt: now}
	if err := st.CreateWebhookEndpoint(ctx, endpoint, store.MaxEndpointsPerMode, nil); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := ident.New("evt")
		payload := fmt.Sprintf(`{"id":%q,"object":"event","type":"drift.shadow_detected","api_version":"v1","created_at":%q,"livemode":false,"data":{"object":{"n":%d}}}`,
			id, now.Format("2006-01-02T15:04:05.000Z"), i)
		ds, err := st.CreateEvent(ctx, store.Event{ID: id, AccountID: accountID, Mode: store.ModeTest, Type: "drift.shadow_detected", Payload: []byte(payload), CreatedAt: now})
		if err != nil || len(ds) != 1 {
			t.Fatalf("event %d: %d deliveries, %v", i, len(ds), err)
		}
	}
}

func createAccount(t *testing.T, e env) string {
	t.Helper()
	var acct struct{ ID string }
	if err := json.Unmarshal([]byte(cli(t, e, "accounts", "create", "--name", "Hooks", "--email", "h@hooks.test", "--plan", "starter", "--json")), &acct); err != nil {
		t.Fatal(err)
	}
	return acct.ID
}

// TestCrashMidDeliveryLosesNothing: kill -9 the server while 1,000 deliveries are pending,
// restart it, and every event arrives at least once; the only duplicates are attempts that
// were in flight at the kill (at most the per-endpoint concurrency of 8).
func TestCrashMidDeliveryLosesNothing(t *testing.T) {
	t.Parallel()
	const events, answered = 1000, 200
	rc := newReceiver(t)
	// The first 200 requests are answered; later ones are held until the kill has happened,
	// so the kill always falls mid-delivery with every attempt in flight held.
	release := rc.hold(answered)
	defer release()
	dir := sqlitetest.Dir(t)
	e := env{"RISKAPI_DATA_DIR": dir}
	accountID := createAccount(t, e)
	st, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	queueEvents(t, st, accountID, rc.URL, events)
	st.Close()

	bin := buildBinary(t)
	procEnv := []string{"RISKAPI_DATA_DIR=" + dir, "RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true", "RISKAPI_WEBHOOK_TIMEOUT=1s"}
	first := startProcess(t, bin, procEnv)
	rc.waitFor(t, 30*time.Second, "first deliveries", func() bool { return len(rc.received()) > answered })
	if err := first.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no flush
		t.Fatal(err)
	}
	_ = first.stop() // reaps the killed process
	atKill := len(rc.received())
	release()
	second := startProcess(t, bin, procEnv)
	rc.waitFor(t, 90*time.Second, "every event after the restart", func() bool { return len(countByEvent(rc.received())) == events })
	// A graceful stop waits for the attempts in flight, so nothing arrives after it.
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}
	got := rc.received()
	byEvent := countByEvent(got)
	duplicates := len(got) - len(byEvent)
	t.Logf("%d delivered before the kill, %d requests in all, %d duplicates", atKill, len(got), duplicates)
	if duplicates > 8 {
		t.Fatalf("%d duplicate deliveries; only attempts in flight at the kill (at most 8) may repeat", duplicates)
	}
}

// TestTwoProcessesNeverSendAnAttemptTwice: two servers on one PostgreSQL database deliver
// 1,000 events; every delivery reaches the receiver exactly once.
func TestTwoProcessesNeverSendAnAttemptTwice(t *testing.T) {
	dbURL := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	const events = 1000
	rc := newReceiver(t)
	// Nothing is answered until both processes run, so that they deliver side by side.
	release := rc.hold(0)
	defer release()
	e := env{"RISKAPI_DATABASE_URL": dbURL}
	cli(t, e, "migrate")
	accountID := createAccount(t, e)
	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	queueEvents(t, st, accountID, rc.URL, events)
	st.Close()

	bin := buildBinary(t)
	procEnv := []string{"RISKAPI_DATABASE_URL=" + dbURL, "RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true"}
	servers := []*process{startProcess(t, bin, procEnv), startProcess(t, bin, procEnv)}
	release()
	rc.waitFor(t, 60*time.Second, "every event", func() bool { return len(countByEvent(rc.received())) == events })
	// A graceful stop waits for the attempts in flight, so nothing arrives after it.
	for _, p := range servers {
		if err := p.stop(); err != nil {
			t.Fatal(err)
		}
	}
	got := rc.received()
	byDelivery := map[string]int{}
	for _, r := range got {
		byDelivery[r.deliveryID]++
	}
	if len(got) != events || len(byDelivery) != events {
		t.Fatalf("%d requests for %d deliveries of %d events; want each delivery sent exactly once", len(got), len(byDelivery), events)
	}
}
