package client_test

import (
	"errors"
	"net/http"
	"testing"

	"riskapi/client"
	"riskapi/drift"
)

// A monitor through the client: created with defaults filled in, one per agent and mode
// (CONFLICT, naming the first), listed by agent, paused and changed, and deleted.
func TestDriftMonitorsCRUD(t *testing.T) {
	t.Parallel()
	s := startService(t)
	c := s.client(s.testKey)
	ctx := t.Context()

	var created client.Response
	fraction := 0.2
	m, err := c.CreateDriftMonitor(ctx, client.DriftMonitorCreateParams{AgentID: "agent_watch", PrincipalID: "user_42",
		Baseline: &drift.Baseline{Fraction: &fraction}, Description: "checkout"}, client.CaptureResponse(&created))
	if err != nil {
		t.Fatal(err)
	}
	if created.StatusCode != http.StatusCreated || m.Object != "drift.monitor" || m.Status != "active" || m.Sensitivity != 0.01 ||
		m.MinEvents != 200 || m.Looks != 0 || m.EventsSeen != 0 || m.LastEvaluatedAt != nil || len(m.Alerts) != 0 ||
		m.PrincipalID == nil || *m.PrincipalID != "user_42" || m.Baseline == nil || *m.Baseline.Fraction != 0.2 || m.Livemode {
		t.Fatalf("created %d: %+v", created.StatusCode, m)
	}
	_, err = c.CreateDriftMonitor(ctx, client.DriftMonitorCreateParams{AgentID: "agent_watch"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict || apiErr.Code != "CONFLICT" || apiErr.Details["monitor_id"] != m.ID {
		t.Fatalf("second monitor of the agent: %v", err)
	}
	other, err := c.CreateDriftMonitor(ctx, client.DriftMonitorCreateParams{AgentID: "agent_other", Sensitivity: 0.05, MinEvents: 50})
	if err != nil || other.Sensitivity != 0.05 || other.MinEvents != 50 || other.PrincipalID != nil || other.Baseline != nil {
		t.Fatalf("other: %+v, %v", other, err)
	}
	got, err := c.DriftMonitor(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "created and read monitor", m, got)

	var ids []string
	for mon, err := range c.ListDriftMonitors(ctx, client.DriftMonitorListParams{ListParams: client.ListParams{Limit: 1}}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, mon.ID)
	}
	if len(ids) != 2 || ids[0] != other.ID || ids[1] != m.ID {
		t.Fatalf("listed %v", ids)
	}
	page, err := c.DriftMonitorsPage(ctx, client.DriftMonitorListParams{AgentID: "agent_other"})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != other.ID {
		t.Fatalf("page of agent_other: %+v, %v", page, err)
	}

	paused, sensitivity, empty := "paused", 0.001, ""
	updated, err := c.UpdateDriftMonitor(ctx, m.ID, client.DriftMonitorUpdateParams{Status: &paused, Sensitivity: &sensitivity, Description: &empty})
	if err != nil || updated.Status != "paused" || updated.Sensitivity != 0.001 || updated.Description != nil || updated.AgentID != "agent_watch" {
		t.Fatalf("updated: %+v, %v", updated, err)
	}
	bad := 0.5
	if _, err := c.UpdateDriftMonitor(ctx, m.ID, client.DriftMonitorUpdateParams{Sensitivity: &bad}); !errors.As(err, &apiErr) || apiErr.Code != "INVALID_SENSITIVITY" {
		t.Fatalf("sensitivity 0.5: %v", err)
	}
	deleted, err := c.DeleteDriftMonitor(ctx, m.ID)
	if err != nil || !deleted.Deleted || deleted.ID != m.ID || deleted.Object != "drift.monitor" {
		t.Fatalf("deleted: %+v, %v", deleted, err)
	}
	if _, err := c.DriftMonitor(ctx, m.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("read after delete: %v", err)
	}
	// The other mode has its own monitors.
	if _, err := s.client(s.liveKey).CreateDriftMonitor(ctx, client.DriftMonitorCreateParams{AgentID: "agent_other"}); err != nil {
		t.Fatalf("the agent's monitor in live mode: %v", err)
	}
}
