package delivery

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/store/sqlstore"
	"riskapi/internal/store/storetest"
	"riskapi/webhook"
)

// newSecret is a secret of the form the dashboard suggests: whsec_ and the base64 of 32
// random bytes, which the stock Standard Webhooks libraries take as it is.
func newSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// endpointWithSecret creates an enabled endpoint of url, subscribed to every event, signed
// with secret.
func (h *harness) endpointWithSecret(url, secret string) store.WebhookEndpoint {
	h.t.Helper()
	now := time.Now().UTC()
	e := store.WebhookEndpoint{ID: ident.New("we"), AccountID: h.accountID, Mode: h.mode, URL: url,
		Events: []string{store.AllEvents}, Secret: secret, Status: store.EndpointEnabled, CreatedAt: now, UpdatedAt: now}
	if err := h.store.CreateWebhookEndpoint(context.Background(), e, store.MaxEndpointsPerMode, nil); err != nil {
		h.t.Fatalf("create endpoint: %v", err)
	}
	return e
}

// deliverOnce sends one event to a fresh endpoint signed with secret, from a dispatcher whose
// clock reads the real time plus skew, and returns the request the receiver got.
func deliverOnce(t *testing.T, secret string, skew time.Duration) (store.Event, receivedRequest) {
	t.Helper()
	h := newHarness(t, openSQLite(t))
	rc := statusReceiver(t, http.StatusNoContent)
	e := h.endpointWithSecret(rc.URL+"/hook", secret)
	clock := func() time.Time { return time.Now().Add(skew) }
	ev, d := h.eventAt(e, clock().Add(-time.Second).UTC().Truncate(time.Millisecond))
	h.start(DispatcherConfig{Now: clock})
	if got := h.waitEnded(e.ID, d.ID, 5*time.Second); got.Status != store.DeliverySucceeded {
		t.Fatalf("delivery = %+v, want succeeded", got)
	}
	return ev, rc.received()[0]
}

// Every attempt carries the Standard Webhooks headers: the event id, the time the attempt was
// signed, and the signature over both and the body. Verify accepts the request as received,
// and refuses it replayed 6 minutes later; the seed's X-Webhook-Signature is still there.
func TestDeliveryCarriesStandardWebhooksSignature(t *testing.T) {
	t.Parallel()
	secret := newSecret()
	before := time.Now().Unix()
	ev, r := deliverOnce(t, secret, 0)
	after := time.Now().Unix()

	if got := r.header.Get("webhook-id"); got != ev.ID || r.header.Get("X-Webhook-Id") != ev.ID {
		t.Errorf("webhook-id %q, X-Webhook-Id %q; want the event id %s", got, r.header.Get("X-Webhook-Id"), ev.ID)
	}
	signedAt, err := strconv.ParseInt(r.header.Get("webhook-timestamp"), 10, 64)
	if err != nil || signedAt < before || signedAt > after {
		t.Errorf("webhook-timestamp %q, want the Unix seconds of the attempt, within [%d, %d]", r.header.Get("webhook-timestamp"), before, after)
	}
	if !strings.HasPrefix(r.header.Get("webhook-signature"), "v1,") {
		t.Errorf("webhook-signature %q, want v1,<base64>", r.header.Get("webhook-signature"))
	}
	if err := webhook.Verify(r.body, r.header, secret); err != nil {
		t.Errorf("Verify of the request as received: %v", err)
	}
	if err := webhook.VerifyHex(r.body, r.header.Get("X-Webhook-Signature"), secret); err != nil {
		t.Errorf("VerifyHex of X-Webhook-Signature: %v", err)
	}
	replayedAt := time.Unix(signedAt, 0).Add(6 * time.Minute)
	err = webhook.Verifier{Secret: secret, Now: func() time.Time { return replayedAt }}.Verify(r.body, r.header)
	if !errors.Is(err, webhook.ErrTimestampTooOld) {
		t.Errorf("Verify of the request replayed 6 minutes later = %v, want ErrTimestampTooOld", err)
	}
	// The seed's signature covers neither time nor id: the replay still passes it.
	if err := webhook.VerifyHex(r.body, r.header.Get("X-Webhook-Signature"), secret); err != nil {
		t.Errorf("VerifyHex of the replay: %v", err)
	}
}

