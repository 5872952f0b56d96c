package httpapi

import (
	"net/http"
	"time"

	"riskapi/convergence"
	"riskapi/engine"
	"riskapi/internal/product"
)

func init() {
	registerProduct(product.Convergence, productAPI{
		routes: func(s *Server) map[string]http.Handler {
			return map[string]http.Handler{
				product.Convergence.Analyze:         s.handleAnalyzeMarket(),
				"GET /v1/convergence/analyses":      s.handleListAnalyses(product.Convergence, convergence.ValidMarketID, convergence.MarketIDExpected),
				"GET /v1/convergence/analyses/{id}": s.handleGetAnalysis(product.Convergence),
			}
		},
	})
}

// analyzeMarketRequest is the body of POST /v1/convergence/analyze-market: the engine's input.
type analyzeMarketRequest struct {
	convergence.Input `json:",inline"`
}

// validate applies the engine's own checks before anything runs or is stored; the engine
// keeps what it indexed, so Analyze does not check the market again.
func (req *analyzeMarketRequest) validate() *Error { return asValidation(req.Input.Validate()) }

// estimate is the engine's estimate of the screen's work; Convergence has no background form.
// The number of workers is fixed here, so that the analysis runs on the workers whose memory
// the request reserves (the CPU budget is of all workers together).
func (req *analyzeMarketRequest) estimate(time.Duration) (engine.Cost, bool, error) {
	req.Run = req.Run.Resolve()
	cost, err := convergence.Estimate(req.Input)
	return cost, false, err
}

// handleAnalyzeMarket is POST /v1/convergence/analyze-market: screen the market, store the
// analysis and, when collusion is found, the convergence.collusion_found event with it.
func (s *Server) handleAnalyzeMarket() http.Handler {
	return handleJSON(s, func(r *http.Request, req *analyzeMarketRequest) (int, any, error) {
		analysis, err := convergence.Analyze(r.Context(), req.Input)
		if err != nil {
			return 0, nil, err
		}
		return s.saveAnalysis(r, product.Convergence, s.now(), req.MarketID, analysis, analysis.CollusionDetected)
	})
}
