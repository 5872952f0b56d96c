package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// Standard Webhooks vectors computed outside Go: the first is the example of the Svix and
// Standard Webhooks documentation, the others were computed with the standardwebhooks npm
// library (Webhook.sign) and with Python's hmac module, which agree.
var standardVectors = []struct {
	name, secret, id string
	timestamp        int64
	payload          string
	signature        string
}{
	{
		name:      "documentation example",
		secret:    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		id:        "msg_p5jXN8AQM9LWM0D4loKWxJek",
		timestamp: 1614265330,
		payload:   `{"test": 2432232314}`,
		signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
	},
	{
		// node: new Webhook("whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64"))
		//   .sign("evt_1", new Date(1700000000e3), body)
		name:      "whsec_ + base64 of 32 bytes, padded",
		secret:    "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		id:        "evt_1",
		timestamp: 1700000000,
		payload:   `{"id":"evt_1","object":"event","type":"webhook.test"}`,
		signature: "v1,LmWJaXSDXgSSWom58N17YYQJa0diGW8yclAmZKrWoko=",
	},
	{
		name:      "the same key without padding",
		secret:    "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY",
		id:        "evt_1",
		timestamp: 1700000000,
		payload:   `{"id":"evt_1","object":"event","type":"webhook.test"}`,
		signature: "v1,LmWJaXSDXgSSWom58N17YYQJa0diGW8yclAmZKrWoko=",
	},
	{
		// python3: hmac.new(b"test_0123456789abcdefghijklmn", b"evt_1.1700000000." + body, sha256)
		name:      "not base64: the text after whsec_ is the key",
		secret:    "whsec_test_0123456789abcdefghijklmn",
		id:        "evt_1",
		timestamp: 1700000000,
		payload:   `{"id":"evt_1","object":"event","type":"webhook.test"}`,
		signature: "v1,iJlS/s7wthb4NSkO821afK4c+ZFpt/86BfwX1smeOsU=",
	},
	{
		// python3: hmac.new(b"c2hvcnRrZXk=", …): base64 of "shortkey", 8 bytes, under 16
		name:      "base64 of fewer than 16 bytes: the text is the key",
		secret:    "whsec_c2hvcnRrZXk=",
		id:        "evt_1",
		timestamp: 1700000000,
		payload:   `{"id":"evt_1","object":"event","type":"webhook.test"}`,
		signature: "v1,8K4t5FF14pK6G+tUMVbmgizBpokvbUddikkVzhjKLWg=",
	},
}

func TestSignMatchesKnownVectors(t *testing.T) {
	t.Parallel()
	for _, v := range standardVectors {
		at := time.Unix(v.timestamp, 0)
		if got := Sign(v.id, at, []byte(v.payload), v.secret); got != v.signature {
			t.Errorf("%s: Sign = %s, want %s", v.name, got, v.signature)
		}
		verifier := Verifier{Secret: v.secret, Now: func() time.Time { return at.Add(time.Minute) }}
		if err := verifier.Verify([]byte(v.payload), headers(v.id, v.timestamp, v.signature)); err != nil {
			t.Errorf("%s: Verify of the known signature: %v", v.name, err)
		}
	}
}

// headers are a delivery's Standard Webhooks headers as a Go server receives them.
func headers(id string, timestamp int64, signature string) http.Header {
	h := http.Header{}
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, strconv.FormatInt(timestamp, 10))
	h.Set(HeaderWebhookSignature, signature)
	return h
}

func TestVerify(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	payload := []byte(`{"id":"evt_1","object":"event","type":"webhook.test"}`)
	signedAt := time.Unix(1700000000, 0)
	good := Sign("evt_1", signedAt, payload, secret)
	other := Sign("evt_1", signedAt, payload, "whsec_"+base64.StdEncoding.EncodeToString([]byte("another key of 32 bytes, exactly")))
	now := signedAt.Add(30 * time.Second)

	tests := []struct {
		name    string
		payload []byte
		header  http.Header
		secret  string
		now     time.Time
		want    error
	}{
		{"valid", payload, headers("evt_1", signedAt.Unix(), good), secret, now, nil},
		{"several signatures, the second matches", payload, headers("evt_1", signedAt.Unix(), other+" "+good), secret, now, nil},
		{"other versions are ignored", payload, headers("evt_1", signedAt.Unix(), "v1a,"+good[3:]+" v2,abc "+good), secret, now, nil},
		{"only other versions", payload, headers("evt_1", signedAt.Unix(), "v2,"+good[3:]), secret, now, ErrSignatureScheme},
		{"the hex scheme is not this one", payload, headers("evt_1", signedAt.Unix(), SignHex(payload, secret)), secret, now, ErrSignatureScheme},
		{"signed with another secret", payload, headers("evt_1", signedAt.Unix(), other), secret, now, ErrSignatureMismatch},
		{"body altered", append([]byte(" "), payload...), headers("evt_1", signedAt.Unix(), good), secret, now, ErrSignatureMismatch},
		{"id altered", payload, headers("evt_2", signedAt.Unix(), good), secret, now, ErrSignatureMismatch},
		{"timestamp altered by one second", payload, headers("evt_1", signedAt.Unix()+1, good), secret, now, ErrSignatureMismatch},
		{"signature not base64", payload, headers("evt_1", signedAt.Unix(), "v1,!!!"), secret, now, ErrSignatureMismatch},
		{"signature truncated", payload, headers("evt_1", signedAt.Unix(), good[:len(good)-4]), secret, now, ErrSignatureMismatch},
		{"missing id", payload, headers("", signedAt.Unix(), good), secret, now, ErrIDMissing},
		{"missing signature", payload, headers("evt_1", signedAt.Unix(), ""), secret, now, ErrSignatureMissing},
		{"empty secret", payload, headers("evt_1", signedAt.Unix(), good), "", now, ErrNoSecret},
		{"whsec_ alone", payload, headers("evt_1", signedAt.Unix(), good), "whsec_", now, ErrNoSecret},
		{"exactly 5 minutes old", payload, headers("evt_1", signedAt.Unix(), good), secret, signedAt.Add(5 * time.Minute), nil},
		{"5 minutes and 1 second old", payload, headers("evt_1", signedAt.Unix(), good), secret, signedAt.Add(5*time.Minute + time.Second), ErrTimestampTooOld},
		{"5 minutes ahead", payload, headers("evt_1", signedAt.Unix(), good), secret, signedAt.Add(-5 * time.Minute), nil},
		{"5 minutes and 1 second ahead", payload, headers("evt_1", signedAt.Unix(), good), secret, signedAt.Add(-5*time.Minute - time.Second), ErrTimestampTooNew},
	}
	for _, tt := range tests {
		err := Verifier{Secret: tt.secret, Now: func() time.Time { return tt.now }}.Verify(tt.payload, tt.header)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: Verify = %v, want %v", tt.name, err, tt.want)
		}
	}

	for _, timestamp := range []string{"", "abc", "-1700000000", "+1700000000", "1700000000.5", "1e9", "99999999999999999999"} {
		h := headers("evt_1", signedAt.Unix(), good)
		h.Set(HeaderWebhookTimestamp, timestamp)
		if err := (Verifier{Secret: secret, Now: func() time.Time { return now }}).Verify(payload, h); !errors.Is(err, ErrTimestampInvalid) {
			t.Errorf("timestamp %q: Verify = %v, want ErrTimestampInvalid", timestamp, err)
		}
	}
}

