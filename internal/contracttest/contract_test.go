package contracttest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"riskapi/api"
)

const (
	requestID = "req_4Xb9TqLm2RvY7sKe1NwPz8Ha"
	stamp     = "2026-11-21T10:00:00.123Z"
	meta      = `"metadata":{"request_id":"` + requestID + `","timestamp":"` + stamp + `","processing_time_ms":2}`
	errorMeta = `"metadata":{"request_id":"` + requestID + `","timestamp":"` + stamp + `"}`

	serviceBody = `{"success":true,"data":{"object":"service","version":"v1","region":"default",
		"base_urls":{"default":"http://127.0.0.1:8080","eu":null},"openapi_url":"/v1/openapi.json",
		"supported_versions":["v1"]},` + meta + `}`

	accountBody = `{"success":true,"data":{"id":"acct_7Hq2LmN9xR4tVb1KcZ8wYp3D","object":"account",
		"name":"Demo","email":"demo@example.com","plan":"free_trial","region":"default","livemode":false,
		"custom_limits":{},"created_at":"2026-11-01T09:30:00.000Z","api_key":{"id":"key_2Wc8Nf5Qz1Ly7Tb4Hs9Vk6Pm",
		"object":"api_key","type":"test","mode":"test","name":"bootstrap","display":"sk_test_…wxyz",
		"scopes":["drift:*"],"rate_limit":null,"created_at":"2026-11-01T09:30:00.000Z",
		"last_used_at":null,"expires_at":null,"revoked_at":null}},` + meta + `}`
)

func errorBody(typ, code string) string {
	return `{"success":false,"error":{"type":"` + typ + `","message":"m","code":"` + code + `","details":{}},` + errorMeta + `}`
}

func jsonHeader() http.Header {
	return http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {requestID}}
}

// limitedHeader is jsonHeader plus the rate-limit headers every authenticated response carries.
func limitedHeader() http.Header {
	h := jsonHeader()
	h.Set("X-RateLimit-Limit", "1000")
	h.Set("X-RateLimit-Remaining", "998")
	h.Set("X-RateLimit-Reset", "1795258800")
	h.Set("RateLimit-Policy", `"platform";q=1000;w=3600`)
	h.Set("RateLimit", `"platform";r=998;t=1800`)
	return h
}

