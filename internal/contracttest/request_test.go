package contracttest

import (
	"net/http"
	"strings"
	"testing"

	"riskapi/api"
)

// jsonRequest is a request with a JSON body as a client sends it (the body is passed apart).
func jsonRequest(t *testing.T, method, path string) *http.Request {
	t.Helper()
	req := clientRequest(t, method, path)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk_test_x")
	return req
}

func TestValidateRequest(t *testing.T) {
	c, err := newContract(api.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path, body string
		wantProblem              string // "" when the request is valid
	}{
		{"meridian check of its type", "POST", "/v1/meridian/quality-check",
			`{"source_id":"s","data":{"records":[{"x":1}]},"checks":[{"type":"not_null","column":"x"},{"type":"null","column":"x"},{"type":"unique_within_record","columns":["x","y"]}]}`, ""},
		{"meridian check with another type's parameter", "POST", "/v1/meridian/quality-check",
			`{"source_id":"s","data":{"records":[]},"checks":[{"type":"not_null","column":"x","statistic":"mean"}]}`, "/checks/0"},
		{"meridian check without its required column", "POST", "/v1/meridian/quality-check",
			`{"source_id":"s","data":{"records":[]},"checks":[{"type":"not_null"}]}`, "/checks/0"},
		{"meridian expectation suite", "POST", "/v1/meridian/quality-check",
			`{"source_id":"s","data":{"records":[]},"expectation_suite":{"name":null,"expectations":[{"type":"expect_column_values_to_not_be_null","kwargs":{"column":"x"},"meta":null}]}}`, ""},
		{"expectation without a type", "POST", "/v1/meridian/quality-check",
			`{"source_id":"s","data":{"records":[]},"expectation_suite":{"expectations":[{"kwargs":{"column":"x"}}]}}`, "/expectation_suite/expectations/0"},
		{"cascade scenario of its type", "POST", "/v1/cascade/simulate",
			`{"network":{"nodes":[{"id":"a"}],"edges":[]},"scenarios":[{"type":"shock","loss_fraction":0.5},{"type":"targeted_attack","count":1,"by":"degree"}]}`, ""},
		{"cascade scenario with another type's member", "POST", "/v1/cascade/simulate",
			`{"network":{"nodes":[{"id":"a"}],"edges":[]},"scenarios":[{"type":"node_failure","nodes":["a"],"loss_fraction":0.5}]}`, "/scenarios/0"},
		// Optional request members are declared nullable: null reads as absent.
		{"drift option sent as null", "POST", "/v1/drift/analyze",
			`{"agent_id":"a","window":null,"sensitivity":null}`, ""},
		{"required member sent as null", "POST", "/v1/drift/analyze",
			`{"agent_id":null}`, "/agent_id"},
		{"unknown member", "POST", "/v1/test/generate",
			`{"product":"drift","scenario":"aligned","colour":"red"}`, "colour"},
		{"query parameter out of range", "GET", "/v1/drift/analyses?limit=500", "", "limit"},
		{"a valid list request", "GET", "/v1/drift/analyses?limit=5", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := jsonRequest(t, tc.method, tc.path)
			err := c.ValidateRequest(req, []byte(tc.body))
			switch {
			case tc.wantProblem == "" && err != nil:
				t.Errorf("a valid request was refused: %v", err)
			case tc.wantProblem != "" && err == nil:
				t.Errorf("an invalid request passed (want a problem at %s)", tc.wantProblem)
			case tc.wantProblem != "" && !strings.Contains(err.Error(), tc.wantProblem):
				t.Errorf("problem does not name %s: %v", tc.wantProblem, err)
			}
		})
	}
}

// A request the service refused as malformed is not held to the document; any other is.
func TestCheckRequestSkipsRefusals(t *testing.T) {
	c, err := newContract(api.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"product":"drift","scenario":"aligned","colour":"red"}`
	for _, status := range []int{400, 413, 415} {
		if !RequestRefused(status) {
			t.Errorf("status %d is not a refusal", status)
		}
	}
	for _, status := range []int{200, 401, 404, 422, 429, 503} {
		if RequestRefused(status) {
			t.Errorf("status %d is a refusal", status)
		}
	}
	rec := &recordingTB{TB: t}
	c.CheckRequest(rec, jsonRequest(t, "POST", "/v1/test/generate"), []byte(body), 200)
	if !rec.failed {
		t.Error("CheckRequest passed an invalid request answered 200")
	}
	rec = &recordingTB{TB: t}
	c.CheckRequest(rec, jsonRequest(t, "POST", "/v1/test/generate"), []byte(body), 400)
	if rec.failed {
		t.Error("CheckRequest failed a request the service refused with 400")
	}
}

// recordingTB records Errorf instead of failing the test.
type recordingTB struct {
	testing.TB
	failed bool
}

func (r *recordingTB) Errorf(string, ...any) { r.failed = true }
func (r *recordingTB) Helper()               {}
