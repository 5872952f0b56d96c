package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/event"
	"riskapi/internal/ident"
	"riskapi/internal/product"
	"riskapi/internal/resource"
	"riskapi/internal/store"
)

// now is the server's clock as stored objects record it: UTC, to the millisecond.
func (s *Server) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// newHeader starts a new stored result of product p for the caller, created at createdAt.
func newHeader(r *http.Request, p product.Product, createdAt time.Time) resource.Header {
	return resource.Header{ID: ident.New(p.Results.IDPrefix), Object: p.Results.Object,
		Livemode: principalFrom(r.Context()).Livemode(), CreatedAt: resource.FormatTime(createdAt)}
}

// encodeAnalysis encodes a stored analysis: the resource header's members, then the
// engine's result's, in one JSON object.
func encodeAnalysis(h resource.Header, result any) ([]byte, error) { return resource.Join(h, result) }

// saveAnalysis stores an engine's result as a new analysis of product p about subject,
// created at createdAt (the "now" the engine was given, where it takes one), and — when emit
// is set — the product's event about it, in one transaction with the completion of the
// request's Idempotency-Key, and answers with the object: its bytes are encoded once, so
// POST, GET, the event and a replay all carry the same ones.
func (s *Server) saveAnalysis(r *http.Request, p product.Product, createdAt time.Time, subject string, res any, emit bool) (int, any, error) {
	h := newHeader(r, p, createdAt)
	payload, err := encodeAnalysis(h, res)
	if err != nil {
		return 0, nil, err
	}
	who := principalFrom(r.Context())
	a := store.Analysis{
		ID: h.ID, AccountID: who.Account.ID, Mode: who.Key.Mode, Product: p.Name,
		Subject: subject, Payload: payload, CreatedAt: createdAt,
	}
	var ev *store.Event
	if emit {
		e, err := event.New(who.Account.ID, who.Key.Mode, p.Event, jsontext.Value(payload), createdAt)
		if err != nil {
			return 0, nil, err
		}
		ev = &e
	}
	status, data, err := s.commitWithResponse(r, http.StatusOK, jsontext.Value(payload), func(done *store.IdempotencyCompletion) error {
		return s.cfg.Store.CreateAnalysis(r.Context(), a, ev, done)
	})
	if err == nil && ev != nil {
		s.cfg.Webhooks.Notify()
	}
	return status, data, err
}

func renderAnalysis(a store.Analysis) any { return jsontext.Value(a.Payload) }

// handleListAnalyses is GET <Results.Path>: the caller's analyses of product p, newest
// first, optionally of one subject (checked by validSubject, the engine's own rule for the
// POST member, whose contract expected states).
func (s *Server) handleListAnalyses(p product.Product, validSubject func(string) bool, expected string) http.Handler {
	k := p.Results
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, k.List, k.Subject)
		if e != nil {
			writeError(w, r, e)
			return
		}
		subject, given := q.filters[k.Subject]
		if given && !validSubject(subject) {
			writeError(w, r, invalidField(k.Subject, expected, "string", "%s %q is not valid: use %s.", k.Subject, subject, expected))
			return
		}
		who := principalFrom(r.Context())
		page, err := s.cfg.Store.ListAnalyses(r.Context(), who.Account.ID, who.Key.Mode, p.Name, subject, q.page)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writePage(s, w, r, k.List, q, page, store.AnalysisPosition, renderAnalysis)
	})
}

// handleGetAnalysis is GET <Results.Path>/{id}.
func (s *Server) handleGetAnalysis(p product.Product) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := principalFrom(r.Context())
		a, err := s.cfg.Store.Analysis(r.Context(), who.Account.ID, who.Key.Mode, p.Name, r.PathValue("id"))
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, r, newError(CodeNotFound, "No %s %s.", p.Results.Noun, r.PathValue("id")))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, renderAnalysis(a))
	})
}
