package httpapi

import (
	"bufio"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"riskapi/internal/auth"
)

// protected wraps a handler of an authenticated endpoint in the checks of the platform
// contract §1, in its order: authentication (401) → rate limit (429) → scope (403) →
// content type (415) → body size (413); decoding (400) happens in the handler. scope is
// the scope the endpoint needs, or "" when any valid key may call it.
func (s *Server) protected(scope string, h http.Handler) http.Handler {
	return s.authenticate(requireScope(scope, s.acceptBody(h)))
}

// authenticate resolves the Bearer key to a principal. Client mistakes are 401 in the
// envelope; a store that cannot answer is 503, so an outage never looks like a bad key.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.cfg.Auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
		var rejected *auth.RejectedError
		switch {
		case errors.As(err, &rejected):
			w.Header().Set("WWW-Authenticate", `Bearer realm="riskapi"`)
			writeError(w, r, newError(CodeUnauthorized, "%s", rejected.Message))
			return
		case err != nil:
			requestInfoFrom(r.Context()).log.Error("authentication store failure", "err", err)
			writeError(w, r, newError(CodeServiceUnavailable, "The service cannot check API keys right now. Retry shortly."))
			return
		}
		requestInfoFrom(r.Context()).principal = &p
		next.ServeHTTP(w, r)
	})
}

// requireScope answers 403 when the key does not hold scope.
func requireScope(scope string, next http.Handler) http.Handler {
	if scope == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		if !auth.Grants(p.Key.Scopes, scope) {
			e := newError(CodeForbidden, "This API key does not have the %s scope this endpoint needs.", scope)
			e.Details["required_scope"] = scope
			writeError(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// acceptBody enforces the body rules on methods that carry one: a non-empty body must be
// application/json (415 otherwise), and at most MaxBodyBytes long (413). A declared length
// over the limit is refused before reading a byte; a chunked body is cut off at the limit.
func (s *Server) acceptBody(next http.Handler) http.Handler {
	limit := s.cfg.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodPatch {
			next.ServeHTTP(w, r)
			return
		}
		hasBody := r.ContentLength > 0
		if r.ContentLength < 0 { // length unknown (chunked): look for a first byte
			br := bufio.NewReader(r.Body)
			_, err := br.Peek(1)
			hasBody = err != io.EOF
			r.Body = struct {
				io.Reader
				io.Closer
			}{br, r.Body}
		}
		if hasBody {
			if e := checkContentType(r.Header.Get("Content-Type")); e != nil {
				writeError(w, r, e)
				return
			}
		}
		if r.ContentLength > limit {
			writeError(w, r, errPayloadTooLarge(limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

// checkContentType accepts application/json, optionally with charset=utf-8.
func checkContentType(header string) *Error {
	mediaType, params, err := mime.ParseMediaType(header)
	if err == nil && mediaType == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	received := header
	if received == "" {
		received = "none"
	}
	e := newError(CodeUnsupportedMediaType, "Send the request body as JSON with Content-Type: application/json (received %s).", received)
	e.Details["expected"] = "application/json"
	e.Details["received"] = received
	return e
}
