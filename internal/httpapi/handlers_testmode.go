package httpapi

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"riskapi/cascade"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/internal/auth"
	"riskapi/internal/store"
	"riskapi/meridian"
)

// testGenerateRequest is the body of POST /v1/test/generate.
type testGenerateRequest struct {
	Product  *string `json:"product"`
	Scenario *string `json:"scenario"`
	Count    *int    `json:"count"`
	Seed     *int64  `json:"seed"`
}

// testItem is one generated case: a complete request body for the product's analysis
// endpoint and the truth the generator planted.
type testItem struct {
	Request  any `json:"request"`
	Expected any `json:"expected"`
}

type testGenerateResult struct {
	Product  string     `json:"product"`
	Scenario string     `json:"scenario"`
	Seed     int64      `json:"seed"`
	Count    int        `json:"count"`
	Items    []testItem `json:"items"`
}

// testGenerator produces a product's synthetic cases. generate makes item i of a request
// from its own seed (itemSeed), so every item is a pure function of (scenario, seed, i).
type testGenerator struct {
	scenarios func() []string
	// scope the key needs, the product's write scope: generating is the first step of
	// analysing, and for Drift it stores events.
	scope    string
	generate func(s *Server, r *http.Request, scenario string, itemSeed int64) (testItem, error)
}

// testGenerators lists the products of POST /v1/test/generate.
var testGenerators = map[string]testGenerator{
	store.ProductDrift: {scenarios: drift.TestModeScenarios, scope: "drift:write", generate: generateDriftItem},
	store.ProductConvergence: {scenarios: convergence.TestModeScenarios, scope: "convergence:write",
		generate: func(_ *Server, _ *http.Request, scenario string, seed int64) (testItem, error) {
			in, truth := convergence.Generate(scenario, seed, convergence.GenParams{})
			return testItem{Request: in, Expected: truth}, nil
		}},
	"cascade": {scenarios: cascade.TestModeScenarios, scope: "cascade:write",
		generate: func(_ *Server, _ *http.Request, scenario string, seed int64) (testItem, error) {
			in, truth := cascade.Generate(scenario, seed, cascade.GenParams{})
			return testItem{Request: in, Expected: truth}, nil
		}},
	store.ProductMeridian: {scenarios: meridian.TestModeScenarios, scope: "meridian:write",
		generate: func(_ *Server, _ *http.Request, scenario string, seed int64) (testItem, error) {
			req, truth := meridian.Generate(scenario, seed, meridian.GenParams{})
			return testItem{Request: req, Expected: truth}, nil
		}},
}

// testProducts is the contract's product list, in its order.
var testProducts = []string{"drift", "convergence", "cascade", "meridian"}

const (
	maxGenerateCount = 100
	productExpected  = "string (drift, convergence, cascade or meridian)"
)

func (req *testGenerateRequest) validate() *Error {
	switch {
	case req.Product == nil:
		return invalidField("product", productExpected, "missing", "product is required: one of %s.", strings.Join(testProducts, ", "))
	case !slices.Contains(testProducts, *req.Product):
		return invalidField("product", productExpected, "string", "%q is not a product: use one of %s.", *req.Product, strings.Join(testProducts, ", "))
	}
	scenarios := testGenerators[*req.Product].scenarios()
	expected := "string (one of " + strings.Join(scenarios, ", ") + ")"
	switch {
	case req.Scenario == nil:
		return invalidField("scenario", expected, "missing", "scenario is required: for %s one of %s.", *req.Product, strings.Join(scenarios, ", "))
	case !slices.Contains(scenarios, *req.Scenario):
		return invalidField("scenario", expected, "string", "%q is not a %s scenario: use one of %s.", *req.Scenario, *req.Product, strings.Join(scenarios, ", "))
	}
	if req.Count != nil && (*req.Count < 1 || *req.Count > maxGenerateCount) {
		return invalidField("count", "integer (1-100)", "number", "count must be from 1 to %d (it is %d).", maxGenerateCount, *req.Count)
	}
	return nil
}

