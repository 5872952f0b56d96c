package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/internal/store"
)

// idempotencyPolicy: an in-flight record is a lease of 15 seconds, renewed every 5 seconds
// while its request runs, so a key whose process died is free again within 15 seconds
// (rather than a fixed 5 minutes, through which every retry met 409); records are forgotten
// after 24 hours (platform contract §5).
var idempotencyPolicy = store.IdempotencyPolicy{ReclaimAfter: idempotencyLease, ExpireAfter: 24 * time.Hour}

const (
	// idempotencyLease is how long an in-flight record stays claimed without a renewal.
	idempotencyLease = 15 * time.Second
	// defaultIdempotencyRenewal is how often a running request renews its lease: three
	// renewals fit in one lease, so two may fail or arrive late (a slow store) before a live
	// request loses its key.
	defaultIdempotencyRenewal = 5 * time.Second
)

// idempotencyClaim is the Idempotency-Key a request executes under. A handler whose store
// write produces the answer completes the record in that write's transaction
// (commitWithResponse), and marks it completed so it is not completed again.
type idempotencyClaim struct {
	key       store.IdempotencyKey
	token     string
	completed bool
}

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
// The key is held as a lease renewed while the work runs (renewIdempotent); work that creates
// an object stores the response in its own transaction (commitWithResponse), the rest is
// stored here once the work has answered.
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
		info.logger().Error("idempotency store failure", "err", err)
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

	claim := &idempotencyClaim{key: k, token: token}
	info.claim = claim
	defer func() { info.claim = nil }()
	stopRenewing := s.renewIdempotent(r.Context(), k, token)
	capture := &capturedResponse{header: w.Header(), status: http.StatusOK}
	defer func() {
		// A panic in the work is answered 500 by the server's recovery; release the key first
		// so that a retry runs again instead of meeting 409 until the record is reclaimed.
		if p := recover(); p != nil {
			stopRenewing()
			if err := s.cfg.Store.ReleaseIdempotent(context.WithoutCancel(r.Context()), k, token); err != nil {
				info.logger().Error("release idempotency key after a panic", "err", err)
			}
			panic(p)
		}
	}()
	work(capture)
	stopRenewing()
	// The record is settled even when the client has gone (its context cancelled, the work
	// answered 503): otherwise a retry would meet 409 until the record is reclaimed.
	settle, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), idempotencySettleTimeout)
	defer cancel()
	// A 429 is never stored either (platform contract §5): it says "not now", and a retry
	// with the same key must run once there is room.
	if capture.status >= 500 || capture.status == http.StatusTooManyRequests {
		if err := s.cfg.Store.ReleaseIdempotent(settle, k, token); err != nil {
			info.logger().Error("release idempotency key", "err", err)
		}
	} else if claim.completed {
		// The work's store write completed the record in its own transaction.
	} else if err := s.cfg.Store.CompleteIdempotent(settle, k, token, store.StoredResponse{Status: capture.status, Body: capture.body.Bytes()}, s.cfg.Now()); err != nil {
		// The work is done and its answer goes out; a retry will find the key in flight
		// until it is reclaimed. Worth an alert, not a failed request.
		info.logger().Error("store idempotent response", "err", err)
	}
	w.WriteHeader(capture.status)
	_, _ = w.Write(capture.body.Bytes())
}

// renewIdempotent renews the lease on k held by token every Config.IdempotencyRenewal until
// the returned stop is first called, which waits for a renewal under way to end (so none lands
// after the record is settled; one that did would find the token's record no longer in
// flight and change nothing). The renewals outlive the client: work goes on after a
// disconnect until it notices, and its key must stay claimed meanwhile.
func (s *Server) renewIdempotent(ctx context.Context, k store.IdempotencyKey, token string) (stop func()) {
	every := s.cfg.IdempotencyRenewal
	if every <= 0 {
		every = defaultIdempotencyRenewal
	}
	ctx = context.WithoutCancel(ctx)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			renew, cancel := context.WithTimeout(ctx, every)
			err := s.cfg.Store.RenewIdempotent(renew, k, token, s.cfg.Now())
			cancel()
			if errors.Is(err, store.ErrIdempotencyLost) {
				// Taken over after the lease ran out: the work's own completion will fail
				// too (its write is rolled back), so stop renewing.
				requestInfoFrom(ctx).logger().Warn("idempotency key lease lost while the request ran", "err", err)
				return
			}
			if err != nil {
				requestInfoFrom(ctx).logger().Error("renew idempotency key lease", "err", err)
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-finished
	})
}

// commitWithResponse answers (status, data) through write, a store call that takes an
// idempotency completion: the success envelope is encoded first, write gets the completion of
// the request's Idempotency-Key holding exactly those bytes (nil without a key) to commit in
// its own transaction, and the same bytes are then sent. The object, its event and the key's
// answer are thus stored together: a process killed after the commit leaves a key that
// replays this answer, never one that runs the request again.
func (s *Server) commitWithResponse(r *http.Request, status int, data any, write func(done *store.IdempotencyCompletion) error) (int, any, error) {
	return s.commitAnswer(r, status, func(answer func(data any) (*store.IdempotencyCompletion, error)) error {
		done, err := answer(data)
		if err != nil {
			return err
		}
		return write(done)
	})
}

// commitAnswer is commitWithResponse for writes whose answer depends on what they stored
// (an event batch's counts, a delivery's id): write passes answer to the store, which calls it
// inside its transaction with the answer's data; answer encodes the envelope and returns the
// completion holding it (nil without a key), and the same bytes are sent once write commits.
func (s *Server) commitAnswer(r *http.Request, status int, write func(answer func(data any) (*store.IdempotencyCompletion, error)) error) (int, any, error) {
	claim := requestInfoFrom(r.Context()).claim
	var body []byte
	answer := func(data any) (*store.IdempotencyCompletion, error) {
		encoded, err := encodeSuccess(r, data, nil)
		if err != nil {
			return nil, err
		}
		body = encoded
		if claim == nil {
			return nil, nil
		}
		return &store.IdempotencyCompletion{Key: claim.key, Token: claim.token,
			Response: store.StoredResponse{Status: status, Body: encoded}, At: s.cfg.Now()}, nil
	}
	err := write(answer)
	if errors.Is(err, store.ErrIdempotencyLost) {
		return 0, nil, newError(CodeServiceUnavailable, "This request ran past its hold on the Idempotency-Key and another request with the same key took it over; nothing was stored. Retry with the same key to receive that request's result.")
	}
	if err != nil {
		return 0, nil, err
	}
	if body == nil {
		return 0, nil, errors.New("commit answer: the write committed without building its answer")
	}
	if claim != nil {
		claim.completed = true
	}
	return status, encodedEnvelope(body), nil
}

// encodedEnvelope is a response envelope already encoded (commitWithResponse): execute sends
// it as it is.
type encodedEnvelope []byte

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
