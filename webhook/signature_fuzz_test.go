package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzVerifyHex and FuzzVerify give the verifiers random headers, bodies and secrets. They
// never panic, return only the documented errors, and accept a delivery only when its
// signature was made with the secret over that body (and, for Verify, that id and a
// timestamp within the tolerance); a signature made with another secret, or over another
// body, is refused.

// hmacKey is the key HMAC-SHA256 really uses: a key longer than the 64-byte block is hashed,
// and every key is padded with zero bytes to the block, so "k" and "k\x00" are one key.
// Two secrets with the same hmacKey sign alike; the properties below skip such pairs.
func hmacKey(key []byte) []byte {
	if len(key) > sha256.BlockSize {
		sum := sha256.Sum256(key)
		key = sum[:]
	}
	return bytes.TrimRight(key, "\x00")
}

func sameKey(a, b []byte) bool { return bytes.Equal(hmacKey(a), hmacKey(b)) }

var hexErrors = []error{ErrNoSecret, ErrSignatureMissing, ErrSignatureScheme, ErrSignatureMalformed, ErrSignatureMismatch}

func FuzzVerifyHex(f *testing.F) {
	body := []byte(`{"id":"evt_1","type":"drift.shadow_detected"}`)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for _, h := range []string{SignHex(body, secret), " " + strings.ToUpper(SignHex(body, secret)) + " ", "sha256=", "sha1=abc", "",
		SignHex(body, secret)[:70], SignHex(body, "other")} {
		f.Add(body, h, secret, "whsec_other")
	}
	f.Add([]byte{}, "sha256="+strings.Repeat("zz", 32), "", "k")
	f.Add([]byte("x"), SignHex([]byte("x"), "k"), "k", "k\x00")
	f.Fuzz(func(t *testing.T, payload []byte, header, secret, other string) {
		err := VerifyHex(payload, header, secret)
		if err == nil {
			if !strings.EqualFold(strings.TrimSpace(header), SignHex(payload, secret)) {
				t.Fatalf("header %q accepted for body %q and secret %q; the signature is %q", header, payload, secret, SignHex(payload, secret))
			}
		} else if !isOneOf(err, hexErrors) {
			t.Fatalf("undocumented error %v", err)
		}
		if secret == "" {
			return
		}
		signed := SignHex(payload, secret)
		if err := VerifyHex(payload, signed, secret); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		if err := VerifyHex(append(bytes.Clone(payload), 'x'), signed, secret); !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("signature of another body: %v, want ErrSignatureMismatch", err)
		}
		if other != "" && !sameKey([]byte(secret), []byte(other)) {
			if err := VerifyHex(payload, signed, other); !errors.Is(err, ErrSignatureMismatch) {
				t.Fatalf("signature made with %q verified with %q: %v, want ErrSignatureMismatch", secret, other, err)
			}
		}
	})
}

var standardErrors = []error{ErrNoSecret, ErrIDMissing, ErrTimestampInvalid, ErrSignatureMissing, ErrTimestampTooOld,
	ErrTimestampTooNew, ErrSignatureScheme, ErrSignatureMismatch}

// fuzzNow is the receiver's clock in FuzzVerify.
var fuzzNow = time.Unix(1764000000, 0)

