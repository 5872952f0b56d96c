package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/delivery"
	"riskapi/internal/event"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

const testSecret = "whsec_0123456789abcdefghijklmnop"

// allowLoopback lets endpoints point at loopback receivers, as a development server started
// with RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true does.
func allowLoopback(c *Config) { c.Webhooks.Targets = delivery.Targets{AllowPrivate: true} }

func (b *bundle) send(method, path, key, body string) response {
	b.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	return b.do(method, path, strings.NewReader(body), h)
}

func (b *bundle) createWebhook(key, url string, events string) response {
	b.t.Helper()
	return b.send(http.MethodPost, "/v1/webhooks", key, fmt.Sprintf(`{"url": %q, "events": %s, "secret": %q, "description": "ci"}`, url, events, testSecret))
}

func TestWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, allowLoopback, nil)
	r := b.createWebhook(b.testKey, "http://127.0.0.1:9/hook", `["webhook.test", "drift.shadow_detected"]`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := r.field("data.id").(string)
	if r.field("data.object") != "webhook_endpoint" || r.field("data.status") != "enabled" || r.field("data.livemode") != false || r.field("data.description") != "ci" {
		t.Fatalf("created endpoint: %s", r.raw)
	}
	if strings.Contains(string(r.raw), testSecret) {
		t.Fatal("the secret was returned")
	}
	if g := b.get("/v1/webhooks/"+id, b.testKey); g.status != http.StatusOK || g.field("data.id") != id {
		t.Fatalf("get: %d %s", g.status, g.raw)
	}
	// PATCH changes only what is sent.
	p := b.send(http.MethodPatch, "/v1/webhooks/"+id, b.testKey, `{"events": ["*"], "status": "disabled"}`)
	if p.status != http.StatusOK || p.field("data.status") != "disabled" || p.field("data.disabled_reason") != "user" || p.field("data.description") != "ci" {
		t.Fatalf("patch: %d %s", p.status, p.raw)
	}
	if ev := p.field("data.events").([]any); len(ev) != 1 || ev[0] != "*" {
		t.Fatalf("events after patch: %v", ev)
	}
	if p := b.send(http.MethodPatch, "/v1/webhooks/"+id, b.testKey, `{"status": "enabled"}`); p.field("data.disabled_reason") != nil {
		t.Fatalf("re-enabled endpoint keeps a reason: %s", p.raw)
	}
	list := b.get("/v1/webhooks?limit=1", b.testKey)
	if list.field("pagination.total_count") != 1.0 {
		t.Fatalf("list: %s", list.raw)
	}
	// Tenancy: the live key, and another account, see nothing.
	b.get("/v1/webhooks/"+id, b.liveKey).wantError(t, http.StatusNotFound, "not_found_error", CodeNotFound)
	if l := b.get("/v1/webhooks", b.liveKey); l.field("pagination.total_count") != 0.0 {
		t.Fatalf("live key lists test endpoints: %s", l.raw)
	}
	d := b.send(http.MethodDelete, "/v1/webhooks/"+id, b.testKey, "")
	if d.status != http.StatusOK || d.field("data.deleted") != true || d.field("data.id") != id {
		t.Fatalf("delete: %d %s", d.status, d.raw)
	}
	b.get("/v1/webhooks/"+id, b.testKey).wantError(t, http.StatusNotFound, "not_found_error", CodeNotFound)
	b.send(http.MethodDelete, "/v1/webhooks/"+id, b.testKey, "").wantError(t, http.StatusNotFound, "not_found_error", CodeNotFound)
	if strings.Contains(b.logs.String(), testSecret) {
		t.Fatal("the secret appears in the log")
	}
}

