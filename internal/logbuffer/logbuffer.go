// Package logbuffer gathers the access log's lines in memory and writes them in batches, so
// that a busy server makes one write system call for many requests instead of one each.
//
// Every request writes one access line; written straight to stderr that is a system call of
// a few microseconds in a request path of tens (scripts/wrk-overhead.sh: GET /v1/account
// costs about 30 µs of CPU). Batched, the lines wait at most FlushEvery (or until
// MaxPending bytes wait) and go out in one write. Every other line (start-up, warnings,
// errors, a recovered panic, shutdown) is written at once, together with the access lines
// before it, so the order is kept and nothing that explains a failure waits. What a kill -9
// loses is the access lines of at most the last FlushEvery.
package logbuffer

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// FlushEvery is the longest an access line waits before it is written.
const FlushEvery = 100 * time.Millisecond

// MaxPending is how many bytes of access lines may wait: past it they are written at once
// (some 250 lines).
const MaxPending = 64 << 10

// Writer is an io.Writer that holds what is written until Flush, a timer, or MaxPending bytes
// write it to the underlying writer. Safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	out     io.Writer
	pending bytes.Buffer
	timer   *time.Timer // armed while something waits
	err     error       // the first write error of a flush the timer made, reported by the next Flush
}

// NewWriter returns a Writer to out.
func NewWriter(out io.Writer) *Writer { return &Writer{out: out} }

// Write keeps p, a whole line as slog handlers write them, and writes what waits when it
// passes MaxPending.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending.Write(p)
	if w.pending.Len() >= MaxPending {
		return len(p), w.flushLocked()
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(FlushEvery, func() { _ = w.Flush() })
	} else if w.pending.Len() == len(p) {
		w.timer.Reset(FlushEvery)
	}
	return len(p), nil
}

// Flush writes what waits.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.pending.Len() > 0 {
		if _, err := w.out.Write(w.pending.Bytes()); err != nil && w.err == nil {
			w.err = err
		}
		w.pending.Reset()
	}
	err := w.err
	w.err = nil
	return err
}

// Handler is a slog.Handler whose lines go through a Writer: a record whose message is
// Batched waits with the others, any other record is written at once with what waits
// before it.
type Handler struct {
	slog.Handler
	w       *Writer
	batched string
}

// NewHandler wraps h, which writes to w, so that records with the message batched (the
// access log's) are batched and all others flushed.
func NewHandler(h slog.Handler, w *Writer, batched string) *Handler {
	return &Handler{Handler: h, w: w, batched: batched}
}

// Handle writes r through the wrapped handler, and flushes unless r is an access line.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Message != h.batched {
		if ferr := h.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

// WithAttrs and WithGroup keep the batching of the derived handlers.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{Handler: h.Handler.WithAttrs(attrs), w: h.w, batched: h.batched}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{Handler: h.Handler.WithGroup(name), w: h.w, batched: h.batched}
}
