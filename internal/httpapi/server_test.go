package httpapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestServiceInfoNeedsNoKey(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.EUPublicURL = "https://eu.api.test" }, nil)
	for _, path := range []string{"/v1", "/v1/"} {
		r := b.get(path, "")
		if r.status != http.StatusOK || r.field("success") != true {
			t.Fatalf("GET %s: %d %s", path, r.status, r.raw)
		}
		if r.field("data.object") != "service" || r.field("data.version") != "v1" || r.field("data.region") != "default" {
			t.Fatalf("GET %s data: %s", path, r.raw)
		}
		if r.field("data.base_urls.default") != "http://api.test" || r.field("data.base_urls.eu") != "https://eu.api.test" {
			t.Fatalf("GET %s base_urls: %s", path, r.raw)
		}
		if r.field("data.openapi_url") != "/v1/openapi.json" {
			t.Fatalf("openapi_url: %s", r.raw)
		}
	}
}

func TestEnvelopeMetadata(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.get("/v1", "")
	id, _ := r.field("metadata.request_id").(string)
	if !regexp.MustCompile(`^req_[0-9A-Za-z]{24}$`).MatchString(id) || r.header.Get("X-Request-Id") != id {
		t.Fatalf("request id %q, header %q", id, r.header.Get("X-Request-Id"))
	}
	ts, _ := r.field("metadata.timestamp").(string)
	parsed, err := time.Parse("2006-01-02T15:04:05.000Z", ts)
	if err != nil || time.Since(parsed) > time.Minute {
		t.Fatalf("timestamp %q: %v", ts, err)
	}
	if _, ok := r.field("metadata.processing_time_ms").(float64); !ok {
		t.Fatalf("processing_time_ms missing: %s", r.raw)
	}
	if again := b.get("/v1", ""); again.field("metadata.request_id") == id {
		t.Fatal("two requests got the same request id")
	}
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	r := b.get("/v1/openapi.json", "")
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
		Servers []struct{ URL string }     `json:"servers"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil || r.status != http.StatusOK {
		t.Fatalf("%d %v", r.status, err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") || doc.Servers[0].URL != "/v1" || doc.Paths["/account"] == nil {
		t.Fatalf("unexpected document: openapi %q servers %v", doc.OpenAPI, doc.Servers)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	if r := b.get("/healthz", ""); r.status != http.StatusOK || r.field("data.status") != "ok" {
		t.Fatalf("healthz: %d %s", r.status, r.raw)
	}
	if r := b.get("/readyz", ""); r.status != http.StatusOK || r.field("data.status") != "ready" {
		t.Fatalf("readyz: %d %s", r.status, r.raw)
	}
	b.store.Close() // the store going away must make the service unready, not crash it
	r := b.get("/readyz", "")
	r.wantError(t, http.StatusServiceUnavailable, "service_unavailable_error", CodeServiceUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	// An authenticated request now cannot check its key: 503, not 401 and not 500.
	b.get("/v1/account", b.testKey).wantError(t, http.StatusServiceUnavailable, "service_unavailable_error", CodeServiceUnavailable)
}

func TestMetricsCountRequestsByRoutePattern(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	b.get("/v1/account", b.testKey)
	b.get("/v1/account", "")
	b.get("/v1/no/such/thing", "")
	r := b.get("/metrics", "")
	text := string(r.raw)
	for _, want := range []string{
		`riskapi_http_requests_total{method="GET",route="/v1/account",status="200"} 1`,
		`riskapi_http_requests_total{method="GET",route="/v1/account",status="401"} 1`,
		`riskapi_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`riskapi_http_request_duration_seconds_bucket{method="GET",route="/v1/account",le="+Inf"} 2`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestUnknownRoutesAndVersions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for _, path := range []string{"/v1/nope", "/nope", "/", "/v1/account/extra", "/v1//account", "/v1/./account", "/v1/x/../account"} {
		b.get(path, b.testKey).wantError(t, http.StatusNotFound, "not_found_error", CodeNotFound)
	}
	for _, path := range []string{"/v2/account", "/v2", "/v0/drift/analyze"} {
		r := b.get(path, b.testKey)
		r.wantError(t, http.StatusNotFound, "not_found_error", CodeNotFound)
		if msg, _ := r.field("error.message").(string); !strings.Contains(msg, "v1") {
			t.Errorf("%s: message does not name the supported version: %q", path, msg)
		}
		if v, _ := r.field("error.details.supported_versions").([]any); len(v) != 1 || v[0] != "v1" {
			t.Errorf("%s: details.supported_versions = %v", path, r.field("error.details.supported_versions"))
		}
	}
}

func TestWrongMethodIs405BeforeAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for _, method := range []string{http.MethodPost, http.MethodDelete, http.MethodPut} {
		r := b.do(method, "/v1/account", nil, nil) // no key: the route check comes first
		r.wantError(t, http.StatusMethodNotAllowed, "invalid_request_error", CodeMethodNotAllowed)
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
			t.Fatalf("%s: Allow = %q", method, allow)
		}
	}
}

func TestPanicIsOpaque500(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(s *Server) {
		s.mux.Handle("GET /v1/_test/panic", s.protected("", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic("secret internal detail: db password hunter2")
		})))
	})
	r := b.get("/v1/_test/panic", b.testKey)
	r.wantError(t, http.StatusInternalServerError, "api_error", CodeInternal)
	if strings.Contains(string(r.raw), "hunter2") {
		t.Fatal("500 leaked the panic value")
	}
	id := r.field("metadata.request_id").(string)
	if logs := b.logs.String(); !strings.Contains(logs, "hunter2") || !strings.Contains(logs, id) {
		t.Fatal("panic not logged with the request id")
	}
	// The server survives the panic.
	if r := b.get("/v1", ""); r.status != http.StatusOK {
		t.Fatalf("after panic: %d", r.status)
	}
}

func TestDeprecationHeaders(t *testing.T) {
	t.Parallel()
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	sunset := time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)
	b := setup(t, func(c *Config) {
		c.Deprecation = &Deprecation{At: at, Sunset: sunset, MigrationGuide: "https://docs.test/migrate"}
	}, nil)
	r := b.get("/v1/account", b.testKey)
	if got := r.header.Get("Deprecation"); got != "@1798761600" {
		t.Errorf("Deprecation = %q", got)
	}
	if got := r.header.Get("Sunset"); got != "Sat, 01 Jan 2028 00:00:00 GMT" {
		t.Errorf("Sunset = %q", got)
	}
	if got := r.header.Get("Link"); !strings.Contains(got, "<https://docs.test/migrate>") || !strings.Contains(got, `rel="deprecation"`) {
		t.Errorf("Link = %q", got)
	}
	if plain := setup(t, nil, nil).get("/v1", ""); plain.header.Get("Deprecation") != "" {
		t.Error("Deprecation sent without configuration")
	}
}
