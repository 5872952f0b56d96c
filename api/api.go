// Package api is the public contract of riskapi: its OpenAPI 3.1 document, embedded so
// the server serves it at GET /v1/openapi.json and tests check every response against it.
package api

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"sigs.k8s.io/yaml"
)

// OpenAPIYAML is the OpenAPI 3.1 document of API version v1, as written in openapi.yaml.
// Callers must not modify it.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// openAPIJSON converts the document once per process; the result never changes.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	out, err := yaml.YAMLToJSON(OpenAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("api: convert openapi.yaml to JSON: %w", err)
	}
	return out, nil
})

// OpenAPIJSON returns the document converted to JSON, as served at GET /v1/openapi.json.
// Object keys come out sorted; their order carries no meaning in OpenAPI. The conversion
// runs once; each call returns its own copy, so a caller may modify it.
func OpenAPIJSON() ([]byte, error) {
	out, err := openAPIJSON()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(out), nil
}
