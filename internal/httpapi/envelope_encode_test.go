package httpapi

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/resource"
	"riskapi/internal/store"
)

// envelopeByStruct is how the success envelope was encoded before encodeSuccess wrote its
// own fields: the whole struct through the encoder. encodeSuccess must produce its bytes.
func envelopeByStruct(r *http.Request, data any, p *pagination, now time.Time) ([]byte, error) {
	info := requestInfoFrom(r.Context())
	env := successEnvelope{Success: true, Data: data, Pagination: p, Metadata: successMetadata{
		RequestID: info.id, Timestamp: resource.FormatTime(now), ProcessingTimeMS: now.Sub(info.start).Milliseconds()}}
	var buf bytes.Buffer
	err := json.MarshalWrite(&buf, env, resource.EncodeOptions)
	return buf.Bytes(), err
}

func envelopeTestRequest() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/account", nil)
	// a start far enough back that processing_time_ms is not 0, and the same in both encodings
	info := &requestInfo{id: "req_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4", start: time.Now().Add(-1500 * time.Millisecond)}
	return r.WithContext(withRequestInfo(context.Background(), info))
}

func accountViewSample() accountView {
	created := time.Date(2026, 11, 21, 10, 20, 30, 123456789, time.UTC)
	acct := store.Account{ID: "acct_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4", Name: "Acme <&> \"Ltd\" \u2028", Email: "risk@acme.test",
		Plan: store.PlanEnterprise, Region: store.RegionDefault, CustomLimits: map[string]int64{"meridian": 5, "drift": 7, "cascade": 9}, CreatedAt: created}
	key := store.APIKey{ID: "key_4Tn8Qw2Ez6Ry1Ui5Op9As3Df7", Type: store.KeyLive, Mode: store.ModeLive, Scopes: []string{"drift:read", "*"}, CreatedAt: created, LastUsedAt: &created}
	return accountView{AccountObject: NewAccountObject(acct), Livemode: true, APIKey: NewAPIKeyObject(key)}
}

func TestEncodeSuccessMatchesEnvelope(t *testing.T) {
	cursor := "c_abc"
	for _, c := range []struct {
		name string
		data any
		page *pagination
	}{
		{"account", accountViewSample(), nil},
		{"nil", nil, nil},
		{"map", map[string]any{"z": 1, "a": []int{3, 2}, "m": map[string]string{"y": "1", "b": "2"}, "html": "<a href=\"x\">&</a>"}, nil},
		{"list", []accountView{accountViewSample(), accountViewSample()}, &pagination{HasMore: true, NextCursor: &cursor, TotalCount: 42}},
		{"empty list", []string{}, &pagination{}},
		{"string", "plain \x7f \u00e9", nil},
		{"raw", jsontext.Value(`{"b":1,"a":2}`), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := envelopeTestRequest()
			for range 3 { // the encoders are reused: every use must start clean
				got, err := encodeSuccess(r, c.data, c.page)
				if err != nil {
					t.Fatal(err)
				}
				var env struct {
					Metadata successMetadata `json:"metadata"`
				}
				if err := json.Unmarshal(got, &env); err != nil {
					t.Fatalf("%s: %v", got, err)
				}
				now, err := time.Parse(time.RFC3339Nano, env.Metadata.Timestamp)
				if err != nil {
					t.Fatal(err)
				}
				// The struct's encoding at the instant encodeSuccess stamped; its elapsed time
				// may differ by the time between the two clocks' reads, so take it from got.
				want, err := envelopeByStruct(r, c.data, c.page, now)
				if err != nil {
					t.Fatal(err)
				}
				want = bytes.Replace(want, []byte(`"processing_time_ms":`+itoa(now.Sub(requestInfoFrom(r.Context()).start).Milliseconds())),
					[]byte(`"processing_time_ms":`+itoa(env.Metadata.ProcessingTimeMS)), 1)
				if !bytes.Equal(got, want) {
					t.Fatalf("encodeSuccess:\n%s\nenvelope struct:\n%s", got, want)
				}
			}
		})
	}
}

// An unencodable value is an error, and the encoder it broke is not left half-written for
// the next response.
func TestEncodeSuccessErrorLeavesEncoderClean(t *testing.T) {
	r := envelopeTestRequest()
	if _, err := encodeSuccess(r, map[string]any{"bad": make(chan int)}, nil); err == nil {
		t.Fatal("a channel encoded without error")
	}
	if _, err := encodeSuccess(r, math.Inf(1), nil); err == nil {
		t.Fatal("infinity encoded without error")
	}
	got, err := encodeSuccess(r, map[string]int{"ok": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte(`{"success":true,"data":{"ok":1},"metadata":{"request_id":"req_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4","timestamp":"`)) {
		t.Fatalf("after a failed encoding: %s", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// BenchmarkEncodeSuccess compares encodeSuccess with the envelope struct's encoding, on
// GET /v1/account's answer.
func BenchmarkEncodeSuccess(b *testing.B) {
	r := envelopeTestRequest()
	view := accountViewSample()
	b.Run("envelope-struct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := envelopeByStruct(r, view, nil, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encodeSuccess", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeSuccess(r, view, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// encodeValue writes what json.Marshal with resource.EncodeOptions writes, map keys sorted.
func TestEncodeValueMatchesMarshal(t *testing.T) {
	env := errorEnvelope{
		Error: errorBody{Type: "rate_limit_error", Message: "Rate limit exceeded: 1000 requests per hour (platform).", Code: CodeRateLimited,
			Details: map[string]any{"limit": int64(1000), "window": "hour", "policy": "platform", "reset": int64(1795168800), "<&>": []string{"\u2028"}}},
		Metadata: errorMetadata{RequestID: "req_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4", Timestamp: "2026-11-21T10:20:30.000Z"},
	}
	for range 3 {
		got, err := encodeValue(env)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(env, resource.EncodeOptions)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeValue:\n%s\njson.Marshal:\n%s", got, want)
		}
	}
	if _, err := encodeValue(map[string]any{"bad": func() {}}); err == nil {
		t.Fatal("a func encoded without error")
	}
}
