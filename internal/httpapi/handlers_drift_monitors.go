package httpapi

import (
	"errors"
	"net/http"

	"github.com/go-json-experiment/json"

	"riskapi/drift"
	"riskapi/internal/ident"
	"riskapi/internal/monitor"
	"riskapi/internal/store"
)

// Continuous Drift monitors (shared/spec/agents.md §2): the resource. Their looks run as
// background jobs (internal/monitor), queued after events are stored (noteDriftEvents).

// createDriftMonitorRequest is the body of POST /v1/drift/monitors.
type createDriftMonitorRequest struct {
	AgentID     *string         `json:"agent_id"`
	PrincipalID *string         `json:"principal_id"`
	Sensitivity *float64        `json:"sensitivity"`
	Baseline    *drift.Baseline `json:"baseline"`
	MinEvents   *int            `json:"min_events"`
	Description *string         `json:"description"`
}

// maxMonitorDescription is the longest description, in bytes, as for webhook endpoints.
const maxMonitorDescription = 1024

func (r *createDriftMonitorRequest) validate() *Error {
	if r.AgentID == nil {
		return invalidField("agent_id", drift.AgentIDExpected, "missing", "agent_id is required.")
	}
	if !drift.ValidAgentID(*r.AgentID) {
		return invalidField("agent_id", drift.AgentIDExpected, "string", "agent_id %q is not valid: use 1 to 128 letters, digits, '.', '_', ':' or '-'.", *r.AgentID)
	}
	in := drift.Input{PrincipalID: r.PrincipalID, Baseline: r.Baseline, Sensitivity: r.Sensitivity}
	for _, member := range []string{"principal_id", "baseline", "sensitivity"} {
		if err := in.ValidateMember(member); err != nil {
			return asValidation(err)
		}
	}
	if r.MinEvents != nil && (*r.MinEvents < monitor.MinMinEvents || *r.MinEvents > drift.MaxEvents) {
		return invalidField("min_events", "integer (20-100000)", "number", "min_events is how many events the first look waits for: %d to %d (it is %d).", monitor.MinMinEvents, drift.MaxEvents, *r.MinEvents)
	}
	return validateMonitorDescription(r.Description)
}

func validateMonitorDescription(d *string) *Error {
	if d != nil && len(*d) > maxMonitorDescription {
		return invalidField("description", "string (at most 1024 bytes)", "string", "description is at most %d bytes long.", maxMonitorDescription)
	}
	return nil
}

// handleCreateDriftMonitor is POST /v1/drift/monitors: one monitor per agent and mode.
func (s *Server) handleCreateDriftMonitor() http.Handler {
	return handleJSON(s, func(r *http.Request, req *createDriftMonitorRequest) (int, any, error) {
		p := principalFrom(r.Context())
		now := s.now()
		m := store.DriftMonitor{
			ID: ident.New("drm"), AccountID: p.Account.ID, Mode: p.Key.Mode, AgentID: *req.AgentID,
			Sensitivity: monitor.DefaultSensitivity, MinEvents: monitor.DefaultMinEvents, Status: store.MonitorActive,
			CreatedAt: now, UpdatedAt: now,
		}
		if req.PrincipalID != nil {
			m.PrincipalID = *req.PrincipalID
		}
		if req.Sensitivity != nil {
			m.Sensitivity = *req.Sensitivity
		}
		if req.MinEvents != nil {
			m.MinEvents = *req.MinEvents
		}
		if req.Description != nil {
			m.Description = *req.Description
		}
		if req.Baseline != nil {
			b, err := json.Marshal(req.Baseline)
			if err != nil {
				return 0, nil, err
			}
			m.Baseline = b
		}
		status, data, err := s.commitWithResponse(r, http.StatusCreated, monitor.NewObject(m), func(done *store.IdempotencyCompletion) error {
			return s.cfg.Store.CreateDriftMonitor(r.Context(), m, done)
		})
		if errors.Is(err, store.ErrConflict) {
			e := newError(CodeConflict, "Agent %s already has a monitor in this mode; change it with PATCH, or delete it first.", m.AgentID)
			if existing, gerr := s.cfg.Store.DriftMonitorOfAgent(r.Context(), m.AccountID, m.Mode, m.AgentID); gerr == nil {
				e.Details["monitor_id"] = existing.ID
			}
			return 0, nil, e
		}
		if err == nil {
			// Events stored before the monitor existed are looked at as if they had just come.
			s.noteDriftEvents(r, m.AgentID)
		}
		return status, data, err
	})
}

