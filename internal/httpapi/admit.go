package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"riskapi/engine"
	"riskapi/internal/admission"
	"riskapi/internal/product"
)

// Bounded work (platform contract §11). A product's write endpoints pass through admit
// before the body is read:
//
//	one of the account's PerAccount slots (else 429, Retry-After: 1)
//	→ memory for the body as it is read and decoded (BodyMemory; waits up to 10 s, else 503)
//	→ decode and validate → the engine's cost estimate, against the sync budget (else 400
//	  WORK_LIMIT_EXCEEDED, or Cascade's background form) and the memory budget
//	→ memory for the work's peak (waits, else 503) → the work.
//
// Slot and memory are held until the response is written, and given back however the
// request ends.

// WithDefaults is b with every zero setting replaced by its default.
func (b Bounds) WithDefaults() Bounds {
	if b.SyncBudget <= 0 {
		b.SyncBudget = engine.DefaultSyncBudget
	}
	if b.BackgroundBudget <= 0 {
		b.BackgroundBudget = DefaultBackgroundBudget
	}
	if b.PerAccount <= 0 {
		b.PerAccount = admission.DefaultPerAccount
	}
	if b.MemoryLimit <= 0 {
		b.MemoryLimit = admission.DefaultMemoryLimit()
		if b.MemoryLimit <= 0 {
			b.MemoryLimit = 1 << 30
		}
	}
	if b.MemoryWait <= 0 {
		b.MemoryWait = admission.DefaultMemoryWait
	}
	return b
}

// memoryRetryAfter is the Retry-After of a 503 for memory: the budget stayed full for the
// whole wait, so the requests holding it are long ones.
const memoryRetryAfter = 10

// admit wraps a write endpoint of product p: it takes one of the account's slots and
// reserves memory for the body before next reads it.
func (s *Server) admit(p product.Product, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := requestInfoFrom(r.Context())
		account := principalFrom(r.Context()).Account.ID
		leave, ok := s.accounts.Enter(account)
		if !ok {
			e := newError(CodeRateLimited, "This account already runs %d product requests at once, the most allowed. Retry after the time in the Retry-After header.",
				s.accounts.Limit())
			e.Details["limit"] = s.accounts.Limit()
			e.Details["policy"] = "concurrent requests per account"
			e.retryAfter = 1
			writeError(w, r, e)
			return
		}
		defer leave()
		covered := r.ContentLength // the body bytes the reservation covers
		if covered < 0 {
			covered = min(unknownLengthStep, s.cfg.MaxBodyBytes) // chunked: grown as it arrives
		}
		need := p.BodyMemory(covered)
		res, err := s.memory.Reserve(r.Context(), need)
		if err != nil {
			writeError(w, r, s.memoryError(r.Context(), err, engine.Cost{Memory: need, Field: "body"}))
			return
		}
		defer res.Release()
		info.memory = res
		if r.ContentLength < 0 {
			r.Body = &growingBody{ReadCloser: r.Body, s: s, p: p, ctx: r.Context(), res: res, covered: covered}
		}
		next.ServeHTTP(w, r)
	})
}

// unknownLengthStep is what a body of unknown length (chunked) first reserves for: the
// reservation then doubles as the body arrives, so a small chunked request holds little and
// a large one is admitted step by step, never for the largest allowed body up front.
const unknownLengthStep = 1 << 20

// growingBody is a chunked body whose memory reservation grows ahead of the bytes read.
type growingBody struct {
	io.ReadCloser
	s       *Server
	p       product.Product
	ctx     context.Context
	res     *admission.Reservation
	read    int64
	covered int64
}

func (b *growingBody) Read(buf []byte) (int, error) {
	if b.read+int64(len(buf)) > b.covered && b.covered < b.s.cfg.MaxBodyBytes {
		next := min(max(2*b.covered, b.read+int64(len(buf))), b.s.cfg.MaxBodyBytes)
		more := b.p.BodyMemory(next) - b.p.BodyMemory(b.covered)
		if err := b.res.Grow(b.ctx, more); err != nil {
			return 0, b.s.memoryError(b.ctx, err, engine.Cost{Memory: b.res.Bytes() + more, Field: "body"})
		}
		b.covered = next
	}
	n, err := b.ReadCloser.Read(buf)
	b.read += int64(n)
	return n, err
}