// TestReplayIsRefusedAfterTolerance: a request captured as delivered verifies when fresh and
// is refused when sent again 6 minutes later, with the same headers and body; a receiver that
// sets a longer Tolerance accepts it for that long.
func TestReplayIsRefusedAfterTolerance(t *testing.T) {
	t.Parallel()
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	payload := []byte(`{"id":"evt_9","object":"event","type":"drift.shadow_detected"}`)
	sentAt := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	captured := http.Header{}
	captured.Set("Webhook-Id", "evt_9")
	captured.Set("Webhook-Timestamp", strconv.FormatInt(sentAt.Unix(), 10))
	captured.Set("Webhook-Signature", Sign("evt_9", sentAt, payload, secret))

	at := func(d time.Duration) func() time.Time { return func() time.Time { return sentAt.Add(d) } }
	if err := (Verifier{Secret: secret, Now: at(2 * time.Second)}).Verify(payload, captured); err != nil {
		t.Fatalf("fresh delivery: %v", err)
	}
	if err := (Verifier{Secret: secret, Now: at(6 * time.Minute)}).Verify(payload, captured); !errors.Is(err, ErrTimestampTooOld) {
		t.Fatalf("replayed after 6 minutes: %v, want ErrTimestampTooOld", err)
	}
	if err := (Verifier{Secret: secret, Now: at(6 * time.Minute), Tolerance: 10 * time.Minute}).Verify(payload, captured); err != nil {
		t.Fatalf("after 6 minutes with a 10-minute tolerance: %v", err)
	}
	// Re-stamping the captured request with a fresh time breaks its signature.
	restamped := captured.Clone()
	restamped.Set("Webhook-Timestamp", strconv.FormatInt(sentAt.Add(6*time.Minute).Unix(), 10))
	if err := (Verifier{Secret: secret, Now: at(6 * time.Minute)}).Verify(payload, restamped); !errors.Is(err, ErrSignatureMismatch) {
		t.Fatalf("replayed with a new timestamp: %v, want ErrSignatureMismatch", err)
	}
}

func TestSigningKey(t *testing.T) {
	t.Parallel()
	key32 := []byte("0123456789abcdef0123456789abcdef")
	tests := []struct {
		secret string
		want   []byte
	}{
		{"whsec_" + base64.StdEncoding.EncodeToString(key32), key32},
		{"whsec_" + base64.RawStdEncoding.EncodeToString(key32), key32},
		{base64.StdEncoding.EncodeToString(key32), key32}, // without the prefix, as the libraries accept
		{"whsec_" + base64.StdEncoding.EncodeToString(key32[:16]), key32[:16]},
		{"whsec_" + base64.StdEncoding.EncodeToString(key32[:15]), []byte(base64.StdEncoding.EncodeToString(key32[:15]))},
		{"whsec_" + base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe}),
			[]byte(base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe, 0xfb, 0xff, 0xfe}))},
		{"whsec_test_0123456789abcdefghijklmn", []byte("test_0123456789abcdefghijklmn")},
		{"whsec_MDEyMzQ1Njc4OWFi\nY2RlZjAxMjM0NTY3ODlhYmNkZWY=", []byte("MDEyMzQ1Njc4OWFi\nY2RlZjAxMjM0NTY3ODlhYmNkZWY=")},
		{"whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY==", []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY==")},
	}
	for _, tt := range tests {
		if got := signingKey(tt.secret); string(got) != string(tt.want) {
			t.Errorf("signingKey(%q) = %q, want %q", tt.secret, got, tt.want)
		}
	}
}
