package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/convergence"
	"riskapi/engine"
)

// validatable is implemented by request types. validate checks the constraints that JSON
// types cannot express (required fields, lengths, ranges, patterns) in document order and
// returns the first violation, or nil.
type validatable interface {
	validate() *Error
}

// decodeBody reads a JSON object from the request body into dst (a pointer to a request
// struct) and validates it. Every endpoint decodes through here, so malformed JSON, unknown
// fields, wrong types and constraint violations are reported the same way everywhere:
//   - malformed JSON, a body that is not an object: 400 BAD_REQUEST with the byte offset;
//   - a member the endpoint does not define: 400 UNKNOWN_FIELD, naming the closest known one;
//   - a value of the wrong JSON type: 400 INVALID_<FIELD> with field, expected and received;
//   - a body over the limit: 413 PAYLOAD_TOO_LARGE.
//
// An empty body reads as {}, so required fields are then reported missing. JSON null is
// treated as an absent member.
func decodeBody(r *http.Request, dst any) *Error {
	body, e := readBody(r)
	if e != nil {
		return e
	}
	return decodeJSON(body, dst)
}

// readBody reads the whole request body, already capped by acceptBody's limit.
func readBody(r *http.Request) ([]byte, *Error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var refused *Error // the body's memory could not be admitted (admit.go)
		if errors.As(err, &refused) {
			return nil, refused
		}
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errPayloadTooLarge(tooLarge.Limit)
		}
		return nil, newError(CodeBadRequest, "The request body could not be read: the connection failed or timed out.")
	}
	return body, nil
}

// bulkDecoder is implemented by request types whose engine decodes their large bodies
// itself, faster than json.Unmarshal (Drift's events, on several cores). decodeBulk
// returns false when it did not decode the body — a form it does not take, or an error of
// any kind — and decodeJSON then decodes it with json.Unmarshal, which reports the error
// as for every other request.
type bulkDecoder interface {
	decodeBulk(ctx context.Context, body []byte) bool
}

// decodeJSON is decodeBody after the body has been read.
func decodeJSON(body []byte, dst any) *Error {
	return decodeJSONContext(context.Background(), body, dst)
}

// decodeJSONContext is decodeJSON for a request whose context ends a bulk decoding early
// (bulkDecoder).
func decodeJSONContext(ctx context.Context, body []byte, dst any) *Error {
	leading := len(body) - len(bytes.TrimLeft(body, " \t\r\n"))
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		e := newError(CodeBadRequest, "The request body must be a JSON object, starting with '{' (found %s at byte offset %d).", describeByte(trimmed[0]), leading)
		e.Details["offset"] = leading
		return e
	}
	if b, ok := dst.(bulkDecoder); ok {
		if b.decodeBulk(ctx, trimmed) {
			if v, ok := dst.(validatable); ok {
				return v.validate()
			}
			return nil
		}
		if err := ctx.Err(); err != nil { // the request ended: nothing to decode the body again for
			return apiError(ctx, err)
		}
	}
	err := json.Unmarshal(trimmed, dst, json.RejectUnknownMembers(true))
	if err == nil {
		if v, ok := dst.(validatable); ok {
			return v.validate()
		}
		return nil
	}
	return decodeError(err, trimmed, reflect.TypeOf(dst), leading)
}

// decodeError turns an error of the JSON decoder into the envelope's error.
func decodeError(err error, body []byte, root reflect.Type, leading int) *Error {
	var syntax *jsontext.SyntacticError
	if errors.As(err, &syntax) {
		offset := int(syntax.ByteOffset) + leading
		e := newError(CodeBadRequest, "Malformed JSON at byte offset %d: %v.", offset, syntax.Err)
		e.Details["offset"] = offset
		return e
	}
	var semantic *json.SemanticError
	if !errors.As(err, &semantic) {
		return newError(CodeBadRequest, "The request body is not valid JSON for this endpoint.")
	}
	path, ok := fieldPath(root, semantic.JSONPointer)
	if !ok || path == "" {
		return newError(CodeBadRequest, "The request body must be a JSON object.")
	}
	if errors.Is(err, json.ErrUnknownName) {
		return unknownField(path, semantic.GoType, memberValueKind(body, int(semantic.ByteOffset)))
	}
	expected := expectedType(semantic.GoType)
	received := kindName(semantic.JSONKind)
	base, _, _ := strings.Cut(expected, " ")
	switch {
	case base == "integer" && received == "number":
		return invalidField(path, expected, received, "%s must be a whole number within range.", path)
	case expected == timeExpectation && received == "string":
		return invalidField(path, expected, received, "%s must be an RFC 3339 timestamp such as 2026-11-21T10:00:00Z.", path)
	case base == received:
		return invalidField(path, expected, received, "%s has an invalid value.", path)
	}
	return invalidField(path, expected, received, "%s must be %s, not %s.", path, withArticle(base), received)
}

// unknownField names the closest known member of the object that held the unknown one.
func unknownField(path string, holder reflect.Type, received string) *Error {
	name := path
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		name = path[i+1:]
	}
	msg := fmt.Sprintf("%s is not a field of this request.", path)
	if best := closestName(name, jsonFieldNames(holder)); best != "" {
		msg = fmt.Sprintf("%s is not a field of this request; did you mean %q?", path, best)
	}
	return &Error{
		Code:    CodeUnknownField,
		Message: msg,
		Details: map[string]any{"field": path, "expected": "no such field", "received": received},
	}
}

