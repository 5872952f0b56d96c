// Package webhook is what a receiver of riskapi's webhooks needs: the names of the delivery
// headers, and two ways to check that a delivery came from riskapi.
//
//   - Verify (and Verifier, to configure it) checks the Standard Webhooks signature
//     (webhook-id, webhook-timestamp, webhook-signature) and refuses a delivery signed more
//     than 5 minutes from now, so a captured request cannot be replayed later. Use it.
//   - VerifyHex checks X-Webhook-Signature, GitHub's "sha256=" + hex HMAC-SHA256 of the body.
//     It covers neither a time nor the event id: on its own it cannot stop a replay.
//
// Both compare in constant time. The service signs with Sign and SignHex. The package has no
// dependencies beyond the standard library, so receivers can import it alone.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// Headers of every delivery request. Receivers deduplicate on HeaderEventID (equal to
// HeaderWebhookID): a delivery is sent at least once, so the same event can arrive twice.
const (
	HeaderEventID    = "X-Webhook-Id"        // the event id, evt_…; the same on every attempt and every endpoint
	HeaderDeliveryID = "X-Webhook-Delivery"  // the delivery id, dlv_…: one event on its way to one endpoint
	HeaderEventType  = "X-Webhook-Event"     // the event type, e.g. drift.shadow_detected
	HeaderSignature  = "X-Webhook-Signature" // SignHex(body, secret): no time, no id, so no replay protection
)

// signatureScheme prefixes the hex digest, as in GitHub's X-Hub-Signature-256, so stock
// verifiers such as verify() of @octokit/webhooks-methods accept our signatures.
const signatureScheme = "sha256="

// Errors Verify and VerifyHex return; test them with errors.Is. Every one means "reject the
// request": they differ only so that a receiver's logs say why.
var (
	// ErrNoSecret: verification was asked for with an empty secret. It is refused rather
	// than computed, because a receiver whose secret variable is unset would otherwise accept
	// anything signed with the empty key.
	ErrNoSecret = errors.New("webhook: no secret configured for verifying signatures")
	// ErrSignatureMissing: the request has no signature header (or it is blank).
	ErrSignatureMissing = errors.New("webhook: signature header missing")
	// ErrSignatureScheme: VerifyHex's header does not start with "sha256=", or Verify's
	// header holds no "v1," signature.
	ErrSignatureScheme = errors.New("webhook: signature scheme not recognised (want sha256= for X-Webhook-Signature, v1, for webhook-signature)")
	// ErrSignatureMalformed: what follows "sha256=" is not 64 hexadecimal digits.
	ErrSignatureMalformed = errors.New("webhook: signature is not 64 hexadecimal digits")
	// ErrSignatureMismatch: the signature is well formed but is not the HMAC of this body
	// (and, for Verify, this id and timestamp) with this secret: the body was altered, the
	// secret is wrong (or was rotated), or the body was re-encoded before verifying (verify
	// the raw bytes as received).
	ErrSignatureMismatch = errors.New("webhook: signature does not match the body")
)

// SignHex returns the X-Webhook-Signature value of payload: "sha256=" followed by the
// lower-case hex HMAC-SHA256 of payload keyed with secret (the whole secret string,
// "whsec_" prefix included, as UTF-8 bytes).
func SignHex(payload []byte, secret string) string {
	return signatureScheme + hex.EncodeToString(hexMAC(payload, secret))
}

// VerifyHex checks signatureHeader, the X-Webhook-Signature header of a delivery, against
// the raw request body payload and the endpoint's secret, and returns nil if, and only if,
// the body was signed with that secret. The comparison takes the same time wherever the
// first differing byte is (hmac.Equal), so timing reveals nothing about the right
// signature. Hex digits may be upper or lower case; surrounding spaces are ignored.
//
// VerifyHex alone cannot stop a replay: the signature covers the body only, so a request
// captured once (from a log, a proxy, a compromised network hop) verifies forever. Prefer
// Verify, which also checks the signed timestamp; a receiver that keeps VerifyHex (for
// example because its stock GitHub-style verifier expects this header) should at least
// refuse an X-Webhook-Id it has already handled.
//
// It returns ErrNoSecret, ErrSignatureMissing, ErrSignatureScheme, ErrSignatureMalformed
// or ErrSignatureMismatch. Verify the bytes exactly as received: decoding and re-encoding
// the JSON changes them.
func VerifyHex(payload []byte, signatureHeader, secret string) error {
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
	if !hmac.Equal(got, hexMAC(payload, secret)) {
		return ErrSignatureMismatch
	}
	return nil
}

func hexMAC(payload []byte, secret string) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write(payload)
	return h.Sum(nil)
}
