// Package webhook is what a receiver of riskapi's webhooks needs: the names of the delivery
// headers, and Verify, which checks X-Webhook-Signature (GitHub's "sha256=" + hex HMAC-SHA256
// form) in constant time. The service signs with Sign. It has no dependencies beyond the
// standard library, so receivers can import it alone.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// Headers of every delivery request. Receivers deduplicate on HeaderEventID: a delivery is
// sent at least once, so the same event can arrive twice.
const (
	HeaderEventID    = "X-Webhook-Id"        // the event id, evt_…; the same on every attempt and every endpoint
	HeaderDeliveryID = "X-Webhook-Delivery"  // the delivery id, dlv_…: one event on its way to one endpoint
	HeaderEventType  = "X-Webhook-Event"     // the event type, e.g. drift.shadow_detected
	HeaderSignature  = "X-Webhook-Signature" // Sign(body, secret)
)

// signatureScheme prefixes the hex digest, as in GitHub's X-Hub-Signature-256, so stock
// verifiers such as verify() of @octokit/webhooks-methods accept our signatures.
const signatureScheme = "sha256="

// Errors Verify returns; test them with errors.Is. Every one means "reject the request":
// they differ only so that a receiver's logs say why.
var (
	// ErrNoSecret: Verify was called with an empty secret. It is refused rather than
	// computed, because a receiver whose secret variable is unset would otherwise accept
	// anything signed with the empty key.
	ErrNoSecret = errors.New("webhook: no secret configured for verifying signatures")
	// ErrSignatureMissing: the request has no X-Webhook-Signature header (or it is blank).
	ErrSignatureMissing = errors.New("webhook: signature header missing")
	// ErrSignatureScheme: the header does not start with "sha256=".
	ErrSignatureScheme = errors.New(`webhook: signature scheme is not "sha256="`)
	// ErrSignatureMalformed: what follows "sha256=" is not 64 hexadecimal digits.
	ErrSignatureMalformed = errors.New("webhook: signature is not 64 hexadecimal digits")
	// ErrSignatureMismatch: the signature is well formed but is not the HMAC of this body
	// with this secret: the body was altered, the secret is wrong (or was rotated), or the
	// body was re-encoded before verifying (verify the raw bytes as received).
	ErrSignatureMismatch = errors.New("webhook: signature does not match the body")
)

// Sign returns the X-Webhook-Signature value of payload: "sha256=" followed by the
// lower-case hex HMAC-SHA256 of payload keyed with secret (the whole secret string,
// "whsec_" prefix included, as UTF-8 bytes).
func Sign(payload []byte, secret string) string {
	return signatureScheme + hex.EncodeToString(mac(payload, secret))
}

// Verify checks signatureHeader, the X-Webhook-Signature header of a delivery, against the
// raw request body payload and the endpoint's secret, and returns nil if, and only if, the
// body was signed with that secret. The comparison takes the same time wherever the first
// differing byte is (hmac.Equal), so timing reveals nothing about the right signature.
// Hex digits may be upper or lower case; surrounding spaces are ignored.
//
// It returns ErrNoSecret, ErrSignatureMissing, ErrSignatureScheme, ErrSignatureMalformed
// or ErrSignatureMismatch. Verify the bytes exactly as received: decoding and re-encoding
// the JSON changes them.
func Verify(payload []byte, signatureHeader, secret string) error {
	if secret == "" {
		return ErrNoSecret
	}
	header := strings.TrimSpace(signatureHeader)
	if header == "" {
		return ErrSignatureMissing
	}
	digestHex, ok := strings.CutPrefix(header, signatureScheme)
	if !ok {
		return ErrSignatureScheme
	}
	if len(digestHex) != 2*sha256.Size {
		return ErrSignatureMalformed
	}
	got, err := hex.DecodeString(digestHex)
	if err != nil {
		return ErrSignatureMalformed
	}
	if !hmac.Equal(got, mac(payload, secret)) {
		return ErrSignatureMismatch
	}
	return nil
}

func mac(payload []byte, secret string) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write(payload)
	return h.Sum(nil)
}