// Retries send the same body and X-Webhook-Signature, each with the time of its own attempt
// in webhook-timestamp and a signature over that time.
func TestRetriesAreSignedAtTheirOwnTime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, openSQLite(t))
	rc := newReceiver(t, func(_ context.Context, n int64, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	secret := newSecret()
	e := h.endpointWithSecret(rc.URL, secret)
	_, d := h.eventTo(e)
	// The dispatcher's clock moves a minute on every reading (from several goroutines), so
	// the two attempts are signed at different seconds.
	var minutes atomic.Int64
	base := time.Now()
	h.start(DispatcherConfig{Schedule: mustSchedule(t, "10ms"), Now: func() time.Time {
		return base.Add(time.Duration(minutes.Add(1)) * time.Minute)
	}})
	if got := h.waitEnded(e.ID, d.ID, 5*time.Second); got.Status != store.DeliverySucceeded || got.Attempts != 2 {
		t.Fatalf("delivery = %+v, want succeeded on attempt 2", got)
	}
	reqs := rc.received()
	first, second := reqs[0], reqs[1]
	if !bytes.Equal(first.body, second.body) || first.header.Get("X-Webhook-Signature") != second.header.Get("X-Webhook-Signature") {
		t.Error("the retry's body or X-Webhook-Signature differs from the first attempt's")
	}
	if first.header.Get("webhook-timestamp") == second.header.Get("webhook-timestamp") ||
		first.header.Get("webhook-signature") == second.header.Get("webhook-signature") {
		t.Errorf("both attempts signed at %s: want each attempt's own time", first.header.Get("webhook-timestamp"))
	}
	for i, r := range reqs {
		at, _ := strconv.ParseInt(r.header.Get("webhook-timestamp"), 10, 64)
		v := webhook.Verifier{Secret: secret, Now: func() time.Time { return time.Unix(at, 0) }}
		if err := v.Verify(r.body, r.header); err != nil {
			t.Errorf("attempt %d: Verify at its own time: %v", i+1, err)
		}
	}
}

// A delivery whose endpoint secret cannot be decrypted (its key is not configured) is not
// sent: its attempt fails with a message that blames the service, and the other endpoints'
// deliveries go out.
func TestUndecryptableSecretIsNotSent(t *testing.T) {
	t.Parallel()
	dir := sqlitetest.Dir(t)
	open := func(opts ...sqlstore.Option) store.Store {
		s, err := sqlite.Open(context.Background(), dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	ring, _ := storetest.NewRing(t)
	rc := statusReceiver(t, http.StatusOK)
	sealed := newHarness(t, open(sqlstore.WithSecretKeys(ring)))
	lost := sealed.endpointWithSecret(rc.URL+"/lost", newSecret())
	h := newHarness(t, open()) // no key: the first endpoint's secret does not open
	h.accountID = sealed.accountID
	readable := h.endpointWithSecret(rc.URL+"/readable", newSecret())
	_, deliveries := h.event("drift.shadow_detected")
	if len(deliveries) != 2 {
		t.Fatalf("%d deliveries, want 2", len(deliveries))
	}
	h.start(DispatcherConfig{Schedule: mustSchedule(t, "1h")})
	for _, dl := range deliveries {
		got := h.waitDelivery(dl.EndpointID, dl.ID, 5*time.Second, "attempted", func(d store.Delivery) bool { return d.Attempts == 1 })
		switch dl.EndpointID {
		case lost.ID:
			if got.Status != store.DeliveryPending || got.LastError != secretUnavailableText || got.LastStatusCode != 0 {
				t.Errorf("delivery to the endpoint whose secret is lost = %+v; want pending, %q", got, secretUnavailableText)
			}
		case readable.ID:
			if got.Status != store.DeliverySucceeded {
				t.Errorf("delivery to the other endpoint = %+v, want succeeded", got)
			}
		}
	}
	if n := len(rc.received()); n != 1 {
		t.Fatalf("receiver got %d requests, want 1 (the readable endpoint's)", n)
	}
}

// stockVerdict is what the stock libraries said of one request.
type stockVerdict struct {
	StandardWebhooks string `json:"standardwebhooks"` // "ok" or the error message
	Svix             string `json:"svix"`
}

// verifyWithStockLibraries checks requests with Webhook.verify of the npm packages
// standardwebhooks and svix, installed in the directory RISKAPI_TEST_STANDARDWEBHOOKS_DIR
// names (CI installs them; .ci/run). Without the variable the test is skipped; with it, a
// missing package or node fails the test.
func verifyWithStockLibraries(t *testing.T, secret string, reqs map[string]stockRequest) map[string]stockVerdict {
	t.Helper()
	dir := os.Getenv("RISKAPI_TEST_STANDARDWEBHOOKS_DIR")
	if dir == "" {
		t.Skip("RISKAPI_TEST_STANDARDWEBHOOKS_DIR is not set; skipping the check with the standardwebhooks and svix npm packages (CI sets it)")
	}
	for _, pkg := range []string{"standardwebhooks", "svix"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("RISKAPI_TEST_STANDARDWEBHOOKS_DIR=%s but npm package %s is not installed there: %v", dir, pkg, err)
		}
	}
	type request struct {
		Body    []byte            `json:"body"` // base64 in JSON
		Headers map[string]string `json:"headers"`
		LaterMS int64             `json:"later_ms"`
	}
	in := map[string]request{}
	for name, r := range reqs {
		headers := map[string]string{}
		for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			headers[h] = r.header.Get(h)
		}
		in[name] = request{Body: r.body, Headers: headers, LaterMS: r.later.Milliseconds()}
	}
	input, err := json.Marshal(map[string]any{"secret": secret, "requests": in})
	if err != nil {
		t.Fatal(err)
	}
	// The script must lie beside node_modules for its imports to resolve.
	script, err := os.CreateTemp(dir, "verify-riskapi-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(script.Name()) })
	if _, err := script.WriteString(stockVerifyScript); err != nil {
		t.Fatal(err)
	}
	if err := script.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script.Name())
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script.Name(), err, stderr.String())
	}
	var verdicts map[string]stockVerdict
	if err := json.Unmarshal(out, &verdicts); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	return verdicts
}

