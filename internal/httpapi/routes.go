package httpapi

import (
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes is the whole API on one page. Patterns use Go 1.22 method+path syntax; "GET"
// patterns also answer HEAD. Everything a client calls is under /v1; the operational
// endpoints (/healthz, /readyz, /metrics) are outside the versioned API.
func (s *Server) routes() {
	// Public: no key needed, not rate limited.
	s.mux.Handle("GET /v1", s.handleServiceInfo())
	s.mux.Handle("GET /v1/{$}", s.handleServiceInfo())
	s.mux.Handle("GET /v1/openapi.json", handleOpenAPI())
	s.mux.Handle("GET /healthz", handleHealth())
	s.mux.Handle("GET /readyz", s.handleReady())
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}))

	// Authenticated. The scope names the product whose rate limit and usage an endpoint
	// counts against (see protected).
	s.mux.Handle("GET /v1/account", s.protected("", handleAccount()))
	s.mux.Handle("GET /v1/usage", s.protected("usage:read", s.handleUsage()))

	s.mux.Handle("GET /v1/events", s.protected("events:read", s.handleListEvents()))
	s.mux.Handle("GET /v1/events/{id}", s.protected("events:read", s.handleGetEvent()))

	s.mux.Handle("POST /v1/drift/events", s.protected("drift:write", s.handleIngestDriftEvents()))
	s.mux.Handle("POST /v1/drift/analyze", s.protected("drift:write", s.handleAnalyzeDrift()))
	s.mux.Handle("GET /v1/drift/analyses", s.protected("drift:read", s.handleListAnalyses(driftAnalyses, agentIDPattern, agentIDExpected)))
	s.mux.Handle("GET /v1/drift/analyses/{id}", s.protected("drift:read", s.handleGetAnalysis(driftAnalyses)))

	s.mux.Handle("POST /v1/convergence/analyze-market", s.protected("convergence:write", s.handleAnalyzeMarket()))
	s.mux.Handle("GET /v1/convergence/analyses", s.protected("convergence:read", s.handleListAnalyses(convergenceAnalyses, marketIDPattern, marketIDExpected)))
	s.mux.Handle("GET /v1/convergence/analyses/{id}", s.protected("convergence:read", s.handleGetAnalysis(convergenceAnalyses)))

	s.mux.Handle("POST /v1/cascade/simulate", s.protected("cascade:write", s.handleSimulate()))
	s.mux.Handle("GET /v1/cascade/simulations", s.protected("cascade:read", s.handleListSimulations()))
	s.mux.Handle("GET /v1/cascade/simulations/{id}", s.protected("cascade:read", s.handleGetSimulation()))

	s.mux.Handle("POST /v1/meridian/quality-check", s.protected("meridian:write", s.handleQualityCheck()))
	s.mux.Handle("GET /v1/meridian/quality-checks", s.protected("meridian:read", s.handleListAnalyses(meridianChecks, sourceIDPattern, sourceIDExpected)))
	s.mux.Handle("GET /v1/meridian/quality-checks/{id}", s.protected("meridian:read", s.handleGetAnalysis(meridianChecks)))

	// Test mode: synthetic data with known truth, test-mode keys only. The product's write
	// scope is checked once the body names the product.
	s.mux.Handle("POST /v1/test/generate", s.protectedTestOnly(s.handleTestGenerate()))

	s.mux.Handle("POST /v1/webhooks", s.protected("webhooks:write", s.handleCreateWebhook()))
	s.mux.Handle("GET /v1/webhooks", s.protected("webhooks:read", s.handleListWebhooks()))
	s.mux.Handle("GET /v1/webhooks/{id}", s.protected("webhooks:read", s.handleGetWebhook()))
	s.mux.Handle("PATCH /v1/webhooks/{id}", s.protected("webhooks:write", s.handleUpdateWebhook()))
	s.mux.Handle("DELETE /v1/webhooks/{id}", s.protected("webhooks:write", s.handleDeleteWebhook()))
	s.mux.Handle("GET /v1/webhooks/{id}/deliveries", s.protected("webhooks:read", s.handleListDeliveries()))
	s.mux.Handle("POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry", s.protected("webhooks:write", s.handleRetryDelivery()))
	s.mux.Handle("POST /v1/webhooks/{id}/test", s.protected("webhooks:write", s.handleTestWebhook()))
}
