package client_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"riskapi/cascade"
	"riskapi/client"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/internal/contracttest"
	"riskapi/meridian"
)

// jsonMembers lists the top-level JSON member names of a struct type: its tagged fields and
// those of its embedded structs (which encode inline), sorted.
func jsonMembers(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			out = append(out, jsonMembers(f.Type)...)
		case f.IsExported():
			if name == "" {
				name = f.Name
			}
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// The client's types carry exactly the members api/openapi.yaml documents: every member of
// each answer's data and each request body, and none it does not.
func TestTypesMatchTheContract(t *testing.T) {
	c := contracttest.Load(t)
	answers := []struct {
		op, status string
		typ        any
	}{
		{"GET /", "200", client.ServiceInfo{}},
		{"GET /account", "200", client.Account{}},
		{"GET /usage", "200", client.Usage{}},
		{"GET /events/{id}", "200", client.Event{}},
		{"POST /drift/events", "200", client.DriftEventBatch{}},
		{"POST /drift/analyze", "200", client.DriftAnalysis{}},
		{"GET /drift/analyses/{id}", "200", client.DriftAnalysis{}},
		{"POST /convergence/analyze-market", "200", client.ConvergenceAnalysis{}},
		{"GET /convergence/analyses/{id}", "200", client.ConvergenceAnalysis{}},
		{"POST /cascade/simulate", "200", client.CascadeSimulation{}},
		{"POST /cascade/simulate", "202", client.CascadeSimulation{}},
		{"POST /cascade/simulations/{id}/cancel", "200", client.CascadeSimulation{}},
		{"POST /meridian/quality-check", "200", client.QualityCheck{}},
		{"GET /meridian/quality-checks/{id}", "200", client.QualityCheck{}},
		{"POST /test/generate", "200", client.TestData{}},
		{"POST /webhooks", "201", client.WebhookEndpoint{}},
		{"PATCH /webhooks/{id}", "200", client.WebhookEndpoint{}},
		{"DELETE /webhooks/{id}", "200", client.DeletedWebhookEndpoint{}},
		{"POST /webhooks/{id}/deliveries/{delivery_id}/retry", "202", client.WebhookDelivery{}},
		{"POST /webhooks/{id}/test", "202", client.WebhookTest{}},
		{"GET /healthz", "200", client.Health{}},
		{"GET /readyz", "200", client.Health{}},
	}
	for _, a := range answers {
		want, err := c.DataMembers(a.op, a.status)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonMembers(reflect.TypeOf(a.typ)); !slices.Equal(got, want) {
			t.Errorf("%s %s: %T has members %v, the contract %v", a.op, a.status, a.typ, got, want)
		}
	}
	requests := []struct {
		op  string
		typ any
	}{
		{"POST /drift/events", drift.EventBatch{}},
		{"POST /drift/analyze", drift.Input{}},
		{"POST /convergence/analyze-market", convergence.Input{}},
		{"POST /cascade/simulate", cascade.Input{}},
		{"POST /meridian/quality-check", meridian.Request{}},
		{"POST /test/generate", client.TestDataParams{}},
		{"POST /webhooks", client.WebhookCreateParams{}},
		{"PATCH /webhooks/{id}", client.WebhookUpdateParams{}},
	}
	for _, r := range requests {
		want, err := c.RequestMembers(r.op)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonMembers(reflect.TypeOf(r.typ)); !slices.Equal(got, want) {
			t.Errorf("%s: %T has members %v, the contract %v", r.op, r.typ, got, want)
		}
	}
}
