package ratepolicy

import (
	"testing"

	"riskapi/internal/store"
)

func TestHourlyLimitTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		plan    store.Plan
		custom  map[string]int64
		product string
		want    int64
	}{
		{store.PlanFreeTrial, nil, "drift", 100},
		{store.PlanFreeTrial, nil, "cascade", 10},
		{store.PlanStarter, nil, "convergence", 500},
		{store.PlanProfessional, nil, "meridian", 100_000},
		{store.PlanEnterprise, nil, "drift", DefaultUnlimitedCeiling},
		{store.PlanEnterprise, nil, "cascade", 10_000},
		{store.PlanEnterprise, map[string]int64{"cascade": 25_000}, "cascade", 25_000},
		{store.PlanStarter, map[string]int64{"drift": 7}, "drift", 7},
	} {
		a := store.Account{Plan: c.plan, CustomLimits: c.custom}
		if got := hourlyLimit(a, c.product, DefaultUnlimitedCeiling); got != c.want {
			t.Errorf("%s %s %v: %d, want %d", c.plan, c.product, c.custom, got, c.want)
		}
	}
}
