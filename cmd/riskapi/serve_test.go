package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// /dashboard and every path under it reach the dashboard as they came; every other path
// reaches the API, untouched, even one that only starts like the dashboard's.
func TestHandlerSendsDashboardPathsToTheDashboard(t *testing.T) {
	t.Parallel()
	var got string
	side := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = name + " " + r.URL.Path })
	}
	h := newHandler(side("api"), side("dashboard"))
	for path, want := range map[string]string{
		"/dashboard":              "dashboard /dashboard",
		"/dashboard/":             "dashboard /dashboard/",
		"/dashboard/signin":       "dashboard /dashboard/signin",
		"/dashboard/../v1":        "dashboard /dashboard/../v1",
		"/dashboard//static":      "dashboard /dashboard//static",
		"/dashboardx":             "api /dashboardx",
		"/dashboard.css":          "api /dashboard.css",
		"/Dashboard":              "api /Dashboard",
		"/":                       "api /",
		"/v1/account":             "api /v1/account",
		"/v1/dashboard":           "api /v1/dashboard",
		"/healthz":                "api /healthz",
		"//dashboard/":            "api //dashboard/",
		"/v1/../dashboard/signin": "api /v1/../dashboard/signin",
	} {
		got = ""
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
		if got != want {
			t.Errorf("%s went to %q, want %q", path, got, want)
		}
	}
}

// Served together on one port, each side keeps its own answers: the API its envelope
// without the dashboard's headers, the dashboard its security headers and redirects.
func TestDashboardAndAPIShareOnePort(t *testing.T) {
	t.Parallel()
	svc := startServe(t, env{"RISKAPI_DATA_DIR": t.TempDir()})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) *http.Response {
		t.Helper()
		res, err := client.Get(svc.url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get("/v1/account"); res.StatusCode != http.StatusUnauthorized || res.Header.Get("Content-Security-Policy") != "" ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Errorf("GET /v1/account beside the dashboard: %d %v", res.StatusCode, res.Header)
	}
	if res := get("/dashboardx"); res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Security-Policy") != "" {
		t.Errorf("GET /dashboardx: %d %v", res.StatusCode, res.Header)
	}
	for _, path := range []string{"/dashboard", "/dashboard/"} {
		res := get(path)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/dashboard/signin" ||
			!strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: %d %v", path, res.StatusCode, res.Header)
		}
	}
}
