package httpapi

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"riskapi/internal/admission"
	"riskapi/internal/auth"
)

// requestInfo is what the middleware learns about a request, shared down the chain through
// one context value: the id and start time (for the envelope), a logger that carries the id,
// the matched route pattern (for metrics and logs) and, once authenticated, the principal.
type requestInfo struct {
	id    string
	start time.Time
	// log, when set, is the logger used as it is (placeholders and tests); otherwise
	// logger() derives one that carries the id from base, on the first message.
	log  *slog.Logger
	base *slog.Logger
	// withID is base with the request id, made by the first logger() call: most requests
	// log nothing but the access line (which names the id itself), and deriving a logger
	// cost about 1 µs and three allocations on every request.
	withID atomic.Pointer[slog.Logger]
	route  string
	// workers is the number of goroutines the request's work may run on side by side, as
	// admission.Cores granted them (Meridian's quality check and Drift's analysis; 0
	// elsewhere).
	workers   int
	principal *auth.Principal
	// recorder is the response writer every handler writes through, for its status.
	recorder *statusRecorder
	// replayed is set when the response is an idempotent replay: it is not billed again.
	replayed bool
	// claim is the Idempotency-Key this request executes under (idempotency.go); nil without
	// one.
	claim *idempotencyClaim
	// memory is what a product request holds against the process's memory budget (admit.go);
	// nil for other requests.
	memory *admission.Reservation
	// storeDown reports whether the store is unreachable now, so that a failure a store outage
	// caused is answered 503, not as an internal error (apiError); nil outside the server.
	storeDown func(ctx context.Context) bool
	// otlp is set on the OTLP endpoint, whose errors are google.rpc.Status bodies, not the
	// envelope (otlp.go).
	otlp bool
	// mcp is set on /mcp, whose refusals are JSON-RPC errors, not the envelope (mcp.go);
	// mcpID is the id of the JSON-RPC request they answer, when read.
	mcp   bool
	mcpID []byte
}

// logger returns the request's logger: messages carry its request_id.
func (info *requestInfo) logger() *slog.Logger {
	if info.log != nil {
		return info.log
	}
	if l := info.withID.Load(); l != nil {
		return l
	}
	if info.base == nil {
		return slog.Default()
	}
	l := info.base.With("request_id", info.id)
	if !info.withID.CompareAndSwap(nil, l) { // another goroutine of the request made one first
		l = info.withID.Load()
	}
	return l
}

type requestInfoKey struct{}

func withRequestInfo(ctx context.Context, info *requestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// requestInfoFrom returns the request's info. Outside the middleware chain (never in
// production) it returns a usable placeholder rather than nil.
func requestInfoFrom(ctx context.Context) *requestInfo {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{start: time.Now(), log: slog.Default()}
}

// principalFrom returns the authenticated principal. Handlers behind authenticate() always
// have one.
func principalFrom(ctx context.Context) auth.Principal {
	if p := requestInfoFrom(ctx).principal; p != nil {
		return *p
	}
	return auth.Principal{}
}
