package dashboard

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"riskapi/internal/product"
	"riskapi/internal/store"
)

// recentAnalyses is how many results of each product the Analyses page lists.
const recentAnalyses = 10

type analysesData struct {
	Products []productAnalyses
	Cascade  cascadeData
}

type productAnalyses struct {
	Name, SubjectLabel, Total string
	Rows                      []resultRow
}

type resultRow struct {
	ID, Subject, Created, Verdict, Tone, Score, Band string
	Link                                             string // the subject's page, "" for none
}

type cascadeData struct {
	Total    string
	Rows     []resultRow
	Chart    template.HTML
	ChartOf  string // the simulation the histogram is of
	Scenario string
}

// payloadFields decodes a stored object's top-level fields; a payload that is not a JSON
// object yields none, and its row shows dashes.
func payloadFields(payload []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil {
		return nil
	}
	return m
}

func boolField(m map[string]json.RawMessage, name string) (value, ok bool) {
	err := json.Unmarshal(m[name], &value)
	return value, err == nil && m[name] != nil && string(m[name]) != "null"
}

func numberField(m map[string]json.RawMessage, name string) string {
	var f float64
	if raw := m[name]; raw == nil || json.Unmarshal(raw, &f) != nil {
		return "—"
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

func stringField(m map[string]json.RawMessage, names ...string) string {
	for _, name := range names {
		var s string
		if raw := m[name]; raw != nil && json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return "—"
}

func verdictOf(m map[string]json.RawMessage, field, yes, no string, yesIsBad bool) (text, tone string) {
	v, ok := boolField(m, field)
	if !ok {
		return "—", ""
	}
	bad := v == yesIsBad
	text = no
	if v {
		text = yes
	}
	if bad {
		return text, "bad"
	}
	return text, "good"
}

// handleAnalyses lists each product's recent results of the mode with their verdicts, and
// draws the loss histogram of the latest completed Cascade simulation.
func (h *Handler) handleAnalyses() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		ctx := r.Context()
		var data analysesData
		for _, p := range product.All {
			if p.Results.Asynchronous {
				continue // Cascade's simulations, below, with their chart
			}
			res := p.Results
			page, err := h.cfg.Store.ListAnalyses(ctx, v.account.ID, v.mode, p.Name, "", store.PageQuery{Limit: recentAnalyses})
			if err != nil {
				h.cfg.Logger.Error("dashboard: list analyses", "product", p.Name, "err", err)
				h.renderError(w, r, http.StatusServiceUnavailable, "Analyses cannot be listed right now. Try again.")
				return
			}
			pa := productAnalyses{Name: p.Title, SubjectLabel: res.SubjectLabel, Total: formatInt(page.TotalCount)}
			for _, a := range page.Items {
				m := payloadFields(a.Payload)
				verdict, tone := verdictOf(m, res.Verdict, res.Yes, res.No, res.VerdictIsBad)
				subject := a.Subject
				if subject == "" {
					subject = "—"
				}
				row := resultRow{ID: a.ID, Subject: subject, Created: formatTime(a.CreatedAt),
					Verdict: verdict, Tone: tone, Score: numberField(m, "score"), Band: stringField(m, "risk_band", "tier", "gating")}
				if p.Name == product.Drift.Name && a.Subject != "" {
					row.Link = "/dashboard/agents/" + url.PathEscape(a.Subject)
				}
				pa.Rows = append(pa.Rows, row)
			}
			data.Products = append(data.Products, pa)
		}
		sims, err := h.cfg.Store.ListSimulations(ctx, v.account.ID, v.mode, store.PageQuery{Limit: recentAnalyses})
		if err != nil {
			h.cfg.Logger.Error("dashboard: list simulations", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "Simulations cannot be listed right now. Try again.")
			return
		}
		data.Cascade.Total = formatInt(sims.TotalCount)
		for _, s := range sims.Items {
			m := payloadFields(s.Payload)
			res := product.Cascade.Results
			verdict, tone := verdictOf(m, res.Verdict, res.Yes, res.No, res.VerdictIsBad)
			if s.Status != store.SimulationCompleted {
				verdict, tone = s.Status, ""
			}
			data.Cascade.Rows = append(data.Cascade.Rows, resultRow{ID: s.ID, Created: formatTime(s.CreatedAt),
				Verdict: verdict, Tone: tone, Score: numberField(m, "score"), Band: stringField(m, "risk_band")})
			if data.Cascade.Chart == "" && s.Status == store.SimulationCompleted {
				if name, edges, counts, ok := firstHistogram(s.Payload); ok {
					data.Cascade.ChartOf, data.Cascade.Scenario = s.ID, name
					data.Cascade.Chart = histogramChart("Runs by failed value fraction, scenario "+name+" of "+s.ID,
						"Runs by failed value fraction", edges, counts)
				}
			}
		}
		page := v.view("Analyses", "analyses")
		page.Data = data
		h.render(w, r, http.StatusOK, "analyses", page)
	}
}

// firstHistogram reads scenarios[0].histogram {edges, counts} of a Cascade simulation.
func firstHistogram(payload []byte) (name string, edges, counts []float64, ok bool) {
	var sim struct {
		Scenarios []struct {
			Name      string `json:"name"`
			Histogram *struct {
				Edges  []float64 `json:"edges"`
				Counts []float64 `json:"counts"`
			} `json:"histogram"`
		} `json:"scenarios"`
	}
	if json.Unmarshal(payload, &sim) != nil || len(sim.Scenarios) == 0 || sim.Scenarios[0].Histogram == nil {
		return "", nil, nil, false
	}
	hist := sim.Scenarios[0].Histogram
	if len(hist.Counts) == 0 || len(hist.Edges) != len(hist.Counts)+1 {
		return "", nil, nil, false
	}
	return sim.Scenarios[0].Name, hist.Edges, hist.Counts, true
}
