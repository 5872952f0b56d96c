// Package product is the registry of riskapi's products: one row per product, from which
// the API's scopes, rate limits, routes' access rules, test mode, subscribable events, the
// dashboard's lists and the contract's consistency test are all derived. Adding a product
// means adding its row here (docs/adding-a-product.md lists the other files it touches).
package product

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"riskapi/cascade"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/internal/store"
	"riskapi/meridian"
)

// Product is one row of the registry.
type Product struct {
	// Name is the product's path segment (/v1/<name>/…), scope resource (<name>:read,
	// <name>:write), rate-limit bucket, usage key and test-mode product.
	Name string
	// Title is how people read the name: "Drift".
	Title string
	// HourlyLimits are live-mode requests per hour by plan (the seed's table); Unlimited and
	// Custom mark the cells that are not a number.
	HourlyLimits map[store.Plan]int64
	// Event is the kind of event the product emits when its verdict calls for it.
	Event string
	// Analyze is the endpoint that runs the engine, as "METHOD /v1/path".
	Analyze string
	// Results describes the stored objects the engine's runs produce.
	Results Results
	// Request and Result are the engine's input and result types (the JSON bodies of the
	// Analyze endpoint's request and, less the resource header, of its result).
	Request, Result reflect.Type
	// Engine is the engine's entry point for callers that hold the request as a value of
	// type Request (a decoded tool call, a generated case): it runs Analyze and returns a
	// Result. now is the instant of the analysis, for engines that measure against one
	// (Meridian's freshness without as_of).
	Engine func(ctx context.Context, request any, now time.Time) (result any, err error)
	// Scenarios lists the test-mode scenarios; Generate makes one case of a scenario from a
	// seed: the engine's input and the truth planted in it.
	Scenarios func() []string
	Generate  func(scenario string, seed int64) (request, truth any)
	// Tools are the product's MCP tools (internal/mcptools): each names a POST endpoint of the
	// product whose request schema in api/openapi.yaml is the tool's input. The registry lists
	// them so that the tool set follows the products; get_analysis reads any product's
	// results by Results.Path and needs no row.
	Tools []Tool
	// BodyMemory bounds the heap a request body of n bytes takes while it is read and
	// decoded into Request: what the API reserves against its memory budget before reading
	// the body (platform contract §11). The work's own peak is the engine's estimate.
	BodyMemory func(n int64) int64
}

// jsonBodyMemory is BodyMemory for the products whose body is read whole and then decoded:
// the bytes as read (io.ReadAll grows its buffer by doubling, so up to twice the body for a
// moment) beside the decoded value. Measured with the body held, as the API holds it: 0.9–1.5×
// the body for 11–17 MB bodies of each product (TestBodyMemoryCoversDecoding); 2.5× and 4 MiB
// for the fixed costs cover them and the doubling.
func jsonBodyMemory(n int64) int64 { return 5*n/2 + 4<<20 }

// driftBodyMemory is BodyMemory for Drift, whose body is read whole and decoded by its bulk
// decoder (drift.DecodeInput), and by json.Unmarshal after it when the bulk decoder declines
// the body: a body declined at its last event holds what the bulk decoder made (the memory
// of the events is reused, the rest waits for the collector) beside json.Unmarshal's work.
// Measured for a 16 MB body: 1.2–2.2× the body decoded by the bulk decoder, 2.4–3.3× declined at
// its last event (TestBodyMemoryCoversDecoding); 3.25× and 4 MiB cover both.
func driftBodyMemory(n int64) int64 { return 13*n/4 + 4<<20 }

// Results describes a product's stored results and how they are listed.
type Results struct {
	Object   string // the object's "object" value: "drift.analysis"
	IDPrefix string // "dra"
	// Path is the collection: GET Path lists, GET Path/{id} reads one.
	Path string
	List string // the list's name in pagination cursors
	// Subject is the list's filter parameter ("agent_id"), "" when the list has none;
	// SubjectLabel is how the dashboard heads that column.
	Subject, SubjectLabel string
	Noun                  string // how messages name one: "Drift analysis"
	// Verdict is the boolean member of the object that carries the verdict, and whether true
	// is the bad outcome (the dashboard colours it); "" when the object has no single verdict.
	Verdict      string
	VerdictIsBad bool
	Yes, No      string // how the dashboard words the verdict
	// Asynchronous: results may be stored queued and completed in the background.
	Asynchronous bool
}

