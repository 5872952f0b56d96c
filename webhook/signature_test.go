package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// Known vectors, computed outside Go so that a mistake in SignHex (wrong key/message order,
// upper-case hex, a missing prefix) cannot be mirrored by the test.
var signatureVectors = []struct {
	name, secret, payload, hexDigest string
}{
	{
		// RFC 4231, test case 2 (HMAC-SHA-256).
		name:      "RFC 4231 case 2",
		secret:    "Jefe",
		payload:   "what do ya want for nothing?",
		hexDigest: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
	},
	{
		// printf '%s' '{"id":"evt_1","object":"event","type":"webhook.test"}' |
		//   openssl dgst -sha256 -hmac 'whsec_test_0123456789abcdefghijklmn'
		// and python3: hmac.new(secret, payload, hashlib.sha256).hexdigest(); both agree.
		name:      "whsec secret and event body",
		secret:    "whsec_test_0123456789abcdefghijklmn",
		payload:   `{"id":"evt_1","object":"event","type":"webhook.test"}`,
		hexDigest: "1fef4ea6dff20214373f41af7d266387a894de7968470f80926200c90a7dba32",
	},
}

func TestSignHexMatchesKnownVectors(t *testing.T) {
	t.Parallel()
	for _, v := range signatureVectors {
		if got, want := SignHex([]byte(v.payload), v.secret), "sha256="+v.hexDigest; got != want {
			t.Errorf("%s: SignHex = %s, want %s", v.name, got, want)
		}
		if err := VerifyHex([]byte(v.payload), "sha256="+v.hexDigest, v.secret); err != nil {
			t.Errorf("%s: VerifyHex of the known signature: %v", v.name, err)
		}
	}
}

func TestVerifyHex(t *testing.T) {
	t.Parallel()
	const secret = "whsec_test_0123456789abcdefghijklmn"
	payload := []byte(`{"id":"evt_1","object":"event","type":"webhook.test"}`)
	good := SignHex(payload, secret)
	digest := strings.TrimPrefix(good, "sha256=")

	tests := []struct {
		name    string
		payload []byte
		header  string
		secret  string
		want    error
	}{
		{"valid", payload, good, secret, nil},
		{"upper-case hex", payload, "sha256=" + strings.ToUpper(digest), secret, nil},
		{"surrounding spaces", payload, "  " + good + " ", secret, nil},
		{"missing header", payload, "", secret, ErrSignatureMissing},
		{"blank header", payload, "   ", secret, ErrSignatureMissing},
		{"other scheme", payload, "sha1=" + digest, secret, ErrSignatureScheme},
		{"no scheme", payload, digest, secret, ErrSignatureScheme},
		{"upper-case scheme", payload, "SHA256=" + digest, secret, ErrSignatureScheme},
		{"not hex", payload, "sha256=" + strings.Repeat("zz", 32), secret, ErrSignatureMalformed},
		{"too short", payload, good[:len(good)-2], secret, ErrSignatureMalformed},
		{"too long", payload, good + "00", secret, ErrSignatureMalformed},
		{"body altered", append([]byte(" "), payload...), good, secret, ErrSignatureMismatch},
		{"other secret", payload, good, secret + "x", ErrSignatureMismatch},
		{"one digit changed", payload, good[:len(good)-1] + flipHex(good[len(good)-1]), secret, ErrSignatureMismatch},
		{"empty secret", payload, SignHex(payload, ""), "", ErrNoSecret},
	}
	for _, tt := range tests {
		err := VerifyHex(tt.payload, tt.header, tt.secret)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: VerifyHex = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestSignatureIsHMACOfRawBody checks SignHex against an HMAC computed here from its
// definition, over a payload with bytes JSON re-encoding would change.
func TestSignatureIsHMACOfRawBody(t *testing.T) {
	t.Parallel()
	secret := "whsec_" + strings.Repeat("k", 40)
	payload := []byte("{\"a\": 1,\n \"name\":\"Zoë\", \"html\":\"<b>\"}\n")
	h := hmac.New(sha256.New, []byte(secret))
	h.Write(payload)
	want := "sha256=" + hex.EncodeToString(h.Sum(nil))
	if got := SignHex(payload, secret); got != want {
		t.Fatalf("SignHex = %s, want %s", got, want)
	}
}

func flipHex(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}
