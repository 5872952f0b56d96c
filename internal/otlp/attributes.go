package otlp

import (
	"encoding/base64"
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Bounds of an event's attributes (shared/spec/agents.md §1): a span can carry any number of
// attributes of any size, an event keeps a summary.
const (
	// MaxAttributes is the most span attributes an event keeps, the first in the span's order.
	MaxAttributes = 32
	// MaxStringChars is where string values and keys are cut.
	MaxStringChars = 256
	// maxValueDepth bounds arrays and key-value lists nested within a value (deeper ones are
	// left out); maxListItems bounds the items of each.
	maxValueDepth = 3
	maxListItems  = MaxAttributes
)

// remainingAttributes encodes the span attributes not read into event fields as a JSON
// object: at most MaxAttributes of them, a key met twice kept once (the first), strings cut
// at MaxStringChars, bytes as base64, non-finite doubles and empty values left out. nil when
// none remain.
func remainingAttributes(attrs []*commonpb.KeyValue) jsontext.Value {
	out, n := appendObject([]byte{}, attrs, 0, MaxAttributes, true)
	if n == 0 {
		return nil
	}
	return jsontext.Value(out)
}

// appendObject appends key-value pairs as a JSON object of at most limit members and returns
// how many it holds; top leaves out the attributes read into event fields.
func appendObject(out []byte, kvs []*commonpb.KeyValue, depth, limit int, top bool) ([]byte, int) {
	// The keys kept so far, at most limit (32): a linear search of them is cheaper than a
	// map made for every span (remainingAttributes, with that map, was 4 % of the CPU of
	// ingesting OTLP spans).
	var keys [MaxAttributes]string
	seen := keys[:0]
	out = append(out, '{')
	for _, kv := range kvs {
		if len(seen) == limit {
			break
		}
		key := truncate(kv.GetKey(), MaxStringChars)
		if (top && mappedAttributes[kv.GetKey()]) || slices.Contains(seen, key) {
			continue
		}
		value, ok := appendValue(nil, kv.GetValue(), depth)
		if !ok {
			continue
		}
		if len(seen) > 0 {
			out = append(out, ',')
		}
		seen = append(seen, key)
		out, _ = jsontext.AppendQuote(out, key) // invalid UTF-8 becomes U+FFFD
		out = append(out, ':')
		out = append(out, value...)
	}
	return append(out, '}'), len(seen)
}

// appendValue appends v as JSON; false when it has no JSON form kept here.
func appendValue(out []byte, v *commonpb.AnyValue, depth int) ([]byte, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		out, _ = jsontext.AppendQuote(out, truncate(x.StringValue, MaxStringChars))
		return out, true
	case *commonpb.AnyValue_BoolValue:
		return strconv.AppendBool(out, x.BoolValue), true
	case *commonpb.AnyValue_IntValue:
		return strconv.AppendInt(out, x.IntValue, 10), true
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return out, false
		}
		return strconv.AppendFloat(out, x.DoubleValue, 'g', -1, 64), true
	case *commonpb.AnyValue_BytesValue:
		encoded := base64.StdEncoding.EncodeToString(x.BytesValue)
		out, _ = jsontext.AppendQuote(out, truncate(encoded, MaxStringChars))
		return out, true
	case *commonpb.AnyValue_ArrayValue:
		if depth >= maxValueDepth {
			return out, false
		}
		out = append(out, '[')
		n := 0
		for _, item := range x.ArrayValue.GetValues() {
			if n == maxListItems {
				break
			}
			value, ok := appendValue(nil, item, depth+1)
			if !ok {
				continue
			}
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, value...)
			n++
		}
		return append(out, ']'), true
	case *commonpb.AnyValue_KvlistValue:
		if depth >= maxValueDepth {
			return out, false
		}
		out, _ = appendObject(out, x.KvlistValue.GetValues(), depth+1, maxListItems, false)
		return out, true
	}
	return out, false
}