// clientRequest is a request as a client sends it to an httptest server: an absolute
// URL with a loopback host and port.
func clientRequest(t *testing.T, method, path string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:41873"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func fresh(t *testing.T) *Contract {
	t.Helper()
	c, err := newContract(api.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestValidate(t *testing.T) {
	c := Load(t)
	withHeader := func(h http.Header, key, value string) http.Header {
		h = h.Clone()
		if value == "" {
			h.Del(key)
		} else {
			h.Set(key, value)
		}
		return h
	}
	cases := []struct {
		name         string
		method, path string
		status       int
		header       http.Header
		body         string
		wantErr      string // "" means the exchange must pass; otherwise a part of the error
	}{
		{name: "service description", method: "GET", path: "/v1", status: 200, header: jsonHeader(), body: serviceBody},
		{name: "service description with a trailing slash", method: "GET", path: "/v1/", status: 200, header: jsonHeader(), body: serviceBody},
		{name: "service description without metadata.request_id", method: "GET", path: "/v1", status: 200, header: jsonHeader(),
			body: strings.Replace(serviceBody, `"request_id":"`+requestID+`",`, "", 1), wantErr: "request_id"},
		{name: "service description of the wrong object", method: "GET", path: "/v1", status: 200, header: jsonHeader(),
			body: strings.Replace(serviceBody, `"object":"service"`, `"object":"services"`, 1), wantErr: "/data/object"},
		{name: "service description with an undocumented status", method: "GET", path: "/v1", status: 202, header: jsonHeader(),
			body: serviceBody, wantErr: "status 202 is not documented for GET /"},
		{name: "response without X-Request-Id", method: "GET", path: "/v1", status: 200,
			header: withHeader(jsonHeader(), "X-Request-Id", ""), body: serviceBody, wantErr: "X-Request-Id"},
		{name: "X-Request-Id differing from the body's", method: "GET", path: "/v1", status: 200,
			header: withHeader(jsonHeader(), "X-Request-Id", "req_00000000000000000000000000"), body: serviceBody, wantErr: "differs from metadata.request_id"},
		{name: "JSON served as text", method: "GET", path: "/v1", status: 200,
			header: withHeader(jsonHeader(), "Content-Type", "text/plain"), body: serviceBody, wantErr: "text/plain"},

		{name: "account", method: "GET", path: "/v1/account", status: 200,
			header: withHeader(limitedHeader(), "X-RateLimit-Remaining", "999"), body: accountBody},
		{name: "account without rate-limit headers", method: "GET", path: "/v1/account", status: 200,
			header: withHeader(limitedHeader(), "X-RateLimit-Limit", ""), body: accountBody, wantErr: "X-RateLimit-Limit"},
		{name: "account revealing the whole key", method: "GET", path: "/v1/account", status: 200, header: limitedHeader(),
			body: strings.Replace(accountBody, "sk_test_…wxyz", "sk_test_0123456789ABCDEFGHIJabcdefghij0123456789", 1), wantErr: "/data/api_key/display"},
		{name: "account with a non-numeric rate-limit header", method: "GET", path: "/v1/account", status: 200,
			header: withHeader(limitedHeader(), "X-RateLimit-Remaining", "lots"), body: accountBody, wantErr: "X-RateLimit-Remaining"},
		{name: "account refused for a bad key", method: "GET", path: "/v1/account", status: 401, header: limitedHeader(),
			body: errorBody("authentication_error", "UNAUTHORIZED")},
		{name: "401 with another status's code", method: "GET", path: "/v1/account", status: 401, header: limitedHeader(),
			body: errorBody("permission_error", "FORBIDDEN"), wantErr: "/error/code"},
		{name: "error envelope carrying processing_time_ms", method: "GET", path: "/v1/account", status: 401, header: limitedHeader(),
			body:    strings.Replace(errorBody("authentication_error", "UNAUTHORIZED"), stamp+`"`, stamp+`","processing_time_ms":1`, 1),
			wantErr: "processing_time_ms"},
		{name: "account with an undocumented 404", method: "GET", path: "/v1/account", status: 404, header: limitedHeader(),
			body: errorBody("not_found_error", "NOT_FOUND"), wantErr: "status 404 is not documented for GET /account"},

		{name: "unknown version", method: "GET", path: "/v2/foo", status: 404, header: jsonHeader(),
			body: errorBody("not_found_error", "NOT_FOUND")},
		{name: "unknown version answered 200", method: "GET", path: "/v2/foo", status: 200, header: jsonHeader(),
			body: serviceBody, wantErr: "not an error"},
		{name: "unknown path with a success envelope", method: "GET", path: "/v1/nope", status: 404, header: jsonHeader(),
			body: serviceBody, wantErr: "not an ErrorEnvelope"},
		{name: "wrong method with an error envelope", method: "POST", path: "/v1/account", status: 405,
			header: withHeader(jsonHeader(), "Allow", "GET, HEAD"), body: errorBody("invalid_request_error", "METHOD_NOT_ALLOWED")},
		{name: "wrong method with a plain-text body", method: "POST", path: "/v1/account", status: 405,
			header: withHeader(jsonHeader(), "Content-Type", "text/plain; charset=utf-8"), body: "Method Not Allowed\n", wantErr: "not JSON"},
		{name: "route registered only by a test", method: "GET", path: "/v1/test-only/panic", status: 500, header: jsonHeader(),
			body: errorBody("api_error", "INTERNAL_ERROR")},
		{name: "operational path under /v1", method: "GET", path: "/v1/healthz", status: 200, header: jsonHeader(),
			body: `{"success":true,"data":{"status":"ok"},` + meta + `}`, wantErr: "not an error"},

		{name: "liveness", method: "GET", path: "/healthz", status: 200, header: jsonHeader(),
			body: `{"success":true,"data":{"status":"ok"},` + meta + `}`},
		{name: "liveness with the readiness body", method: "GET", path: "/healthz", status: 200, header: jsonHeader(),
			body: `{"success":true,"data":{"status":"ready"},` + meta + `}`, wantErr: "/data/status"},
		{name: "liveness asked with HEAD", method: "HEAD", path: "/healthz", status: 200, header: jsonHeader()},
		{name: "liveness asked with HEAD and a body", method: "HEAD", path: "/healthz", status: 200, header: jsonHeader(),
			body: `{}`, wantErr: "HEAD response has a 2-byte body"},
		{name: "HEAD of an unknown path", method: "HEAD", path: "/v2/foo", status: 404, header: jsonHeader()},
		{name: "HEAD of an unknown path answered 200", method: "HEAD", path: "/v2/foo", status: 200, header: jsonHeader(),
			wantErr: "not an error"},
		{name: "not ready", method: "GET", path: "/readyz", status: 503, header: withHeader(jsonHeader(), "Retry-After", "5"),
			body: errorBody("service_unavailable_error", "SERVICE_UNAVAILABLE")},
		{name: "metrics", method: "GET", path: "/metrics", status: 200,
			header: withHeader(jsonHeader(), "Content-Type", "text/plain; version=0.0.4; charset=utf-8"),
			body:   "# HELP up Whether the process is up.\n# TYPE up gauge\nup 1\n"},
		{name: "OpenAPI document", method: "GET", path: "/v1/openapi.json", status: 200, header: jsonHeader(),
			body: `{"openapi":"3.1.0","info":{"title":"riskapi","version":"v1"},"paths":{}}`},
		{name: "OpenAPI document in an envelope", method: "GET", path: "/v1/openapi.json", status: 200, header: jsonHeader(),
			body: `{"success":true,"data":{"openapi":"3.1.0"},` + meta + `}`, wantErr: "missing properties"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the contract is shared by parallel tests; -race checks it is safe
			err := c.Validate(clientRequest(t, tc.method, tc.path), tc.status, tc.header, []byte(tc.body))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("valid exchange rejected: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("invalid exchange accepted; want an error mentioning %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("error does not mention %q:\n%v", tc.wantErr, err)
			case err != nil:
				if want := tc.method + " " + tc.path + " → " + fmt.Sprint(tc.status); !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error does not start with %q:\n%v", want, err)
				}
			}
		})
	}
}

