package auth

import (
	"fmt"
	"slices"
	"strings"

	"riskapi/internal/product"
)

// Scopes is every scope a key can hold (platform contract §3): each product's read and
// write scopes, in registry order, then the platform's. A POST endpoint of a product needs
// "<product>:write", a GET one "<product>:read"; "<product>:*" grants both.
var Scopes = slices.Concat(productScopes(), []string{
	"webhooks:read", "webhooks:write",
	"events:read", "usage:read",
})

func productScopes() []string {
	var out []string
	for _, p := range product.All {
		out = append(out, p.ReadScope(), p.WriteScope())
	}
	return out
}

// ValidScope reports whether s is one of Scopes or a "<resource>:*" wildcard of a known resource.
func ValidScope(s string) bool {
	if slices.Contains(Scopes, s) {
		return true
	}
	resource, ok := strings.CutSuffix(s, ":*")
	if !ok {
		return false
	}
	for _, known := range Scopes {
		if strings.HasPrefix(known, resource+":") {
			return true
		}
	}
	return false
}

// ParseScopes splits a comma- or space-separated list, checks every entry and removes duplicates.
func ParseScopes(list string) ([]string, error) {
	fields := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' })
	var out []string
	for _, s := range fields {
		if !ValidScope(s) {
			return nil, fmt.Errorf("unknown scope %q (known: %s, or <resource>:*)", s, strings.Join(Scopes, " "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Grants reports whether a key holding granted may use an endpoint that needs scope need.
func Grants(granted []string, need string) bool {
	resource, _, _ := strings.Cut(need, ":")
	for _, g := range granted {
		if g == need || g == resource+":*" {
			return true
		}
	}
	return false
}
