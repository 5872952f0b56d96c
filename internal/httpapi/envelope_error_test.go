package httpapi

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"riskapi/internal/ratelimit"
)

// encodeError writes the bytes of the error envelope struct through the encoder, for flat
// details (its own path) and any other (the encoder's), and fails where the encoder fails.
func TestEncodeErrorMatchesEnvelope(t *testing.T) {
	limited := errRateLimited(ratelimit.State{Bucket: ratelimit.Bucket{Limit: 1000, Window: ratelimit.Hour}, Reset: time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)}, "account")
	for _, c := range []struct {
		name    string
		message string
		details map[string]any
	}{
		{"rate limited", limited.Message, limited.Details},
		{"empty", "No endpoint GET /v2.", map[string]any{}},
		{"nil details", "x", nil},
		{"flat", `quote " backslash \ <&> ` + "\u2028 \x01 é", map[string]any{"field": "events[3].id", "z": true, "a": int64(-7), "m": 0, "html": "<b>&</b>"}},
		{"nested", "n", map[string]any{"allowed": []string{"a", "b"}, "inner": map[string]any{"b": 1, "a": 2}}},
		{"float", "f", map[string]any{"ratio": 0.1, "big": 1e21}},
		{"non-ASCII keys", "k", map[string]any{"é": 1, "z": 2, "a\u00ff": 3, "a": 4}},
		{"many keys", "m", map[string]any{"k1": 1, "k2": 2, "k3": 3, "k4": 4, "k5": 5, "k6": 6, "k7": 7, "k8": 8, "k9": 9, "k10": "ten"}},
		{"uint", "u", map[string]any{"n": uint64(3)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := errorEnvelope{
				Error:    errorBody{Type: "invalid_request_error", Message: c.message, Code: "RATE_LIMITED", Details: c.details},
				Metadata: errorMetadata{RequestID: "req_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4", Timestamp: "2026-11-28T00:41:42.123Z"},
			}
			want, err := encodeValue(env)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 { // the encoders are reused: every use must start clean
				got, err := encodeError(env)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("encodeError:\n%s\nthe envelope struct:\n%s", got, want)
				}
			}
		})
	}
	bad := errorEnvelope{Error: errorBody{Message: "invalid \xff UTF-8", Details: map[string]any{}}}
	if _, err := encodeValue(bad); err == nil {
		t.Fatal("the encoder took invalid UTF-8; the comparison below means nothing")
	}
	if _, err := encodeError(bad); err == nil {
		t.Fatal("encodeError took invalid UTF-8 that the encoder refuses")
	}
	if _, err := encodeError(errorEnvelope{Error: errorBody{Details: map[string]any{"c": make(chan int)}}}); err == nil {
		t.Fatal("encodeError took a channel in details")
	}
	got, err := encodeError(errorEnvelope{Error: errorBody{Type: "t", Code: "C", Details: map[string]any{"ok": 1}}})
	if err != nil || !strings.HasPrefix(string(got), `{"success":false,"error":{"type":"t","message":"","code":"C","details":{"ok":1}},"metadata":`) {
		t.Fatalf("after failed encodings: %s, %v", got, err)
	}
}
