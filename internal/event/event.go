// Package event renders the events of the outbox: the envelope that GET /v1/events returns
// and every webhook delivery sends, built once when the event is stored, and the list of
// event kinds an endpoint may subscribe to.
package event

import (
	"slices"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/internal/ident"
	"riskapi/internal/product"
	"riskapi/internal/resource"
	"riskapi/internal/store"
)

// WebhookTest is sent by POST /v1/webhooks/{id}/test (and the dashboard's test button) to
// that endpoint only; every other event kind is a product's (product.Product.Event).
const WebhookTest = "webhook.test"

// apiVersion is the API version events are rendered for.
const apiVersion = "v1"

// kinds are the kinds a webhook endpoint may list (or "*" for all of them): the products'
// events in registry order, then webhook.test.
var kinds = append(product.Events(), WebhookTest)

// Kinds lists every event kind, in the order the API names them.
func Kinds() []string { return slices.Clone(kinds) }

// IsKind reports whether kind is an event kind.
func IsKind(kind string) bool { return slices.Contains(kinds, kind) }

// object is the event as delivered and as GET /v1/events returns it.
type object struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	Type       string `json:"type"`
	APIVersion string `json:"api_version"`
	CreatedAt  string `json:"created_at"`
	Livemode   bool   `json:"livemode"`
	Data       data   `json:"data"`
}

type data struct {
	Object any `json:"object"`
}

// New renders an event of kind eventType about obj (rendered as GET of that object returns
// it) into the store's form. The payload is encoded once, here, so that the event GET
// returns and every delivery attempt sends exactly these bytes. Callers pass the result to
// the store method that writes it in the same transaction as the object.
func New(accountID string, mode store.Mode, eventType string, obj any, now time.Time) (store.Event, error) {
	id := ident.New("evt")
	now = now.UTC().Truncate(time.Millisecond)
	payload, err := json.Marshal(object{
		ID: id, Object: "event", Type: eventType, APIVersion: apiVersion,
		CreatedAt: resource.FormatTime(now), Livemode: mode == store.ModeLive, Data: data{Object: obj},
	}, resource.EncodeOptions)
	if err != nil {
		return store.Event{}, err
	}
	return store.Event{ID: id, AccountID: accountID, Mode: mode, Type: eventType, Payload: payload, CreatedAt: now}, nil
}
