package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"riskapi/internal/event"
	"riskapi/internal/store"
)

// handleListEvents is GET /v1/events?type=&limit=&cursor=: the account's events of the
// caller's mode, newest first, kept 30 days.
func (s *Server) handleListEvents() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, "events", "type")
		if e != nil {
			writeError(w, r, e)
			return
		}
		eventType := q.filters["type"]
		if _, given := q.filters["type"]; given && !event.IsKind(eventType) {
			writeError(w, r, invalidField("type", "string (one of "+strings.Join(event.Kinds(), ", ")+")", "string",
				"%q is not an event kind. Known kinds: %s.", eventType, strings.Join(event.Kinds(), ", ")))
			return
		}
		p := principalFrom(r.Context())
		page, err := s.cfg.Store.ListEvents(r.Context(), p.Account.ID, p.Key.Mode, eventType, q.page)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writePage(s, w, r, "events", q, page, eventPosition, renderEvent)
	})
}

// handleGetEvent is GET /v1/events/{id}.
func (s *Server) handleGetEvent() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		ev, err := s.cfg.Store.Event(r.Context(), p.Account.ID, p.Key.Mode, r.PathValue("id"))
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, r, newError(CodeNotFound, "No event %s.", r.PathValue("id")))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, renderEvent(ev))
	})
}
