// Package webhooks is what the API and the dashboard share about customers' webhook
// endpoints: the rules an endpoint's fields follow, the endpoint object as the API shows it,
// and the webhook.test event about one. Where an endpoint may point is delivery.Targets'
// policy; sending events to it is the dispatcher's (internal/delivery).
package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"riskapi/internal/event"
	"riskapi/internal/resource"
	"riskapi/internal/store"
)

// NewSecret returns a new webhook signing secret: "whsec_" and the standard base64 of 32
// random bytes (256 bits), 50 characters in all. The Standard Webhooks signature uses the 32
// bytes as its key, as the stock standardwebhooks and svix libraries decode it, so a receiver
// can pass the secret to them as it is. The dashboard and `riskapi secrets
// new-webhook-secret` suggest secrets of this form.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never returns an error (Go 1.24+)
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Webhook secrets: "whsec_" and at least 24 more characters, 256 in all (webhooks contract).
const (
	secretPrefix        = "whsec_"
	minSecretBody       = 24
	maxSecretLength     = 256
	maxDescriptionChars = 500
)

// EventsExpected is what the events field must be, as a validation error's "expected" says.
const EventsExpected = `array (of known event kinds, or ["*"])`

// Fields are the writable fields of an endpoint as the API takes them; a nil field is not
// being set. POST /v1/webhooks needs url, events and secret; PATCH takes any of them.
type Fields struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Secret      *string   `json:"secret"`
	Description *string   `json:"description"`
}

// FieldError is a field that breaks the rules: its JSON path, what it should be and what
// was received (as the API's validation errors report them), and the problem in plain words.
type FieldError struct {
	Field    string // e.g. "events[1]"
	Expected string
	Received string
	Message  string
}

func (e *FieldError) Error() string { return e.Message }

func invalid(field, expected, received, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Expected: expected, Received: received, Message: fmt.Sprintf(format, args...)}
}

// Check checks the fields that are set, in document order, and reports the first that
// breaks the rules. The URL is only checked for its length here; whether it may be a
// webhook target is delivery.Targets.CheckURL's verdict.
func (f *Fields) Check() *FieldError {
	if f.URL != nil && (*f.URL == "" || len(*f.URL) > 2048) {
		return invalid("url", "string (an absolute URL, at most 2048 characters)", "string", "url must be an absolute URL of at most 2048 characters.")
	}
	if f.Events != nil {
		if e := checkEvents(*f.Events); e != nil {
			return e
		}
	}
	if f.Secret != nil {
		if e := checkSecret(*f.Secret); e != nil {
			return e
		}
	}
	if f.Description != nil && utf8.RuneCountInString(*f.Description) > maxDescriptionChars {
		return invalid("description", fmt.Sprintf("string (at most %d characters)", maxDescriptionChars), "string",
			"description is longer than %d characters.", maxDescriptionChars)
	}
	return nil
}

func checkEvents(events []string) *FieldError {
	if len(events) == 0 {
		return invalid("events", EventsExpected, "array", "events must list at least one event kind, or [\"*\"] for all of them.")
	}
	for i, kind := range events {
		path := fmt.Sprintf("events[%d]", i)
		switch {
		case kind == store.AllEvents && len(events) > 1:
			return invalid(path, EventsExpected, "string", "\"*\" subscribes to every kind; send it alone.")
		case kind != store.AllEvents && !event.IsKind(kind):
			return invalid(path, "string (one of "+strings.Join(event.Kinds(), ", ")+", or *)", "string",
				"%q is not an event kind. Known kinds: %s.", kind, strings.Join(event.Kinds(), ", "))
		case slices.Index(events, kind) != i:
			return invalid(path, EventsExpected, "string", "%q is listed twice.", kind)
		}
	}
	return nil
}

func checkSecret(secret string) *FieldError {
	const expected = "string (whsec_ followed by at least 24 characters, at most 256 in all)"
	body, ok := strings.CutPrefix(secret, secretPrefix)
	switch {
	case !ok:
		return invalid("secret", expected, "string", "secret must start with %s.", secretPrefix)
	case utf8.RuneCountInString(body) < minSecretBody:
		return invalid("secret", expected, "string", "secret needs at least %d characters after %s.", minSecretBody, secretPrefix)
	case utf8.RuneCountInString(secret) > maxSecretLength:
		return invalid("secret", expected, "string", "secret is longer than %d characters.", maxSecretLength)
	case strings.IndexFunc(secret, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return invalid("secret", expected, "string", "secret may not contain spaces or control characters.")
	}
	return nil
}

// EndpointObject is a webhook endpoint as the API shows it. The secret is write-only.
type EndpointObject struct {
	ID             string   `json:"id"`
	Object         string   `json:"object"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	Description    *string  `json:"description"`
	Status         string   `json:"status"`
	DisabledReason *string  `json:"disabled_reason"`
	Livemode       bool     `json:"livemode"`
	CreatedAt      string   `json:"created_at"`
}

// NewEndpointObject renders a stored endpoint.
func NewEndpointObject(e store.WebhookEndpoint) EndpointObject {
	o := EndpointObject{ID: e.ID, Object: "webhook_endpoint", URL: e.URL, Events: e.Events,
		Status: e.Status, Livemode: e.Mode == store.ModeLive, CreatedAt: resource.FormatTime(e.CreatedAt)}
	if e.Description != "" {
		o.Description = &e.Description
	}
	if e.DisabledReason != "" {
		o.DisabledReason = &e.DisabledReason
	}
	return o
}

// TestEvent builds the webhook.test event about endpoint e, as POST /v1/webhooks/{id}/test
// and the dashboard send it; store it with store.CreateEventFor, to e alone.
func TestEvent(e store.WebhookEndpoint, now time.Time) (store.Event, error) {
	if e.ID == "" {
		return store.Event{}, errors.New("webhook test event: endpoint has no id")
	}
	return event.New(e.AccountID, e.Mode, event.WebhookTest, NewEndpointObject(e), now)
}
