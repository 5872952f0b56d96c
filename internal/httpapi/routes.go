package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes is the whole API on one page. Patterns use Go 1.22 method+path syntax; "GET"
// patterns also answer HEAD. Everything a client calls is under /v1; the operational
// endpoints (/healthz, /readyz, /metrics) are outside the versioned API.
func (s *Server) routes() {
	// Public: no key needed, not rate limited.
	s.handle("GET /v1", s.handleServiceInfo())
	s.handle("GET /v1/{$}", s.handleServiceInfo())
	s.handle("GET /v1/openapi.json", handleOpenAPI())
	s.handle("GET /healthz", handleHealth())
	s.handle("GET /readyz", s.handleReady())
	s.handle("GET /metrics", promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}))

	// Authenticated. The scope names the product whose rate limit and usage an endpoint
	// counts against (see protected).
	s.handle("GET /v1/account", s.protected("", handleAccount()))
	s.handle("GET /v1/usage", s.protected("usage:read", s.handleUsage()))

	s.handle("GET /v1/events", s.protected("events:read", s.handleListEvents()))
	s.handle("GET /v1/events/{id}", s.protected("events:read", s.handleGetEvent()))

	// The products (internal/product), each from its handler file (handlers_<product>.go).
	for _, route := range s.productRoutes() {
		if route.otlp {
			s.handle(route.pattern, s.protectedOTLP(route.scope, route.handler))
			continue
		}
		s.handle(route.pattern, s.protected(route.scope, route.handler))
	}

	// MCP: the products as tools for agents, outside /v1 like the operational endpoints (an
	// agent host is given one URL). Each tool call is dispatched as its REST request, which
	// the checks above apply to; /mcp itself only authenticates (mcp.go).
	mcp := s.handleMCP()
	s.handle("POST /mcp", mcp)
	s.handle("GET /mcp", mcp)
	s.handle("DELETE /mcp", mcp)

	// Test mode: synthetic data with known truth, test-mode keys only. The product's write
	// scope is checked once the body names the product.
	s.handle("POST /v1/test/generate", s.protectedTestOnly(s.handleTestGenerate()))

	s.handle("POST /v1/webhooks", s.protected("webhooks:write", s.handleCreateWebhook()))
	s.handle("GET /v1/webhooks", s.protected("webhooks:read", s.handleListWebhooks()))
	s.handle("GET /v1/webhooks/{id}", s.protected("webhooks:read", s.handleGetWebhook()))
	s.handle("PATCH /v1/webhooks/{id}", s.protected("webhooks:write", s.handleUpdateWebhook()))
	s.handle("DELETE /v1/webhooks/{id}", s.protected("webhooks:write", s.handleDeleteWebhook()))
	s.handle("GET /v1/webhooks/{id}/deliveries", s.protected("webhooks:read", s.handleListDeliveries()))
	s.handle("POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry", s.protected("webhooks:write", s.handleRetryDelivery()))
	s.handle("POST /v1/webhooks/{id}/test", s.protected("webhooks:write", s.handleTestWebhook()))
}

// handle mounts h at pattern and records the pattern, so that tests can hold the routes
// against the contract and the product registry.
func (s *Server) handle(pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, h)
}
