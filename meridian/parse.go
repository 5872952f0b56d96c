package meridian

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// instant is a point in time as Unix seconds and nanoseconds (years 0000–9999 fit, unlike
// int64 nanoseconds).
type instant struct {
	sec  int64
	nsec int32
}

func (a instant) compare(b instant) int {
	switch {
	case a.sec < b.sec:
		return -1
	case a.sec > b.sec:
		return 1
	case a.nsec < b.nsec:
		return -1
	case a.nsec > b.nsec:
		return 1
	}
	return 0
}

// secondsSince returns a − b in seconds.
func (a instant) secondsSince(b instant) float64 {
	return float64(a.sec-b.sec) + float64(a.nsec-b.nsec)/1e9
}

func instantOf(t time.Time) instant { return instant{sec: t.Unix(), nsec: int32(t.Nanosecond())} }

// parseTimestamp parses an RFC 3339 date-time (upper-case T and Z, offsets allowed,
// fractional seconds of any length, truncated to nanoseconds) or a YYYY-MM-DD date
// (midnight UTC). It works on bytes or strings without allocating.
func parseTimestamp[S string | []byte](s S) (instant, bool) {
	n := len(s)
	if n < 10 || s[4] != '-' || s[7] != '-' {
		return instant{}, false
	}
	y, ok1 := digits(s[0:4])
	mo, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return instant{}, false
	}
	days := daysFromCivil(y, mo, d)
	if n == 10 {
		return instant{sec: days * 86400}, true
	}
	// T HH:MM:SS
	if n < 20 || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return instant{}, false
	}
	h, ok1 := digits(s[11:13])
	mi, ok2 := digits(s[14:16])
	se, ok3 := digits(s[17:19])
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || se > 59 {
		return instant{}, false
	}
	i := 19
	var nsec int64
	if s[i] == '.' {
		i++
		start := i
		scale := int64(100_000_000)
		for i < n && s[i] >= '0' && s[i] <= '9' {
			nsec += int64(s[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == start {
			return instant{}, false
		}
	}
	if i >= n {
		return instant{}, false
	}
	var off int64
	switch s[i] {
	case 'Z':
		i++
	case '+', '-':
		if n-i != 6 || s[i+3] != ':' {
			return instant{}, false
		}
		oh, ok1 := digits(s[i+1 : i+3])
		om, ok2 := digits(s[i+4 : i+6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return instant{}, false
		}
		off = int64(oh*3600 + om*60)
		if s[i] == '-' {
			off = -off
		}
		i += 6
	default:
		return instant{}, false
	}
	if i != n {
		return instant{}, false
	}
	sec := days*86400 + int64(h*3600+mi*60+se) - off
	return instant{sec: sec, nsec: int32(nsec)}, true
}

func digits[S string | []byte](s S) (int, bool) {
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian date
// (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

var errDuration = errors.New("invalid duration")

// parseDuration parses Go duration syntax ("1h30m", "90m", "1.5h") extended with the unit d
// (24 hours): "7d", "1d12h". Signs are not accepted.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errDuration
	}
	var total float64
	i := 0
	for i < len(s) {
		start := i
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		num := s[start:i]
		if num == "" || num == "." {
			return 0, errDuration
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, errDuration
		}
		ustart := i
		for i < len(s) && !(s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		var unit float64
		switch s[ustart:i] {
		case "ns":
			unit = 1
		case "us", "µs", "μs":
			unit = 1e3
		case "ms":
			unit = 1e6
		case "s":
			unit = 1e9
		case "m":
			unit = 60e9
		case "h":
			unit = 3600e9
		case "d":
			unit = 86400e9
		default:
			return 0, errDuration
		}
		total += v * unit
	}
	if total >= math.MaxInt64 {
		return 0, errDuration
	}
	return time.Duration(math.Round(total)), nil
}

// isIntegerText reports whether s matches ^[+-]?[0-9]+$.
func isIntegerText(s string) bool {
	i := 0
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		i = 1
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// smallInteger returns the value of integer text of at most 15 digits (an optional sign,
// then digits), which a float64 holds exactly: the number strconv.ParseFloat returns for
// it, "-0" included.
func smallInteger(s string) (float64, bool) {
	i := 0
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		i = 1
	}
	if i == len(s) || len(s)-i > 15 {
		return 0, false
	}
	var v int64
	for _, c := range []byte(s[i:]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	f := float64(v)
	if s[0] == '-' {
		f = -f
	}
	return f, true
}

// isDecimalText reports whether s is a decimal or exponent number:
// ^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$ (no spaces, no hex, no Inf/NaN).
func isDecimalText(s string) bool {
	i := 0
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		i = 1
	}
	intDigits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		intDigits++
	}
	fracDigits := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			fracDigits++
		}
	}
	if intDigits == 0 && fracDigits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		expDigits := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			expDigits++
		}
		if expDigits == 0 {
			return false
		}
	}
	return i == len(s)
}

// parseCSVNumber returns the value of CSV text that is a finite decimal or exponent number.
func parseCSVNumber(s string) (float64, bool) {
	if !isDecimalText(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// isBoolText reports whether s is true or false in any case.
func isBoolText(s string) bool {
	switch len(s) {
	case 4:
		return (s[0]|0x20) == 't' && (s[1]|0x20) == 'r' && (s[2]|0x20) == 'u' && (s[3]|0x20) == 'e'
	case 5:
		return (s[0]|0x20) == 'f' && (s[1]|0x20) == 'a' && (s[2]|0x20) == 'l' && (s[3]|0x20) == 's' && (s[4]|0x20) == 'e'
	}
	return false
}
