package logbuffer

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is the underlying writer: a buffer safe to read while the timer writes.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger(out *lockedBuffer) (*slog.Logger, *Writer) {
	w := NewWriter(out)
	return slog.New(NewHandler(slog.NewJSONHandler(w, nil), w, "request")), w
}

// Access lines wait; any other line goes out at once, after the access lines before it.
func TestAccessLinesWaitOtherLinesFlush(t *testing.T) {
	out := &lockedBuffer{}
	log, _ := newLogger(out)
	log.Info("request", "path", "/v1/account")
	log.Info("request", "path", "/v1")
	if got := out.String(); got != "" {
		t.Fatalf("access lines were written at once: %q", got)
	}
	log.With("component", "dispatcher").Warn("webhook failed")
	got := out.String()
	first, second, warn := strings.Index(got, `"path":"/v1/account"`), strings.Index(got, `"path":"/v1"`), strings.Index(got, "webhook failed")
	if first < 0 || second < first || warn < second {
		t.Fatalf("after a warning the log holds %q; want both access lines, then the warning", got)
	}
	if out.writes != 1 {
		t.Errorf("%d writes for three lines, want 1", out.writes)
	}
	if strings.Count(got, "\n") != 3 {
		t.Errorf("log %q: want 3 lines", got)
	}
}

// An access line left alone is written within FlushEvery (here: within 2 s).
func TestAccessLinesAreWrittenByTheTimer(t *testing.T) {
	out := &lockedBuffer{}
	log, _ := newLogger(out)
	start := time.Now()
	log.Info("request", "path", "/v1/account")
	for !strings.Contains(out.String(), "/v1/account") {
		if time.Since(start) > 2*time.Second {
			t.Fatal("the access line was not written within 2 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if waited := time.Since(start); waited < FlushEvery/2 {
		t.Errorf("the access line was written after %s; it should wait about %s", waited, FlushEvery)
	}
	// A second line after the first flush arms the timer again.
	log.Info("request", "path", "/v1/usage")
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(out.String(), "/v1/usage") {
		if time.Now().After(deadline) {
			t.Fatal("the second access line was not written within 2 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Past MaxPending bytes the lines are written without waiting; Flush writes the rest.
func TestManyLinesAreWrittenAtMaxPending(t *testing.T) {
	out := &lockedBuffer{}
	log, w := newLogger(out)
	for range 2 * MaxPending / 50 {
		log.Info("request", "path", "/v1/account")
	}
	if len(out.String()) < MaxPending {
		t.Fatalf("%d bytes written after %d lines, want at least %d", len(out.String()), 2*MaxPending/50, MaxPending)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2*MaxPending/50 {
		t.Fatalf("%d lines after Flush, want %d", n, 2*MaxPending/50)
	}
}

// Lines written from many goroutines come out whole (run with -race).
func TestConcurrentLinesStayWhole(t *testing.T) {
	out := &lockedBuffer{}
	log, w := newLogger(out)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if i%50 == 0 {
					log.Warn("slow", "goroutine", g)
				} else {
					log.Info("request", "goroutine", g, "i", i)
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "{") || !strings.HasSuffix(line, "}") {
			t.Fatalf("a line came out broken: %q", line)
		}
	}
}

// A failed write of the timer's is reported by the next Flush.
func TestWriteErrorsAreReported(t *testing.T) {
	w := NewWriter(failing{})
	if _, err := w.Write([]byte("line\n")); err != nil {
		t.Fatalf("Write before a flush: %v", err)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush to a failing writer reported no error")
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }
