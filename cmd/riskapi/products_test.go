package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"riskapi/drift"
	"riskapi/webhook"
)

// productService starts the quick-start server with loopback webhooks allowed, and a receiver
// subscribed to every event kind with its test key.
func productService(t *testing.T) (*service, string, *receiver) {
	t.Helper()
	rc := newReceiver(t)
	svc := startServe(t, env{"RISKAPI_DATA_DIR": t.TempDir(), "RISKAPI_ALLOW_PRIVATE_WEBHOOKS": "true"})
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
	waitFor(t, 5*time.Second, kind+" delivery", func() bool {
		for _, r := range rc.received() {
			if r.event == kind {
				got = r
				return true
			}
		}
		return false
	})
	if err := webhook.Verify(got.body, got.signature, receiverSecret); err != nil {
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
