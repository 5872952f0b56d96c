package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/engine"
	"riskapi/meridian"
)

// decodeQualityCheck reads a quality-check request from body. The data member is fed straight
// into the request's dataset; every other member is decoded strictly on its own into the
// request as it is read (unknown fields and wrong types are reported as on every endpoint;
// decoding merges into req) and checked by the engine at once, so the first failure in
// document order is the one reported, whichever side of data it stands.
//
// The CSV is read on the goroutines the request was granted (requestInfo.workers, set by
// handleQualityCheck; GOMAXPROCS outside the handler).
func decodeQualityCheck(ctx context.Context, body io.Reader) (*qualityCheckRequest, *Error) {
	req, hasData, e := readQualityCheck(body, requestInfoFrom(ctx).workers)
	if e != nil {
		return nil, e
	}
	if !hasData {
		req.Dataset = nil
	}
	return &qualityCheckRequest{Request: *req}, nil
}

// readQualityCheck reads the members of a quality-check request in document order;
// hasData reports whether records or csv were sent.
func readQualityCheck(body io.Reader, workers int) (req *meridian.Request, hasData bool, _ *Error) {
	req = &meridian.Request{Dataset: meridian.NewDataset(), Workers: workers}
	ds := req.Dataset
	ds.SetWorkers(workers)
	dec := jsontext.NewDecoder(body)
	tok, err := dec.ReadToken()
	if errors.Is(err, io.EOF) {
		return req, false, decodeJSON(nil, req) // an empty body reads as {}
	}
	if err != nil {
		return req, false, streamError(err)
	}
	if tok.Kind() != '{' {
		e := newError(CodeBadRequest, "The request body must be a JSON object, starting with '{'.")
		e.Details["offset"] = dec.InputOffset() - 1
		return req, false, e
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return req, false, streamError(err)
		}
		name := tok.String() // a token is void after the next read
		if name == "data" {
			sent, e := readQualityData(dec, ds)
			if e != nil {
				return req, false, e
			}
			hasData = hasData || sent
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return req, false, streamError(err)
		}
		member, _ := jsontext.AppendQuote([]byte{'{'}, name)
		member = append(append(append(member, ':'), v...), '}')
		if e := decodeJSON(member, req); e != nil {
			return req, false, e
		}
		if e := asValidation(req.ValidateMember(name)); e != nil {
			return req, false, e
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return req, false, streamError(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			e := newError(CodeBadRequest, "Malformed JSON at byte offset %d: data after the end of the request object.", dec.InputOffset())
			e.Details["offset"] = dec.InputOffset()
			return req, false, e
		}
		return req, false, streamError(err)
	}
	return req, hasData, nil
}

