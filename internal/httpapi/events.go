package httpapi

import (
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/ident"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// EventWebhookTest is sent by POST /v1/webhooks/{id}/test to that endpoint only; every
// other event kind is a product's (product.Product.Event).
const (
	EventWebhookTest = "webhook.test"
	apiVersion       = "v1"
)

// subscribableEvents are the kinds a webhook endpoint may list (or "*" for all of them): the
// products' events in registry order, then webhook.test.
var subscribableEvents = append(product.Events(), EventWebhookTest)

// eventObject is the event as delivered and as GET /v1/events returns it.
type eventObject struct {
	ID         string    `json:"id"`
	Object     string    `json:"object"`
	Type       string    `json:"type"`
	APIVersion string    `json:"api_version"`
	CreatedAt  string    `json:"created_at"`
	Livemode   bool      `json:"livemode"`
	Data       eventData `json:"data"`
}

type eventData struct {
	Object any `json:"object"`
}

// newEvent renders an event about object (rendered as GET of that object returns it) into
// the store's form. The payload is encoded once, here, so that the event GET returns and
// every delivery attempt sends exactly these bytes. Products pass the result to their
// store method, which writes it in the same transaction as the object.
func newEvent(accountID string, mode store.Mode, eventType string, object any, now time.Time) (store.Event, error) {
	id := ident.New("evt")
	now = now.UTC().Truncate(time.Millisecond)
	payload, err := json.Marshal(eventObject{
		ID: id, Object: "event", Type: eventType, APIVersion: apiVersion,
		CreatedAt: formatTime(now), Livemode: mode == store.ModeLive, Data: eventData{Object: object},
	}, encodeOptions)
	if err != nil {
		return store.Event{}, err
	}
	return store.Event{ID: id, AccountID: accountID, Mode: mode, Type: eventType, Payload: payload, CreatedAt: now}, nil
}

// renderEvent returns an event for a response: its stored payload, as it is.
func renderEvent(ev store.Event) any { return jsontext.Value(ev.Payload) }

// eventPosition is an event's place in the newest-first order.
func eventPosition(ev store.Event) store.Position {
	return store.Position{CreatedAt: ev.CreatedAt, ID: ev.ID}
}
