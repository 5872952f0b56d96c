package httpapi

import (
	"errors"
	"math"
	"net/http"
	"regexp"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// objectEncodeOptions encode the objects the API stores and returns (analyses, events about
// them): keys sorted where maps appear, every time.Time in the API's one timestamp format
// (RFC 3339 UTC with milliseconds), whatever precision the engine's times carry, and a number
// that is not finite — a statistic of extreme data that overflowed float64 — as null rather
// than a failed response (JSON has no NaN or infinity).
var objectEncodeOptions = json.JoinOptions(encodeOptions,
	json.WithMarshalers(json.JoinMarshalers(
		json.MarshalToFunc(func(enc *jsontext.Encoder, t time.Time) error {
			return enc.WriteToken(jsontext.String(formatTime(t)))
		}),
		json.MarshalToFunc(func(enc *jsontext.Encoder, x float64) error {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return enc.WriteToken(jsontext.Null)
			}
			return errors.ErrUnsupported // finite: the default encoding
		}),
	)))

// resourceHeader is what every stored object starts with (platform contract §1).
type resourceHeader struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Livemode  bool   `json:"livemode"`
	CreatedAt string `json:"created_at"`
}

// analysisKind describes one product's stored analyses.
type analysisKind struct {
	product   string // store.Product…
	object    string // the object's "object" value, e.g. "drift.analysis"
	idPrefix  string // "dra"
	list      string // the list's name in cursors
	subject   string // the list's filter parameter: "agent_id"
	noun      string // how messages name one: "Drift analysis"
	eventType string // emitted when the verdict calls for it
}

// newHeader starts a new stored object of kind k for the caller.
func (s *Server) newHeader(r *http.Request, k analysisKind) (resourceHeader, time.Time) {
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	p := principalFrom(r.Context())
	return resourceHeader{ID: ident.New(k.idPrefix), Object: k.object, Livemode: p.Livemode(), CreatedAt: formatTime(now)}, now
}

// saveAnalysis encodes object (which embeds the header h) once, stores it and — when emit
// is set — the event of kind k.eventType about it, in one transaction, and returns the bytes
// that POST, GET and the event all carry.
func (s *Server) saveAnalysis(r *http.Request, k analysisKind, h resourceHeader, createdAt time.Time, subject string, object any, emit bool) (jsontext.Value, error) {
	payload, err := json.Marshal(object, objectEncodeOptions)
	if err != nil {
		return nil, err
	}
	p := principalFrom(r.Context())
	a := store.Analysis{
		ID: h.ID, AccountID: p.Account.ID, Mode: p.Key.Mode, Product: k.product,
		Subject: subject, Payload: payload, CreatedAt: createdAt,
	}
	var ev *store.Event
	if emit {
		e, err := newEvent(p.Account.ID, p.Key.Mode, k.eventType, jsontext.Value(payload), createdAt)
		if err != nil {
			return nil, err
		}
		ev = &e
	}
	if err := s.cfg.Store.CreateAnalysis(r.Context(), a, ev); err != nil {
		return nil, err
	}
	if ev != nil {
		s.cfg.Webhooks.Notify()
	}
	return payload, nil
}

func renderAnalysis(a store.Analysis) any { return jsontext.Value(a.Payload) }

// handleListAnalyses is GET /v1/<product>/analyses: the caller's analyses of kind k, newest
// first, optionally of one subject (validated by subjectPattern, like the POST field).
func (s *Server) handleListAnalyses(k analysisKind, subjectPattern *regexp.Regexp, subjectExpected string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, k.list, k.subject)
		if e != nil {
			writeError(w, r, e)
			return
		}
		subject, given := q.filters[k.subject]
		if given && !subjectPattern.MatchString(subject) {
			writeError(w, r, invalidField(k.subject, subjectExpected, "string", "%s %q is not valid: use %s.", k.subject, subject, subjectExpected))
			return
		}
		p := principalFrom(r.Context())
		page, err := s.cfg.Store.ListAnalyses(r.Context(), p.Account.ID, p.Key.Mode, k.product, subject, q.page)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writePage(s, w, r, k.list, q, page, store.AnalysisPosition, renderAnalysis)
	})
}

// handleGetAnalysis is GET /v1/<product>/analyses/{id}.
func (s *Server) handleGetAnalysis(k analysisKind) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		a, err := s.cfg.Store.Analysis(r.Context(), p.Account.ID, p.Key.Mode, k.product, r.PathValue("id"))
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, r, newError(CodeNotFound, "No %s %s.", k.noun, r.PathValue("id")))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, renderAnalysis(a))
	})
}