// readQualityData streams the value of the data member into ds: records one by one, or the
// csv text row by row (the JSON decoder holds the csv string once; nothing copies it).
// JSON object members are unordered, so data.delimiter applies wherever it stands. When it
// came before the csv, the text is parsed the moment it is read. When it did not, the rest
// of the data object is usually already in the decoder's buffer (a delimiter member is a
// few bytes): delimiterAhead reads it there, without consuming it, and the text is parsed
// at once with the delimiter found, or "," when the object has none. Only when the rest of
// the object is not yet buffered is the text held (one copy) and parsed once the object
// ends and the delimiter is known.
func readQualityData(dec *jsontext.Decoder, ds *meridian.Dataset) (sent bool, _ *Error) {
	const expected = "object (records or csv)"
	switch k := dec.PeekKind(); k {
	case 'n':
		_, err := dec.ReadValue() // null: no data
		return false, streamError(err)
	case '{':
	default:
		if _, err := dec.ReadValue(); err != nil {
			return false, streamError(err)
		}
		return false, invalidField("data", expected, kindName(k), "data must be an object holding records or csv, not %s.", withArticle(kindName(k)))
	}
	if _, err := dec.ReadToken(); err != nil {
		return false, streamError(err)
	}
	var (
		delim              rune = ','
		delimSent          bool
		haveRecords, isCSV bool
		parsed             bool           // the csv was parsed, with parsedDelim
		parsedDelim        rune           //
		held               jsontext.Value // the csv text, until the delimiter is known
	)
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return false, streamError(err)
		}
		name, path := tok.String(), "data."+tok.String()
		switch name {
		case "records":
			if isCSV {
				return false, invalidField(path, expected, kindName(dec.PeekKind()), "data takes records or csv, not both.")
			}
			if dec.PeekKind() == 'n' {
				if _, err := dec.ReadValue(); err != nil {
					return false, streamError(err)
				}
				continue
			}
			haveRecords = true
			if err := ds.ReadRecords(dec); err != nil {
				return false, dataError(err)
			}
		case "csv":
			k := dec.PeekKind()
			v, err := dec.ReadValue()
			if err != nil {
				return false, streamError(err)
			}
			switch {
			case k == 'n':
				continue
			case haveRecords:
				return false, invalidField(path, expected, kindName(k), "data takes records or csv, not both.")
			case k != '"':
				return false, invalidField(path, "string (RFC 4180 CSV with a header row)", kindName(k), "data.csv must be a string of CSV text.")
			}
			isCSV = true
			use, known := delim, delimSent
			if !known {
				use, known = delimiterAhead(dec.UnreadBuffer())
			}
			if !known {
				held = v.Clone()
				continue
			}
			if e := readCSV(ds, v, use); e != nil {
				return false, csvError(e, use)
			}
			parsed, parsedDelim = true, use
		case "delimiter":
			k := dec.PeekKind()
			v, err := dec.ReadValue()
			if err != nil {
				return false, streamError(err)
			}
			if k == 'n' {
				continue
			}
			var text string
			if k != '"' || json.Unmarshal(v, &text) != nil {
				return false, invalidField(path, "string (one character)", kindName(k), "data.delimiter must be a string of one character.")
			}
			r, err := meridian.ParseDelimiter(text)
			if err != nil {
				return false, dataError(err)
			}
			if parsed && r != parsedDelim {
				// delimiterAhead read the buffered rest of the object, so the delimiter is
				// the one it found; this guards that promise.
				return false, invalidField(path, "string (one character)", "string", "data.delimiter changed after data.csv was read.")
			}
			delim, delimSent = r, true
		default:
			return false, unknownField(path, reflect.TypeFor[meridian.Data](), kindName(dec.PeekKind()))
		}
	}
	if delimSent && haveRecords {
		return false, invalidField("data.delimiter", "absent with records", "string", "data.delimiter applies to csv; records need none.")
	}
	if _, err := dec.ReadToken(); err != nil {
		return false, streamError(err)
	}
	if held != nil {
		if e := readCSV(ds, held, delim); e != nil {
			return false, csvError(e, delim)
		}
	}
	return haveRecords || isCSV, nil
}

// csvError adds to a CSV error which delimiter the text was read with.
func csvError(e *Error, delim rune) *Error {
	e.Message += fmt.Sprintf(" (The text was read with the delimiter %q; send data.delimiter if it uses another one.)", string(delim))
	return e
}

// delimiterAhead reads, in buf (the decoder's unread bytes, just after the csv value), the
// rest of the data object without consuming it: the delimiter to parse the csv with (","
// when the object has no delimiter member), and whether it is known — false when the
// object does not end within buf, or when its delimiter member is not one valid character
// (the member is then reported where it stands, and the text waits for the object's end).
func delimiterAhead(buf []byte) (rune, bool) {
	rest := bytes.TrimLeft(buf, " \t\r\n")
	switch {
	case len(rest) > 0 && rest[0] == '}':
		return ',', true
	case len(rest) > 0 && rest[0] == ',':
		rest = rest[1:]
	default:
		return 0, false
	}
	dec := jsontext.NewDecoder(io.MultiReader(strings.NewReader("{"), bytes.NewReader(rest)))
	if _, err := dec.ReadToken(); err != nil {
		return 0, false
	}
	delim, found := ',', false
	for {
		if dec.PeekKind() == '}' {
			return delim, true
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return 0, false
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return 0, false
		}
		if name != "delimiter" || v.Kind() == 'n' {
			continue
		}
		var text string
		if found || v.Kind() != '"' || json.Unmarshal(v, &text) != nil {
			return 0, false
		}
		r, err := meridian.ParseDelimiter(text)
		if err != nil {
			return 0, false
		}
		delim, found = r, true
	}
}

func readCSV(ds *meridian.Dataset, text jsontext.Value, delim rune) *Error {
	rd, err := meridian.JSONStringReader(text)
	if err == nil {
		err = ds.ReadCSV(rd, delim)
	}
	return dataError(err)
}

// dataError maps what the dataset reports: the engine's validation errors keep their code and
// path; anything from the stream is a stream error.
func dataError(err error) *Error {
	var invalid *engine.InputError
	if errors.As(err, &invalid) {
		return asValidation(err)
	}
	return streamError(err)
}
