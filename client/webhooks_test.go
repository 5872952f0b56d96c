package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/client"
	"riskapi/meridian"
	"riskapi/webhook"
)

// testSecret is a webhook secret of the suggested form, whsec_ + base64 of 32 bytes.
const testSecret = "whsec_lDe53nBPm97ayLqp3oxuK9np7hKCVQ5P4Y8tl1lKsG4="

// publicTarget is a public address; no dispatcher runs in these tests, so nothing is sent.
const publicTarget = "https://8.8.8.8/hook"

func TestWebhooksCRUD(t *testing.T) {
	t.Parallel()
	s := startService(t)
	c := s.client(s.testKey)
	ctx := t.Context()

	var created client.Response
	we, err := c.CreateWebhook(ctx, client.WebhookCreateParams{
		URL: publicTarget, Events: []string{client.EventDriftShadowDetected}, Secret: testSecret, Description: "risk desk",
	}, client.CaptureResponse(&created))
	if err != nil {
		t.Fatal(err)
	}
	if created.StatusCode != http.StatusCreated || we.Object != "webhook_endpoint" || we.Status != "enabled" || we.Description == nil || *we.Description != "risk desk" || we.Livemode {
		t.Fatalf("created %d: %+v", created.StatusCode, we)
	}
	got, err := c.Webhook(ctx, we.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "created and read endpoint", we, got)

	disabled, description := "disabled", "paused for maintenance"
	updated, err := c.UpdateWebhook(ctx, we.ID, client.WebhookUpdateParams{Status: &disabled, Description: &description, Events: []string{client.EventAll}})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Status != "disabled" || updated.DisabledReason == nil || *updated.DisabledReason != "user" ||
		*updated.Description != description || !slices.Equal(updated.Events, []string{"*"}) || updated.URL != publicTarget {
		t.Fatalf("updated: %+v", updated)
	}

	var accepted client.Response
	test, err := c.TestWebhook(ctx, we.ID, client.CaptureResponse(&accepted))
	if err != nil {
		t.Fatal(err)
	}
	if accepted.StatusCode != http.StatusAccepted {
		t.Fatalf("test event answered %d, want 202", accepted.StatusCode)
	}
	deliveries := collect(t, c.ListWebhookDeliveries(ctx, we.ID, client.ListParams{}))
	if len(deliveries) != 1 || deliveries[0].ID != test.DeliveryID || deliveries[0].EventID != test.EventID || deliveries[0].EventType != client.EventWebhookTest {
		t.Fatalf("deliveries %+v, want the test delivery %+v", deliveries, test)
	}
	retried, err := c.RetryWebhookDelivery(ctx, we.ID, test.DeliveryID)
	if err != nil {
		t.Fatal(err)
	}
	if retried.ID != test.DeliveryID || !retried.ManualRetry {
		t.Fatalf("retried delivery: %+v", retried)
	}
	page, err := c.WebhookDeliveriesPage(ctx, we.ID, client.ListParams{Limit: 1})
	if err != nil || len(page.Data) != 1 || page.HasMore {
		t.Fatalf("deliveries page: %+v %v", page, err)
	}

	// The test event is what the receiver gets; signed as the dispatcher signs it, it
	// verifies with the client's helpers, and altered it does not.
	ev, err := c.Event(ctx, test.EventID)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{}
	header.Set(client.WebhookHeaderID, ev.ID)
	header.Set(client.WebhookHeaderTimestamp, fmt.Sprint(time.Now().Unix()))
	header.Set(client.WebhookHeaderStandard, webhook.Sign(ev.ID, time.Now(), body, testSecret))
	received, err := client.ParseWebhookEvent(body, header, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	var endpoint client.WebhookEndpoint
	if err := received.DecodeObject(&endpoint); err != nil || received.Type != client.EventWebhookTest || endpoint.ID != we.ID {
		t.Fatalf("received %s about %s (%v), want webhook.test about %s", received.Type, endpoint.ID, err, we.ID)
	}
	if err := client.VerifyWebhookHex(body, webhook.SignHex(body, testSecret), testSecret); err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-2] ^= 1
	if _, err := client.ParseWebhookEvent(tampered, header, testSecret); !errors.Is(err, client.ErrWebhookSignatureMismatch) {
		t.Fatalf("tampered body: %v, want ErrWebhookSignatureMismatch", err)
	}
	old := client.WebhookVerifier{Secret: testSecret, Now: func() time.Time { return time.Now().Add(time.Hour) }}
	if err := old.Verify(body, header); !errors.Is(err, client.ErrWebhookTimestampTooOld) {
		t.Fatalf("an hour later: %v, want ErrWebhookTimestampTooOld", err)
	}

	listed := collect(t, c.ListWebhooks(ctx, client.ListParams{}))
	if len(listed) != 1 || listed[0].ID != we.ID {
		t.Fatalf("listed %+v", listed)
	}
	deleted, err := c.DeleteWebhook(ctx, we.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !deleted.Deleted || deleted.ID != we.ID {
		t.Fatalf("deleted: %+v", deleted)
	}
	_, err = c.Webhook(ctx, we.ID)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != client.CodeNotFound {
		t.Fatalf("read after delete: %v, want 404 NOT_FOUND", err)
	}
}

// Live requests are billed once each, an idempotent replay not again; test mode never.
func TestUsage(t *testing.T) {
	t.Parallel()
	s := startService(t)
	test, live := s.client(s.testKey), s.client(s.liveKey)
	ctx := t.Context()

	items := generate(t, test, client.ProductMeridian, "clean", 1, 9)
	var req meridian.Request
	if err := items[0].DecodeRequest(&req); err != nil {
		t.Fatal(err)
	}
	if _, err := test.CheckQuality(ctx, &req); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := live.CheckQuality(ctx, &req, client.WithIdempotencyKey("usage-check-1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.meter.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC()
	report, err := live.Usage(ctx, client.UsageParams{From: today.AddDate(0, 0, -1), To: today})
	if err != nil {
		t.Fatal(err)
	}
	if report.Totals.Meridian != 1 || len(report.Days) != 1 || report.Days[0].Units != 1 || report.To != today.Format(time.DateOnly) || !report.Livemode {
		t.Fatalf("live usage: %+v", report)
	}
	if len(report.RateLimits) == 0 {
		t.Fatal("live usage reports no rate-limit buckets")
	}
	sandbox, err := test.Usage(ctx, client.UsageParams{})
	if err != nil {
		t.Fatal(err)
	}
	if sandbox.Totals != (client.UsageTotal{}) || sandbox.Livemode {
		t.Fatalf("test usage: %+v", sandbox)
	}
}