// handleListDriftMonitors is GET /v1/drift/monitors, optionally of one agent.
func (s *Server) handleListDriftMonitors() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, "drift_monitors", "agent_id")
		if e != nil {
			writeError(w, r, e)
			return
		}
		agent, given := q.filters["agent_id"]
		if given && !drift.ValidAgentID(agent) {
			writeError(w, r, invalidField("agent_id", drift.AgentIDExpected, "string", "agent_id %q is not valid: use %s.", agent, drift.AgentIDExpected))
			return
		}
		p := principalFrom(r.Context())
		page, err := s.cfg.Store.ListDriftMonitors(r.Context(), p.Account.ID, p.Key.Mode, agent, q.page)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writePage(s, w, r, "drift_monitors", q, page, store.DriftMonitorPosition, func(m store.DriftMonitor) any { return monitor.NewObject(m) })
	})
}

// driftMonitorFromPath loads the monitor named by the {id} path value in the caller's
// account and mode.
func (s *Server) driftMonitorFromPath(r *http.Request) (store.DriftMonitor, error) {
	p := principalFrom(r.Context())
	m, err := s.cfg.Store.DriftMonitor(r.Context(), p.Account.ID, p.Key.Mode, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		return m, newError(CodeNotFound, "No drift monitor %s.", r.PathValue("id"))
	}
	return m, err
}

// handleGetDriftMonitor is GET /v1/drift/monitors/{id}.
func (s *Server) handleGetDriftMonitor() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, err := s.driftMonitorFromPath(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, monitor.NewObject(m))
	})
}

// updateDriftMonitorRequest is the body of PATCH /v1/drift/monitors/{id}.
type updateDriftMonitorRequest struct {
	Status      *string  `json:"status"`
	Sensitivity *float64 `json:"sensitivity"`
	Description *string  `json:"description"`
}

func (r *updateDriftMonitorRequest) validate() *Error {
	if r.Status != nil && *r.Status != store.MonitorActive && *r.Status != store.MonitorPaused {
		return invalidField("status", "string (active or paused)", "string", "status must be active or paused (it is %q).", *r.Status)
	}
	in := drift.Input{Sensitivity: r.Sensitivity}
	if err := in.ValidateMember("sensitivity"); err != nil {
		return asValidation(err)
	}
	return validateMonitorDescription(r.Description)
}

// handleUpdateDriftMonitor is PATCH /v1/drift/monitors/{id}: changes the fields sent. A
// monitor made active again looks at the events that came while it was paused.
func (s *Server) handleUpdateDriftMonitor() http.Handler {
	return handleJSON(s, func(r *http.Request, req *updateDriftMonitorRequest) (int, any, error) {
		m, err := s.driftMonitorFromPath(r)
		if err != nil {
			return 0, nil, err
		}
		resumed := req.Status != nil && *req.Status == store.MonitorActive && m.Status != store.MonitorActive
		if req.Status != nil {
			m.Status = *req.Status
		}
		if req.Sensitivity != nil {
			m.Sensitivity = *req.Sensitivity
		}
		if req.Description != nil {
			m.Description = *req.Description
		}
		m.UpdatedAt = s.now()
		if err := s.cfg.Store.UpdateDriftMonitor(r.Context(), m); errors.Is(err, store.ErrNotFound) {
			return 0, nil, newError(CodeNotFound, "No drift monitor %s.", m.ID)
		} else if err != nil {
			return 0, nil, err
		}
		if resumed {
			s.noteDriftEvents(r, m.AgentID)
		}
		return http.StatusOK, monitor.NewObject(m), nil
	})
}

// handleDeleteDriftMonitor is DELETE /v1/drift/monitors/{id}; its looks' analyses stay.
func (s *Server) handleDeleteDriftMonitor() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		id := r.PathValue("id")
		err := s.cfg.Store.DeleteDriftMonitor(r.Context(), p.Account.ID, p.Key.Mode, id)
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, r, newError(CodeNotFound, "No drift monitor %s.", id))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, deletedObject{ID: id, Object: monitor.Object, Deleted: true})
	})
}

// noteDriftEvents queues the agent's monitor's look, if it has an active one, once events
// were stored (monitor.Schedule decides when). It runs after the request's work is committed;
// a failure is logged, never the request's: the next events, or the 60 s look, catch up.
func (s *Server) noteDriftEvents(r *http.Request, agentID string) {
	p := principalFrom(r.Context())
	if err := monitor.Schedule(r.Context(), s.cfg.Store, p.Account.ID, p.Key.Mode, agentID, s.cfg.Now()); err != nil {
		s.cfg.Logger.Warn("queue drift monitor look", "agent_id", agentID, "err", err)
	}
}
