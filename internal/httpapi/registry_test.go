package httpapi

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"riskapi/api"
	"riskapi/internal/auth"
	"riskapi/internal/contracttest"
	"riskapi/internal/product"
)

// The product registry, the routes and api/openapi.yaml agree: every registry row has a
// handler file whose routes lie under /v1/<name>/ and include the row's analyze, list and get
// endpoints; every route has an operation in the contract and every operation a route; the
// contract's request and result members are the engine's; every scope is the registry's.
// Adding a product without its row, its handler file or its operations fails here.
func TestRegistryRoutesAndContractAgree(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	contract := contracttest.Load(t)

	var routed []string
	for _, pattern := range b.server.patterns {
		method, path, _ := strings.Cut(pattern, " ")
		path = strings.TrimSuffix(strings.TrimPrefix(path, "/v1"), "{$}")
		if path == "" {
			path = "/"
		}
		routed = append(routed, method+" "+path)
	}
	slices.Sort(routed)
	routed = slices.Compact(routed)
	if documented := contract.Operations(); !slices.Equal(routed, documented) {
		t.Errorf("routes and api/openapi.yaml differ:\n routes:   %v\n contract: %v", routed, documented)
	}

	if len(productAPIs) != len(product.All) {
		t.Errorf("%d handler files registered for %d registry rows", len(productAPIs), len(product.All))
	}
	for _, p := range product.All {
		var own []string
		for _, route := range b.server.productRoutes() {
			if _, path, _ := strings.Cut(route.pattern, " "); strings.HasPrefix(path, "/v1/"+p.Name+"/") {
				own = append(own, route.pattern)
			}
		}
		if len(own) == 0 {
			t.Errorf("%s: no routes under /v1/%s/", p.Name, p.Name)
		}
		for _, want := range []string{p.Analyze, "GET " + p.Results.Path, "GET " + p.Results.Path + "/{id}"} {
			if !slices.Contains(own, want) {
				t.Errorf("%s: the registry's %q is not among its routes %v", p.Name, want, own)
			}
		}
		if !slices.Contains(auth.Scopes, p.ReadScope()) || !slices.Contains(auth.Scopes, p.WriteScope()) {
			t.Errorf("%s: scopes %s and %s are not in auth.Scopes", p.Name, p.ReadScope(), p.WriteScope())
		}

		// The contract's request members are the engine input's JSON members.
		analyzeOp := strings.Replace(p.Analyze, " /v1", " ", 1)
		members, err := contract.RequestMembers(analyzeOp)
		if err != nil {
			t.Fatal(err)
		}
		if got := sortedNames(p.Request); !slices.Equal(got, members) {
			t.Errorf("%s: %s's request members %v, the engine's input %v", p.Name, analyzeOp, members, got)
		}
		// Every member of the engine's result is in the stored object the contract describes.
		data, err := contract.DataMembers("GET "+strings.TrimPrefix(p.Results.Path, "/v1")+"/{id}", "200")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range sortedNames(p.Result) {
			if slices.Contains([]string{"id", "object", "livemode", "created_at"}, name) {
				t.Errorf("%s: result member %q repeats a member of the resource header", p.Name, name)
			}
			if !slices.Contains(data, name) {
				t.Errorf("%s: result member %q is not in the contract's %s object %v", p.Name, name, p.Results.Object, data)
			}
		}
		if p.Results.Verdict != "" && !slices.Contains(data, p.Results.Verdict) {
			t.Errorf("%s: verdict %q is not a member of the contract's %s", p.Name, p.Results.Verdict, p.Results.Object)
		}
	}

	// Every enum of the contract that names products or product events lists the registry's,
	// in its order, before any value that is not a product's.
	names, events := product.Names(), product.Events()
	for _, enum := range flowEnums(string(api.OpenAPIYAML)) {
		switch {
		case slices.Contains(enum, names[0]):
			if len(enum) < len(names) || !slices.Equal(enum[:len(names)], names) {
				t.Errorf("contract enum %v does not start with the registry's products %v", enum, names)
			}
		case slices.Contains(enum, events[0]):
			if len(enum) < len(events) || !slices.Equal(enum[:len(events)], events) {
				t.Errorf("contract enum %v does not start with the registry's events %v", enum, events)
			}
		}
	}
}

// flowEnums returns the values of every one-line `enum: [a, b, …]` of a YAML document.
func flowEnums(doc string) [][]string {
	var out [][]string
	for _, m := range regexp.MustCompile(`enum: \[([^\]]*)\]`).FindAllStringSubmatch(doc, -1) {
		var values []string
		for _, v := range strings.Split(m[1], ",") {
			values = append(values, strings.Trim(strings.TrimSpace(v), `'"`))
		}
		out = append(out, values)
	}
	return out
}

// sortedNames lists the JSON members of a struct type (inlined structs' included), sorted.
func sortedNames(t reflect.Type) []string {
	names := jsonFieldNames(t)
	slices.Sort(names)
	return names
}
