package faulttest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"riskapi/webhook"
)

// receiver is a loopback webhook endpoint that verifies every delivery's signature and
// records the event ids it received.
type receiver struct {
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	seen   map[string]int
	forged int
}

func newReceiver(t *testing.T) *receiver {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	r := &receiver{secret: "whsec_" + base64.StdEncoding.EncodeToString(raw), seen: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := webhook.Verify(body, req.Header, r.secret); err != nil {
			r.forged++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.seen[req.Header.Get(webhook.HeaderWebhookID)]++
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// subscribe creates a webhook endpoint for every event kind with key's mode.
func (r *receiver) subscribe(t *testing.T, url, key string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"url": r.srv.URL, "events": []string{"*"}, "secret": r.secret})
	status, raw := post(t, url, key, "/v1/webhooks", body)
	if status != http.StatusCreated {
		t.Fatalf("create webhook endpoint: %d %s", status, raw)
	}
}

// awaitEvents waits until every event listed by GET /v1/events (key's mode) has reached the
// receiver, at most within; it returns the ids still missing.
func (r *receiver) awaitEvents(t *testing.T, url, key string, within time.Duration) (events int, missing []string) {
	t.Helper()
	ids := listEvents(t, url, key)
	deadline := time.Now().Add(within)
	for {
		missing = missing[:0]
		r.mu.Lock()
		for _, id := range ids {
			if r.seen[id] == 0 {
				missing = append(missing, id)
			}
		}
		r.mu.Unlock()
		if len(missing) == 0 || time.Now().After(deadline) {
			return len(ids), missing
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// listEvents pages through GET /v1/events.
func listEvents(t *testing.T, url, key string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		path := "/v1/events?limit=100"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var page struct {
			Data       []struct{ ID string } `json:"data"`
			Pagination struct {
				HasMore    bool   `json:"has_more"`
				NextCursor string `json:"next_cursor"`
			} `json:"pagination"`
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(raw, &page) != nil {
			t.Fatalf("list events: %d %s", res.StatusCode, raw)
		}
		for _, e := range page.Data {
			ids = append(ids, e.ID)
		}
		if !page.Pagination.HasMore {
			return ids
		}
		cursor = page.Pagination.NextCursor
	}
}

func post(t *testing.T, url, key, path string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}
