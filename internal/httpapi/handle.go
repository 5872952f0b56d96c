package httpapi

import (
	"context"
	"crypto/sha256"
	"hash"
	"io"
	"net/http"
	"time"

	"riskapi/engine"
)

// Every POST and PATCH endpoint takes one way through the code:
//
//	decode and validate the body (engine) → Idempotency-Key → do (engine, store) → envelope
//
// handleJSON does it for bodies read whole; handleStream for bodies decoded as they arrive
// (Meridian's CSV of up to a million rows). Both share the idempotency step (execute) and
// the contract's order of checks: decoding and validation errors (400) come before
// idempotency conflicts (409/422) and are never stored, so a client can fix a request and
// retry it with the same key. The Idempotency-Key header's own form is checked once the body
// is read: before decoding in handleJSON, after it in handleStream, which cannot read the
// body twice (a request wrong in both ways gets the one or the other 400).

// doFunc is an endpoint's work once its request passed every check: the status and data of
// the envelope, or an error, which writeError maps (an *engine.InputError is a 400).
type doFunc[Req any] func(r *http.Request, req *Req) (status int, data any, err error)

// contextValidatable is implemented by request types whose validation needs more than the
// body: the caller's scopes, or a DNS lookup (a webhook URL). It runs after validate and, like
// it, before the Idempotency-Key is taken, so its 400s are never stored.
type contextValidatable interface {
	validateIn(ctx context.Context, s *Server) *Error
}

// handleJSON reads the whole body, decodes and validates a Req (decodeJSON: its validate
// method, then validateIn), and runs do at most once per Idempotency-Key (POST only).
func handleJSON[Req any](s *Server, do doFunc[Req]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, e := readBody(r)
		if e != nil {
			writeError(w, r, e)
			return
		}
		key, e := idempotencyKey(r)
		if e != nil {
			writeError(w, r, e)
			return
		}
		var req Req
		if e := decodeJSONContext(r.Context(), body, &req); e != nil {
			writeError(w, r, e)
			return
		}
		var sum [sha256.Size]byte
		if key != "" { // the body's hash fingerprints an Idempotency-Key only: 14 ms for 27 MB
			sum = sha256.Sum256(body)
		}
		proceed(s, w, r, key, sum, &req, do)
	})
}

// streamDecoder decodes a request from its body as the bytes arrive, checking each member
// as it is read, so that the first failure in document order is the one reported.
type streamDecoder[Req any] func(ctx context.Context, body io.Reader) (*Req, *Error)

// handleStream is handleJSON for a body that is never held whole: decode reads it as it
// arrives while a SHA-256 of the raw bytes is taken for the Idempotency-Key fingerprint;
// validate checks the whole request once it is read (the rules that tie members together).
func handleStream[Req any](s *Server, decode streamDecoder[Req], validate func(*Req) *Error, do doFunc[Req]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		digest := sha256.New()
		req, e := decode(r.Context(), io.TeeReader(r.Body, digest))
		if e != nil {
			writeError(w, r, e)
			return
		}
		key, e := idempotencyKey(r)
		if e != nil {
			writeError(w, r, e)
			return
		}
		if e := validate(req); e != nil {
			writeError(w, r, e)
			return
		}
		proceed(s, w, r, key, sumOf(digest), req, do)
	})
}

// costed is implemented by the products' analysis requests: the engine's estimate of the
// work (platform contract §11), made once the request is valid, and whether the work runs in
// the background (Cascade's large or async simulations), where the background budget applies
// and the memory is the background runner's to hold.
type costed interface {
	estimate(syncBudget time.Duration) (cost engine.Cost, background bool, err error)
}

// proceed takes a decoded and validated request the rest of the way, the same for both
// variants: the work's estimated cost against the budgets (admit.go) and the checks that need
// more than the body (validateIn, which may depend on where the work runs), then the work, at most once per Idempotency-Key, once
// memory for its estimated peak is reserved.
func proceed[Req any](s *Server, w http.ResponseWriter, r *http.Request, key string, bodySum [sha256.Size]byte, req *Req, do doFunc[Req]) {
	var cost engine.Cost
	if c, ok := any(req).(costed); ok {
		estimate, background, err := c.estimate(s.cfg.Bounds.SyncBudget)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if e := s.checkCost(r, estimate, background); e != nil {
			writeError(w, r, e)
			return
		}
		if !background {
			cost = estimate
		}
	}
	if c, ok := any(req).(contextValidatable); ok {
		if e := c.validateIn(r.Context(), s); e != nil {
			writeError(w, r, e)
			return
		}
	}
	s.execute(w, r, key, bodySum, func() (int, any, error) {
		if e := s.reserveWork(r, cost); e != nil {
			return 0, nil, e
		}
		return do(r, req)
	})
}

func sumOf(h hash.Hash) (sum [sha256.Size]byte) {
	copy(sum[:], h.Sum(nil))
	return sum
}

// execute runs work for a request that passed every check and answers with its envelope:
// at most once per Idempotency-Key when the request has one (bodySum fingerprints it), else
// plainly.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, key string, bodySum [sha256.Size]byte, work func() (int, any, error)) {
	respond := func(w http.ResponseWriter) {
		status, data, err := work()
		if err != nil {
			writeError(w, r, err)
			return
		}
		if env, ok := data.(encodedEnvelope); ok {
			writeJSONBytes(w, status, env) // the bytes stored with the write (commitWithResponse)
			return
		}
		writeData(w, r, status, data)
	}
	if key == "" {
		respond(w)
		return
	}
	s.runIdempotent(w, r, key, bodySum, respond)
}
