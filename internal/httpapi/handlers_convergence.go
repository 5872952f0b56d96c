package httpapi

import (
	"errors"
	"net/http"

	"riskapi/convergence"
	"riskapi/internal/store"
)

var convergenceAnalyses = analysisKind{
	product: store.ProductConvergence, object: "convergence.analysis", idPrefix: "cva", list: "convergence_analyses",
	subject: "market_id", noun: "Convergence analysis", eventType: EventConvergenceCollusionFound,
}

// marketIDPattern is the contract's market_id, the same rule as Drift's agent_id.
var marketIDPattern = agentIDPattern

const marketIDExpected = agentIDExpected

// analyzeMarketRequest is the body of POST /v1/convergence/analyze-market: the engine's input.
type analyzeMarketRequest struct {
	convergence.Input `json:",inline"`
}

// validate applies the engine's own checks before anything is executed or stored.
func (req *analyzeMarketRequest) validate() *Error {
	var ie *convergence.InputError
	if err := req.Input.Validate(); errors.As(err, &ie) {
		return engineInputError(ie.Code, ie.Field, ie.Expected, ie.Received, ie.Message)
	} else if err != nil {
		return invalidField("observations", "array", "array", "%v", err)
	}
	return nil
}

// convergenceAnalysisObject is the stored and returned analysis.
type convergenceAnalysisObject struct {
	resourceHeader       `json:",inline"`
	convergence.Analysis `json:",inline"`
}

// handleAnalyzeMarket is POST /v1/convergence/analyze-market: screen the market, store the
// analysis and, when collusion is found, the convergence.collusion_found event with it.
func (s *Server) handleAnalyzeMarket() http.Handler {
	return handleJSON(s, func(w http.ResponseWriter, r *http.Request, req *analyzeMarketRequest) {
		analysis, err := convergence.Analyze(req.Input)
		var ie *convergence.InputError
		if errors.As(err, &ie) {
			writeError(w, r, engineInputError(ie.Code, ie.Field, ie.Expected, ie.Received, ie.Message))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		h, now := s.newHeader(r, convergenceAnalyses)
		obj := convergenceAnalysisObject{resourceHeader: h, Analysis: analysis}
		payload, err := s.saveAnalysis(r, convergenceAnalyses, h, now, req.MarketID, obj, analysis.CollusionDetected)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, payload)
	})
}
