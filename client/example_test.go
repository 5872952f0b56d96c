package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"riskapi/cascade"
	"riskapi/client"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/meridian"
	"riskapi/webhook"
)

// exampleService starts the real service on 127.0.0.1 over a SQLite store in a temporary
// directory, as `riskapi serve` would, and returns its base URL and a test-mode key.
func exampleService() (baseURL, testKey string, stop func()) {
	dir, err := os.MkdirTemp("", "riskapi-client-example")
	if err != nil {
		log.Fatal(err)
	}
	s, stopService, err := launch(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	return s.http.URL, s.testKey, func() { stopService(); os.RemoveAll(dir) }
}

func Example() {
	baseURL, key, stop := exampleService()
	defer stop()
	ctx := context.Background()

	c, err := client.New(client.WithBaseURL(baseURL), client.WithAPIKey(key), client.WithUserAgent("acme-risk/1.0"))
	if err != nil {
		log.Fatal(err)
	}
	acct, err := c.Account(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(acct.Name, acct.Plan, acct.APIKey.Type)

	// Errors are *client.Error, with the envelope's code and details.
	_, err = c.DriftAnalysis(ctx, "dra_missing")
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
	}
	// Output:
	// Acme starter test
	// 404 NOT_FOUND
}

// Drift: generate an agent with a planted shadow principal in test mode, analyse it by its
// id (its events are stored), and list its analyses.
func ExampleClient_AnalyzeDrift() {
	baseURL, key, stop := exampleService()
	defer stop()
	ctx := context.Background()
	c, err := client.New(client.WithBaseURL(baseURL), client.WithAPIKey(key))
	if err != nil {
		log.Fatal(err)
	}

	seed := int64(7)
	data, err := c.GenerateTestData(ctx, client.TestDataParams{Product: client.ProductDrift, Scenario: "shadow_principal_detected", Seed: &seed})
	if err != nil {
		log.Fatal(err)
	}
	var in drift.Input
	if err := data.Items[0].DecodeRequest(&in); err != nil {
		log.Fatal(err)
	}
	a, err := c.AnalyzeDrift(ctx, &drift.Input{AgentID: in.AgentID, PrincipalID: in.PrincipalID})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("planted:", data.Items[0].Expected["shadow_party"])
	fmt.Println("found:", a.ShadowPrincipalDetected, a.ShadowPrincipals[0].Party, a.RiskBand)

	for analysis, err := range c.ListDriftAnalyses(ctx, client.DriftAnalysisListParams{AgentID: in.AgentID}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("listed:", analysis.ID == a.ID, analysis.EventsAnalyzed == a.EventsAnalyzed)
	}
	// Output:
	// planted: vendor_x
	// found: true vendor_x critical
	// listed: true true
}

// Convergence: screen a generated market where firms learned to keep prices high.
func ExampleClient_AnalyzeMarket() {
	baseURL, key, stop := exampleService()
	defer stop()
	ctx := context.Background()
	c, err := client.New(client.WithBaseURL(baseURL), client.WithAPIKey(key))
	if err != nil {
		log.Fatal(err)
	}

	seed := int64(11)
	data, err := c.GenerateTestData(ctx, client.TestDataParams{Product: client.ProductConvergence, Scenario: "collusion_found", Seed: &seed})
	if err != nil {
		log.Fatal(err)
	}
	var in convergence.Input
	if err := data.Items[0].DecodeRequest(&in); err != nil {
		log.Fatal(err)
	}
	a, err := c.AnalyzeMarket(ctx, &in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("planted:", data.Items[0].Expected["collusion_detected"])
	fmt.Println("found:", a.CollusionDetected, len(a.SuspectedGroups) > 0)
	got, err := c.ConvergenceAnalysis(ctx, a.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", got.MarketID == in.MarketID)
	// Output:
	// planted: true
	// found: true true
	// stored: true
}

// Cascade: simulate a fragile network, then queue one in the background and cancel it.
func ExampleClient_SimulateCascade() {
	baseURL, key, stop := exampleService()
	defer stop()
	ctx := context.Background()
	c, err := client.New(client.WithBaseURL(baseURL), client.WithAPIKey(key))
	if err != nil {
		log.Fatal(err)
	}

	seed := int64(3)
	data, err := c.GenerateTestData(ctx, client.TestDataParams{Product: client.ProductCascade, Scenario: "fragile_network", Seed: &seed})
	if err != nil {
		log.Fatal(err)
	}
	var in cascade.Input
	if err := data.Items[0].DecodeRequest(&in); err != nil {
		log.Fatal(err)
	}
	sim, err := c.SimulateCascade(ctx, &in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sim.Status, *sim.SystemicRiskDetected, "planted:", data.Items[0].Expected["systemic_risk_detected"])

	in.Async = true // answered 202 queued; a background runner would complete it
	queued, err := c.SimulateCascade(ctx, &in)
	if err != nil {
		log.Fatal(err)
	}
	canceled, err := c.CancelCascadeSimulation(ctx, queued.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(queued.Status, "→", canceled.Status)
	// Output:
	// completed true planted: true
	// queued → canceled
}

// Meridian: check a generated data source with injected errors; it fails and is held
// for review.
func ExampleClient_CheckQuality() {
	baseURL, key, stop := exampleService()
	defer stop()
	ctx := context.Background()
	c, err := client.New(client.WithBaseURL(baseURL), client.WithAPIKey(key))
	if err != nil {
		log.Fatal(err)
	}

	seed := int64(5)
	data, err := c.GenerateTestData(ctx, client.TestDataParams{Product: client.ProductMeridian, Scenario: "dirty", Seed: &seed})
	if err != nil {
		log.Fatal(err)
	}
	var req meridian.Request
	if err := data.Items[0].DecodeRequest(&req); err != nil {
		log.Fatal(err)
	}
	qc, err := c.CheckQuality(ctx, &req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("passed:", qc.Passed, "planted:", data.Items[0].Expected["passed"])
	fmt.Println("gating:", qc.Gating)
	// Output:
	// passed: false planted: false
	// gating: review
}

// Webhooks: register an endpoint and send it a test event.
func ExampleClient_CreateWebhook() {
	baseURL, key, stop := exampleService()
	defer stop()
	ctx := context.Background()
	c, err := client.New(client.WithBaseURL(baseURL), client.WithAPIKey(key))
	if err != nil {
		log.Fatal(err)
	}

	we, err := c.CreateWebhook(ctx, client.WebhookCreateParams{
		URL:    "https://8.8.8.8/hooks/riskapi",
		Events: []string{client.EventDriftShadowDetected, client.EventConvergenceCollusionFound},
		Secret: "whsec_lDe53nBPm97ayLqp3oxuK9np7hKCVQ5P4Y8tl1lKsG4=",
	})
	if err != nil {
		log.Fatal(err)
	}
	test, err := c.TestWebhook(ctx, we.ID)
	if err != nil {
		log.Fatal(err)
	}
	for d, err := range c.ListWebhookDeliveries(ctx, we.ID, client.ListParams{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.EventType, d.Status, d.ID == test.DeliveryID)
	}
	// Output:
	// webhook.test pending true
}

// A receiver verifies each delivery before trusting it; ParseWebhookEvent verifies and
// decodes in one step.
func ExampleParseWebhookEvent() {
	secret := "whsec_lDe53nBPm97ayLqp3oxuK9np7hKCVQ5P4Y8tl1lKsG4="
	receive := func(w http.ResponseWriter, r *http.Request, body []byte) {
		ev, err := client.ParseWebhookEvent(body, r.Header, secret)
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			fmt.Println("rejected:", errors.Is(err, client.ErrWebhookSignatureMismatch))
			return
		}
		fmt.Println("received", ev.Type, ev.ID)
		w.WriteHeader(http.StatusNoContent)
	}

	// A delivery as riskapi sends it.
	body := []byte(`{"id":"evt_1","object":"event","type":"webhook.test","api_version":"v1","created_at":"2026-11-21T10:00:00.123Z","livemode":false,"data":{"object":{}}}`)
	now := time.Now()
	r, _ := http.NewRequest(http.MethodPost, "https://receiver.example/hook", strings.NewReader(string(body)))
	r.Header.Set(client.WebhookHeaderID, "evt_1")
	r.Header.Set(client.WebhookHeaderTimestamp, fmt.Sprint(now.Unix()))
	r.Header.Set(client.WebhookHeaderStandard, webhook.Sign("evt_1", now, body, secret))
	receive(discard{}, r, body)
	receive(discard{}, r, []byte(strings.Replace(string(body), "webhook.test", "drift.shadow_detected", 1)))
	// Output:
	// received webhook.test evt_1
	// rejected: true
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