// checkCost holds a validated request's estimated cost against the budgets before any of its
// work starts, so a refusal is a 400 that is never stored under an Idempotency-Key:
// WORK_LIMIT_EXCEEDED when the work needs more CPU than budget, or more memory than the
// whole process budget (it could never be admitted). background is the budget of work that
// runs in the background (Cascade); the synchronous budget otherwise.
//
// The memory compared is the work's peak plus what the request holds for its body already
// (foreground work only: a background run's memory is the runner's), so that a reservation
// that could never grow enough is refused here, before the Idempotency-Key is taken, not
// inside the work.
func (s *Server) checkCost(r *http.Request, cost engine.Cost, background bool) *Error {
	budget := s.cfg.Bounds.SyncBudget
	if background {
		budget = s.cfg.Bounds.BackgroundBudget
	}
	if e := cost.Within(budget); e != nil {
		return asValidation(e)
	}
	peak := workMemory(cost)
	if res := requestInfoFrom(r.Context()).memory; res != nil && !background {
		peak += res.Bytes()
	}
	if peak > s.memory.Limit() {
		cost.Memory = peak
		return s.memoryError(context.Background(), admission.ErrTooLarge, cost)
	}
	return nil
}

// resultCopies is how many copies of an encoded result a request holds at once: the encoded
// analysis, the payload stored with it and the response envelope.
const resultCopies = 3

// workMemory is what a request's work holds at its peak: the engine's estimate and the
// copies of its result.
func workMemory(cost engine.Cost) int64 { return cost.Memory + resultCopies*cost.Output }

// reserveWork adds the work's estimated peak to the request's reservation, waiting for
// memory as admit does. Requests outside admit (none in production) reserve nothing.
func (s *Server) reserveWork(r *http.Request, cost engine.Cost) *Error {
	res := requestInfoFrom(r.Context()).memory
	if res == nil || workMemory(cost) <= 0 {
		return nil
	}
	err := res.Grow(r.Context(), workMemory(cost))
	if errors.Is(err, admission.ErrTooLarge) {
		err = admission.ErrMemoryBusy // checkCost refused what could never fit; never stored
	}
	if err != nil {
		return s.memoryError(r.Context(), err, cost)
	}
	return nil
}

// memoryError maps what the memory budget answered: a reservation that could never fit is
// the request's fault (400 WORK_LIMIT_EXCEEDED); a budget that stayed full for the whole
// wait is the service's (503 with Retry-After); a client gone is the context's error.
func (s *Server) memoryError(ctx context.Context, err error, cost engine.Cost) *Error {
	switch {
	case errors.Is(err, admission.ErrTooLarge):
		e := invalidField(cost.Field, fmt.Sprintf("work of at most %d bytes of memory", s.memory.Limit()),
			fmt.Sprintf("work of an estimated %d bytes of memory", cost.Memory),
			"This request would hold an estimated %d bytes of memory, more than this service admits for all requests together (%d bytes); %s drives it: send less per request.",
			cost.Memory, s.memory.Limit(), cost.Field)
		e.Code = engine.CodeWorkLimitExceeded
		return e
	case errors.Is(err, admission.ErrMemoryBusy):
		e := newError(CodeServiceUnavailable, "The service is busy with other large requests and had no memory for this one within %s. Retry after the time in the Retry-After header.",
			s.cfg.Bounds.MemoryWait)
		e.retryAfter = memoryRetryAfter
		return e
	}
	return apiError(ctx, err)
}

// withCores runs h on the cores admission.Cores grants the request (requestInfo.workers),
// held until h returns.
func (s *Server) withCores(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		workers, release := s.cores.Take(s.cores.Limit())
		defer release()
		requestInfoFrom(r.Context()).workers = workers
		h.ServeHTTP(w, r)
	})
}
