package sqlite

import (
	"context"
	"strconv"
	"testing"
	"time"

	"riskapi/internal/store"
)

// BenchmarkIdempotencyRoundTrip is what an idempotent POST with a new key costs the
// embedded store: claiming the key and storing the response, two durable writes.
func BenchmarkIdempotencyRoundTrip(b *testing.B) {
	st, err := Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	policy := store.IdempotencyPolicy{ReclaimAfter: 5 * time.Minute, ExpireAfter: 24 * time.Hour}
	body := make([]byte, 300) // a typical small response envelope
	for i := 0; b.Loop(); i++ {
		k := store.IdempotencyKey{AccountID: "acct_bench", Mode: store.ModeLive, Key: "key-" + strconv.Itoa(i), Fingerprint: "POST /v1/x"}
		_, token, _, err := st.BeginIdempotent(context.Background(), k, policy, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if err := st.CompleteIdempotent(context.Background(), k, token, store.StoredResponse{Status: 200, Body: body}, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
