package dashboard

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/drift"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

type agentData struct {
	AgentID    string
	Events     string
	Chart      template.HTML
	Parties    []string
	ChangeAt   string // "" when no analysis found a change point
	Monitor    *agentMonitor
	Alerts     []agentAlert
	Truncated  bool
	AnalysisID string // the analysis the change point is from
}

type agentMonitor struct {
	ID, Status, Sensitivity, Looks, EventsSeen, LastLook string
}

type agentAlert struct {
	Party, RaisedAt, ChangePointAt, AnalysisID string
}

// handleAgent is an agent's Drift timeline: the benefit share of its top parties over its
// stored events, the change point of its latest analysis, and its monitor's alerts.
func (h *Handler) handleAgent() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		ctx := r.Context()
		agent := r.PathValue("agent_id")
		if !drift.ValidAgentID(agent) {
			h.renderError(w, r, http.StatusNotFound, "No such agent.")
			return
		}
		// The newest 100,000 events of a longer history: those its monitor looks at
		// (internal/monitor), where its recent alerts and change points are.
		stored, err := h.cfg.Store.LatestDriftEvents(ctx, v.account.ID, v.mode, agent, drift.MaxEvents+1)
		if err != nil {
			h.cfg.Logger.Error("dashboard: agent events", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "The agent's events cannot be read right now. Try again.")
			return
		}
		data := agentData{AgentID: agent}
		if len(stored) > drift.MaxEvents {
			stored, data.Truncated = stored[1:], true
		}
		mon, err := h.cfg.Store.DriftMonitorOfAgent(ctx, v.account.ID, v.mode, agent)
		hasMonitor := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			h.cfg.Logger.Error("dashboard: agent monitor", "err", err)
		}
		if len(stored) == 0 && !hasMonitor {
			h.renderError(w, r, http.StatusNotFound, "No events of agent "+agent+" in this mode.")
			return
		}
		events, err := decodeStoredEvents(stored)
		if err != nil {
			h.cfg.Logger.Error("dashboard: decode agent events", "err", err)
			h.renderError(w, r, http.StatusInternalServerError, "The agent's events cannot be shown.")
			return
		}
		principal := ""
		if hasMonitor {
			principal = mon.PrincipalID
		}
		latest, _ := h.cfg.Store.ListAnalyses(ctx, v.account.ID, v.mode, product.Drift.Name, agent, store.PageQuery{Limit: 1})
		var cp struct {
			PrincipalID *string `json:"principal_id"`
			ChangePoint struct {
				Detected bool       `json:"detected"`
				At       *time.Time `json:"at"`
			} `json:"change_point"`
		}
		if len(latest.Items) == 1 && json.Unmarshal(latest.Items[0].Payload, &cp) == nil {
			if principal == "" && cp.PrincipalID != nil {
				principal = *cp.PrincipalID
			}
		}
		tl := newAgentTimeline(events, principal)
		var marks []timelineMark
		if cp.ChangePoint.Detected && cp.ChangePoint.At != nil {
			data.ChangeAt, data.AnalysisID = formatTime(*cp.ChangePoint.At), latest.Items[0].ID
			marks = append(marks, timelineMark{At: tl.indexAt(*cp.ChangePoint.At), Label: "Change point " + data.ChangeAt})
		}
		if hasMonitor {
			data.Monitor = &agentMonitor{ID: mon.ID, Status: mon.Status, Sensitivity: fmt.Sprint(mon.Sensitivity),
				Looks: formatInt(int64(mon.Looks)), EventsSeen: formatInt(mon.EventsSeen), LastLook: formatTimePtr(mon.LastEvaluatedAt)}
			for _, a := range mon.Alerts {
				data.Alerts = append(data.Alerts, agentAlert{Party: a.Party, RaisedAt: formatTime(a.RaisedAt),
					ChangePointAt: formatTimePtr(a.ChangePointAt), AnalysisID: a.AnalysisID})
				// The alert sits where its look ended: after the events that look analysed.
				if look, err := h.cfg.Store.Analysis(ctx, v.account.ID, v.mode, product.Drift.Name, a.AnalysisID); err == nil {
					var seen struct {
						Events int `json:"events_analyzed"`
					}
					if json.Unmarshal(look.Payload, &seen) == nil {
						marks = append(marks, timelineMark{At: seen.Events, Label: "Alert: " + a.Party + " at " + formatTime(a.RaisedAt), Alert: true})
					}
				}
			}
		}
		data.Events = formatInt(int64(len(events)))
		for _, s := range tl.Series {
			data.Parties = append(data.Parties, s.Name)
		}
		data.Chart = tl.chart("Benefit share of the top parties of agent "+agent+" over its events, with the change point and alerts", marks)
		page := v.view("Agent "+agent, "analyses")
		page.Data = data
		h.render(w, r, http.StatusOK, "agent", page)
	}
}

// decodeStoredEvents decodes stored events' payloads, joined as one array (one decode).
func decodeStoredEvents(stored []store.DriftEvent) ([]drift.Event, error) {
	var events []drift.Event
	err := json.Unmarshal(store.DriftEventsJSON(stored), &events)
	return events, err
}
