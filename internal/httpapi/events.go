package httpapi

import (
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/store"
)

// renderEvent returns an event for a response: its stored payload, as it is.
func renderEvent(ev store.Event) any { return jsontext.Value(ev.Payload) }

// eventPosition is an event's place in the newest-first order.
func eventPosition(ev store.Event) store.Position {
	return store.Position{CreatedAt: ev.CreatedAt, ID: ev.ID}
}