// Tool is one MCP tool of a product.
type Tool struct {
	// Name is the tool's name, fixed by the agents spec §3: "drift_analyze".
	Name string
	// Endpoint is the REST operation a call runs, as "METHOD /v1/path": the tool call is that
	// request, with the caller's key, so scopes, limits, usage and idempotency apply as to it.
	Endpoint string
	// Description tells a model when to use the tool, in one or two sentences.
	Description string
	// Gate marks a tool whose result is the gate of the endpoint's result rather than the
	// whole object (meridian_gate: should the agent use this data?).
	Gate bool
}

// Limit cells of HourlyLimits that are not a number of requests.
const (
	// Unlimited is the seed's "Unlimited": the deployment's safety ceiling applies.
	Unlimited int64 = -1
	// Custom is the seed's "Custom": the account's own limit, else DefaultCustomLimit.
	Custom int64 = -2
	// DefaultCustomLimit is a Custom cell's hourly limit when the account has none.
	DefaultCustomLimit = 10_000
)

// The registry, in the contract's order.
var (
	Drift = Product{
		Name: "drift", Title: "Drift",
		HourlyLimits: limits(100, 1000, 10_000, Unlimited),
		Event:        "drift.shadow_detected",
		Analyze:      "POST /v1/drift/analyze",
		Results: Results{Object: "drift.analysis", IDPrefix: "dra", Path: "/v1/drift/analyses", List: "drift_analyses",
			Subject: "agent_id", SubjectLabel: "Agent", Noun: "Drift analysis",
			Verdict: "shadow_principal_detected", VerdictIsBad: true, Yes: "Shadow principal detected", No: "No shadow principal"},
		Request: reflect.TypeFor[drift.Input](), Result: reflect.TypeFor[drift.Analysis](),
		Engine: engineOf(drift.Analyze),
		Tools: []Tool{
			{Name: "drift_record_events", Endpoint: "POST /v1/drift/events",
				Description: "Append an agent's actions (events) to its stored history, so that drift_analyze without events can analyse them. Duplicate event ids are skipped."},
			{Name: "drift_analyze", Endpoint: "POST /v1/drift/analyze",
				Description: "Analyse an agent's actions for a shadow principal: a third party the agent has come to serve at its principal's expense. Send events inline, or none to analyse the agent's stored events."},
		},
		BodyMemory: driftBodyMemory,
		Scenarios:  drift.TestModeScenarios,
		Generate: func(scenario string, seed int64) (any, any) {
			in, truth := drift.Generate(scenario, seed, drift.GenParams{})
			return in, truth
		},
	}
	Convergence = Product{
		Name: "convergence", Title: "Convergence",
		HourlyLimits: limits(50, 500, 5000, Unlimited),
		Event:        "convergence.collusion_found",
		Analyze:      "POST /v1/convergence/analyze-market",
		Results: Results{Object: "convergence.analysis", IDPrefix: "cva", Path: "/v1/convergence/analyses", List: "convergence_analyses",
			Subject: "market_id", SubjectLabel: "Market", Noun: "Convergence analysis",
			Verdict: "collusion_detected", VerdictIsBad: true, Yes: "Collusion detected", No: "No collusion"},
		Request: reflect.TypeFor[convergence.Input](), Result: reflect.TypeFor[convergence.Analysis](),
		Engine: engineOf(convergence.Analyze),
		Tools: []Tool{{Name: "convergence_analyze_market", Endpoint: "POST /v1/convergence/analyze-market",
			Description: "Screen a market's prices, costs, bids, segments and messages for collusion; names suspected groups of firms and flagged periods."}},
		BodyMemory: jsonBodyMemory,
		Scenarios:  convergence.TestModeScenarios,
		Generate: func(scenario string, seed int64) (any, any) {
			in, truth := convergence.Generate(scenario, seed, convergence.GenParams{})
			return in, truth
		},
	}
	Cascade = Product{
		Name: "cascade", Title: "Cascade",
		HourlyLimits: limits(10, 100, 1000, Custom),
		Event:        "cascade.simulation_completed",
		Analyze:      "POST /v1/cascade/simulate",
		Results: Results{Object: "cascade.simulation", IDPrefix: "csm", Path: "/v1/cascade/simulations", List: "cascade_simulations",
			Noun: "Cascade simulation", Verdict: "systemic_risk_detected", VerdictIsBad: true,
			Yes: "Systemic risk", No: "No systemic risk", Asynchronous: true},
		Request: reflect.TypeFor[cascade.Input](), Result: reflect.TypeFor[cascade.Result](),
		Engine: engineOf(cascade.Analyze),
		Tools: []Tool{{Name: "cascade_simulate", Endpoint: "POST /v1/cascade/simulate",
			Description: "Simulate how failures propagate through a network of exposures (Monte Carlo); reports systemic risk and the most systemic nodes. Large work runs in the background: poll it with get_analysis."}},
		BodyMemory: jsonBodyMemory,
		Scenarios:  cascade.TestModeScenarios,
		Generate: func(scenario string, seed int64) (any, any) {
			in, truth := cascade.Generate(scenario, seed, cascade.GenParams{})
			return in, truth
		},
	}
	Meridian = Product{
		Name: "meridian", Title: "Meridian",
		HourlyLimits: limits(1000, 10_000, 100_000, Unlimited),
		Event:        "meridian.quality_check_failed",
		Analyze:      "POST /v1/meridian/quality-check",
		Results: Results{Object: "meridian.quality_check", IDPrefix: "mqc", Path: "/v1/meridian/quality-checks", List: "meridian_quality_checks",
			Subject: "source_id", SubjectLabel: "Source", Noun: "Meridian quality check",
			Verdict: "passed", VerdictIsBad: false, Yes: "Passed", No: "Failed"},
		Request: reflect.TypeFor[meridian.Request](), Result: reflect.TypeFor[meridian.Result](),
		Engine: func(ctx context.Context, request any, now time.Time) (any, error) {
			req, err := requestAs[meridian.Request](request)
			if err != nil {
				return nil, err
			}
			req.Now = now
			return meridian.Analyze(ctx, req)
		},
		Tools: []Tool{
			{Name: "meridian_quality_check", Endpoint: "POST /v1/meridian/quality-check",
				Description: "Check the quality of a data source's sample (records or CSV, or declared signals): checks, dimension scores, a 0-100 score, a tier and a gating decision."},
			{Name: "meridian_gate", Endpoint: "POST /v1/meridian/quality-check", Gate: true,
				Description: "Should the agent use this data? Runs the quality check (same input as meridian_quality_check) and answers only the gate: gating (allow, review or block), score, tier and the failed checks."},
		},
		Scenarios:  meridian.TestModeScenarios,
		BodyMemory: meridian.IngestPeak,
		Generate: func(scenario string, seed int64) (any, any) {
			req, truth := meridian.Generate(scenario, seed, meridian.GenParams{})
			return req, truth
		},
	}
)