// The router must not depend on the host: a server-side request (no scheme, any Host)
// and a client request to another host find the same operation.
func TestValidateIgnoresTheHost(t *testing.T) {
	c := Load(t)
	for _, target := range []string{"/v1/account", "https://api.example.com/v1/account", "http://[::1]:9/v1/account"} {
		req, err := http.NewRequest("GET", target, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "riskapi.internal:8443"
		if err := c.Validate(req, 200, limitedHeader(), []byte(accountBody)); err != nil {
			t.Errorf("%s: %v", target, err)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Load(t)
	body := strings.NewReplacer(`"plan":"free_trial"`, `"plan":"gold"`, `"livemode":false`, `"livemode":"no"`).Replace(accountBody)
	err := c.Validate(clientRequest(t, "GET", "/v1/account"), 200, limitedHeader(), []byte(body))
	if err == nil {
		t.Fatal("account with two wrong fields accepted")
	}
	for _, field := range []string{"/data/plan", "/data/livemode"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %s:\n%v", field, err)
		}
	}
	if strings.Contains(err.Error(), "Schema:\n") {
		t.Errorf("error carries kin-openapi's schema dump:\n%v", err)
	}
}

// recorder stands in for *testing.T in Check: the embedded TB supplies the methods Check
// does not call, and Errorf is captured instead of failing the real test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestCheckReportsThroughErrorf(t *testing.T) {
	c := Load(t)

	ok := &recorder{TB: t}
	c.Check(ok, clientRequest(t, "GET", "/v1"), 200, jsonHeader(), []byte(serviceBody))
	if len(ok.errors) != 0 {
		t.Errorf("Check reported a valid exchange: %q", ok.errors)
	}

	bad := &recorder{TB: t}
	body := "Method Not Allowed " + strings.Repeat("x", 2*bodyPrefixLen)
	c.Check(bad, clientRequest(t, "DELETE", "/v1/account"), 405, http.Header{"Content-Type": {"text/plain"}}, []byte(body))
	if len(bad.errors) != 1 {
		t.Fatalf("Check reported %d errors, want 1: %q", len(bad.errors), bad.errors)
	}
	msg := bad.errors[0]
	for _, want := range []string{"DELETE", "/v1/account", "405", "X-Request-Id", "not JSON", "Method Not Allowed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Check's report does not mention %q:\n%s", want, msg)
		}
	}
	if len(msg) > 2*bodyPrefixLen {
		t.Errorf("Check's report quotes the whole %d-byte body (%d characters)", len(body), len(msg))
	}
}