func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil) // private targets refused, as in production
	for name, c := range map[string]struct {
		key, body, code, field string
	}{
		"live loopback http":   {b.liveKey, `{"url": "http://127.0.0.1/hook", "events": ["*"], "secret": "` + testSecret + `"}`, "INVALID_URL", "url"},
		"live loopback https":  {b.liveKey, `{"url": "https://127.0.0.1/hook", "events": ["*"], "secret": "` + testSecret + `"}`, "INVALID_URL", "url"},
		"test loopback":        {b.testKey, `{"url": "http://localhost:8080/hook", "events": ["*"], "secret": "` + testSecret + `"}`, "INVALID_URL", "url"},
		"private network":      {b.testKey, `{"url": "http://10.1.2.3/hook", "events": ["*"], "secret": "` + testSecret + `"}`, "INVALID_URL", "url"},
		"metadata address":     {b.testKey, `{"url": "http://169.254.169.254/latest", "events": ["*"], "secret": "` + testSecret + `"}`, "INVALID_URL", "url"},
		"relative url":         {b.testKey, `{"url": "/hook", "events": ["*"], "secret": "` + testSecret + `"}`, "INVALID_URL", "url"},
		"missing url":          {b.testKey, `{"events": ["*"], "secret": "` + testSecret + `"}`, "INVALID_URL", "url"},
		"number url":           {b.testKey, `{"url": 5, "events": ["*"], "secret": "` + testSecret + `"}`, "INVALID_URL", "url"},
		"empty events":         {b.testKey, `{"url": "https://8.8.8.8/h", "events": [], "secret": "` + testSecret + `"}`, "INVALID_EVENTS", "events"},
		"unknown kind":         {b.testKey, `{"url": "https://8.8.8.8/h", "events": ["drift.analyzed"], "secret": "` + testSecret + `"}`, "INVALID_EVENTS", "events[0]"},
		"star with others":     {b.testKey, `{"url": "https://8.8.8.8/h", "events": ["*", "webhook.test"], "secret": "` + testSecret + `"}`, "INVALID_EVENTS", "events[0]"},
		"duplicate kind":       {b.testKey, `{"url": "https://8.8.8.8/h", "events": ["webhook.test", "webhook.test"], "secret": "` + testSecret + `"}`, "INVALID_EVENTS", "events[1]"},
		"missing events":       {b.testKey, `{"url": "https://8.8.8.8/h", "secret": "` + testSecret + `"}`, "INVALID_EVENTS", "events"},
		"secret without whsec": {b.testKey, `{"url": "https://8.8.8.8/h", "events": ["*"], "secret": "0123456789abcdefghijklmnopqrstuv"}`, "INVALID_SECRET", "secret"},
		"short secret":         {b.testKey, `{"url": "https://8.8.8.8/h", "events": ["*"], "secret": "whsec_short"}`, "INVALID_SECRET", "secret"},
		"long secret":          {b.testKey, `{"url": "https://8.8.8.8/h", "events": ["*"], "secret": "whsec_` + strings.Repeat("x", 251) + `"}`, "INVALID_SECRET", "secret"},
		"missing secret":       {b.testKey, `{"url": "https://8.8.8.8/h", "events": ["*"]}`, "INVALID_SECRET", "secret"},
		"unknown field":        {b.testKey, `{"url": "https://8.8.8.8/h", "events": ["*"], "secret": "` + testSecret + `", "enabled": true}`, CodeUnknownField, "enabled"},
	} {
		r := b.send(http.MethodPost, "/v1/webhooks", c.key, c.body)
		r.wantError(t, http.StatusBadRequest, "validation_error", c.code)
		if r.field("error.details.field") != c.field {
			t.Errorf("%s: details.field %v, want %s (%s)", name, r.field("error.details.field"), c.field, r.field("error.message"))
		}
	}
	if strings.Contains(b.logs.String(), testSecret) {
		t.Fatal("a secret appears in the log")
	}
}

func TestAtMost16EndpointsPerAccountAndMode(t *testing.T) {
	t.Parallel()
	b := setup(t, allowLoopback, nil)
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = b.createWebhook(b.testKey, fmt.Sprintf("http://127.0.0.1:9/%d", i), `["*"]`).status
		})
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		if s == http.StatusCreated {
			created++
		}
	}
	if created != store.MaxEndpointsPerMode {
		t.Fatalf("%d endpoints created, want %d", created, store.MaxEndpointsPerMode)
	}
	r := b.createWebhook(b.testKey, "http://127.0.0.1:9/17", `["*"]`)
	r.wantError(t, http.StatusBadRequest, "invalid_request_error", CodeBadRequest)
	// The other mode has its own 16.
	if r := b.createWebhook(b.liveKey, "https://127.0.0.1:9/live", `["*"]`); r.status != http.StatusCreated {
		t.Fatalf("live endpoint after 16 test ones: %d %s", r.status, r.raw)
	}
}

func TestTestEventIsQueuedForThatEndpointOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, allowLoopback, nil)
	one := b.createWebhook(b.testKey, "http://127.0.0.1:9/one", `["drift.shadow_detected"]`).field("data.id").(string)
	other := b.createWebhook(b.testKey, "http://127.0.0.1:9/other", `["*"]`).field("data.id").(string)
	r := b.send(http.MethodPost, "/v1/webhooks/"+one+"/test", b.testKey, "")
	if r.status != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.status, r.raw)
	}
	eventID, deliveryID := r.field("data.event_id").(string), r.field("data.delivery_id").(string)
	ev := b.get("/v1/events/"+eventID, b.testKey)
	if ev.field("data.type") != "webhook.test" || ev.field("data.data.object.id") != one || ev.field("data.livemode") != false {
		t.Fatalf("event: %s", ev.raw)
	}
	deliveries := b.get("/v1/webhooks/"+one+"/deliveries", b.testKey)
	items := deliveries.body["data"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["id"] != deliveryID || items[0].(map[string]any)["status"] != "pending" {
		t.Fatalf("deliveries of the tested endpoint: %s", deliveries.raw)
	}
	if o := b.get("/v1/webhooks/"+other+"/deliveries", b.testKey); o.field("pagination.total_count") != 0.0 {
		t.Fatalf("the other endpoint got the test event: %s", o.raw)
	}
	// Events of the test mode are invisible to the live key.
	b.get("/v1/events/"+eventID, b.liveKey).wantError(t, http.StatusNotFound, "not_found_error", CodeNotFound)
	if l := b.get("/v1/events?type=webhook.test", b.testKey); l.field("pagination.total_count") != 1.0 {
		t.Fatalf("events list: %s", l.raw)
	}
	b.get("/v1/events?type=drift.analyzed", b.testKey).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_TYPE")
	// A manual retry is accepted and flagged.
	rr := b.send(http.MethodPost, "/v1/webhooks/"+one+"/deliveries/"+deliveryID+"/retry", b.testKey, "")
	if rr.status != http.StatusAccepted || rr.field("data.manual_retry") != true {
		t.Fatalf("retry: %d %s", rr.status, rr.raw)
	}
	b.send(http.MethodPost, "/v1/webhooks/"+other+"/deliveries/"+deliveryID+"/retry", b.testKey, "").
		wantError(t, http.StatusNotFound, "not_found_error", CodeNotFound)
}

func TestProductEventsFanOutByModeAndKind(t *testing.T) {
	t.Parallel()
	b := setup(t, allowLoopback, nil)
	testAll := b.createWebhook(b.testKey, "http://127.0.0.1:9/t", `["*"]`).field("data.id").(string)
	liveKeyAll := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Mode: store.ModeLive, Scopes: []string{"webhooks:*", "events:read"}})
	// Live mode needs https; the loopback https URL is allowed here as in development.
	liveAll := b.createWebhook(liveKeyAll, "https://127.0.0.1:9/l", `["*"]`).field("data.id").(string)
	liveDrift := b.createWebhook(liveKeyAll, "https://127.0.0.1:9/d", `["drift.shadow_detected"]`).field("data.id").(string)
	for _, c := range []struct {
		mode store.Mode
		kind string
	}{{store.ModeLive, product.Drift.Event}, {store.ModeLive, product.Cascade.Event}, {store.ModeTest, product.Meridian.Event}} {
		ev, err := event.New(b.account.ID, c.mode, c.kind, map[string]string{"id": "obj_1"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.CreateEvent(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	count := func(key, id string) float64 {
		return b.get("/v1/webhooks/"+id+"/deliveries", key).field("pagination.total_count").(float64)
	}
	if n := count(b.testKey, testAll); n != 1 {
		t.Fatalf("test endpoint got %v deliveries, want 1 (test events only)", n)
	}
	if n := count(liveKeyAll, liveAll); n != 2 {
		t.Fatalf("live * endpoint got %v deliveries, want 2", n)
	}
	if n := count(liveKeyAll, liveDrift); n != 1 {
		t.Fatalf("live drift endpoint got %v deliveries, want 1", n)
	}
}