// All is every product, in the contract's order (the order of lists and of GET /v1/usage).
var All = []Product{Drift, Convergence, Cascade, Meridian}

// engineOf is the Engine of an engine whose Analyze needs no clock.
func engineOf[In, Out any](analyze func(context.Context, In) (Out, error)) func(context.Context, any, time.Time) (any, error) {
	return func(ctx context.Context, request any, _ time.Time) (any, error) {
		in, err := requestAs[In](request)
		if err != nil {
			return nil, err
		}
		return analyze(ctx, in)
	}
}

// requestAs is request as the engine's input type T, or an error naming both types.
func requestAs[T any](request any) (T, error) {
	in, ok := request.(T)
	if !ok {
		return in, fmt.Errorf("product: the engine takes %v, not %T", reflect.TypeFor[T](), request)
	}
	return in, nil
}

// limits is a row of the seed's plan table.
func limits(freeTrial, starter, professional, enterprise int64) map[store.Plan]int64 {
	return map[store.Plan]int64{
		store.PlanFreeTrial: freeTrial, store.PlanStarter: starter,
		store.PlanProfessional: professional, store.PlanEnterprise: enterprise,
	}
}

// Lookup returns the product called name.
func Lookup(name string) (Product, bool) {
	i := slices.IndexFunc(All, func(p Product) bool { return p.Name == name })
	if i < 0 {
		return Product{}, false
	}
	return All[i], true
}

// Names lists the products' names in registry order.
func Names() []string {
	out := make([]string, len(All))
	for i, p := range All {
		out[i] = p.Name
	}
	return out
}

// Events lists the event kinds the products emit, in registry order.
func Events() []string {
	out := make([]string, len(All))
	for i, p := range All {
		out[i] = p.Event
	}
	return out
}

// ReadScope is the scope GET endpoints of the product need: "drift:read".
func (p Product) ReadScope() string { return p.Name + ":read" }

// WriteScope is the scope POST endpoints of the product need: "drift:write".
func (p Product) WriteScope() string { return p.Name + ":write" }

// OfScope names the product a scope belongs to ("drift:write" → Drift), if any.
func OfScope(scope string) (Product, bool) {
	name, _, _ := strings.Cut(scope, ":")
	return Lookup(name)
}