func TestLoadReturnsOneContract(t *testing.T) {
	if a, b := Load(t), Load(t); a != b {
		t.Error("Load built the contract twice")
	}
}

func TestOperations(t *testing.T) {
	got := Load(t).Operations()
	for _, want := range []string{"GET /", "GET /account", "GET /healthz", "GET /metrics", "GET /openapi.json", "GET /readyz"} {
		if !slices.Contains(got, want) {
			t.Errorf("Operations() = %q lacks %q", got, want)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("Operations() = %q is not sorted", got)
	}
}

func TestUnexercised(t *testing.T) {
	c := fresh(t)
	if got := c.Unexercised(); !slices.Equal(got, c.Operations()) {
		t.Fatalf("a new contract's Unexercised() = %q, want every operation", got)
	}
	// A failing exchange still exercises its operation; an unrouted one exercises none.
	_ = c.Validate(clientRequest(t, "GET", "/v1/account"), 418, jsonHeader(), nil)
	_ = c.Validate(clientRequest(t, "GET", "/v1"), 200, jsonHeader(), []byte(serviceBody))
	_ = c.Validate(clientRequest(t, "GET", "/v2/account"), 404, jsonHeader(), []byte(errorBody("not_found_error", "NOT_FOUND")))
	want := slices.DeleteFunc(c.Operations(), func(op string) bool { return op == "GET /account" || op == "GET /" })
	if got := c.Unexercised(); !slices.Equal(got, want) {
		t.Errorf("Unexercised() = %q, want %q", got, want)
	}
}

func TestNewContractRejectsAnInvalidDocument(t *testing.T) {
	broken := strings.Replace(string(api.OpenAPIYAML), "openapi: 3.1.0", "openapi: 3.1.0\nfoo: bar", 1)
	if _, err := newContract([]byte(broken)); err == nil {
		t.Error("a document with an unknown top-level field loaded")
	}
	noEnvelope := strings.Replace(string(api.OpenAPIYAML), "    ErrorEnvelope:\n", "    ErrorEnvelopeRenamed:\n", 1)
	noEnvelope = strings.ReplaceAll(noEnvelope, "#/components/schemas/ErrorEnvelope'", "#/components/schemas/ErrorEnvelopeRenamed'")
	if _, err := newContract([]byte(noEnvelope)); err == nil || !strings.Contains(err.Error(), "ErrorEnvelope") {
		t.Errorf("a document without ErrorEnvelope: err = %v, want one naming ErrorEnvelope", err)
	}
}

// A real server and client: the exchange Check sees is what net/http produced (absolute
// URL with the test server's host, Content-Length and Date headers, Go's own 404 and 405
// pages), and the served document is the real OpenAPIJSON.
func TestCheckAgainstALiveServer(t *testing.T) {
	spec, err := api.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	writeJSON := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", requestID)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, serviceBody) })
	mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, string(spec)) })
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"success":true,"data":{"status":"ok"},`+meta+`}`)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, errorBody("not_found_error", "NOT_FOUND"))
	})
	// Go's own 405 page for a known path with another method: plain text, no envelope.
	raw := http.NewServeMux()
	raw.HandleFunc("GET /v1/raw/x", func(w http.ResponseWriter, r *http.Request) {})
	mux.Handle("/v1/raw/", raw)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := Load(t)
	exchange := func(method, path string) (*http.Request, int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return req, resp.StatusCode, resp.Header, body
	}
	for _, path := range []string{"/v1", "/v1/openapi.json", "/healthz", "/v2/drift/analyze", "/v1/no-such-thing"} {
		req, status, header, body := exchange("GET", path)
		c.Check(t, req, status, header, body)
	}
	req, status, header, body := exchange("DELETE", "/v1/raw/x")
	if status != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE /v1/raw/x: status %d, want Go's 405", status)
	}
	if err := c.Validate(req, status, header, body); err == nil {
		t.Error("Go's plain-text 405 page passed as a contract error response")
	}
}
