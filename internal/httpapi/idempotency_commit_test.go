package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"riskapi/drift"
	"riskapi/internal/store"
)

// completionNeverLands is a store whose separate CompleteIdempotent never stores anything,
// as when the process is killed between a write's commit and the key's completion: only a
// completion committed inside the write's own transaction survives.
type completionNeverLands struct{ Store }

func (completionNeverLands) CompleteIdempotent(context.Context, store.IdempotencyKey, string, store.StoredResponse, time.Time) error {
	return errors.New("the process died before the completion")
}

// TestCreatingPostsCompleteTheirKeyWithTheWrite: every POST that stores something (an
// analysis, a webhook endpoint, an event batch, a test event) completes its Idempotency-Key in
// the write's transaction, so the retry of a request whose process died after the commit
// replays the answer instead of meeting 409 and then running a second time.
func TestCreatingPostsCompleteTheirKeyWithTheWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) {
		allowLoopback(c)
		c.Store = completionNeverLands{c.Store}
	}, nil)
	in, _ := generateDrift(t, drift.ScenarioAligned, 3)
	endpoint := b.createWebhook(b.testKey, "http://127.0.0.1:9/hook", `["*"]`)
	if endpoint.status != http.StatusCreated {
		t.Fatalf("endpoint: %d %s", endpoint.status, endpoint.raw)
	}
	cases := []struct{ name, path, body string }{
		{"webhook endpoint", "/v1/webhooks", `{"url": "http://127.0.0.1:9/other", "events": ["*"], "secret": "` + testSecret + `"}`},
		{"drift events", "/v1/drift/events", driftBody(t, "agent_once", in.Events[:50], "")},
		{"drift analysis", "/v1/drift/analyze", driftBody(t, "agent_once", in.Events, "")},
		{"webhook test event", "/v1/webhooks/" + endpoint.field("data.id").(string) + "/test", `{}`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{"Authorization": "Bearer " + b.testKey, "Content-Type": "application/json",
				"Idempotency-Key": "once-" + string(rune('a'+i))}
			first := b.do(http.MethodPost, c.path, bytes.NewReader([]byte(c.body)), h)
			if first.status >= 300 {
				t.Fatalf("first: %d %s", first.status, first.raw)
			}
			retry := b.do(http.MethodPost, c.path, bytes.NewReader([]byte(c.body)), h)
			if retry.header.Get("Idempotent-Replayed") != "true" || retry.status != first.status || !bytes.Equal(retry.raw, first.raw) {
				t.Fatalf("retry = %d replayed=%q %s; want the first answer replayed: %s", retry.status, retry.header.Get("Idempotent-Replayed"), retry.raw, first.raw)
			}
		})
	}
	if list := b.get("/v1/webhooks", b.testKey); list.field("pagination.total_count") != 2.0 {
		t.Fatalf("endpoints after the retries: %s", list.raw)
	}
}