// memberValueKind names the JSON type of the value of the object member whose name starts
// at offset (the decoder reports unknown members by the offset of their name).
func memberValueKind(body []byte, offset int) string {
	i := offset
	if i < 0 || i >= len(body) || body[i] != '"' {
		return "value"
	}
	for i++; i < len(body) && body[i] != '"'; i++ {
		if body[i] == '\\' {
			i++ // skip the escaped character
		}
	}
	for i++; i < len(body) && (body[i] == ':' || body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'); i++ {
	}
	if i >= len(body) {
		return "value"
	}
	switch c := body[i]; {
	case c == '"':
		return "string"
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	}
	return "number"
}

func errPayloadTooLarge(limit int64) *Error {
	e := newError(CodePayloadTooLarge, "The request body is larger than the limit of %d bytes.", limit)
	e.Details["limit_bytes"] = limit
	return e
}

// fieldPath converts a JSON Pointer ("/events/3/timestamp") into the API's field path
// ("events[3].timestamp"), walking the Go type so that array indices and member names are
// told apart even when a member name is numeric.
func fieldPath(root reflect.Type, ptr jsontext.Pointer) (string, bool) {
	var b strings.Builder
	t := root
	for tok := range ptr.Tokens() {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			if _, err := strconv.Atoi(tok); err != nil {
				return "", false
			}
			b.WriteString("[" + tok + "]")
			t = t.Elem()
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			t = memberType(t, tok)
		}
	}
	return b.String(), true
}

// memberType is the Go type of member name of struct or map type t, or nil when unknown.
// The members of inlined structs (embedded ones, and fields tagged inline) count as t's own;
// a direct field wins over an inlined one, as in JSON encoding.
func memberType(t reflect.Type, name string) reflect.Type {
	return memberTypeAt(t, name, 0)
}

// maxInlineDepth bounds the descent into inlined structs (a type may embed a pointer to
// itself).
const maxInlineDepth = 8

func memberTypeAt(t reflect.Type, name string, depth int) reflect.Type {
	if t == nil || depth > maxInlineDepth {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		var inlined []reflect.Type
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if inner, ok := inlinedStruct(f); ok {
				inlined = append(inlined, inner)
			} else if jsonName(f) == name {
				return f.Type
			}
		}
		for _, inner := range inlined {
			if mt := memberTypeAt(inner, name, depth+1); mt != nil {
				return mt
			}
		}
	}
	return nil
}

// jsonFieldNames lists the JSON member names of a struct type, those of inlined structs
// included.
func jsonFieldNames(t reflect.Type) []string { return jsonFieldNamesAt(t, 0) }

func jsonFieldNamesAt(t reflect.Type, depth int) []string {
	if depth > maxInlineDepth {
		return nil
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if inner, ok := inlinedStruct(f); ok {
			names = append(names, jsonFieldNamesAt(inner, depth+1)...)
		} else if n := jsonName(f); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// inlinedStruct reports whether the JSON members of field f are its holder's own — an
// embedded struct without a JSON name, or a field tagged inline — and returns its type.
func inlinedStruct(f reflect.StructField) (reflect.Type, bool) {
	t := f.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if slices.Contains(strings.Split(opts, ","), "inline") || (f.Anonymous && name == "" && f.Tag.Get("json") != "-") {
		return t, true
	}
	return nil, false
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	if name, _, _ := strings.Cut(tag, ","); name != "" {
		return name
	}
	return f.Name
}

var timeType = reflect.TypeFor[time.Time]()

// timeExpectation is details.expected for every timestamp field.
const timeExpectation = "string (RFC 3339 timestamp)"

// typeExpectations names what a client must send for the request types whose Go kind says
// nothing useful (a struct that decodes from a string or a number).
var typeExpectations = map[reflect.Type]string{
	reflect.TypeFor[convergence.Period](): "string or integer (an RFC 3339 date or date-time, or an integer)",
}

// expectedType names a Go type as the JSON type a client must send.
func expectedType(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "value"
	}
	if e, ok := typeExpectations[t]; ok {
		return e
	}
	if t == timeType {
		return timeExpectation
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return "value"
}

// kindName names a JSON kind the way details.received does.
func kindName(k jsontext.Kind) string { return engine.KindName(k) }

func withArticle(typ string) string {
	if typ == "" {
		return typ
	}
	switch typ[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + typ
	}
	return "a " + typ
}

func describeByte(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	}
	if c == '-' || (c >= '0' && c <= '9') {
		return "a number"
	}
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// closestName returns the candidate nearest to name by edit distance, if it is close enough
// to be a plausible typo (at most a third of the name's length, and at least 2, apart).
func closestName(name string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > max(2, len(name)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// streamError maps a failure of reading the body: malformed JSON (400 with the byte offset),
// a body over the limit (413), or a connection that failed.
func streamError(err error) *Error {
	if err == nil {
		return nil
	}
	var refused *Error // the body's memory could not be admitted (admit.go)
	if errors.As(err, &refused) {
		return refused
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errPayloadTooLarge(tooLarge.Limit)
	}
	var syntax *jsontext.SyntacticError
	if errors.As(err, &syntax) {
		e := newError(CodeBadRequest, "Malformed JSON at byte offset %d: %v.", syntax.ByteOffset, syntax.Err)
		e.Details["offset"] = syntax.ByteOffset
		return e
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return newError(CodeBadRequest, "Malformed JSON: the request body ended before the JSON value did.")
	}
	return newError(CodeBadRequest, "The request body could not be read: %s.", strconv.Quote(err.Error()))
}
