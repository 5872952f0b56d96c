package mcptools

import (
	"fmt"
	"strings"
)

// summarize is the one-paragraph text of a result a model reads beside the structured
// content: what was found, the key numbers, and what to do next. endpoint is the REST
// operation that made (or stored) obj.
func summarize(endpoint string, obj map[string]any) string {
	switch endpoint {
	case "POST /v1/drift/events":
		return fmt.Sprintf("Recorded %s new events for agent %s (%s duplicates skipped); the agent now has %s stored events. "+
			"Call drift_analyze with {\"agent_id\": %q} and no events to analyse its stored history (at least 20 events).",
			num(obj["accepted"]), str(obj["agent_id"]), num(obj["duplicates"]), num(obj["total_events"]), str(obj["agent_id"]))
	case "POST /v1/drift/analyze":
		return summarizeDrift(obj)
	case "POST /v1/convergence/analyze-market":
		return summarizeConvergence(obj)
	case "POST /v1/cascade/simulate":
		return summarizeCascade(obj)
	case "POST /v1/meridian/quality-check":
		return summarizeQuality(obj)
	}
	return fmt.Sprintf("Result %s (%s).", str(obj["id"]), str(obj["object"]))
}

func summarizeDrift(a map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Drift analysis %s of agent %s over %s events: ", str(a["id"]), str(a["agent_id"]), num(a["events_analyzed"]))
	if a["shadow_principal_detected"] == true {
		parties := list(a["shadow_principals"])
		b.WriteString("a shadow principal was detected")
		for i, p := range parties {
			if i == 3 {
				fmt.Fprintf(&b, " and %d more", len(parties)-3)
				break
			}
			sep := ", "
			if i == 0 {
				sep = ": "
			}
			fmt.Fprintf(&b, "%s%s (confidence %s, share of benefit %s → %s)", sep, str(p["party"]), num(p["confidence"]),
				pct(p["baseline_share"]), pct(p["recent_share"]))
		}
		b.WriteString(". ")
	} else {
		b.WriteString("no shadow principal was detected. ")
	}
	fmt.Fprintf(&b, "Score %s/100 (risk band %s), confidence %s. Recommended action: %s",
		num(a["score"]), str(a["risk_band"]), num(a["confidence"]), sentence(a["recommended_action"]))
	return b.String()
}

func summarizeConvergence(a map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Convergence analysis %s of market %s (%s firms, %s observations, %s bids): ", str(a["id"]), str(a["market_id"]),
		num(a["firms_analyzed"]), num(a["observations_analyzed"]), num(a["bids_analyzed"]))
	if a["collusion_detected"] == true {
		b.WriteString("collusion was detected")
		for i, g := range list(a["suspected_groups"]) {
			if i == 3 {
				b.WriteString(" and more")
				break
			}
			sep := ", "
			if i == 0 {
				sep = ": suspected group "
			}
			fmt.Fprintf(&b, "%s%s (confidence %s)", sep, strings.Join(strs(g["firms"]), " + "), num(g["confidence"]))
		}
		fmt.Fprintf(&b, "; %d flagged periods. ", len(list(a["flagged_periods"])))
	} else {
		b.WriteString("no collusion was detected. ")
	}
	fmt.Fprintf(&b, "Score %s/100 (risk band %s), confidence %s. Recommended action: %s",
		num(a["score"]), str(a["risk_band"]), num(a["confidence"]), sentence(a["recommended_action"]))
	return b.String()
}

