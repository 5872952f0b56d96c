package convergence

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
)

// Period is a period label or a timestamp as given in the request: an integer, or an RFC 3339
// date ("2026-01-05") or date-time ("2026-01-05T10:00:00Z"). It keeps the JSON text it was
// given, so output periods (from, to) take the same form as the input's. Decoding accepts any
// JSON value; Analyze reports values of another form as an *engine.InputError with the field's path.
// The zero Period is absent (JSON null marshals and unmarshals as the zero Period).
type Period struct {
	raw string // JSON text; "" when absent
}

// IntPeriod is the integer period n.
func IntPeriod(n int64) Period { return Period{raw: strconv.FormatInt(n, 10)} }

// DatePeriod is the RFC 3339 full-date of t ("2006-01-02").
func DatePeriod(t time.Time) Period { return Period{raw: `"` + t.Format(time.DateOnly) + `"`} }

// TimePeriod is the RFC 3339 date-time of t.
func TimePeriod(t time.Time) Period { return Period{raw: `"` + t.Format(time.RFC3339Nano) + `"`} }

// IsZero reports whether the period is absent.
func (p Period) IsZero() bool { return p.raw == "" }

// String is the period's JSON text without quotes ("7", "2026-01-05"), or "" when absent.
func (p Period) String() string {
	if s, ok := p.text(); ok {
		return s
	}
	return p.raw
}

// MarshalJSON writes the JSON text the period was given as (null when absent).
func (p Period) MarshalJSON() ([]byte, error) {
	if p.raw == "" {
		return []byte("null"), nil
	}
	return []byte(p.raw), nil
}

// UnmarshalJSON keeps any JSON value; Analyze validates it.
func (p *Period) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		p.raw = ""
		return nil
	}
	p.raw = string(b)
	return nil
}

// text returns the string content when the period is a JSON string.
func (p Period) text() (string, bool) {
	if len(p.raw) < 2 || p.raw[0] != '"' || p.raw[len(p.raw)-1] != '"' {
		return "", false
	}
	s := p.raw[1 : len(p.raw)-1]
	if strings.IndexByte(s, '\\') >= 0 {
		u, err := strconv.Unquote(p.raw)
		if err != nil {
			return "", false
		}
		return u, true
	}
	return s, true
}

// jsonKind names the JSON type of the period's value, as the error details do.
func (p Period) jsonKind() string {
	if p.raw == "" {
		return "missing"
	}
	return engine.KindName(jsontext.Value(p.raw).Kind())
}

// periodForm is the form of a parsed period.
type periodForm uint8

const (
	formInvalid periodForm = iota
	formInt
	formTime // date or date-time: ordered by instant
)

// maxExactInt is the largest integer a JSON number carries exactly in a float64.
const maxExactInt = 1 << 53

// parse returns the period's form and its ordering key: the integer itself, or the
// instant in Unix nanoseconds (dates at 00:00 UTC).
func (p Period) parse() (periodForm, int64) {
	if p.raw == "" {
		return formInvalid, 0
	}
	if s, ok := p.text(); ok {
		if len(s) == len(time.DateOnly) {
			t, err := time.Parse(time.DateOnly, s)
			if err != nil {
				return formInvalid, 0
			}
			return formTime, t.UnixNano()
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || t.Year() < 1678 || t.Year() > 2261 { // UnixNano's range
			return formInvalid, 0
		}
		return formTime, t.UnixNano()
	}
	if p.jsonKind() != "number" {
		return formInvalid, 0
	}
	if n, err := strconv.ParseInt(p.raw, 10, 64); err == nil {
		if n > maxExactInt || n < -maxExactInt {
			return formInvalid, 0
		}
		return formInt, n
	}
	f, err := strconv.ParseFloat(p.raw, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxExactInt {
		return formInvalid, 0
	}
	return formInt, int64(f)
}
