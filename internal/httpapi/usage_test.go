package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

func TestUsageReportRangeAndBreakdown(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	err := b.store.AddUsage(context.Background(), []store.UsageUnits{
		{AccountID: b.account.ID, Day: day(1), Product: "drift", Endpoint: "POST /v1/drift/analyze", Units: 5},
		{AccountID: b.account.ID, Day: day(1), Product: "drift", Endpoint: "POST /v1/drift/events", Units: 2},
		{AccountID: b.account.ID, Day: day(1), Product: "meridian", Endpoint: "POST /v1/meridian/quality-check", Units: 1},
		{AccountID: b.account.ID, Day: day(20), Product: "cascade", Endpoint: "POST /v1/cascade/simulate", Units: 3},
		{AccountID: "acct_someone_else", Day: day(20), Product: "cascade", Endpoint: "POST /v1/cascade/simulate", Units: 99},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := b.get("/v1/usage?from=2026-11-01&to=2026-11-21", b.liveKey)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	days := r.field("data.days").([]any)
	if len(days) != 3 {
		t.Fatalf("days = %v", days)
	}
	first := days[0].(map[string]any)
	if first["date"] != "2026-11-01" || first["product"] != "drift" || first["units"] != 7.0 ||
		first["endpoints"].(map[string]any)["POST /v1/drift/events"] != 2.0 {
		t.Fatalf("first day = %v", first)
	}
	if r.field("data.totals.cascade") != 3.0 || r.field("data.totals.convergence") != 0.0 {
		t.Fatalf("totals = %v (another account's units must not appear)", r.field("data.totals"))
	}
	// The rate-limit state covers every product and the platform bucket in live mode.
	if limits := r.field("data.rate_limits").([]any); len(limits) != len(product.All)+1 {
		t.Fatalf("rate_limits = %v", limits)
	}
	// Default range: the last 30 days up to today (the clock stands at 2026-11-21).
	if d := b.get("/v1/usage", b.liveKey); d.field("data.from") != "2026-10-23" || d.field("data.to") != "2026-11-21" {
		t.Fatalf("default range %v..%v", d.field("data.from"), d.field("data.to"))
	}
	if one := b.get("/v1/usage?from=2026-11-20&to=2026-11-20", b.liveKey); len(one.field("data.days").([]any)) != 1 {
		t.Fatalf("one day: %s", one.raw)
	}
}

func TestUsageParameters(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for query, code := range map[string]string{
		"from=yesterday":                  "INVALID_FROM",
		"to=2026-13-01":                   "INVALID_TO",
		"from=2026-11-21&to=2026-11-01":   "INVALID_TO",
		"from=2024-01-01&to=2026-11-01":   "INVALID_TO",
		"form=2026-11-01":                 CodeUnknownField,
		"from=2026-11-01&from=2026-11-02": "INVALID_FROM",
	} {
		b.get("/v1/usage?"+query, b.liveKey).wantError(t, http.StatusBadRequest, "validation_error", code)
	}
	noScope := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Scopes: []string{"drift:read"}})
	b.get("/v1/usage", noScope).wantError(t, http.StatusForbidden, "permission_error", CodeForbidden)
	withScope := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Scopes: []string{"usage:read"}, RateLimit: 20})
	r := b.get("/v1/usage", withScope)
	if r.status != http.StatusOK {
		t.Fatalf("usage:read key: %d", r.status)
	}
	if limits := r.field("data.rate_limits").([]any); len(limits) != len(product.All)+2 || limits[len(product.All)+1].(map[string]any)["policy"] != "key" {
		t.Fatalf("a key with its own limit should see it: %v", limits)
	}
}
