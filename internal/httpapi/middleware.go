package httpapi

import (
	"bufio"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/clientip"
	"riskapi/internal/ratelimit"
	"riskapi/internal/ratepolicy"
)

// protected wraps a handler of an authenticated endpoint in the checks of the platform
// contract §1, in its order: authentication (401) → rate limit (429) → scope (403) →
// content type (415) → body size (413); decoding (400) and idempotency (409/422) happen in
// the handler. scope is the scope the endpoint needs, or "" when any valid key may call it;
// its resource names the product whose limit and usage the endpoint counts against.
func (s *Server) protected(scope string, h http.Handler) http.Handler {
	return s.protectedBody(scope, checkContentType, h)
}

// protectedBody is protected for an endpoint whose bodies checkType accepts (the OTLP
// endpoint takes protobuf as well as JSON).
func (s *Server) protectedBody(scope string, checkType func(header string) *Error, h http.Handler) http.Handler {
	product := productOfScope(scope)
	return s.authenticate(s.limitRate(product, requireScope(scope, s.acceptBody(checkType, s.meterUsage(product, h)))))
}

// protectedTestOnly is protected("") for endpoints only test-mode keys may call: a live-mode
// key is refused with 403 at the scope step, before the content type, size and body.
func (s *Server) protectedTestOnly(h http.Handler) http.Handler {
	return s.authenticate(s.limitRate("", testModeOnly(s.acceptBody(checkContentType, s.meterUsage("", h)))))
}

// authenticate resolves the Bearer key to a principal. Client mistakes are 401 in the
// envelope and count against the client IP's failed-authentication bucket (platform contract
// §4). Once that is exhausted, a request from the IP whose key is malformed gets 429 without
// a key lookup, and one whose key fails the lookup gets 429 instead of 401; a valid key is
// never refused for what other requests from its address did (a shared proxy must not lock
// out every tenant behind it). A store that cannot answer is 503, so an outage never looks
// like a bad key.
//
// The failed-authentication bucket is read only once authentication has failed: a key that
// authenticates never touches it, which spares the common request a limiter call (with
// Redis, a round trip of its own). Authenticate rejects a malformed key before any lookup,
// so such a key is still refused without one.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := requestInfoFrom(r.Context())
		now := s.cfg.Now()
		header := r.Header.Get("Authorization")
		p, err := s.cfg.Auth.Authenticate(r.Context(), header)
		var rejected *auth.RejectedError
		switch {
		case errors.As(err, &rejected):
			failed, states, exhausted := s.peekFailedAuth(r, now)
			if exhausted && !auth.WellFormed(header) {
				// Refused without counting; Authenticate looked nothing up for a malformed key.
				setLimitHeaders(w.Header(), failed, states, now, true)
				writeError(w, r, errRateLimited(states[0], failed[0].Policy))
				return
			}
			states, err := s.cfg.Limiter.Take(r.Context(), now, failed[0].Bucket)
			if err != nil {
				info.logger().Warn("failed-authentication limiter", "err", err)
			} else if refused := exhausted || !states[0].Allowed(); refused {
				setLimitHeaders(w.Header(), failed, states, now, true)
				writeError(w, r, errRateLimited(states[0], failed[0].Policy))
				return
			} else {
				setLimitHeaders(w.Header(), failed, states, now, false)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="riskapi"`)
			writeError(w, r, newError(CodeUnauthorized, "%s", rejected.Message))
			return
		case err != nil:
			info.logger().Error("authentication store failure", "err", err)
			writeError(w, r, newError(CodeServiceUnavailable, "The service cannot check API keys right now. Retry shortly."))
			return
		}
		info.principal = &p
		next.ServeHTTP(w, r)
	})
}

// peekFailedAuth reads, without counting, the failed-authentication bucket of r's client
// address; exhausted is false when the limiter could not answer.
func (s *Server) peekFailedAuth(r *http.Request, now time.Time) (failed []ratepolicy.Limit, states []ratelimit.State, exhausted bool) {
	failed = []ratepolicy.Limit{ratepolicy.FailedAuthFrom(clientip.Of(r, s.cfg.TrustedProxies))}
	states, err := s.cfg.Limiter.Peek(r.Context(), now, failed[0].Bucket)
	return failed, states, err == nil && states[0].Exhausted()
}

// limitRate counts the request against every bucket that applies to it and answers 429
// when one is exhausted. Every authenticated request counts, whatever its outcome. The
// limiter falls back to process memory when Redis fails; should it still fail, the request
// passes (fail open) rather than fail with a 500.
func (s *Server) limitRate(product string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := requestInfoFrom(r.Context())
		now := s.cfg.Now()
		applied := s.limits.For(*info.principal, product)
		states, err := s.cfg.Limiter.Take(r.Context(), now, ratepolicy.Buckets(applied)...)
		if err != nil {
			info.logger().Error("rate limiter unavailable; request admitted", "err", err)
			next.ServeHTTP(w, r)
			return
		}
		refused := slices.ContainsFunc(states, func(st ratelimit.State) bool { return !st.Allowed() })
		tight := setLimitHeaders(w.Header(), applied, states, now, refused)
		if refused {
			writeError(w, r, errRateLimited(states[tight], applied[tight].Policy))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// meterUsage records one billable unit when a live-mode product request succeeds (2xx) and
// was not an idempotent replay (platform contract §9).
func (s *Server) meterUsage(product string, next http.Handler) http.Handler {
	if product == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		info := requestInfoFrom(r.Context())
		status := info.recorder.status()
		if info.principal.Livemode() && !info.replayed && status >= 200 && status < 300 {
			s.cfg.Meter.Record(info.principal.Account.ID, product, r.Method+" "+info.route, s.cfg.Now())
		}
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

// acceptBody enforces the body rules on methods that carry one: a non-empty body must be of
// a type checkType accepts (application/json everywhere but OTLP; 415 otherwise), and at most
// MaxBodyBytes long (413). A declared length over the limit is refused before reading a byte;
// a chunked body is cut off at the limit.
func (s *Server) acceptBody(checkType func(header string) *Error, next http.Handler) http.Handler {
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
			if e := checkType(r.Header.Get("Content-Type")); e != nil {
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
	return errUnsupportedMediaType(header, "application/json", "Send the request body as JSON with Content-Type: application/json")
}

// errUnsupportedMediaType is the 415 for a Content-Type header that is not expected; advice
// starts the message.
func errUnsupportedMediaType(header, expected, advice string) *Error {
	received := header
	if received == "" {
		received = "none"
	}
	e := newError(CodeUnsupportedMediaType, "%s (received %s).", advice, received)
	e.Details["expected"] = expected
	e.Details["received"] = received
	return e
}
