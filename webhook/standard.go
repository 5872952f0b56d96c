package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks headers (https://www.standardwebhooks.com), sent on every attempt beside
// the X-Webhook-… ones. Stock verifiers (the standardwebhooks and svix libraries) read them.
const (
	HeaderWebhookID        = "webhook-id"        // the event id, evt_…, as in X-Webhook-Id
	HeaderWebhookTimestamp = "webhook-timestamp" // Unix seconds when this attempt was signed
	HeaderWebhookSignature = "webhook-signature" // Sign(id, timestamp, body, secret): "v1,<base64>"
)

// DefaultTolerance is how far a delivery's webhook-timestamp may be from the receiver's clock,
// either way, before Verify refuses it: 5 minutes, the Standard Webhooks libraries' value.
// It bounds how long a captured request can be replayed, and leaves room for clock skew
// and for a request that took the whole 10 s timeout to arrive.
const DefaultTolerance = 5 * time.Minute

// secretPrefix starts every riskapi webhook secret.
const secretPrefix = "whsec_"

// minDecodedKey is the shortest base64-decoded secret used as bytes: 16 bytes (128 bits). A
// shorter decoding is more likely a word that happens to be valid base64 ("whsec_password"),
// so its text is the key instead.
const minDecodedKey = 16

// Errors only Verify returns, beside ErrNoSecret, ErrSignatureMissing, ErrSignatureScheme
// and ErrSignatureMismatch.
var (
	// ErrIDMissing: the request has no webhook-id header.
	ErrIDMissing = errors.New("webhook: webhook-id header missing")
	// ErrTimestampInvalid: webhook-timestamp is missing or not Unix seconds.
	ErrTimestampInvalid = errors.New("webhook: webhook-timestamp header missing or not Unix seconds")
	// ErrTimestampTooOld: the request was signed longer ago than the tolerance: a replay of a
	// captured request, or a receiver clock that is far off.
	ErrTimestampTooOld = errors.New("webhook: webhook-timestamp is too old (a replayed request, or a clock far off)")
	// ErrTimestampTooNew: the request claims to be signed further in the future than the
	// tolerance allows: a clock far off, or a forged timestamp.
	ErrTimestampTooNew = errors.New("webhook: webhook-timestamp is in the future (a clock far off)")
)

// Sign returns the webhook-signature value of one delivery attempt: "v1," followed by the
// base64 HMAC-SHA256 of "<id>.<timestamp>.<payload>", timestamp in Unix seconds, as the
// Standard Webhooks specification defines it. The key is the part of secret after "whsec_",
// base64-decoded when it is valid standard base64 (padding optional) of at least 16 bytes,
// else its UTF-8 bytes; a secret of the form "whsec_" + base64 therefore verifies with the
// stock standardwebhooks and svix libraries as it is.
func Sign(id string, timestamp time.Time, payload []byte, secret string) string {
	return "v1," + base64.StdEncoding.EncodeToString(standardMAC(id, strconv.FormatInt(timestamp.Unix(), 10), payload, signingKey(secret)))
}

// Verify checks a delivery with the default Verifier: the Standard Webhooks signature of
// payload (the raw request body) under secret, with a timestamp at most DefaultTolerance
// from now. header is the request's header as net/http gives it (r.Header); headers taken
// from elsewhere must be added with Header.Set, which canonicalises their names. See
// Verifier.Verify.
func Verify(payload []byte, header http.Header, secret string) error {
	return Verifier{Secret: secret}.Verify(payload, header)
}

// Verifier checks deliveries' Standard Webhooks signatures. The zero values of Tolerance and
// Now are the defaults, so Verifier{Secret: s} is ready to use; it is safe for concurrent use.
type Verifier struct {
	// Secret is the endpoint's signing secret, "whsec_…", exactly as given to riskapi.
	Secret string
	// Tolerance is how far webhook-timestamp may be from Now, either way; zero or negative
	// means DefaultTolerance (5 minutes). A longer tolerance lets a captured request be
	// replayed for longer.
	Tolerance time.Duration
	// Now is the receiver's clock; nil means time.Now.
	Now func() time.Time
}

// Verify returns nil if, and only if, payload was signed with v.Secret for the webhook-id and
// webhook-timestamp of header, and that timestamp is within v.Tolerance of v.Now. It refuses
// a request whose headers are missing (ErrIDMissing, ErrTimestampInvalid,
// ErrSignatureMissing), whose timestamp is out of tolerance (ErrTimestampTooOld,
// ErrTimestampTooNew), whose signature header has no "v1," entry (ErrSignatureScheme) or none
// that matches (ErrSignatureMismatch); an empty secret is ErrNoSecret.
//
// webhook-signature may hold several space-separated signatures (for example while a secret
// is being changed); one matching "v1," entry is enough, and entries of other versions are
// ignored. Each comparison takes the same time wherever the first differing byte is
// (hmac.Equal).
//
// The timestamp check is what stops a replay: the signature covers the id and the time, so a
// captured request cannot be given a fresh timestamp, and after the tolerance it is refused.
// Within the tolerance, deduplicate on webhook-id (the event id), which a receiver must do
// anyway because delivery is at least once. Verify the body exactly as received: decoding
// and re-encoding the JSON changes its bytes.
func (v Verifier) Verify(payload []byte, header http.Header) error {
	key := signingKey(v.Secret)
	if len(key) == 0 {
		return ErrNoSecret
	}
	id := header.Get(HeaderWebhookID)
	if id == "" {
		return ErrIDMissing
	}
	timestamp := strings.TrimSpace(header.Get(HeaderWebhookTimestamp))
	signedAt, err := parseUnixSeconds(timestamp)
	if err != nil {
		return ErrTimestampInvalid
	}
	signatures := strings.Fields(header.Get(HeaderWebhookSignature))
	if len(signatures) == 0 {
		return ErrSignatureMissing
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tolerance := v.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	switch t := now(); {
	case t.Sub(signedAt) > tolerance:
		return ErrTimestampTooOld
	case signedAt.Sub(t) > tolerance:
		return ErrTimestampTooNew
	}
	want := standardMAC(id, timestamp, payload, key)
	sawV1 := false
	for _, entry := range signatures {
		version, encoded, _ := strings.Cut(entry, ",")
		if version != "v1" {
			continue
		}
		sawV1 = true
		got, err := base64.StdEncoding.DecodeString(encoded)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	if !sawV1 {
		return ErrSignatureScheme
	}
	return ErrSignatureMismatch
}

// parseUnixSeconds reads a webhook-timestamp: decimal digits only (no sign, no fraction).
func parseUnixSeconds(s string) (time.Time, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return time.Time{}, ErrTimestampInvalid
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(n, 0), nil
}

// standardMAC is HMAC-SHA256(key, "<id>.<timestamp>.<payload>"), written piece by piece so
// that a large body is not copied.
func standardMAC(id, timestamp string, payload, key []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(payload)
	return h.Sum(nil)
}

// signingKey is the Standard Webhooks HMAC key of a secret: the part after "whsec_",
// base64-decoded when it is valid standard base64 (padding optional) of at least
// minDecodedKey bytes, else its UTF-8 bytes. Go's decoders skip CR and LF, which are not
// base64, so text holding them is taken as text.
func signingKey(secret string) []byte {
	body := strings.TrimPrefix(secret, secretPrefix)
	if !strings.ContainsAny(body, "\r\n") {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			if key, err := enc.DecodeString(body); err == nil && len(key) >= minDecodedKey {
				return key
			}
		}
	}
	return []byte(body)
}
