package httpapi

import (
	"context"
	"log/slog"
	"time"

	"riskapi/internal/admission"
	"riskapi/internal/auth"
)

// requestInfo is what the middleware learns about a request, shared down the chain through
// one context value: the id and start time (for the envelope), a logger that carries the id,
// the matched route pattern (for metrics and logs) and, once authenticated, the principal.
type requestInfo struct {
	id        string
	start     time.Time
	log       *slog.Logger
	route     string
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
