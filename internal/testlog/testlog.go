// Package testlog is an output buffer that a running server, dispatcher or logger writes
// while a test reads it: writes and reads are serialised, so the race detector stays quiet.
package testlog

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is safe for concurrent use. Its zero value is ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
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
