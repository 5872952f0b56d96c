package httpapi

import (
	"context"
	"net/http"
	"time"

	"riskapi/api"
)

// serviceInfo is GET /v1: what this deployment is and where its contract lives.
type serviceInfo struct {
	Object            string             `json:"object"`
	Version           string             `json:"version"`
	Region            string             `json:"region"`
	BaseURLs          map[string]*string `json:"base_urls"`
	OpenAPIURL        string             `json:"openapi_url"`
	SupportedVersions []string           `json:"supported_versions"`
}

func (s *Server) handleServiceInfo() http.Handler {
	var eu *string
	if s.cfg.EUPublicURL != "" {
		eu = &s.cfg.EUPublicURL
	}
	defaultURL := s.cfg.PublicURL
	info := serviceInfo{
		Object:            "service",
		Version:           "v1",
		Region:            s.cfg.Region,
		BaseURLs:          map[string]*string{"default": &defaultURL, "eu": eu},
		OpenAPIURL:        "/v1/openapi.json",
		SupportedVersions: []string{"v1"},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeData(w, r, http.StatusOK, info)
	})
}

// handleOpenAPI serves the embedded contract as JSON. It is the document itself, not an
// envelope, so code generators can read it directly.
func handleOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, err := api.OpenAPIJSON()
		if err != nil {
			writeError(w, r, fmtInternal(r.Context(), "render openapi document", err))
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		writeJSONBytes(w, http.StatusOK, doc)
	})
}

type healthStatus struct {
	Status string `json:"status"`
}

// handleHealth answers while the process can serve HTTP at all (liveness).
func handleHealth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeData(w, r, http.StatusOK, healthStatus{Status: "ok"})
	})
}

// readyTimeout bounds the store check so a hung database makes /readyz fail, not hang.
const readyTimeout = 2 * time.Second

// handleReady answers 200 when the store answers within readyTimeout (readiness), else 503.
func (s *Server) handleReady() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.cfg.Store.Ping(ctx); err != nil {
			requestInfoFrom(r.Context()).logger().Warn("readiness check failed", "err", err)
			writeError(w, r, newError(CodeServiceUnavailable, "The store is not reachable."))
			return
		}
		writeData(w, r, http.StatusOK, healthStatus{Status: "ready"})
	})
}
