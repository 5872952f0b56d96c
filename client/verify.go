package client

import (
	"fmt"
	"net/http"

	"github.com/go-json-experiment/json"

	"riskapi/webhook"
)

// Webhook verification, from package riskapi/webhook, so a program that uses the client
// has it under one import. A receiver that needs nothing else can import riskapi/webhook
// alone (standard library only).

// WebhookVerifier checks deliveries' Standard Webhooks signatures with a configurable
// tolerance and clock; see webhook.Verifier.
type WebhookVerifier = webhook.Verifier

// DefaultWebhookTolerance is how far a delivery's webhook-timestamp may be from now: 5
// minutes (webhook.DefaultTolerance).
const DefaultWebhookTolerance = webhook.DefaultTolerance

// Headers of every delivery (webhook.Header*). Deduplicate on WebhookHeaderEventID:
// delivery is at least once.
const (
	WebhookHeaderEventID    = webhook.HeaderEventID
	WebhookHeaderDeliveryID = webhook.HeaderDeliveryID
	WebhookHeaderEventType  = webhook.HeaderEventType
	WebhookHeaderSignature  = webhook.HeaderSignature
	WebhookHeaderID         = webhook.HeaderWebhookID
	WebhookHeaderTimestamp  = webhook.HeaderWebhookTimestamp
	WebhookHeaderStandard   = webhook.HeaderWebhookSignature
)

// Errors of VerifyWebhook and VerifyWebhookHex (the webhook.Err* values); test them with
// errors.Is. Each means "reject the request".
var (
	ErrWebhookNoSecret          = webhook.ErrNoSecret
	ErrWebhookSignatureMissing  = webhook.ErrSignatureMissing
	ErrWebhookSignatureScheme   = webhook.ErrSignatureScheme
	ErrWebhookSignatureMismatch = webhook.ErrSignatureMismatch
	ErrWebhookIDMissing         = webhook.ErrIDMissing
	ErrWebhookTimestampInvalid  = webhook.ErrTimestampInvalid
	ErrWebhookTimestampTooOld   = webhook.ErrTimestampTooOld
	ErrWebhookTimestampTooNew   = webhook.ErrTimestampTooNew
)

// VerifyWebhook checks a delivery's Standard Webhooks signature (webhook-id,
// webhook-timestamp, webhook-signature) over payload, the raw request body, with secret,
// and refuses one signed more than 5 minutes from now, so a captured request cannot be
// replayed later. It is webhook.Verify.
func VerifyWebhook(payload []byte, header http.Header, secret string) error {
	return webhook.Verify(payload, header, secret)
}

// VerifyWebhookHex checks X-Webhook-Signature ("sha256=" + hex HMAC-SHA256 of the body),
// the seed's signature. It covers no time and no id, so on its own it cannot stop a
// replay; prefer VerifyWebhook. It is webhook.VerifyHex.
func VerifyWebhookHex(payload []byte, signatureHeader, secret string) error {
	return webhook.VerifyHex(payload, signatureHeader, secret)
}

// ParseWebhookEvent verifies a delivery with VerifyWebhook and decodes its body into an
// Event; nothing is decoded from a delivery that fails verification.
func ParseWebhookEvent(payload []byte, header http.Header, secret string) (*Event, error) {
	if err := VerifyWebhook(payload, header, secret); err != nil {
		return nil, err
	}
	var ev Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fmt.Errorf("riskapi: webhook delivery body is not an event: %w", err)
	}
	return &ev, nil
}
