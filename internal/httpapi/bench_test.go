package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"riskapi/internal/ident"
	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
)

// BenchmarkMiddleware measures what the platform adds to a request before a handler runs:
// request id, routing, authentication (a cached key), rate limiting and, for POSTs,
// idempotency. Requests go straight to ServeHTTP (no sockets), so the numbers are the
// middleware's own cost. Compare the sub-benchmarks with each other, in one run:
//   - public:            GET /v1, no key, no limit: the floor (id, routing, envelope, metrics);
//   - authenticated:     GET of a product endpoint: + key check + one rate-limit Take;
//   - post:              POST without Idempotency-Key: + body decode and validation;
//   - post-idempotent:   POST with a new Idempotency-Key each time: + two store writes.
//
// The rate limiter is the in-process one, or Redis when RISKAPI_TEST_REDIS_URL is set
// (BenchmarkMiddlewareRedis).
func BenchmarkMiddleware(b *testing.B) {
	benchmarkMiddleware(b, ratelimit.NewMemory())
}

func BenchmarkMiddlewareRedis(b *testing.B) {
	benchmarkMiddleware(b, benchRedisLimiter(b))
}

// benchRedisLimiter is a Redis limiter on the Redis at RISKAPI_TEST_REDIS_URL (the benchmark
// is skipped without one), under a prefix of its own whose keys are deleted at the end.
func benchRedisLimiter(b *testing.B) *ratelimit.Redis {
	url := os.Getenv("RISKAPI_TEST_REDIS_URL")
	if url == "" {
		b.Skip("RISKAPI_TEST_REDIS_URL is not set")
	}
	client, err := ratelimit.OpenRedis(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	prefix := "riskapibench:" + ident.Random(8) + ":"
	b.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		client.Close()
	})
	return ratelimit.NewRedis(client, prefix)
}

func benchmarkMiddleware(b *testing.B, limiter ratelimit.Limiter) {
	p := &probe{}
	bb := setup(b, func(c *Config) {
		c.Limiter = limiter
		c.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil)) // the access log's real cost, without keeping it
		c.UnlimitedCeiling = 1 << 50                              // the benchmark must never hit a limit
	}, func(s *Server) {
		p.mount(s)
		s.mux.Handle("GET /v1/_test/drift", s.protected("drift:read", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeData(w, r, http.StatusOK, probeResult{Value: "read"})
		})))
	})
	_, key := bb.newAccount(store.PlanEnterprise, nil)
	run := func(name string, build func(i int) *http.Request) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				rec := httptest.NewRecorder()
				bb.server.ServeHTTP(rec, build(i))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
	run("public", func(int) *http.Request { return httptest.NewRequest(http.MethodGet, "/v1", nil) })
	run("authenticated", func(int) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/v1/_test/drift", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		return r
	})
	post := func(i int, idempotent bool) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/v1/_test/drift", strings.NewReader(`{"value": "benchmark"}`))
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
		if idempotent {
			r.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i)+"-"+ident.Random(6))
		}
		return r
	}
	run("post", func(i int) *http.Request { return post(i, false) })
	run("post-idempotent", func(i int) *http.Request { return post(i, true) })
}
