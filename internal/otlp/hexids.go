package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// idMembers are the members OTLP JSON writes as hex strings, where protojson's bytes mapping
// expects base64: the span's and a link's trace and span ids, and a span's parent (under
// their JSON names and, since protojson accepts both, their proto names). An attribute's
// key is a value of "key", never a member name, so no attribute is mistaken for one.
var idMembers = map[string]bool{
	"traceId": true, "spanId": true, "parentSpanId": true,
	"trace_id": true, "span_id": true, "parent_span_id": true,
}

// hexIDsToBase64 rewrites an OTLP JSON document for protojson: every id member's hex string
// becomes the base64 of the same bytes (OTLP/HTTP, "JSON Protobuf Encoding": trace and
// span ids are hex, not base64). It reads the document once as a token stream, so its cost
// and memory are linear in the body; a document that is not JSON, or an id that is not hex,
// is an error.
func hexIDsToBase64(doc []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(doc))
	var out bytes.Buffer
	out.Grow(len(doc))
	enc := jsontext.NewEncoder(&out)
	idNext := "" // the id member whose value comes next
	for {
		tok, err := dec.ReadToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		isName := false
		if depth := dec.StackDepth(); depth > 0 {
			kind, length := dec.StackIndex(depth)
			isName = kind == '{' && length%2 == 1 && tok.Kind() == '"'
		}
		switch {
		case isName:
			if idMembers[tok.String()] {
				idNext = tok.String()
			}
		case idNext != "" && tok.Kind() == '"':
			raw, err := hex.DecodeString(tok.String())
			if err != nil {
				return nil, fmt.Errorf("%s %q is not hex (OTLP JSON writes trace and span ids as hex strings)", idNext, truncate(tok.String(), 64))
			}
			tok = jsontext.String(base64.StdEncoding.EncodeToString(raw))
			idNext = ""
		default:
			idNext = ""
		}
		if err := enc.WriteToken(tok); err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
	}
	return out.Bytes(), nil
}
