// Package monitor is Drift's continuous monitors (shared/spec/agents.md §2): the monitor
// object the API returns, when a monitor's next look is due after events are stored, and the
// background job that looks (an analysis of the agent's stored events at the look's level of
// the alpha-spending rule, drift.MonitorLook) and raises alerts.
package monitor

import (
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/resource"
	"riskapi/internal/store"
)

// Object is the monitor's "object" member.
const Object = "drift.monitor"

// Defaults and bounds of a monitor's configuration.
const (
	DefaultSensitivity = 0.01
	DefaultMinEvents   = 200
	// MinMinEvents is the smallest min_events: an analysis needs 20 events.
	MinMinEvents = 20
)

// Alert is one alert as the monitor object shows it.
type Alert struct {
	Party         string  `json:"party"`
	AnalysisID    string  `json:"analysis_id"`
	EventID       string  `json:"event_id"`
	RaisedAt      string  `json:"raised_at"`
	ChangePointAt *string `json:"change_point_at"`
}

// MonitorObject is the monitor as GET /v1/drift/monitors/{id} returns it.
type MonitorObject struct {
	ID              string         `json:"id"`
	Object          string         `json:"object"`
	AgentID         string         `json:"agent_id"`
	PrincipalID     *string        `json:"principal_id"`
	Sensitivity     float64        `json:"sensitivity"`
	Baseline        jsontext.Value `json:"baseline"`
	MinEvents       int            `json:"min_events"`
	Description     *string        `json:"description"`
	Status          string         `json:"status"`
	EventsSeen      int64          `json:"events_seen"`
	Looks           int            `json:"looks"`
	LastEvaluatedAt *string        `json:"last_evaluated_at"`
	Alerts          []Alert        `json:"alerts"`
	Livemode        bool           `json:"livemode"`
	CreatedAt       string         `json:"created_at"`
}

// NewObject renders a stored monitor.
func NewObject(m store.DriftMonitor) MonitorObject {
	o := MonitorObject{
		ID: m.ID, Object: Object, AgentID: m.AgentID, Sensitivity: m.Sensitivity, Baseline: jsontext.Value("null"),
		MinEvents: m.MinEvents, Status: m.Status, EventsSeen: m.EventsSeen, Looks: m.Looks,
		LastEvaluatedAt: resource.FormatTimePtr(m.LastEvaluatedAt), Alerts: make([]Alert, len(m.Alerts)),
		Livemode: m.Mode == store.ModeLive, CreatedAt: resource.FormatTime(m.CreatedAt),
	}
	if m.PrincipalID != "" {
		o.PrincipalID = &m.PrincipalID
	}
	if len(m.Baseline) > 0 {
		o.Baseline = jsontext.Value(m.Baseline)
	}
	if m.Description != "" {
		o.Description = &m.Description
	}
	for i, a := range m.Alerts {
		o.Alerts[i] = Alert{Party: a.Party, AnalysisID: a.AnalysisID, EventID: a.EventID,
			RaisedAt: resource.FormatTime(a.RaisedAt), ChangePointAt: resource.FormatTimePtr(a.ChangePointAt)}
	}
	return o
}
