// Package resource is the JSON form of the objects the API stores and returns, for every
// package that writes one (the HTTP API, the background simulation runner, the dashboard's
// webhook test): the one timestamp format, the header every stored object starts with, and
// the encoder options that make equal objects encode to equal bytes.
package resource

import (
	"errors"
	"math"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// timestampLayout is RFC 3339 UTC with milliseconds, the one timestamp format of the API.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t in the API's timestamp format.
func FormatTime(t time.Time) string { return t.UTC().Format(timestampLayout) }

// FormatTimePtr renders an optional time as a string or JSON null.
func FormatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := FormatTime(*t)
	return &s
}

// EncodeOptions sort map keys, so equal values always encode to equal bytes (envelopes and
// events).
var EncodeOptions = json.Deterministic(true)

// ObjectEncodeOptions encode the objects the API stores and returns (analyses, simulations,
// events about them): keys sorted where maps appear, every time.Time in the API's one
// timestamp format (RFC 3339 UTC with milliseconds), whatever precision the engine's times
// carry, and a number that is not finite — a statistic of extreme data that overflowed
// float64 — as null rather than a failed response (JSON has no NaN or infinity).
var ObjectEncodeOptions = json.JoinOptions(EncodeOptions,
	json.WithMarshalers(json.JoinMarshalers(
		json.MarshalToFunc(func(enc *jsontext.Encoder, t time.Time) error {
			return enc.WriteToken(jsontext.String(FormatTime(t)))
		}),
		json.MarshalToFunc(func(enc *jsontext.Encoder, x float64) error {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return enc.WriteToken(jsontext.Null)
			}
			return errors.ErrUnsupported // finite: the default encoding
		}),
	)))

// Header is what every stored object starts with (platform contract §1).
type Header struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Livemode  bool   `json:"livemode"`
	CreatedAt string `json:"created_at"`
}

// Join encodes head and body, both JSON objects, as one object: head's members, then body's
// (a stored analysis is its header followed by the engine's result). Both come from this
// encoder, so head's closing brace and body's opening one are their last and first bytes.
func Join(head, body any) ([]byte, error) {
	h, err := json.Marshal(head, ObjectEncodeOptions)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(body, ObjectEncodeOptions)
	if err != nil {
		return nil, err
	}
	if len(h) < 2 || h[0] != '{' || len(b) < 2 || b[0] != '{' {
		return nil, errors.New("resource: join: not JSON objects")
	}
	if len(b) == 2 { // {}
		return h, nil
	}
	return append(append(h[:len(h)-1], ','), b[1:]...), nil
}
