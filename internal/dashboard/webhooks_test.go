package dashboard

import (
	"context"
	"encoding/base64"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"riskapi/internal/delivery"
	"riskapi/internal/store"
)

var newSecretPattern = regexp.MustCompile(`<code id="new-secret">([^<]+)</code>`)

// Add (secret generated and shown once), send a test event (one delivery, to this endpoint),
// disable, enable, delete; the API's validation applies, and other modes do not see it.
func TestWebhookLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct, u := b.newUser(store.PlanStarter)
	br := b.browser()
	br.signIn(u)
	br.get("/dashboard/webhooks")
	res := br.post("/dashboard/webhooks", url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {"drift.shadow_detected", "webhook.test"},
		"description": {"on-call pager"}})
	wantStatus(t, "add webhook", res, http.StatusOK)
	m := newSecretPattern.FindStringSubmatch(res.body)
	if m == nil || !strings.HasPrefix(m[1], "whsec_") {
		t.Fatalf("no generated secret on the page:\n%s", res.body)
	}
	// The page escapes base64's "+" (&#43;); the secret is what a browser shows.
	secret, shown := html.UnescapeString(m[1]), m[1]
	// The form the stock Standard Webhooks libraries decode: whsec_ and base64 of 32 bytes.
	if key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_")); err != nil || len(key) != 32 {
		t.Fatalf("generated secret %s… is not whsec_ and the base64 of 32 bytes (%d bytes, %v)", secret[:8], len(key), err)
	}
	page, err := b.store.ListWebhookEndpoints(context.Background(), acct.ID, store.ModeTest, store.PageQuery{Limit: 10})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("endpoints: %v, %v", page.Items, err)
	}
	e := page.Items[0]
	if e.Secret != secret || e.URL != "http://127.0.0.1:9/hook" || strings.Join(e.Events, ",") != "drift.shadow_detected,webhook.test" ||
		e.Description != "on-call pager" || e.Status != store.EndpointEnabled {
		t.Fatalf("stored endpoint: %+v", e)
	}
	detail := br.get("/dashboard/webhooks/" + e.ID)
	wantStatus(t, "webhook page", detail, http.StatusOK)
	for _, path := range []string{"/dashboard/webhooks", "/dashboard/webhooks/" + e.ID} {
		if body := br.get(path).body; strings.Contains(body, secret) || strings.Contains(body, shown) {
			t.Fatalf("%s shows the secret again", path)
		}
	}
	if strings.Contains(b.logs.String(), secret) {
		t.Fatal("the secret reached the log")
	}

	wantRedirect(t, "send test", br.post("/dashboard/webhooks/"+e.ID+"/test", nil), "/dashboard/webhooks/"+e.ID+"?done=test-sent")
	deliveries, err := b.store.ListDeliveries(context.Background(), acct.ID, store.ModeTest, e.ID, store.PageQuery{Limit: 10})
	if err != nil || len(deliveries.Items) != 1 || deliveries.Items[0].EventType != "webhook.test" {
		t.Fatalf("deliveries after the test: %+v, %v", deliveries.Items, err)
	}
	ev, err := b.store.Event(context.Background(), acct.ID, store.ModeTest, deliveries.Items[0].EventID)
	if err != nil || !strings.Contains(string(ev.Payload), `"type":"webhook.test"`) || !strings.Contains(string(ev.Payload), e.ID) {
		t.Fatalf("test event: %s, %v", ev.Payload, err)
	}
	select {
	case <-b.notify:
	default:
		t.Fatal("the dispatcher was not woken for the test delivery")
	}
	if log := br.get("/dashboard/webhooks/" + e.ID).body; !strings.Contains(log, deliveries.Items[0].ID) {
		t.Fatal("the delivery log does not list the test delivery")
	}

	br.get("/dashboard/webhooks/" + e.ID)
	wantRedirect(t, "disable", br.post("/dashboard/webhooks/"+e.ID+"/status", url.Values{"status": {"disabled"}}), "/dashboard/webhooks/"+e.ID+"?done=webhook-disabled")
	got, _ := b.store.WebhookEndpoint(context.Background(), acct.ID, store.ModeTest, e.ID)
	if got.Status != store.EndpointDisabled || got.DisabledReason != store.DisabledByUser {
		t.Fatalf("after disable: %+v", got)
	}
	wantRedirect(t, "enable", br.post("/dashboard/webhooks/"+e.ID+"/status", url.Values{"status": {"enabled"}}), "/dashboard/webhooks/"+e.ID+"?done=webhook-enabled")

	// The live view does not see a test-mode endpoint.
	br.post("/dashboard/mode", url.Values{"mode": {"live"}})
	wantStatus(t, "test endpoint in live mode", br.get("/dashboard/webhooks/"+e.ID), http.StatusNotFound)
	br.get("/dashboard/webhooks")
	br.post("/dashboard/mode", url.Values{"mode": {"test"}})

	wantStatus(t, "delete confirmation", br.get("/dashboard/webhooks/"+e.ID+"/delete"), http.StatusOK)
	wantRedirect(t, "delete", br.post("/dashboard/webhooks/"+e.ID+"/delete", nil), "/dashboard/webhooks?done=webhook-deleted")
	if _, err := b.store.WebhookEndpoint(context.Background(), acct.ID, store.ModeTest, e.ID); err == nil {
		t.Fatal("the endpoint survived deletion")
	}
}

func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Targets = delivery.Targets{} }) // production policy
	acct, u := b.newUser(store.PlanStarter)
	br := b.browser()
	br.signIn(u)
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"url": {"http://127.0.0.1/hook"}, "all": {"on"}}, "public address"},
		{url.Values{"url": {"ftp://example.com/hook"}, "all": {"on"}}, "not supported"},
		{url.Values{"url": {"https://93.184.215.14/hook"}}, "at least one event"},
		{url.Values{"url": {"https://93.184.215.14/hook"}, "all": {"on"}, "secret": {"whsec_short"}}, "at least 24 characters"},
		{url.Values{"url": {"https://93.184.215.14/hook"}, "events": {"drift.exploded"}}, "is not an event kind"},
	} {
		br.get("/dashboard/webhooks")
		res := br.post("/dashboard/webhooks", tc.form)
		if res.status != http.StatusBadRequest || !strings.Contains(res.body, tc.want) {
			t.Errorf("%v: %d, want 400 with %q", tc.form, res.status, tc.want)
		}
	}
	// Live mode needs https.
	br.post("/dashboard/mode", url.Values{"mode": {"live"}})
	br.get("/dashboard/webhooks")
	if res := br.post("/dashboard/webhooks", url.Values{"url": {"http://93.184.215.14/hook"}, "all": {"on"}}); !strings.Contains(res.body, "must use https in live mode") {
		t.Errorf("http in live mode: %d", res.status)
	}
	// A secret the user brings is kept and not shown; the page goes to the webhook.
	res := br.post("/dashboard/webhooks", url.Values{"url": {"https://93.184.215.14/hook"}, "all": {"on"}, "secret": {"whsec_0123456789abcdefghijklmnop"}})
	if res.status != http.StatusSeeOther || !strings.HasPrefix(res.location(), "/dashboard/webhooks/we_") {
		t.Fatalf("add with own secret: %d %s", res.status, res.location())
	}
	page, _ := b.store.ListWebhookEndpoints(context.Background(), acct.ID, store.ModeLive, store.PageQuery{Limit: 10})
	if len(page.Items) != 1 || page.Items[0].Secret != "whsec_0123456789abcdefghijklmnop" || page.Items[0].Events[0] != "*" {
		t.Fatalf("live endpoints: %+v", page.Items)
	}
}
