package mcptools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"riskapi/internal/product"
)

// The text of each product's result states its verdict as the object does, with its
// numbers filled in, for every test-mode scenario.
func TestSummariesStateTheVerdict(t *testing.T) {
	verdictText := map[string][2]string{ // product: text when the verdict is true, when false
		"drift":       {"a shadow principal was detected", "no shadow principal was detected"},
		"convergence": {"collusion was detected", "no collusion was detected"},
		"cascade":     {"systemic risk was detected", "no systemic risk was detected"},
		"meridian":    {" passed: ", " failed: "},
	}
	for _, p := range product.All {
		for _, scenario := range p.Scenarios() {
			request, _ := p.Generate(scenario, 5)
			result, err := p.Engine(context.Background(), request, time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
			if err != nil {
				t.Fatalf("%s/%s: %v", p.Name, scenario, err)
			}
			raw, _ := json.Marshal(result)
			var obj map[string]any
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			obj["id"], obj["object"], obj["status"] = p.Results.IDPrefix+"_1", p.Results.Object, "completed"
			text := summarize(p.Analyze, obj)
			want := verdictText[p.Name][1]
			if obj[p.Results.Verdict] == true {
				want = verdictText[p.Name][0]
			}
			if !strings.Contains(text, want) || strings.Contains(text, "unknown") || strings.Contains(text, "%!") {
				t.Errorf("%s/%s (%s = %v): %q lacks %q or has an unfilled number", p.Name, scenario, p.Results.Verdict, obj[p.Results.Verdict], text, want)
			}
			if p.Name == "meridian" {
				gate := summarizeGate(gateOf(obj), obj)
				if !strings.Contains(gate, ": "+obj["gating"].(string)+" (") || !strings.Contains(gate, gatingAdvice(obj["gating"].(string))) {
					t.Errorf("meridian/%s: gate text %q does not follow gating %v", scenario, gate, obj["gating"])
				}
			}
		}
	}
}
