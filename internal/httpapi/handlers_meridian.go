package httpapi

import (
	"net/http"
	"time"

	"riskapi/engine"
	"riskapi/internal/product"
	"riskapi/meridian"
)

func init() {
	registerProduct(product.Meridian, productAPI{
		routes: func(s *Server) map[string]http.Handler {
			return map[string]http.Handler{
				product.Meridian.Analyze:               s.handleQualityCheck(),
				"GET /v1/meridian/quality-checks":      s.handleListAnalyses(product.Meridian, meridian.ValidSourceID, meridian.SourceIDExpected),
				"GET /v1/meridian/quality-checks/{id}": s.handleGetAnalysis(product.Meridian),
			}
		},
	})
}

// handleQualityCheck is POST /v1/meridian/quality-check. Unlike the other endpoints it never
// holds the request body: the body is decoded as it arrives — records one by one, CSV row by
// row — into the engine's columnar dataset (handleStream), and checked by the engine once it
// is read, before the Idempotency-Key is taken.
//
// The request reads its CSV, runs its checks and profiles its columns on the cores
// admission.Cores grants it when it starts (every free one, up to GOMAXPROCS; its own
// goroutine alone when none is free), held until it ends: the request never runs on more.
func (s *Server) handleQualityCheck() http.Handler {
	h := handleStream(s, decodeQualityCheck, validateQualityCheck, func(r *http.Request, req *qualityCheckRequest) (int, any, error) {
		now := s.now()
		req.Now = now
		res, err := meridian.Analyze(r.Context(), req.Request)
		if err != nil {
			return 0, nil, err
		}
		return s.saveAnalysis(r, product.Meridian, now, req.SourceID, res, !res.Passed)
	})
	return s.withCores(h)
}

// validateQualityCheck checks the whole request once it is read — the rules that tie its
// members together (a source_id, data or signals, checks need data) — with the engine, which
// keeps what it compiled for Analyze.
func validateQualityCheck(req *qualityCheckRequest) *Error { return asValidation(req.Validate()) }

// qualityCheckRequest is the body of POST /v1/meridian/quality-check as decoded: the engine's
// request, its data already fed into the dataset.
type qualityCheckRequest struct{ meridian.Request }

// estimate is the engine's estimate of the checks' work on the data read (platform contract
// §11); Meridian has no background form. The engine refuses above the same budget itself.
func (req *qualityCheckRequest) estimate(budget time.Duration) (engine.Cost, bool, error) {
	req.Budget = budget
	cost, err := meridian.Estimate(req.Request)
	return cost, false, err
}
