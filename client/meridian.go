package client

import (
	"context"
	"iter"
	"net/url"

	"riskapi/meridian"
)

// QualityCheck is a stored Meridian quality check: the engine's meridian.Result with the
// members the API adds (id mqc_…, object "meridian.quality_check", livemode, created_at).
type QualityCheck struct {
	Resource
	meridian.Result
}

// CheckQuality checks a data source's quality and gates its use
// (POST /v1/meridian/quality-check). A failed check of severity error also emits
// meridian.quality_check_failed. The service reads its own clock unless req.AsOf is set
// (req.Now is not sent).
func (c *Client) CheckQuality(ctx context.Context, req *meridian.Request, opts ...RequestOption) (*QualityCheck, error) {
	return post[QualityCheck](ctx, c, "/v1/meridian/quality-check", req, opts)
}

// QualityCheckListParams filter and page GET /v1/meridian/quality-checks.
type QualityCheckListParams struct {
	ListParams
	// SourceID, when set, lists only that source's checks.
	SourceID string
}

func (p QualityCheckListParams) values() url.Values {
	q := p.ListParams.values()
	if p.SourceID != "" {
		q.Set("source_id", p.SourceID)
	}
	return q
}

// ListQualityChecks iterates over the key's mode's quality checks, newest first, following
// the pages.
func (c *Client) ListQualityChecks(ctx context.Context, params QualityCheckListParams, opts ...RequestOption) iter.Seq2[QualityCheck, error] {
	return all[QualityCheck](ctx, c, "/v1/meridian/quality-checks", params.values(), opts)
}

// QualityChecksPage returns one page of quality checks.
func (c *Client) QualityChecksPage(ctx context.Context, params QualityCheckListParams, opts ...RequestOption) (*Page[QualityCheck], error) {
	return listPage[QualityCheck](ctx, c, "/v1/meridian/quality-checks", params.values(), opts)
}

// QualityCheck returns one quality check (GET /v1/meridian/quality-checks/{id}).
func (c *Client) QualityCheck(ctx context.Context, id string, opts ...RequestOption) (*QualityCheck, error) {
	return get[QualityCheck](ctx, c, pathOf("meridian", "quality-checks", id), nil, opts)
}
