package httpapi

import (
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/store"
	"riskapi/meridian"
)

var meridianChecks = analysisKind{
	product: store.ProductMeridian, object: "meridian.quality_check", idPrefix: "mqc", list: "meridian_quality_checks",
	subject: "source_id", noun: "Meridian quality check", eventType: EventMeridianQualityCheckFailed,
}

// sourceIDPattern is the contract's source_id: 1–128 characters of [A-Za-z0-9._:/-].
var sourceIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,128}$`)

const sourceIDExpected = "string (1-128 chars of [A-Za-z0-9._:/-])"

// qualityCheckObject is the stored and returned quality check.
type qualityCheckObject struct {
	resourceHeader  `json:",inline"`
	meridian.Result `json:",inline"`
}

// handleQualityCheck is POST /v1/meridian/quality-check. Unlike the other endpoints it never
// holds the request body: the body is decoded as it arrives — records one by one, CSV row by
// row — into the engine's columnar dataset, while a SHA-256 of the raw bytes is taken for the
// Idempotency-Key fingerprint. The order of checks is the contract's: decoding and validation
// errors (400, not stored) come before idempotency (409/422).
func (s *Server) handleQualityCheck() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		digest := sha256.New()
		req, ds, hasData, e := decodeQualityCheck(io.TeeReader(r.Body, digest))
		if e != nil {
			writeError(w, r, e)
			return
		}
		key, e := idempotencyKey(r)
		if e != nil {
			writeError(w, r, e)
			return
		}
		if e := validateQualityCheck(&req, hasData); e != nil {
			writeError(w, r, e)
			return
		}
		s.execute(w, r, key, sumOf(digest), func(w http.ResponseWriter) { s.runQualityCheck(w, r, &req, ds) })
	})
}

func sumOf(h hash.Hash) (sum [sha256.Size]byte) {
	copy(sum[:], h.Sum(nil))
	return sum
}

// validateQualityCheck applies the engine's own checks of everything but the data (which was
// checked while it was read), so the API and the library refuse the same requests alike, and
// the rules that tie the members together (data or signals; checks need data) — all before
// the Idempotency-Key is taken, so none of these 400s is stored.
func validateQualityCheck(req *meridian.Request, hasData bool) *Error {
	if !sourceIDPattern.MatchString(req.SourceID) {
		received := "string"
		if req.SourceID == "" {
			received = "missing"
		}
		return invalidField("source_id", sourceIDExpected, received, "source_id is required: 1 to 128 letters, digits, '.', '_', ':', '/' or '-'.")
	}
	if e := engineError(req.Validate()); e != nil {
		return e
	}
	switch {
	case !hasData && req.Signals == nil:
		return invalidField("data", "object (records or csv; or send signals)", "missing", "The request needs data (records or csv) or signals.")
	case !hasData && len(req.Checks) > 0:
		return invalidField("data", "object (records or csv; checks run on data)", "missing",
			"checks need data to run on: send data.records or data.csv, or remove checks for a signals-only request.")
	}
	return nil
}

// engineError maps a Meridian validation error to the envelope; nil stays nil.
func engineError(err error) *Error {
	var ie *meridian.InputError
	if errors.As(err, &ie) {
		return engineInputError(ie.Code, ie.Field, ie.Expected, ie.Received, ie.Message)
	}
	if err != nil {
		return invalidField("checks", "array", "array", "%v", err)
	}
	return nil
}

func (s *Server) runQualityCheck(w http.ResponseWriter, r *http.Request, req *meridian.Request, ds *meridian.Dataset) {
	h, now := s.newHeader(r, meridianChecks)
	res, err := meridian.Evaluate(*req, ds, now)
	var ie *meridian.InputError
	if errors.As(err, &ie) {
		writeError(w, r, engineInputError(ie.Code, ie.Field, ie.Expected, ie.Received, ie.Message))
		return
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj := qualityCheckObject{resourceHeader: h, Result: res}
	payload, err := s.saveAnalysis(r, meridianChecks, h, now, req.SourceID, obj, !res.Passed)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, payload)
}

// decodeQualityCheck reads a quality-check request from body. The data member is fed straight
// into a dataset; every other member is decoded strictly on its own into the request as it is
// read (unknown fields and wrong types are reported as on every endpoint; decoding merges
// into req) and checked at once, so the first failure in document order is the one reported,
// whichever side of data it stands. hasData reports whether records or csv were sent.
func decodeQualityCheck(body io.Reader) (req meridian.Request, ds *meridian.Dataset, hasData bool, _ *Error) {
	ds = meridian.NewDataset()
	dec := jsontext.NewDecoder(body)
	tok, err := dec.ReadToken()
	if errors.Is(err, io.EOF) {
		return req, ds, false, decodeJSON(nil, &req) // an empty body reads as {}
	}
	if err != nil {
		return req, ds, false, streamError(err)
	}
	if tok.Kind() != '{' {
		e := newError(CodeBadRequest, "The request body must be a JSON object, starting with '{'.")
		e.Details["offset"] = dec.InputOffset() - 1
		return req, ds, false, e
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return req, ds, false, streamError(err)
		}
		name := tok.String() // a token is void after the next read
		if name == "data" {
			sent, e := readQualityData(dec, ds)
			if e != nil {
				return req, ds, false, e
			}
			hasData = hasData || sent
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return req, ds, false, streamError(err)
		}
		member, _ := jsontext.AppendQuote([]byte{'{'}, name)
		member = append(append(append(member, ':'), v...), '}')
		if e := decodeJSON(member, &req); e != nil {
			return req, ds, false, e
		}
		if name == "source_id" && !sourceIDPattern.MatchString(req.SourceID) {
			return req, ds, false, invalidField("source_id", sourceIDExpected, "string", "source_id must be 1 to 128 letters, digits, '.', '_', ':', '/' or '-'.")
		}
		if e := engineError(req.ValidateMember(name)); e != nil {
			return req, ds, false, e
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return req, ds, false, streamError(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			e := newError(CodeBadRequest, "Malformed JSON at byte offset %d: data after the end of the request object.", dec.InputOffset())
			e.Details["offset"] = dec.InputOffset()
			return req, ds, false, e
		}
		return req, ds, false, streamError(err)
	}
	return req, ds, hasData, nil
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
	var ie *meridian.InputError
	if errors.As(err, &ie) {
		return engineInputError(ie.Code, ie.Field, ie.Expected, ie.Received, ie.Message)
	}
	return streamError(err)
}

// streamError maps a failure of reading the body: malformed JSON (400 with the byte offset),
// a body over the limit (413), or a connection that failed.
func streamError(err error) *Error {
	if err == nil {
		return nil
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
