package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"riskapi/cascade"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/webhook"
)

// productService starts the quick-start server with loopback webhooks allowed, and a receiver
// subscribed to every event kind with its test key.
func productService(t *testing.T) (*service, string, *receiver) {
	t.Helper()
	rc := newReceiver(t)
	svc := startServe(t, env{"RISKAPI_DATA_DIR": sqlitetest.Dir(t), "RISKAPI_ALLOW_PRIVATE_WEBHOOKS": "true"})
	key := testKeyPattern.FindString(svc.stdout.String())
	status, created := apiCall(t, svc, http.MethodPost, "/v1/webhooks", key,
		fmt.Sprintf(`{"url": %q, "events": ["*"], "secret": %q}`, rc.URL+"/hook", receiverSecret))
	if status != http.StatusCreated {
		t.Fatalf("create webhook: %d %v", status, created)
	}
	return svc, key, rc
}

// awaitEvent waits for one delivery of kind and checks its signature; it returns the event.
func awaitEvent(t *testing.T, rc *receiver, kind string) map[string]any {
	t.Helper()
	var got receivedRequest
	rc.waitFor(t, 5*time.Second, kind+" delivery", func() bool {
		for _, r := range rc.received() {
			if r.event == kind {
				got = r
				return true
			}
		}
		return false
	})
	if err := webhook.VerifyHex(got.body, got.signature, receiverSecret); err != nil {
		t.Fatalf("%s: signature: %v", kind, err)
	}
	var ev map[string]any
	if err := json.Unmarshal(got.body, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// A shadow scenario posted through the API is detected, names the planted party, and the
// subscribed receiver gets drift.shadow_detected carrying the analysis as GET returns it.
func TestDriftShadowReachesTheWebhook(t *testing.T) {
	t.Parallel()
	svc, key, rc := productService(t)
	in, truth := drift.Generate(drift.ScenarioShadow, 99, drift.GenParams{Events: 1500})
	events, err := json.Marshal(in.Events)
	if err != nil {
		t.Fatal(err)
	}
	status, res := apiCall(t, svc, http.MethodPost, "/v1/drift/analyze", key, fmt.Sprintf(`{"agent_id": "agent_e2e", "events": %s}`, events))
	if status != http.StatusOK || dig(res, "data.shadow_principal_detected") != true {
		t.Fatalf("analyze: %d %v", status, res)
	}
	if party := dig(res, "data.shadow_principals").([]any)[0].(map[string]any)["party"]; party != truth.Party {
		t.Fatalf("named %v, planted %s", party, truth.Party)
	}
	ev := awaitEvent(t, rc, "drift.shadow_detected")
	_, stored := apiCall(t, svc, http.MethodGet, "/v1/drift/analyses/"+dig(res, "data.id").(string), key, "")
	if !reflect.DeepEqual(dig(ev, "data.object"), stored["data"]) {
		t.Fatalf("event data.object is not the stored analysis:\n%v\n%v", dig(ev, "data.object"), stored["data"])
	}
}

// A background simulation outlives its server: stopped while it runs, the server hands it
// back; the next server on the same store resumes it to completion and fires the event.
func TestCascadeSimulationSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := sqlitetest.Dir(t)
	rc := newReceiver(t)
	e := env{"RISKAPI_DATA_DIR": dir, "RISKAPI_ALLOW_PRIVATE_WEBHOOKS": "true"}
	svc := startServe(t, e)
	key := testKeyPattern.FindString(svc.stdout.String())
	if status, res := apiCall(t, svc, http.MethodPost, "/v1/webhooks", key,
		fmt.Sprintf(`{"url": %q, "events": ["cascade.simulation_completed"], "secret": %q}`, rc.URL+"/hook", receiverSecret)); status != http.StatusCreated {
		t.Fatalf("create webhook: %d %v", status, res)
	}
	in, _ := cascade.Generate(cascade.ScenarioFragileNetwork, 5, cascade.GenParams{Nodes: 2000, Simulations: 50_000})
	in.Async = true
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	status, res := apiCall(t, svc, http.MethodPost, "/v1/cascade/simulate", key, string(body))
	if status != http.StatusAccepted {
		t.Fatalf("simulate: %d %v", status, res)
	}
	id := dig(res, "data.id").(string)
	statusOf := func(svc *service) any {
		_, got := apiCall(t, svc, http.MethodGet, "/v1/cascade/simulations/"+id, key, "")
		return dig(got, "data.status")
	}
	pollUntil(t, 10*time.Millisecond, 10*time.Second, "simulation running", func() bool { return statusOf(svc) == "running" })
	if err := svc.stop(); err != nil {
		t.Fatal(err)
	}
	again := startServe(t, e)
	if s := statusOf(again); s != "queued" && s != "running" {
		t.Fatalf("after a graceful stop the simulation is %v, want queued (handed back) or running (resumed)", s)
	}
	pollUntil(t, 50*time.Millisecond, 2*time.Minute, "simulation completed after the restart", func() bool { return statusOf(again) == "completed" })
	ev := awaitEvent(t, rc, "cascade.simulation_completed")
	if dig(ev, "data.object.id") != id || dig(ev, "data.object.status") != "completed" {
		t.Fatalf("event: %v", ev)
	}
}

// A collusive market and a failing quality check posted through the API reach the
// subscribed receiver as convergence.collusion_found and meridian.quality_check_failed.
func TestConvergenceAndMeridianReachTheWebhook(t *testing.T) {
	t.Parallel()
	svc, key, rc := productService(t)
	market, truth := convergence.Generate(convergence.ScenarioCollusionFound, 3, convergence.GenParams{})
	body, err := json.Marshal(market)
	if err != nil {
		t.Fatal(err)
	}
	status, res := apiCall(t, svc, http.MethodPost, "/v1/convergence/analyze-market", key, string(body))
	if status != http.StatusOK || dig(res, "data.collusion_detected") != truth.CollusionDetected || !truth.CollusionDetected {
		t.Fatalf("analyze-market: %d %v (expected %v)", status, dig(res, "data.collusion_detected"), truth.CollusionDetected)
	}
	ev := awaitEvent(t, rc, "convergence.collusion_found")
	if dig(ev, "data.object.id") != dig(res, "data.id") {
		t.Fatalf("event about %v, analysis %v", dig(ev, "data.object.id"), dig(res, "data.id"))
	}
	status, res = apiCall(t, svc, http.MethodPost, "/v1/meridian/quality-check", key,
		`{"source_id": "feed", "data": {"csv": "id,price\n1,10\n2,\n3,12\n"}, "checks": [{"type": "not_null", "column": "price"}]}`)
	if status != http.StatusOK || dig(res, "data.passed") != false {
		t.Fatalf("quality-check: %d %v", status, res)
	}
	ev = awaitEvent(t, rc, "meridian.quality_check_failed")
	if dig(ev, "data.object.id") != dig(res, "data.id") {
		t.Fatalf("event about %v, check %v", dig(ev, "data.object.id"), dig(res, "data.id"))
	}
}
