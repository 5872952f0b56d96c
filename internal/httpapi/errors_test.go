package httpapi

import (
	"context"
	"errors"
	"testing"
)

// TestErrorsAfterTheClientLeftAre503 pins the mapping of failures that follow a cancelled
// request: a store driver reports an interrupted query in its own words (not as
// context.Canceled), and that must not be answered or logged as an internal error.
func TestErrorsAfterTheClientLeftAre503(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{context.Canceled, errors.New("interrupted (9)")} {
		if got := apiError(ctx, err); got.Code != CodeServiceUnavailable {
			t.Errorf("%v after the client left: %s, want %s", err, got.Code, CodeServiceUnavailable)
		}
	}
	if got := apiError(context.Background(), errors.New("disk full")); got.Code != CodeInternal {
		t.Errorf("a failure of a live request: %s, want %s", got.Code, CodeInternal)
	}
}