func FuzzVerify(f *testing.F) {
	body := []byte(`{"id":"evt_1","type":"drift.shadow_detected"}`)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := strconv.FormatInt(fuzzNow.Unix(), 10)
	good := Sign("evt_1", fuzzNow, body, secret)
	for _, sig := range []string{good, "v2,abc " + good, "v1,AAAA v1,BBBB", "v1,", "v1", "", good + "=", "v1," + base64.RawStdEncoding.EncodeToString([]byte("x"))} {
		f.Add(body, "evt_1", ts, sig, secret, "whsec_other", int64(0))
	}
	f.Add(body, "evt_1", "0"+ts, good, secret, "whsec_password", int64(-299))
	f.Add(body, "", ts, good, "whsec_", "password", int64(301))
	f.Add(body, "evt_1", "+1764000000", good, "whsec_"+strings.Repeat("A", 22)+"==", "whsec_"+strings.Repeat("A", 22), int64(300))
	f.Add([]byte{}, "evt_1", " 1764000000 ", good, "whsec_a\nb", "whsec_ab", int64(-1))
	f.Fuzz(func(t *testing.T, payload []byte, id, timestamp, signature, secret, other string, skew int64) {
		v := Verifier{Secret: secret, Now: func() time.Time { return fuzzNow }}
		h := http.Header{}
		h.Set(HeaderWebhookID, id)
		h.Set(HeaderWebhookTimestamp, timestamp)
		h.Set(HeaderWebhookSignature, signature)
		err := v.Verify(payload, h)
		if err == nil {
			requireSignedWith(t, payload, h, secret)
		} else if !isOneOf(err, standardErrors) {
			t.Fatalf("undocumented error %v", err)
		}

		// The delivery signed now (or within the tolerance) with the secret verifies; signed
		// with another secret, over another body, or 5 minutes and 1 second ago, it does not.
		key := signingKey(secret)
		if id == "" || len(key) == 0 {
			return
		}
		skew %= int64(DefaultTolerance / time.Second)
		signedAt := fuzzNow.Add(time.Duration(skew) * time.Second)
		signed := deliveryHeader(id, signedAt, Sign(id, signedAt, payload, secret))
		if err := v.Verify(payload, signed); err != nil {
			t.Fatalf("own signature (signed %d s from now) refused: %v", skew, err)
		}
		if err := v.Verify(append(bytes.Clone(payload), 'x'), signed); !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("signature of another body: %v, want ErrSignatureMismatch", err)
		}
		if len(signingKey(other)) > 0 && !sameKey(key, signingKey(other)) {
			if err := (Verifier{Secret: other, Now: v.Now}).Verify(payload, signed); !errors.Is(err, ErrSignatureMismatch) {
				t.Fatalf("signature made with %q verified with %q: %v, want ErrSignatureMismatch", secret, other, err)
			}
		}
		old := fuzzNow.Add(-DefaultTolerance - time.Second)
		if err := v.Verify(payload, deliveryHeader(id, old, Sign(id, old, payload, secret))); !errors.Is(err, ErrTimestampTooOld) {
			t.Fatalf("a replay 5 min 1 s later: %v, want ErrTimestampTooOld", err)
		}
	})
}

func deliveryHeader(id string, at time.Time, signature string) http.Header {
	h := http.Header{}
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(HeaderWebhookSignature, signature)
	return h
}

// requireSignedWith fails unless the accepted header h carries a timestamp of Unix seconds
// within the tolerance and a "v1," entry that is the HMAC, keyed by secret, of id,
// timestamp (as sent) and payload.
func requireSignedWith(t *testing.T, payload []byte, h http.Header, secret string) {
	t.Helper()
	timestamp := strings.TrimSpace(h.Get(HeaderWebhookTimestamp))
	n, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || timestamp[0] < '0' || timestamp[0] > '9' {
		t.Fatalf("accepted with timestamp %q", timestamp)
	}
	if d := time.Unix(n, 0).Sub(fuzzNow); d > DefaultTolerance || d < -DefaultTolerance {
		t.Fatalf("accepted a timestamp %v from now", d)
	}
	want := standardMAC(h.Get(HeaderWebhookID), timestamp, payload, signingKey(secret))
	for _, entry := range strings.Fields(h.Get(HeaderWebhookSignature)) {
		if sig, ok := strings.CutPrefix(entry, "v1,"); ok {
			if got, err := base64.StdEncoding.DecodeString(sig); err == nil && bytes.Equal(got, want) {
				return
			}
		}
	}
	t.Fatalf("accepted %q, which holds no v1 signature made with %q", h.Get(HeaderWebhookSignature), secret)
}

func isOneOf(err error, errs []error) bool {
	for _, e := range errs {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