// validateIn checks the product's write scope, once the body has named the product. Like
// every pre-handler refusal it is never stored under an Idempotency-Key.
func (req *testGenerateRequest) validateIn(ctx context.Context, _ *Server) *Error {
	scope := testGenerators[*req.Product].scope
	if !auth.Grants(principalFrom(ctx).Key.Scopes, scope) {
		e := newError(CodeForbidden, "This API key does not have the %s scope generating %s test data needs.", scope, *req.Product)
		e.Details["required_scope"] = scope
		return e
	}
	return nil
}

// testModeOnly refuses live-mode keys with 403 FORBIDDEN, at the scope step of the order of
// checks (before the body is read; see protectedTestOnly).
func testModeOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if principalFrom(r.Context()).Livemode() {
			writeError(w, r, newError(CodeForbidden, "This endpoint works with test-mode keys only; this key acts in live mode."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handleTestGenerate is POST /v1/test/generate: synthetic cases with known truth, for test
// keys only, deterministic per seed (a missing seed is drawn and reported).
func (s *Server) handleTestGenerate() http.Handler {
	return handleJSON(s, func(w http.ResponseWriter, r *http.Request, req *testGenerateRequest) {
		gen := testGenerators[*req.Product]
		count := 1
		if req.Count != nil {
			count = *req.Count
		}
		seed := rand.Int64N(1 << 53) // within JSON's exact integers, so clients can send it back
		if req.Seed != nil {
			seed = *req.Seed
		}
		out := testGenerateResult{Product: *req.Product, Scenario: *req.Scenario, Seed: seed, Count: count, Items: make([]testItem, 0, count)}
		for i := range count {
			item, err := gen.generate(s, r, *req.Scenario, itemSeed(*req.Product, *req.Scenario, seed, i))
			if err != nil {
				writeError(w, r, err)
				return
			}
			out.Items = append(out.Items, item)
		}
		writeData(w, r, http.StatusOK, out)
	})
}

// itemSeed derives item i's generator seed from the request (FNV-1a over product, scenario,
// seed and i): same request, same items; a different seed, count position or scenario gives
// independent data.
func itemSeed(product, scenario string, seed int64, i int) int64 {
	h := fnv.New64a()
	h.Write([]byte(product + "\x00" + scenario + "\x00"))
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(i))
	h.Write(b[:])
	return int64(h.Sum64() >> 1)
}

// generateDriftItem makes one agent: its events (with ids, so generating the same seed again
// adds nothing) are returned as an analyze request and also stored in the account's test
// mode under the agent's id, so analysing by agent_id alone works too.
func generateDriftItem(s *Server, r *http.Request, scenario string, seed int64) (testItem, error) {
	in, truth := drift.Generate(scenario, seed, drift.GenParams{})
	agentID := fmt.Sprintf("test_agent_%x", uint64(seed))
	req := analyzeDriftRequest{AgentID: &agentID, Events: new([]driftEventInput)}
	if in.PrincipalID != "" {
		req.PrincipalID = &in.PrincipalID
	}
	stored := make([]store.DriftEvent, len(in.Events))
	for i, ev := range in.Events {
		input := driftEventFromEngine(ev, fmt.Sprintf("evt_%06d", i))
		*req.Events = append(*req.Events, input)
		payload, err := json.Marshal(input)
		if err != nil {
			return testItem{}, err
		}
		stored[i] = store.DriftEvent{EventID: *input.ID, Timestamp: ev.Timestamp, Payload: payload}
	}
	p := principalFrom(r.Context())
	if _, err := s.cfg.Store.AddDriftEvents(r.Context(), p.Account.ID, p.Key.Mode, agentID, stored); err != nil {
		return testItem{}, err
	}
	return testItem{Request: req, Expected: truth}, nil
}

// driftEventFromEngine is the API form of a generated event.
func driftEventFromEngine(ev drift.Event, id string) driftEventInput {
	out := driftEventInput{
		ID: &id, Timestamp: &ev.Timestamp, Action: &ev.Action,
		PrincipalValue: ev.PrincipalValue, BestAlternativeValue: ev.BestAlternativeValue,
		DelegationDepth: ev.DelegationDepth, Overridden: ev.Overridden,
	}
	if ev.InstructedBy != "" {
		out.InstructedBy = &ev.InstructedBy
	}
	for _, b := range ev.Beneficiaries {
		out.Beneficiaries = append(out.Beneficiaries, driftBeneficiaryInput{Party: &b.Party, Value: &b.Value})
	}
	return out
}
