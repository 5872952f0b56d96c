package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"riskapi/webhook"
)

// A receiver verifies the Standard Webhooks signature over the raw body before decoding it,
// answers 2xx quickly (within 10 s; slow work belongs in a queue of its own), and
// deduplicates on the event id, because a delivery may arrive more than once. Verify also
// refuses a request signed more than 5 minutes ago, so a captured delivery cannot be replayed.
func ExampleVerify() {
	secret := "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // in a real receiver: os.Getenv("WEBHOOK_SECRET")

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The signature covers these exact bytes: verify before decoding, never after
		// re-encoding. 1 MiB is far above any event.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(body, r.Header, secret); err != nil {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		var event struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(body, &event); err != nil {
			http.Error(w, "invalid JSON", http.StatusBadRequest)
			return
		}
		// Deduplicate: if event.ID (also the webhook-id and X-Webhook-Id headers) was
		// handled before, answer 200 and stop here.
		fmt.Println("received", event.Type, event.ID)
		w.WriteHeader(http.StatusNoContent)
	})
	server := httptest.NewServer(receiver)
	defer server.Close()

	// Three requests: one as the dispatcher sends it, one signed with another secret, and
	// the first one captured and sent again 6 minutes later.
	body := []byte(`{"id":"evt_1","object":"event","type":"webhook.test"}`)
	now := time.Now()
	for _, attempt := range []struct {
		secret   string
		signedAt time.Time
	}{
		{secret, now},
		{"whsec_YW4gYXR0YWNrZXIgZ3Vlc3NpbmcgdGhlIGtleQ==", now},
		{secret, now.Add(-6 * time.Minute)},
	} {
		req, _ := http.NewRequest(http.MethodPost, server.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(webhook.HeaderWebhookID, "evt_1")
		req.Header.Set(webhook.HeaderWebhookTimestamp, strconv.FormatInt(attempt.signedAt.Unix(), 10))
		req.Header.Set(webhook.HeaderWebhookSignature, webhook.Sign("evt_1", attempt.signedAt, body, attempt.secret))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// received webhook.test evt_1
	// 204
	// 401
	// 401
}

// A Verifier sets the tolerance (how long after signing a request is accepted) and the
// clock. Here a request captured at 10:00:00 verifies at 10:00:02, and is refused as a
// replay at 10:06:00.
func ExampleVerifier() {
	secret := "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	body := []byte(`{"id":"evt_1","object":"event","type":"webhook.test"}`)
	signedAt := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	captured := http.Header{}
	captured.Set(webhook.HeaderWebhookID, "evt_1")
	captured.Set(webhook.HeaderWebhookTimestamp, strconv.FormatInt(signedAt.Unix(), 10))
	captured.Set(webhook.HeaderWebhookSignature, webhook.Sign("evt_1", signedAt, body, secret))

	for _, now := range []time.Time{signedAt.Add(2 * time.Second), signedAt.Add(6 * time.Minute)} {
		v := webhook.Verifier{
			Secret:    secret,
			Tolerance: 5 * time.Minute, // the default; a longer one lets a replay through for longer
			Now:       func() time.Time { return now },
		}
		err := v.Verify(body, captured)
		fmt.Println(now.Format("15:04:05"), err == nil, errors.Is(err, webhook.ErrTimestampTooOld))
	}
	// Output:
	// 10:00:02 true false
	// 10:06:00 false true
}

// VerifyHex checks the X-Webhook-Signature header, the form GitHub uses, for receivers whose
// stock verifier expects it. It covers the body only: a captured request verifies forever, so
// on its own it cannot stop a replay. Prefer Verify.
func ExampleVerifyHex() {
	secret := "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	body := []byte(`{"id":"evt_1","object":"event","type":"webhook.test"}`)
	header := webhook.SignHex(body, secret) // as received in X-Webhook-Signature
	fmt.Println(webhook.VerifyHex(body, header, secret))
	fmt.Println(webhook.VerifyHex(append(body, ' '), header, secret))
	// Output:
	// <nil>
	// webhook: signature does not match the body
}