func summarizeCascade(s map[string]any) string {
	id := str(s["id"])
	switch status := str(s["status"]); status {
	case "completed":
	case "failed":
		return fmt.Sprintf("Cascade simulation %s failed: %s. Correct the network or parameters and simulate again.", id, str(s["failure_reason"]))
	case "canceled":
		return fmt.Sprintf("Cascade simulation %s was canceled before it finished; it has no result.", id)
	default:
		return fmt.Sprintf("Cascade simulation %s is %s (%s done): it runs in the background. Call get_analysis with "+
			"{\"kind\": \"cascade\", \"id\": %q} until its status is completed, then read its result.", id, status, pct(s["progress"]), id)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Cascade simulation %s (%s model, %s runs): ", id, str(s["model"]), num(s["simulations"]))
	if s["systemic_risk_detected"] == true {
		b.WriteString("systemic risk was detected. ")
	} else {
		b.WriteString("no systemic risk was detected. ")
	}
	fmt.Fprintf(&b, "Score %s/100 (risk band %s).", num(s["score"]), str(s["risk_band"]))
	var top []string
	for i, n := range list(s["nodes"]) {
		if i == 3 {
			break
		}
		if _, swept := n["blast_radius"].(float64); !swept {
			break // nodes without a blast radius come last, unranked by it
		}
		top = append(top, fmt.Sprintf("%s (failing alone, it brings down %s of the value on average)", str(n["id"]), pct(n["blast_radius"])))
	}
	if len(top) > 0 {
		fmt.Fprintf(&b, " Most systemic nodes, by blast radius: %s; reduce or diversify the exposures to them first.", strings.Join(top, ", "))
	}
	if sc := list(s["scenarios"]); len(sc) > 0 {
		fmt.Fprintf(&b, " Worst scenario %s: cascade probability %s, expected failed fraction %s.", worstScenario(sc)...)
	}
	return b.String()
}

// worstScenario names the scenario with the highest expected failed fraction and its numbers.
func worstScenario(scenarios []map[string]any) []any {
	failed := func(sc map[string]any) float64 { f, _ := sc["expected_failed_fraction"].(float64); return f }
	worst := scenarios[0]
	for _, sc := range scenarios[1:] {
		if failed(sc) > failed(worst) {
			worst = sc
		}
	}
	return []any{str(worst["name"]), pct(worst["cascade_probability"]), pct(worst["expected_failed_fraction"])}
}

func summarizeQuality(q map[string]any) string {
	checks := list(q["checks"])
	failed := failedChecks(q)
	verdict := "passed"
	if q["passed"] != true {
		verdict = "failed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Meridian quality check %s of source %s %s: score %s/100, tier %s, gating %s; %d of %d checks failed",
		str(q["id"]), str(q["source_id"]), verdict, num(q["score"]), str(q["tier"]), str(q["gating"]), len(failed), len(checks))
	b.WriteString(failedList(failed))
	b.WriteString(". " + gatingAdvice(str(q["gating"])))
	return b.String()
}

// summarizeGate is meridian_gate's text.
func summarizeGate(g gate, q map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Gate for source %s: %s (score %s/100, tier %s; %d failed checks", str(q["source_id"]), g.Gating,
		num(g.Score), g.Tier, len(g.FailedChecks))
	b.WriteString(failedList(g.FailedChecks))
	fmt.Fprintf(&b, "). %s The full check is %s (get_analysis with kind meridian).", gatingAdvice(g.Gating), g.QualityCheckID)
	return b.String()
}

// gatingAdvice says what an agent should do with data of this gating.
func gatingAdvice(gating string) string {
	switch gating {
	case "allow":
		return "The data may be used."
	case "review":
		return "Use the data only after a person has reviewed the failed checks, or with its limits stated."
	case "block":
		return "Do not use this data: fix or replace the source and check again."
	}
	return "The gating decision is " + gating + "."
}

// failedList names up to five failed checks: ": id (type on column), …".
func failedList(failed []failedCheck) string {
	if len(failed) == 0 {
		return ""
	}
	var names []string
	for i, c := range failed {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(failed)-5))
			break
		}
		name := fmt.Sprintf("%s (%s", c.ID, c.Type)
		if c.Column != nil {
			name += " on " + *c.Column
		}
		names = append(names, name+", "+c.Severity+")")
	}
	return ": " + strings.Join(names, ", ")
}

// gate is meridian_gate's result: should the agent use this data?
type gate struct {
	Gating       string        `json:"gating"`
	Score        any           `json:"score"`
	Tier         string        `json:"tier"`
	FailedChecks []failedCheck `json:"failed_checks"`
	// QualityCheckID is the stored quality check the gate comes from.
	QualityCheckID string `json:"quality_check_id"`
}

// failedCheck is one check of a quality check that did not succeed.
type failedCheck struct {
	ID              string  `json:"id"`
	Type            string  `json:"type"`
	Column          *string `json:"column"`
	Severity        string  `json:"severity"`
	UnexpectedCount any     `json:"unexpected_count"`
}

func gateOf(q map[string]any) gate {
	return gate{Gating: str(q["gating"]), Score: q["score"], Tier: str(q["tier"]), FailedChecks: failedChecks(q), QualityCheckID: str(q["id"])}
}

func failedChecks(q map[string]any) []failedCheck {
	out := []failedCheck{}
	for _, c := range list(q["checks"]) {
		if c["success"] == true {
			continue
		}
		fc := failedCheck{ID: str(c["id"]), Type: str(c["type"]), Severity: str(c["severity"]), UnexpectedCount: c["unexpected_count"]}
		if col, ok := c["column"].(string); ok {
			fc.Column = &col
		}
		out = append(out, fc)
	}
	return out
}

// Reading decoded JSON loosely: a missing number or name reads "unknown" rather than fail.

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return "unknown"
	}
	return fmt.Sprint(v)
}

func num(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "unknown"
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.3g", f)
}

func pct(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "unknown"
	}
	if p := 100 * f; p != 0 && p < 10 {
		return fmt.Sprintf("%.1f %%", p)
	}
	return fmt.Sprintf("%.0f %%", 100*f)
}

func sentence(v any) string {
	s := strings.TrimSpace(str(v))
	if s == "none" {
		return "none needed."
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func list(v any) []map[string]any {
	items, _ := v.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, item := range items {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func strs(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, item := range items {
		out = append(out, str(item))
	}
	return out
}
