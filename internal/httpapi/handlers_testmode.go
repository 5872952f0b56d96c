package httpapi

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"riskapi/internal/auth"
	"riskapi/internal/product"
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

// maxGenerateCount is the most items one request generates.
const maxGenerateCount = 100

// productExpected is details.expected of product: the registry's names.
var productExpected = "string (" + strings.Join(product.Names()[:len(product.All)-1], ", ") + " or " + product.All[len(product.All)-1].Name + ")"

func (req *testGenerateRequest) validate() *Error {
	if req.Product == nil {
		return invalidField("product", productExpected, "missing", "product is required: one of %s.", strings.Join(product.Names(), ", "))
	}
	p, ok := product.Lookup(*req.Product)
	if !ok {
		return invalidField("product", productExpected, "string", "%q is not a product: use one of %s.", *req.Product, strings.Join(product.Names(), ", "))
	}
	scenarios := p.Scenarios()
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
	p, _ := product.Lookup(*req.Product)
	scope := p.WriteScope()
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
	return handleJSON(s, func(r *http.Request, req *testGenerateRequest) (int, any, error) {
		p, _ := product.Lookup(*req.Product)
		api := productAPIs[p.Name]
		count := 1
		if req.Count != nil {
			count = *req.Count
		}
		seed := rand.Int64N(1 << 53) // within JSON's exact integers, so clients can send it back
		if req.Seed != nil {
			seed = *req.Seed
		}
		out := testGenerateResult{Product: p.Name, Scenario: *req.Scenario, Seed: seed, Count: count, Items: make([]testItem, 0, count)}
		for i := range count {
			itemSeed := itemSeed(p.Name, *req.Scenario, seed, i)
			request, truth := p.Generate(*req.Scenario, itemSeed)
			item := testItem{Request: request, Expected: truth}
			if api.testItem != nil {
				var err error
				if item, err = api.testItem(s, r, request, truth, itemSeed); err != nil {
					return 0, nil, err
				}
			}
			out.Items = append(out.Items, item)
		}
		return http.StatusOK, out, nil
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
