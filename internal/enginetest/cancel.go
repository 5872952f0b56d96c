// Package enginetest holds the checks every engine's tests share: that cancelling the
// context stops an analysis promptly. Only tests import it.
package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// CancelLatency is how soon an engine must return after its context is cancelled: the bound
// on work that goes on after a client has gone.
const CancelLatency = 100 * time.Millisecond

// StopsSoonAfterCancel runs analyze once to completion, to learn how long it takes, then
// again with a context cancelled a third of the way through, and fails unless that run
// returns ctx's error within CancelLatency of the cancel. A run that finishes before its
// cancel (a loaded machine made the first run slow) is tried again with the cancel twice as
// early, up to three times; a run late to stop is tried again, up to three late runs (a loop
// that never looks at its context is late every time; a busy machine now and then); a run that
// returns anything but context.Canceled fails the test: only a run that saw the cancel and
// stopped early passes.
//
// Under the race detector, which slows the engines' loops 10 to 100 times, the check is
// skipped: its timing would mean nothing. CI runs it without the detector.
func StopsSoonAfterCancel(t *testing.T, analyze func(ctx context.Context) error) {
	t.Helper()
	if raceEnabled {
		t.Skip("cancellation latency is not measurable under the race detector; CI runs this test without it")
	}
	start := time.Now()
	if err := analyze(context.Background()); err != nil {
		t.Fatalf("uncancelled run: %v", err)
	}
	full := time.Since(start)
	at := full / 3
	late := 0
	for try := 1; ; try++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- analyze(ctx) }()
		timer := time.NewTimer(at)
		var cancelled time.Time
		select {
		case err := <-done:
			cancel()
			if try < 3 {
				t.Logf("the run finished (%v) before its cancel at %v; trying with the cancel at %v", err, at, at/2)
				at /= 2
				continue
			}
			t.Fatalf("the run finished (%v) before its cancel at %v, three times", err, at)
		case <-timer.C:
			cancelled = time.Now()
			cancel()
		}
		err := <-done
		latency := time.Since(cancelled)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled run returned %v, want context.Canceled", err)
		}
		if latency > CancelLatency {
			// A loop that never looks at its context is late every time; a machine busy with
			// other tests makes one run late now and then: only three late runs fail.
			if late++; late < 3 {
				t.Logf("returned %v after the cancel (the machine may be busy); trying again", latency)
				continue
			}
			t.Errorf("returned %v after the cancel, three times, want at most %v (uncancelled run: %v)", latency, CancelLatency, full)
		}
		t.Logf("uncancelled %v; returned %v after a cancel at %v", full, latency, at)
		return
	}
}

// RaceEnabled reports whether the tests run under the race detector, for timing checks
// outside the engines that skip under it too.
const RaceEnabled = raceEnabled
