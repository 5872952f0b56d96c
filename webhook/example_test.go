package webhook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"riskapi/webhook"
)

// A receiver verifies the signature over the raw body before decoding it, answers 2xx
// quickly (within 10 s; slow work belongs in a queue of its own), and deduplicates on
// X-Webhook-Id, because a delivery may arrive more than once.
func ExampleVerify() {
	secret := "whsec_test_0123456789abcdefghijklmn" // in a real receiver: os.Getenv("WEBHOOK_SECRET")

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The signature covers these exact bytes: verify before decoding, never after
		// re-encoding. 1 MiB is far above any event.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(body, r.Header.Get("X-Webhook-Signature"), secret); err != nil {
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
		// Deduplicate: if event.ID (also in the X-Webhook-Id header) was handled before,
		// answer 200 and stop here.
		fmt.Println("received", event.Type, event.ID)
		w.WriteHeader(http.StatusNoContent)
	})
	server := httptest.NewServer(receiver)
	defer server.Close()

	// Two requests as the dispatcher would send them: one signed with the receiver's
	// secret, one with another.
	body := []byte(`{"id":"evt_1","object":"event","type":"webhook.test"}`)
	for _, signingSecret := range []string{secret, "whsec_an_attacker_guessing_000000000"} {
		req, _ := http.NewRequest(http.MethodPost, server.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Webhook-Id", "evt_1")
		req.Header.Set("X-Webhook-Signature", webhook.Sign(body, signingSecret))
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
}
