package drift_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"riskapi/drift"
	"riskapi/engine"
)

// An agent buys for its principal. After 120 purchases spread over three vendors it buys
// only from vendor_x, which pays it a commission, at a higher price than the best
// alternative: Analyze names vendor_x as a shadow principal and dates the change.
func ExampleAnalyze() {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	principal := "user_42"
	in := drift.Input{AgentID: "agent_7", PrincipalID: &principal}
	for i := range 300 {
		price, best := 100.0+float64(i%7), 100.0+float64(i%7)
		party, commission := []string{"vendor_a", "vendor_b", "vendor_x"}[i%3], 1.0
		if i >= 120 {
			party, commission, price = "vendor_x", 6.0, best+4
		}
		in.Events = append(in.Events, drift.Event{
			Timestamp: start.Add(time.Duration(i) * time.Hour), Action: "purchase",
			PrincipalValue: ptr(-price), BestAlternativeValue: ptr(-best),
			Beneficiaries: []drift.Beneficiary{{Party: party, Value: commission}},
		})
	}
	a, err := drift.Analyze(context.Background(), in)
	if err != nil {
		fmt.Println(err)
		return
	}
	sp := a.ShadowPrincipals[0]
	fmt.Println(a.ShadowPrincipalDetected, sp.Party, a.RiskBand, a.RecommendedAction)
	fmt.Printf("share of benefit %.2f → %.2f, change point %s\n", sp.BaselineShare, sp.RecentShare, sp.ChangePointAt.Format(time.DateTime))
	// Output:
	// true vendor_x critical contain
	// share of benefit 0.33 → 1.00, change point 2026-11-05 22:00:00
}

// Input the contract refuses is an *engine.InputError naming the field, the expected and
// the received JSON types, as the API reports it.
func ExampleAnalyze_invalidInput() {
	_, err := drift.Analyze(context.Background(), drift.Input{AgentID: "agent 7"})
	var invalid *engine.InputError
	if errors.As(err, &invalid) {
		fmt.Println(invalid.Code, invalid.Field, invalid.Received)
		fmt.Println(invalid.Message)
	}
	// Output:
	// INVALID_AGENT_ID agent_id string
	// agent_id "agent 7" is not valid: use 1 to 128 letters, digits, '.', '_', ':' or '-'.
}

func ptr[T any](v T) *T { return &v }
