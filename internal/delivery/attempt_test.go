package delivery

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"riskapi/internal/store"
)

func TestClassifyResponse(t *testing.T) {
	t.Parallel()
	now := scheduleEpoch
	tests := []struct {
		status     int
		retryAfter string
		want       attemptResult
	}{
		{200, "", attemptResult{statusCode: 200, succeeded: true}},
		{204, "", attemptResult{statusCode: 204, succeeded: true}},
		{299, "", attemptResult{statusCode: 299, succeeded: true}},
		{301, "", attemptResult{statusCode: 301, errText: "redirect not followed (HTTP 301)"}},
		{307, "", attemptResult{statusCode: 307, errText: "redirect not followed (HTTP 307)"}},
		{400, "", attemptResult{statusCode: 400, errText: "HTTP 400"}},
		{404, "", attemptResult{statusCode: 404, errText: "HTTP 404"}},
		{410, "", attemptResult{statusCode: 410, errText: "HTTP 410 Gone: endpoint disabled", gone: true}},
		{429, "", attemptResult{statusCode: 429, errText: "HTTP 429"}},
		{429, "120", attemptResult{statusCode: 429, errText: "HTTP 429 (Retry-After 2m0s)", retryAfter: 2 * time.Minute}},
		{503, "Sat, 21 Nov 2026 10:00:30 GMT", attemptResult{statusCode: 503, errText: "HTTP 503 (Retry-After 30s)", retryAfter: 30 * time.Second}},
		{500, "120", attemptResult{statusCode: 500, errText: "HTTP 500"}}, // Retry-After counts only with 429 and 503
		{502, "", attemptResult{statusCode: 502, errText: "HTTP 502"}},
	}
	for _, tt := range tests {
		if got := classifyResponse(tt.status, tt.retryAfter, now); got != tt.want {
			t.Errorf("classifyResponse(%d, %q) = %+v, want %+v", tt.status, tt.retryAfter, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := scheduleEpoch // 2026-11-21 10:00:00 UTC, a Saturday
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{" 90 ", 90 * time.Second, true},
		{"Sat, 21 Nov 2026 10:05:00 GMT", 5 * time.Minute, true},    // IMF-fixdate
		{"Saturday, 21-Nov-26 10:05:00 GMT", 5 * time.Minute, true}, // RFC 850
		{"Sat Nov 21 10:05:00 2026", 5 * time.Minute, true},         // asctime
		{"Sat, 21 Nov 2026 09:00:00 GMT", 0, true},                  // in the past: no wait
		{"99999999999999999999", 0, false},                          // overflows int64
		{"9223372036854775807", 48 * time.Hour, true},               // clamped, no overflow
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestOutcomeAppliesScheduleAndRetryAfter(t *testing.T) {
	t.Parallel()
	d := &Dispatcher{
		schedule:            mustSchedule(t, "10s,1m"),
		random:              func() float64 { panic("no jitter in an override") },
		autoDisableAfter:    5 * 24 * time.Hour,
		autoDisableFailures: 10,
	}
	at := scheduleEpoch
	first := store.ClaimedDelivery{Delivery: store.Delivery{Attempts: 0}}
	last := store.ClaimedDelivery{Delivery: store.Delivery{Attempts: 2}}
	plus := func(d time.Duration) *time.Time { t := at.Add(d); return &t }

	tests := []struct {
		name     string
		claimed  store.ClaimedDelivery
		result   attemptResult
		wantNext *time.Time
		wantGone bool
		wantErr  string
	}{
		{"success", first, attemptResult{statusCode: 200, succeeded: true}, nil, false, ""},
		{"first failure", first, attemptResult{statusCode: 500, errText: "HTTP 500"}, plus(10 * time.Second), false, "HTTP 500"},
		{"second failure", store.ClaimedDelivery{Delivery: store.Delivery{Attempts: 1}}, attemptResult{statusCode: 500, errText: "HTTP 500"}, plus(time.Minute), false, "HTTP 500"},
		{"last failure", last, attemptResult{statusCode: 500, errText: "HTTP 500"}, nil, false, "HTTP 500"},
		{"gone", first, attemptResult{statusCode: 410, gone: true, errText: "HTTP 410 Gone: endpoint disabled"}, nil, true, "HTTP 410 Gone: endpoint disabled"},
		{"Retry-After longer than the schedule", first, attemptResult{statusCode: 503, errText: "x", retryAfter: time.Hour}, plus(time.Hour), false, "x"},
		{"Retry-After shorter than the schedule", first, attemptResult{statusCode: 503, errText: "x", retryAfter: time.Second}, plus(10 * time.Second), false, "x"},
		{"Retry-After on the last attempt adds none", last, attemptResult{statusCode: 429, errText: "x", retryAfter: time.Hour}, nil, false, "x"},
		{"Retry-After beyond 24h ends the delivery", first, attemptResult{statusCode: 503, errText: "x", retryAfter: 25 * time.Hour}, nil, false,
			"HTTP 503 (Retry-After 25h0m0s exceeds the 24h0m0s limit; no further attempts)"},
	}
	for _, tt := range tests {
		o := d.outcome(tt.claimed, tt.result, at)
		if (o.NextAttemptAt == nil) != (tt.wantNext == nil) || (o.NextAttemptAt != nil && !o.NextAttemptAt.Equal(*tt.wantNext)) {
			t.Errorf("%s: NextAttemptAt = %v, want %v", tt.name, o.NextAttemptAt, tt.wantNext)
		}
		if (o.DisableEndpoint == store.DisabledGone) != tt.wantGone {
			t.Errorf("%s: DisableEndpoint = %q", tt.name, o.DisableEndpoint)
		}
		if o.Error != tt.wantErr || o.Succeeded != tt.result.succeeded || o.StatusCode != tt.result.statusCode || !o.At.Equal(at) {
			t.Errorf("%s: outcome %+v", tt.name, o)
		}
		if o.AutoDisableAfter != 5*24*time.Hour || o.AutoDisableFailures != 10 {
			t.Errorf("%s: auto-disable rule not passed on: %+v", tt.name, o)
		}
	}
}

func TestDescribeRequestError(t *testing.T) {
	t.Parallel()
	client := Targets{AllowPrivate: true}.Client(300 * time.Millisecond)
	attempt := func(url string) attemptResult {
		return send(context.Background(), client, client.Timeout, time.Now, store.ClaimedDelivery{
			Delivery: store.Delivery{ID: "dlv_1", EventID: "evt_1", EventType: "webhook.test"},
			Payload:  []byte("{}"), URL: url, Secret: "whsec_secret_never_shown_000000000",
		})
	}

	refused := refusedURL(t)
	if got := attempt(refused); got.errText != "connection refused" || got.statusCode != 0 {
		t.Errorf("closed port: %+v, want %q", got, "connection refused")
	}

	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang)
	if got := attempt(slow.URL); got.errText != "timeout after 300ms" {
		t.Errorf("slow receiver: %+v, want %q", got, "timeout after 300ms")
	}

	// A receiver that closes the connection without answering.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = conn.Read(buf)
			_ = conn.Close()
		}
	}()
	if got := attempt("http://" + listener.Addr().String() + "/"); got.errText != "connection closed before a response" {
		t.Errorf("hang-up: %+v, want %q", got, "connection closed before a response")
	}

	strict := Targets{}.Client(time.Second)
	got := send(context.Background(), strict, time.Second, time.Now, store.ClaimedDelivery{Payload: []byte("{}"), URL: refused})
	if got.errText != "refused to connect to 127.0.0.1, a loopback address" {
		t.Errorf("private target with the strict client: %+v", got)
	}
	if got := attempt("http://host with spaces/"); !strings.Contains(got.errText, "invalid endpoint URL") {
		t.Errorf("unusable URL: %+v", got)
	}
}
