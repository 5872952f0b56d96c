package client

import (
	"context"
	"iter"
	"net/url"

	"riskapi/convergence"
)

// ConvergenceAnalysis is a stored Convergence analysis: the engine's convergence.Analysis
// with the members the API adds (id cva_…, object "convergence.analysis", livemode, created_at).
type ConvergenceAnalysis struct {
	Resource
	convergence.Analysis
}

// AnalyzeMarket screens a market's prices, costs, bids and messages for collusion
// (POST /v1/convergence/analyze-market). A detection also emits convergence.collusion_found.
func (c *Client) AnalyzeMarket(ctx context.Context, in *convergence.Input, opts ...RequestOption) (*ConvergenceAnalysis, error) {
	return post[ConvergenceAnalysis](ctx, c, "/v1/convergence/analyze-market", in, opts)
}

// ConvergenceAnalysisListParams filter and page GET /v1/convergence/analyses.
type ConvergenceAnalysisListParams struct {
	ListParams
	// MarketID, when set, lists only that market's analyses.
	MarketID string
}

func (p ConvergenceAnalysisListParams) values() url.Values {
	q := p.ListParams.values()
	if p.MarketID != "" {
		q.Set("market_id", p.MarketID)
	}
	return q
}

// ListConvergenceAnalyses iterates over the key's mode's Convergence analyses, newest
// first, following the pages.
func (c *Client) ListConvergenceAnalyses(ctx context.Context, params ConvergenceAnalysisListParams, opts ...RequestOption) iter.Seq2[ConvergenceAnalysis, error] {
	return all[ConvergenceAnalysis](ctx, c, "/v1/convergence/analyses", params.values(), opts)
}

// ConvergenceAnalysesPage returns one page of Convergence analyses.
func (c *Client) ConvergenceAnalysesPage(ctx context.Context, params ConvergenceAnalysisListParams, opts ...RequestOption) (*Page[ConvergenceAnalysis], error) {
	return listPage[ConvergenceAnalysis](ctx, c, "/v1/convergence/analyses", params.values(), opts)
}

// ConvergenceAnalysis returns one Convergence analysis (GET /v1/convergence/analyses/{id}).
func (c *Client) ConvergenceAnalysis(ctx context.Context, id string, opts ...RequestOption) (*ConvergenceAnalysis, error) {
	return get[ConvergenceAnalysis](ctx, c, pathOf("convergence", "analyses", id), nil, opts)
}