// stockRequest is a received request and how much later than now the stock libraries verify
// it (0: now).
type stockRequest struct {
	receivedRequest
	later time.Duration
}

// stockVerifyScript reads {secret, requests: {name: {body (base64), headers, later_ms}}} on
// stdin and prints {name: {standardwebhooks, svix}}, each "ok" or the library's error
// message. A request with later_ms is verified with the clock (Date.now, which both libraries
// read) moved that far ahead: the receiver's view of a replay that much later.
const stockVerifyScript = `import { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { readFileSync } from "node:fs";
const input = JSON.parse(readFileSync(0, "utf8"));
const realNow = Date.now;
const verdict = (laterMs, verify) => {
  Date.now = () => realNow() + laterMs;
  try { verify(); return "ok"; } catch (e) { return String(e.message); } finally { Date.now = realNow; }
};
const out = {};
for (const [name, r] of Object.entries(input.requests)) {
  const body = Buffer.from(r.body, "base64");
  out[name] = {
    standardwebhooks: verdict(r.later_ms, () => new StandardWebhook(input.secret).verify(body, r.headers)),
    svix: verdict(r.later_ms, () => new SvixWebhook(input.secret).verify(body, r.headers)),
  };
}
console.log(JSON.stringify(out));
`

// Real deliveries to a receiver on 127.0.0.1 verify with the stock Standard Webhooks
// verifiers, standardwebhooks' and svix' Webhook.verify; with the body changed they fail. A
// replay 6 minutes later fails both for its timestamp, as it fails webhook.Verify, seen two
// ways: the captured request verified with the receiver's clock 6 minutes ahead, and an
// attempt the dispatcher signed 6 minutes before it arrived (its clock set back).
func TestStockStandardWebhooksVerifiers(t *testing.T) {
	t.Parallel()
	secret := newSecret()
	_, fresh := deliverOnce(t, secret, 0)
	_, stale := deliverOnce(t, secret, -6*time.Minute)
	altered := fresh
	altered.body = append(bytes.Clone(fresh.body), ' ')
	verdicts := verifyWithStockLibraries(t, secret, map[string]stockRequest{
		"fresh":                 {receivedRequest: fresh},
		"altered":               {receivedRequest: altered},
		"replayed 6 min later":  {receivedRequest: fresh, later: 6 * time.Minute},
		"signed 6 min ago":      {receivedRequest: stale},
		"4 min later, in range": {receivedRequest: fresh, later: 4 * time.Minute},
	})
	t.Logf("stock verifiers: %+v", verdicts)

	for _, name := range []string{"fresh", "4 min later, in range"} {
		if v := verdicts[name]; v.StandardWebhooks != "ok" || v.Svix != "ok" {
			t.Errorf("%s: %+v, want both ok", name, v)
		}
	}
	if v := verdicts["altered"]; v.StandardWebhooks == "ok" || v.Svix == "ok" {
		t.Errorf("altered body: %+v, want both to refuse", v)
	}
	for _, name := range []string{"replayed 6 min later", "signed 6 min ago"} {
		if v := verdicts[name]; !strings.Contains(v.StandardWebhooks, "too old") || !strings.Contains(v.Svix, "too old") {
			t.Errorf("%s: %+v, want both to refuse it as too old", name, v)
		}
	}
	if err := webhook.Verify(stale.body, stale.header, secret); !errors.Is(err, webhook.ErrTimestampTooOld) {
		t.Errorf("webhook.Verify of the delivery signed 6 minutes ago = %v, want ErrTimestampTooOld", err)
	}
	if err := webhook.Verify(fresh.body, fresh.header, secret); err != nil {
		t.Errorf("webhook.Verify of the fresh delivery: %v", err)
	}
}
