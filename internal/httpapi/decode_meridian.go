package httpapi

import (
	"errors"
	"io"
	"reflect"

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
func decodeQualityCheck(body io.Reader) (*qualityCheckRequest, *Error) {
	req, hasData, e := readQualityCheck(body)
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
func readQualityCheck(body io.Reader) (req *meridian.Request, hasData bool, _ *Error) {
	req = &meridian.Request{Dataset: meridian.NewDataset()}
	ds := req.Dataset
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
// csv text row by row (the JSON decoder holds the csv string once; nothing copies it). The
// text is parsed the moment it is read, with the delimiter sent before it or else ",": a
// different delimiter sent after the csv is refused with a message saying to send it first,
// rather than holding a second copy of the text until the object ends.
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
			if e := readCSV(ds, v, delim); e != nil {
				if !delimSent {
					e.Message += " (The text was read with the default delimiter \",\"; if it uses another one, send data.delimiter before data.csv.)"
				}
				return false, e
			}
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
			if isCSV && r != delim {
				return false, invalidField(path, "string (one character, sent before data.csv)", "string",
					"data.csv is parsed as it arrives, so a delimiter other than \",\" must come before it in the data object.")
			}
			delim, delimSent = r, true
		default:
			return false, unknownField(path, reflect.TypeFor[meridian.Data](), kindName(dec.PeekKind()))
		}
	}
	if delimSent && haveRecords {
		return false, invalidField("data.delimiter", "absent with records", "string", "data.delimiter applies to csv; records need none.")
	}
	_, err := dec.ReadToken()
	return haveRecords || isCSV, streamError(err)
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
