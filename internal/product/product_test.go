package product

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"riskapi/internal/store"
)

// Every row is complete, and names, id prefixes, events, paths and list names are unique:
// a row copied for a new product and left half-edited fails here.
func TestRegistryRowsAreCompleteAndDistinct(t *testing.T) {
	seen := map[string]string{}
	unique := func(kind, value, owner string) {
		t.Helper()
		if value == "" {
			t.Errorf("%s: empty %s", owner, kind)
			return
		}
		if prev, dup := seen[kind+"="+value]; dup {
			t.Errorf("%s %q of %s is also %s's", kind, value, owner, prev)
		}
		seen[kind+"="+value] = owner
	}
	for _, p := range All {
		unique("name", p.Name, p.Name)
		unique("title", p.Title, p.Name)
		unique("event", p.Event, p.Name)
		unique("analyze endpoint", p.Analyze, p.Name)
		unique("id prefix", p.Results.IDPrefix, p.Name)
		unique("object", p.Results.Object, p.Name)
		unique("results path", p.Results.Path, p.Name)
		unique("list", p.Results.List, p.Name)
		for _, plan := range []store.Plan{store.PlanFreeTrial, store.PlanStarter, store.PlanProfessional, store.PlanEnterprise} {
			if v := p.HourlyLimits[plan]; v == 0 {
				t.Errorf("%s: no hourly limit for plan %s", p.Name, plan)
			}
		}
		if len(p.Tools) == 0 {
			t.Errorf("%s: no MCP tools", p.Name)
		}
		for _, tool := range p.Tools {
			unique("tool", tool.Name, p.Name)
			if !strings.HasPrefix(tool.Name, p.Name+"_") || !strings.HasPrefix(tool.Endpoint, "POST /v1/"+p.Name+"/") || tool.Description == "" {
				t.Errorf("%s: tool %+v must be named %s_…, run a POST /v1/%s/… endpoint and say what it does", p.Name, tool, p.Name, p.Name)
			}
		}
		if p.Request == nil || p.Result == nil || p.Engine == nil || p.Scenarios == nil || p.Generate == nil {
			t.Errorf("%s: request, result, engine, scenarios and generator are required", p.Name)
			continue
		}
		// A generated case is a Request the Engine turns into a Result.
		request, _ := p.Generate(p.Scenarios()[0], 1)
		if reflect.TypeOf(request) != p.Request {
			t.Errorf("%s: the generator makes %T, the registry says %v", p.Name, request, p.Request)
		}
		result, err := p.Engine(context.Background(), request, time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
		if err != nil || reflect.TypeOf(result) != p.Result {
			t.Errorf("%s: the engine answers %T, %v; the registry says %v", p.Name, result, err, p.Result)
		}
	}
}

func TestLookupsFollowTheRegistry(t *testing.T) {
	if got := Names(); !slices.Equal(got, []string{"drift", "convergence", "cascade", "meridian"}) {
		t.Errorf("Names() = %v", got)
	}
	if got := Events(); got[0] != "drift.shadow_detected" || len(got) != len(All) {
		t.Errorf("Events() = %v", got)
	}
	if p, ok := OfScope("cascade:write"); !ok || p.Name != "cascade" {
		t.Errorf(`OfScope("cascade:write") = %v, %v`, p.Name, ok)
	}
	if _, ok := OfScope("webhooks:read"); ok {
		t.Error("webhooks:read names no product")
	}
	if _, ok := Lookup("beacon"); ok {
		t.Error("Lookup of an unknown product succeeded")
	}
	if Drift.ReadScope() != "drift:read" || Drift.WriteScope() != "drift:write" {
		t.Errorf("scopes %s %s", Drift.ReadScope(), Drift.WriteScope())
	}
}
