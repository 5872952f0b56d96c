package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/drift"
	"riskapi/engine"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

func init() {
	registerProduct(product.Drift, productAPI{
		routes: func(s *Server) map[string]http.Handler {
			return map[string]http.Handler{
				"POST /v1/drift/events":          s.handleIngestDriftEvents(),
				"POST /v1/drift/traces":          s.handleIngestDriftTraces(),
				product.Drift.Analyze:            s.handleAnalyzeDrift(),
				"GET /v1/drift/analyses":         s.handleListAnalyses(product.Drift, drift.ValidAgentID, drift.AgentIDExpected),
				"GET /v1/drift/analyses/{id}":    s.handleGetAnalysis(product.Drift),
				"POST /v1/drift/monitors":        s.handleCreateDriftMonitor(),
				"GET /v1/drift/monitors":         s.handleListDriftMonitors(),
				"GET /v1/drift/monitors/{id}":    s.handleGetDriftMonitor(),
				"PATCH /v1/drift/monitors/{id}":  s.handleUpdateDriftMonitor(),
				"DELETE /v1/drift/monitors/{id}": s.handleDeleteDriftMonitor(),
			}
		},
		testItem: driftTestItem,
	})
}

// ingestDriftEventsRequest is the body of POST /v1/drift/events; the engine decodes and
// validates it.
type ingestDriftEventsRequest struct {
	drift.EventBatch
}

// decodeBulk decodes the batch with the engine's bulk decoder (see bulkDecoder).
func (req *ingestDriftEventsRequest) decodeBulk(ctx context.Context, body []byte) bool {
	return drift.DecodeEventBatch(ctx, body, &req.EventBatch, 0)
}

func (req *ingestDriftEventsRequest) validate() *Error {
	return asValidation(req.EventBatch.Validate())
}

// driftEventBatchObject is the answer of POST /v1/drift/events.
type driftEventBatchObject struct {
	AgentID     string `json:"agent_id"`
	Accepted    int    `json:"accepted"`
	Duplicates  int    `json:"duplicates"`
	TotalEvents int64  `json:"total_events"`
}

// handleIngestDriftEvents is POST /v1/drift/events: append events to an agent's stored history,
// skipping ids it already holds.
func (s *Server) handleIngestDriftEvents() http.Handler {
	return handleJSON(s, func(r *http.Request, req *ingestDriftEventsRequest) (int, any, error) {
		events, err := driftEventRows(req.Events)
		if err != nil {
			return 0, nil, err
		}
		p := principalFrom(r.Context())
		accepted := 0
		status, data, err := s.commitAnswer(r, http.StatusOK, func(answer func(any) (*store.IdempotencyCompletion, error)) error {
			batch, err := s.cfg.Store.AddDriftEvents(r.Context(), p.Account.ID, p.Key.Mode, req.AgentID, events, func(batch store.DriftEventBatch) (*store.IdempotencyCompletion, error) {
				return answer(driftEventBatchObject{
					AgentID: req.AgentID, Accepted: batch.Accepted, Duplicates: batch.Duplicates, TotalEvents: batch.Total,
				})
			})
			accepted = batch.Accepted
			return err
		})
		if err == nil && accepted > 0 {
			s.noteDriftEvents(r, req.AgentID)
		}
		return status, data, err
	})
}

// driftEventRows are events as the store keeps them: each with its JSON, times as sent, to
// the nanosecond and with their offset.
func driftEventRows(events []drift.Event) ([]store.DriftEvent, error) {
	rows := make([]store.DriftEvent, len(events))
	for i := range events {
		ev := &events[i]
		payload, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		rows[i] = store.DriftEvent{EventID: ev.ID, Timestamp: ev.Timestamp, Payload: payload}
	}
	return rows, nil
}

// analyzeDriftRequest is the body of POST /v1/drift/analyze: the engine's input, whose events
// may instead be the agent's stored ones within window. The engine decodes it.
type analyzeDriftRequest struct {
	drift.Input
}

// decodeBulk decodes the request with the engine's bulk decoder, its events on the cores
// the request was granted (requestInfo.workers; GOMAXPROCS outside a request, see
// bulkDecoder).
func (req *analyzeDriftRequest) decodeBulk(ctx context.Context, body []byte) bool {
	workers := requestInfoFrom(ctx).workers
	ok := drift.DecodeInput(ctx, body, &req.Input, workers)
	req.Workers = workers // validation and the analysis run on the same cores
	return ok
}

// validate checks the request with the engine, in the contract's order, before anything
// runs or is stored; stored events are checked by Analyze once they are read.
func (req *analyzeDriftRequest) validate() *Error {
	if req.Events == nil {
		return asValidation(req.ValidateWithoutEvents())
	}
	return asValidation(req.Validate())
}

// estimate is the engine's estimate of the analysis of inline events. Stored events are
// estimated once they are read (handleAnalyzeDrift); the engine itself refuses either above
// the budget, since what describing the parties it finds costs is known only once it has.
func (req *analyzeDriftRequest) estimate(budget time.Duration) (engine.Cost, bool, error) {
	req.Budget = budget
	if req.Events == nil {
		return engine.Cost{}, false, nil
	}
	cost, err := drift.Estimate(req.Input)
	return cost, false, err
}

