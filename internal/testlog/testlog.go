// Package testlog is an output buffer that a running server, dispatcher or logger writes
// while a test reads it: writes and reads are serialised, so the race detector stays quiet,
// and a test can wait for a line to be written instead of sleeping.
package testlog

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// Buffer is safe for concurrent use. Its zero value is ready.
type Buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // closed by the next Write; nil until Changed asks for it
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many lines written so far contain substr (for logs: how many records).
func (b *Buffer) Count(substr string) int {
	n := 0
	for line := range strings.Lines(b.String()) {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

// Changed returns a channel that is closed at the next Write. Take it before reading the
// buffer, so that a write between the read and the wait is not missed.
func (b *Buffer) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written == nil {
		b.written = make(chan struct{})
	}
	return b.written
}

// WaitFor waits until a line containing substr has been written, for at most timeout, and
// reports whether one was.
func (b *Buffer) WaitFor(substr string, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		changed := b.Changed()
		if b.Count(substr) > 0 {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return b.Count(substr) > 0
		}
	}
}
