package client_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"riskapi/client"
	"riskapi/drift"
)

// Every refusal of the service reaches the caller as an *Error with the envelope's members,
// after exactly one attempt: no 4xx is retried.
func TestErrorsMapToError(t *testing.T) {
	t.Parallel()
	s := startService(t)
	ctx := t.Context()
	test, live, anonymous := s.client(s.testKey), s.client(s.liveKey), s.client("")
	seed := int64(1)
	tests := map[string]struct {
		call                      func(opts ...client.RequestOption) error
		status                    int
		typ, code, field, expects string
	}{
		"no key": {
			call:   func(o ...client.RequestOption) error { _, err := anonymous.Account(ctx, o...); return err },
			status: 401, typ: client.TypeAuthentication, code: client.CodeUnauthorized,
		},
		"live key on a test-only endpoint": {
			call: func(o ...client.RequestOption) error {
				_, err := live.GenerateTestData(ctx, client.TestDataParams{Product: "drift", Scenario: "aligned", Seed: &seed}, o...)
				return err
			},
			status: 403, typ: client.TypePermission, code: client.CodeForbidden,
		},
		"invalid agent id": {
			call: func(o ...client.RequestOption) error {
				_, err := test.AnalyzeDrift(ctx, &drift.Input{AgentID: "no spaces allowed"}, o...)
				return err
			},
			status: 400, typ: client.TypeValidation, code: "INVALID_AGENT_ID", field: "agent_id", expects: "string",
		},
		"agent without events": {
			call: func(o ...client.RequestOption) error {
				_, err := test.AnalyzeDrift(ctx, &drift.Input{AgentID: "agent_unknown"}, o...)
				return err
			},
			status: 404, typ: client.TypeNotFound, code: client.CodeNotFound,
		},
		"unknown id": {
			call: func(o ...client.RequestOption) error {
				_, err := test.QualityCheck(ctx, "mqc_missing", o...)
				return err
			},
			status: 404, typ: client.TypeNotFound, code: client.CodeNotFound,
		},
		"bad limit": {
			call: func(o ...client.RequestOption) error {
				_, err := test.WebhooksPage(ctx, client.ListParams{Limit: 101}, o...)
				return err
			},
			status: 400, typ: client.TypeValidation, code: "INVALID_LIMIT", field: "limit", expects: "integer (1-100)",
		},
		"bad cursor": {
			call: func(o ...client.RequestOption) error {
				_, err := test.EventsPage(ctx, client.EventListParams{ListParams: client.ListParams{Cursor: "forged"}}, o...)
				return err
			},
			status: 400, typ: client.TypeValidation, code: "INVALID_CURSOR", field: "cursor",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var res client.Response
			err := tc.call(client.CaptureResponse(&res))
			var apiErr *client.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T) is not a *client.Error", err, err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Code != tc.code {
				t.Fatalf("got %d %s %s, want %d %s %s", apiErr.StatusCode, apiErr.Type, apiErr.Code, tc.status, tc.typ, tc.code)
			}
			if !strings.HasPrefix(apiErr.RequestID, "req_") || apiErr.RequestID != res.Header.Get("X-Request-Id") || apiErr.Message == "" || apiErr.Details == nil {
				t.Fatalf("request id %q (header %q), message %q, details %v", apiErr.RequestID, res.Header.Get("X-Request-Id"), apiErr.Message, apiErr.Details)
			}
			if apiErr.Field() != tc.field || tc.expects != "" && !strings.HasPrefix(apiErr.Details["expected"].(string), tc.expects) {
				t.Fatalf("details %v, want field %q expected %q", apiErr.Details, tc.field, tc.expects)
			}
			if res.Attempts != 1 {
				t.Fatalf("%d attempts: a %d must not be retried", res.Attempts, tc.status)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.code) || !strings.Contains(msg, apiErr.RequestID) {
				t.Fatalf("message %q names neither the code nor the request", msg)
			}
		})
	}
}

// The same Idempotency-Key with another body is refused 422, once.
func TestIdempotencyKeyReused(t *testing.T) {
	t.Parallel()
	s := startService(t)
	c := s.client(s.testKey)
	ctx := t.Context()
	key := client.WithIdempotencyKey("create-endpoint-42")
	first, err := c.CreateWebhook(ctx, client.WebhookCreateParams{URL: publicTarget, Events: []string{"*"}, Secret: testSecret}, key)
	if err != nil {
		t.Fatal(err)
	}
	var replay client.Response
	again, err := c.CreateWebhook(ctx, client.WebhookCreateParams{URL: publicTarget, Events: []string{"*"}, Secret: testSecret}, key, client.CaptureResponse(&replay))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || !replay.Replayed || replay.StatusCode != http.StatusCreated || replay.IdempotencyKey != "create-endpoint-42" {
		t.Fatalf("repeat: %s (first %s), replayed %v, status %d", again.ID, first.ID, replay.Replayed, replay.StatusCode)
	}
	var res client.Response
	_, err = c.CreateWebhook(ctx, client.WebhookCreateParams{URL: publicTarget, Events: []string{"webhook.test"}, Secret: testSecret}, key, client.CaptureResponse(&res))
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Code != client.CodeIdempotencyKeyReused || apiErr.Type != client.TypeIdempotency || res.Attempts != 1 {
		t.Fatalf("another body under the same key: %v after %d attempts, want one 422 IDEMPOTENCY_KEY_REUSED", err, res.Attempts)
	}
	endpoints := collect(t, c.ListWebhooks(ctx, client.ListParams{}))
	if len(endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(endpoints))
	}
}