// handleAnalyzeDrift is POST /v1/drift/analyze: analyse inline events, or the agent's stored
// ones within window, store the analysis and, when a shadow principal is found, the
// drift.shadow_detected event in the same transaction.
//
// The request decodes its events and tests the parties on the cores admission.Cores grants
// it when it starts (every free one, up to GOMAXPROCS; its own goroutine alone when none is
// free), as Meridian's quality check does.
func (s *Server) handleAnalyzeDrift() http.Handler {
	h := handleJSON(s, func(r *http.Request, req *analyzeDriftRequest) (int, any, error) {
		in := req.Input
		if in.Events == nil {
			events, e := s.storedDriftEvents(r, req)
			if e != nil {
				return 0, nil, e
			}
			in.Events, in.Window = events, nil
			cost, err := drift.Estimate(in)
			if err != nil {
				return 0, nil, err
			}
			if e := s.checkCost(r, cost, false); e != nil {
				return 0, nil, e
			}
			if e := s.reserveWork(r, cost); e != nil {
				return 0, nil, e
			}
		}
		analysis, err := drift.Analyze(r.Context(), in)
		if err != nil {
			return 0, nil, err
		}
		return s.saveAnalysis(r, product.Drift, s.now(), in.AgentID, analysis, analysis.ShadowPrincipalDetected)
	})
	return s.withCores(h)
}

// storedDriftEvents reads the agent's stored events within the request's window for an
// analysis: 404 when the agent has none at all; 400 when the window holds fewer than 20 or
// more than 100,000 (the analysis limits; nothing is silently cut off).
func (s *Server) storedDriftEvents(r *http.Request, req *analyzeDriftRequest) ([]drift.Event, *Error) {
	p := principalFrom(r.Context())
	var from, to *time.Time
	if req.Window != nil {
		from, to = req.Window.From, req.Window.To
	}
	stored, err := s.cfg.Store.DriftEvents(r.Context(), p.Account.ID, p.Key.Mode, req.AgentID, from, to, drift.MaxEvents+1)
	if err != nil {
		return nil, fmtInternal(r.Context(), "read drift events", err)
	}
	inWindow := "stored events"
	if req.Window != nil {
		inWindow = "stored events in the window"
	}
	switch {
	case len(stored) == 0 && req.Window == nil:
		return nil, newError(CodeNotFound, "Agent %s has no stored events. Send them with POST /v1/drift/events, or inline in events.", req.AgentID)
	case len(stored) == 0:
		total, err := s.cfg.Store.CountDriftEvents(r.Context(), p.Account.ID, p.Key.Mode, req.AgentID)
		if err != nil {
			return nil, fmtInternal(r.Context(), "count drift events", err)
		}
		if total == 0 {
			return nil, newError(CodeNotFound, "Agent %s has no stored events. Send them with POST /v1/drift/events, or inline in events.", req.AgentID)
		}
		return nil, invalidField("window", "object (a window holding 20-100000 stored events)", "object", "Agent %s has no %s (it has %d in all).", req.AgentID, inWindow, total)
	case len(stored) < drift.MinEvents:
		field, expected := "events", "array (20-100000 events)"
		if req.Window != nil {
			field, expected = "window", "object (a window holding 20-100000 stored events)"
		}
		return nil, invalidField(field, expected, "missing", "Agent %s has %d %s; an analysis needs at least %d.", req.AgentID, len(stored), inWindow, drift.MinEvents)
	case len(stored) > drift.MaxEvents:
		return nil, invalidField("window", "object (a window holding 20-100000 stored events)", "object",
			"Agent %s has more than %d %s, the most one analysis takes; narrow the window (from, to).", req.AgentID, drift.MaxEvents, inWindow)
	}
	raw := store.DriftEventsJSON(stored)
	events, ok := drift.DecodeEvents(r.Context(), raw, 0)
	if ok {
		return events, nil
	}
	if err := r.Context().Err(); err != nil {
		return nil, apiError(r.Context(), err)
	}
	if err := json.Unmarshal(raw, &events); err != nil {
		return nil, fmtInternal(r.Context(), "decode stored drift events", err)
	}
	return events, nil
}

// driftTestItem makes one test-mode agent: its events get ids (so generating the same seed
// again adds nothing) and are returned as an analyze request and also stored in the
// account's test mode under the agent's id, so analysing by agent_id alone works too.
func driftTestItem(s *Server, r *http.Request, request, truth any, seed int64) (testItem, error) {
	in := request.(drift.Input)
	in.AgentID = fmt.Sprintf("test_agent_%x", uint64(seed))
	in.Events = append([]drift.Event(nil), in.Events...)
	for i := range in.Events {
		in.Events[i].ID = fmt.Sprintf("evt_%06d", i)
	}
	stored, err := driftEventRows(in.Events)
	if err != nil {
		return testItem{}, err
	}
	p := principalFrom(r.Context())
	added, err := s.cfg.Store.AddDriftEvents(r.Context(), p.Account.ID, p.Key.Mode, in.AgentID, stored, nil)
	if err != nil {
		return testItem{}, err
	}
	if added.Accepted > 0 {
		s.noteDriftEvents(r, in.AgentID) // a monitor of the test agent looks at them too
	}
	// The request is drift.Input itself: an option the generator does not set is absent
	// from the body, never null (docs/api-conventions.md, "Null").
	return testItem{Request: in, Expected: truth}, nil
}
