package engine_test

import (
	"fmt"

	"riskapi/engine"
)

// Every engine scores 0–100, higher being safer, and names the band the same way.
func ExampleRiskBand() {
	for _, score := range []float64{92.5, 71, 40, 12.3} {
		fmt.Println(score, engine.RiskBand(score))
	}
	// Output:
	// 92.5 low
	// 71 moderate
	// 40 high
	// 12.3 critical
}

// Invalid builds the error an engine returns; without a code, the code follows from the
// top-level field of the path.
func ExampleInvalid() {
	err := engine.Invalid("", "events[3].timestamp", "string (RFC 3339 timestamp)", "missing", "events[3].timestamp is required.")
	fmt.Println(err.Code, err.Field, err.Received)
	fmt.Println(err)
	// Output:
	// INVALID_EVENTS events[3].timestamp missing
	// INVALID_EVENTS: events[3].timestamp is required.
}
