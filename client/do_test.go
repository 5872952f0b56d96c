package client_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/go-json-experiment/json"

	"riskapi/client"
)

// Do forwards a body it did not build, as it is, and answers the data of the envelope; an
// error answer is the *Error the typed methods return; an Idempotency-Key repeats the answer.
func TestDoForwardsRawRequests(t *testing.T) {
	t.Parallel()
	svc := startService(t)
	c := svc.client(svc.testKey)
	body := []byte(`{"source_id": "feed-1", "data": {"records": [{"a": 1}, {"a": null}]}, "checks": [{"type": "not_null", "column": "a"}]}`)
	var meta client.Response
	data, err := c.Do(t.Context(), http.MethodPost, "/v1/meridian/quality-check", body, client.WithIdempotencyKey("do-1"), client.CaptureResponse(&meta))
	if err != nil {
		t.Fatal(err)
	}
	var check struct {
		ID     string `json:"id"`
		Passed bool   `json:"passed"`
	}
	if err := json.Unmarshal(data, &check, json.RejectUnknownMembers(false)); err != nil || check.ID == "" || check.Passed {
		t.Fatalf("data %s: %v", data, err)
	}
	again, err := c.Do(t.Context(), http.MethodPost, "/v1/meridian/quality-check", body, client.WithIdempotencyKey("do-1"), client.CaptureResponse(&meta))
	if err != nil || !meta.Replayed || string(again) != string(data) {
		t.Fatalf("repeat: replayed %v, %v\n%s\n%s", meta.Replayed, err, again, data)
	}
	_, err = c.Do(t.Context(), http.MethodPost, "/v1/meridian/quality-check", []byte(`{"source_id": "bad id!"}`))
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "INVALID_SOURCE_ID" {
		t.Fatalf("invalid body: %v", err)
	}
}
