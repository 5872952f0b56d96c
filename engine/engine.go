// Package engine holds what the four analysis engines (drift, convergence, cascade and
// meridian) share in their public face: the one error they return for input they refuse,
// and the risk bands their 0–100 scores fall into. Each engine exports
// Analyze(ctx, Input) (Result, error); a refused input is an *InputError, a cancelled
// context is the context's error.
package engine

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// InputError reports an input an engine refuses. It carries what the API's validation
// errors carry (platform contract §2), so a library caller and an API client learn the same
// thing about the same input:
//   - Code: the error code, INVALID_ + the upper-cased top-level field unless the contract
//     names another (INVALID_AGENT_ID, INVALID_OBSERVATIONS, WORK_LIMIT_EXCEEDED, …);
//   - Field: the JSON path of the offending value ("events[3].timestamp");
//   - Expected: the JSON type expected, with the constraint in parentheses;
//   - Received: the JSON type received ("string", "number", …) or "missing";
//   - Message: a sentence for people that says what to change.
type InputError struct {
	Code     string
	Field    string
	Expected string
	Received string
	Message  string
}

func (e *InputError) Error() string { return e.Code + ": " + e.Message }

// Invalid builds an *InputError; an empty code becomes INVALID_ + the upper-cased top-level
// field of the path.
func Invalid(code, field, expected, received, format string, args ...any) *InputError {
	if code == "" {
		code = CodeFor(field)
	}
	return &InputError{Code: code, Field: field, Expected: expected, Received: received, Message: fmt.Sprintf(format, args...)}
}

// CodeFor is the validation code of a field path: "events[3].timestamp" → INVALID_EVENTS.
func CodeFor(path string) string {
	return "INVALID_" + strings.ToUpper(TopLevelField(path))
}

// TopLevelField returns the first segment of a field path: "events[3].timestamp" → "events".
func TopLevelField(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

// Risk bands of a 0–100 score (higher is safer), the same cut points for every product.
const (
	BandLow      = "low"      // score ≥ 80
	BandModerate = "moderate" // 60 ≤ score < 80
	BandHigh     = "high"     // 40 ≤ score < 60
	BandCritical = "critical" // score < 40
)

// RiskBand names the band a 0–100 score falls in.
func RiskBand(score float64) string {
	switch {
	case score >= 80:
		return BandLow
	case score >= 60:
		return BandModerate
	case score >= 40:
		return BandHigh
	default:
		return BandCritical
	}
}

// KindName names a JSON kind as InputError.Received does: "string", "number", "boolean",
// "null", "object", "array" ("value" for anything else).
func KindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// ValidIdentifier reports whether s is a valid identifier of the contract (agent_id,
// market_id, source_id): 1 to 128 bytes of ASCII letters, digits, '.', '_', ':' and '-', and
// of the bytes of also (source_id allows '/').
func ValidIdentifier(s, also string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-' || strings.IndexByte(also, c) >= 0) {
			return false
		}
	}
	return true
}
