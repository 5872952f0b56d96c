package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/internal/store"
)

// idempotencyPolicy: an in-flight record whose process died is reclaimed after 5 minutes;
// records are forgotten after 24 hours (platform contract §5).
var idempotencyPolicy = store.IdempotencyPolicy{ReclaimAfter: 5 * time.Minute, ExpireAfter: 24 * time.Hour}

// idempotencySettleTimeout bounds the store call that completes or releases a record after
// the work, which runs even when the request's context has ended.
const idempotencySettleTimeout = 5 * time.Second

// idempotencyKey returns the request's Idempotency-Key: "" when absent, else 1–255
// printable ASCII characters (400 INVALID_IDEMPOTENCY_KEY otherwise). Only POST uses it.
func idempotencyKey(r *http.Request) (string, *Error) {
	values := r.Header.Values("Idempotency-Key")
	if r.Method != http.MethodPost || len(values) == 0 {
		return "", nil
	}
	const expected = "string (1-255 printable ASCII characters)"
	if len(values) > 1 {
		return "", invalidField("idempotency_key", expected, "array", "Send one Idempotency-Key header, not %d.", len(values))
	}
	key := values[0]
	if key == "" || len(key) > 255 {
		return "", invalidField("idempotency_key", expected, "string", "The Idempotency-Key header must be 1 to 255 characters long (it is %d).", len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", invalidField("idempotency_key", expected, "string", "The Idempotency-Key header may hold printable ASCII characters only (found byte 0x%02x at %d).", key[i], i)
		}
	}
	return key, nil
}

// runIdempotent executes work at most once per (account, mode, key) and request fingerprint:
// the first request runs it and its response is stored; the same request afterwards gets
// that response replayed byte for byte with Idempotent-Replayed: true; while the first still
// runs, 409 IDEMPOTENCY_KEY_IN_USE; another request with the same key, 422
// IDEMPOTENCY_KEY_REUSED. A 5xx or 429 is not stored: the key is released so a retry runs again.
func (s *Server) runIdempotent(w http.ResponseWriter, r *http.Request, key string, bodySum [sha256.Size]byte, work func(http.ResponseWriter)) {
	info := requestInfoFrom(r.Context())
	p := info.principal
	k := store.IdempotencyKey{
		AccountID:   p.Account.ID,
		Mode:        p.Key.Mode,
		Key:         key,
		Fingerprint: r.Method + " " + r.URL.Path + " " + hex.EncodeToString(bodySum[:]),
	}
	state, token, stored, err := s.cfg.Store.BeginIdempotent(r.Context(), k, idempotencyPolicy, s.cfg.Now())
	if err != nil {
		info.log.Error("idempotency store failure", "err", err)
		writeError(w, r, newError(CodeServiceUnavailable, "The service cannot check the Idempotency-Key right now. Retry shortly."))
		return
	}
	switch state {
	case store.IdempotencyCompleted:
		info.replayed = true
		if id := envelopeRequestID(stored.Body); id != "" {
			w.Header().Set("X-Request-Id", id)
		}
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSONBytes(w, stored.Status, stored.Body)
		return
	case store.IdempotencyInFlight:
		w.Header().Set("Retry-After", "1")
		writeError(w, r, newError(CodeIdempotencyKeyInUse, "A request with this Idempotency-Key is still being processed. Retry in a moment to receive its result."))
		return
	case store.IdempotencyMismatch:
		writeError(w, r, newError(CodeIdempotencyKeyReused, "This Idempotency-Key was already used for a different request (another method, path or body). Use a new key for a new request."))
		return
	}

	capture := &capturedResponse{header: w.Header(), status: http.StatusOK}
	defer func() {
		// A panic in the work is answered 500 by the server's recovery; release the key first
		// so that a retry runs again instead of meeting 409 until the record is reclaimed.
		if p := recover(); p != nil {
			if err := s.cfg.Store.ReleaseIdempotent(context.WithoutCancel(r.Context()), k, token); err != nil {
				info.log.Error("release idempotency key after a panic", "err", err)
			}
			panic(p)
		}
	}()
	work(capture)
	// The record is settled even when the client has gone (its context cancelled, the work
	// answered 503): otherwise a retry would meet 409 until the record is reclaimed.
	settle, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), idempotencySettleTimeout)
	defer cancel()
	// A 429 is never stored either (platform contract §5): it says "not now", and a retry
	// with the same key must run once there is room.
	if capture.status >= 500 || capture.status == http.StatusTooManyRequests {
		if err := s.cfg.Store.ReleaseIdempotent(settle, k, token); err != nil {
			info.log.Error("release idempotency key", "err", err)
		}
	} else if err := s.cfg.Store.CompleteIdempotent(settle, k, token, store.StoredResponse{Status: capture.status, Body: capture.body.Bytes()}, s.cfg.Now()); err != nil {
		// The work is done and its answer goes out; a retry will find the key in flight
		// until it is reclaimed. Worth an alert, not a failed request.
		info.log.Error("store idempotent response", "err", err)
	}
	w.WriteHeader(capture.status)
	_, _ = w.Write(capture.body.Bytes())
}

// envelopeRequestID reads metadata.request_id from a stored envelope, so a replay's
// X-Request-Id header matches its body.
func envelopeRequestID(body []byte) string {
	var env struct {
		Metadata struct {
			RequestID string `json:"request_id"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	return env.Metadata.RequestID
}

// capturedResponse buffers a handler's response so it can be stored before it is sent.
// Headers go straight to the real writer's header map.
type capturedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *capturedResponse) Header() http.Header         { return c.header }
func (c *capturedResponse) Write(b []byte) (int, error) { return c.body.Write(b) }
func (c *capturedResponse) WriteHeader(status int)      { c.status = status }
