package httpapi

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"riskapi/internal/product"
)

// productAPI is what one product's handler file (handlers_<product>.go) gives the API. The
// file registers it from its init function; routes.go mounts every registered product in
// registry order, and TestRegistryRoutesAndContractAgree fails when a registry row has no
// handler file, or a route has no operation in api/openapi.yaml.
type productAPI struct {
	// routes are the product's endpoints by "METHOD /v1/path". A GET endpoint needs the
	// product's read scope, any other its write scope, and every one counts against the
	// product's rate limit and usage.
	routes func(s *Server) map[string]http.Handler
	// testItem turns a generated case (product.Product.Generate) into the item
	// POST /v1/test/generate returns; nil returns the request and truth as generated.
	testItem func(s *Server, r *http.Request, request, truth any, seed int64) (testItem, error)
}

// productAPIs holds the registered products by name.
var productAPIs = map[string]productAPI{}

// registerProduct registers the handler file of product p; it panics when p is not a row
// of the registry or is registered twice, so that a mistake stops every test at once.
func registerProduct(p product.Product, api productAPI) {
	if _, ok := product.Lookup(p.Name); !ok {
		panic(fmt.Sprintf("httpapi: %q is not in the product registry", p.Name))
	}
	if _, dup := productAPIs[p.Name]; dup {
		panic(fmt.Sprintf("httpapi: product %q registered twice", p.Name))
	}
	productAPIs[p.Name] = api
}

// productRoute is one mounted product endpoint.
type productRoute struct {
	pattern string // "POST /v1/drift/analyze"
	scope   string // "drift:write"
	handler http.Handler
	// otlp marks an OTLP endpoint (otlpEndpoint): its bodies and errors follow OTLP/HTTP.
	otlp bool
}

// productRoutes lists every product's endpoints in registry order, with the scope each needs.
func (s *Server) productRoutes() []productRoute {
	var out []productRoute
	for _, p := range product.All {
		api, ok := productAPIs[p.Name]
		if !ok {
			panic(fmt.Sprintf("httpapi: product %q has no handler file", p.Name))
		}
		routes := api.routes(s)
		for _, pattern := range slices.Sorted(maps.Keys(routes)) {
			h := routes[pattern]
			_, isOTLP := h.(otlpEndpoint)
			scope := p.WriteScope()
			if len(pattern) > 4 && pattern[:4] == "GET " {
				scope = p.ReadScope()
			} else if !strings.HasSuffix(pattern, "/cancel") {
				// Work: bounded per account and by the memory budget. A cancel frees work, so
				// a busy account can always send one.
				h = s.admit(p, h)
			}
			out = append(out, productRoute{pattern: pattern, scope: scope, handler: h, otlp: isOTLP})
		}
	}
	return out
}
