package contracttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// RequestRefused reports whether status is the service refusing the request itself as
// malformed: 400 (a bad body, query or header), 413 (too large) or 415 (not JSON). Tests
// send such requests on purpose, so CheckRequest does not hold them to the document; every
// other request, answered 2xx or refused for any other reason (401, 403, 404, 409, 422,
// 429, 5xx), must be one the document allows.
func RequestRefused(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge ||
		status == http.StatusUnsupportedMediaType
}

// CheckRequest validates a request a test sent, with ValidateRequest, unless the service
// refused it as malformed (RequestRefused) or no documented operation matches it (a test
// of 404 or 405). It reports a mismatch with t.Errorf.
func (c *Contract) CheckRequest(t testing.TB, req *http.Request, body []byte, status int) {
	t.Helper()
	if RequestRefused(status) {
		return
	}
	if _, _, err := c.findRoute(req); err != nil {
		return
	}
	if err := c.ValidateRequest(req, body); err != nil {
		t.Errorf("contract: %v", err)
	}
}

// ValidateRequest checks a request against the operation it matches: its path, query and
// header parameters and its Content-Type with kin-openapi's openapi3filter.ValidateRequest,
// and its JSON body against the operation's request schema (compiled once, as response
// bodies are). The API key is not checked (authentication is the service's to judge). It
// returns what is wrong, or nil.
func (c *Contract) ValidateRequest(req *http.Request, body []byte) error {
	route, params, err := c.findRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: no documented operation: %w", req.Method, req.URL.Path, err)
	}
	op := route.Method + " " + route.Path
	var problems []string
	options := &openapi3filter.Options{
		MultiError:         true,
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		ExcludeRequestBody: true,
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(body))
	input := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: options}
	if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
		problems = append(problems, describeRequest(err))
	}
	rb := route.Operation.RequestBody
	switch {
	case len(body) == 0:
		if rb != nil && rb.Value != nil && rb.Value.Required {
			problems = append(problems, "the request body is required but empty")
		}
	case rb == nil || rb.Value == nil:
		problems = append(problems, fmt.Sprintf("%s documents no request body, yet one of %d bytes was sent", op, len(body)))
	default:
		mediaType, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
		content := rb.Value.Content.Get(mediaType)
		switch {
		case err != nil || content == nil:
			problems = append(problems, fmt.Sprintf("Content-Type %q is not one %s documents", req.Header.Get("Content-Type"), op))
		case !jsonMediaType(mediaType) || !identityEncoded(req):
			// A protobuf body, or one compressed: the document describes it but no JSON
			// schema can read it.
		case content.Schema != nil && content.Schema.Value != nil:
			if err := c.bodies.validate(content.Schema.Value, body); err != nil {
				problems = append(problems, "request body doesn't match schema: "+describe(err))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("request %s %s does not match %s:\n  - %s", req.Method, req.URL.Path, op, strings.Join(problems, "\n  - "))
}

// describeRequest renders a request validation error as its failing leaves.
func describeRequest(err error) string {
	var re *openapi3filter.RequestError
	if errors.As(err, &re) && re.Parameter != nil {
		return fmt.Sprintf("%s parameter %q: %s", re.Parameter.In, re.Parameter.Name, describe(err))
	}
	return describe(err)
}

func jsonMediaType(mediaType string) bool {
	return mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
}

// identityEncoded reports whether the body is sent as it is (no Content-Encoding).
func identityEncoded(req *http.Request) bool {
	enc := req.Header.Get("Content-Encoding")
	return enc == "" || strings.EqualFold(enc, "identity")
}
