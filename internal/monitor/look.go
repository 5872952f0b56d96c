package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/riverqueue/river"

	"riskapi/drift"
	"riskapi/engine"
	"riskapi/internal/event"
	"riskapi/internal/ident"
	"riskapi/internal/jobs"
	"riskapi/internal/product"
	"riskapi/internal/resource"
	"riskapi/internal/store"
)

// LookStore is what a look reads and writes.
type LookStore interface {
	BackgroundDriftMonitor(ctx context.Context, id string) (store.DriftMonitor, error)
	CountDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string) (int64, error)
	DriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, from, to *time.Time, limit int) ([]store.DriftEvent, error)
	LatestDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, limit int) ([]store.DriftEvent, error)
	RecordDriftMonitorLook(ctx context.Context, m store.DriftMonitor, prevLooks int, a store.Analysis, ev *store.Event) error
}

// Looker works the monitors' look jobs.
type Looker struct {
	Store LookStore
	// Now is the clock the looks and alerts are stamped with.
	Now func() time.Time
	// Notify wakes the webhook dispatcher after a look stored an event; nil for none.
	Notify func()
	Logger *slog.Logger
}

// Register adds the look worker to River's workers.
func (l *Looker) Register(workers *river.Workers) error {
	return river.AddWorkerSafely(workers, river.WorkFunc(l.work))
}

func (l *Looker) work(ctx context.Context, job *river.Job[jobs.DriftMonitorLook]) error {
	more, err := l.Look(ctx, job.Args.MonitorID)
	if err != nil {
		return err
	}
	if more {
		// Events came while this look ran: look again once they had their 60 s (a due look
		// queued meanwhile was folded into this job, which River held unique while running).
		return river.JobSnooze(QuietWait)
	}
	return nil
}

// Look runs one look of the monitor if it has events it has not seen: it analyses the
// agent's stored events at the look's level, stores the analysis (with monitor_id) and the
// monitor's new state, and — when parties alert — the drift.shadow_detected event, all in
// one transaction. It reports whether events arrived that the look did not see. A monitor
// that is gone or paused, or has fewer events than its min_events, is left as it is.
func (l *Looker) Look(ctx context.Context, monitorID string) (more bool, err error) {
	m, err := l.Store.BackgroundDriftMonitor(ctx, monitorID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if m.Status != store.MonitorActive {
		return false, nil
	}
	total, err := l.Store.CountDriftEvents(ctx, m.AccountID, m.Mode, m.AgentID)
	if err != nil {
		return false, err
	}
	if total <= m.EventsSeen || total < int64(m.MinEvents) {
		return false, nil
	}
	in, err := lookInput(m)
	if err != nil {
		return false, err
	}
	stored, err := l.lookEvents(ctx, m, in.Baseline, total)
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(store.DriftEventsJSON(stored), &in.Events); err != nil {
		return false, fmt.Errorf("decode stored drift events: %w", err)
	}
	now := l.Now().UTC().Truncate(time.Millisecond)
	st := drift.MonitorState{EventsSeen: int(m.EventsSeen), Spent: m.Spent, Detected: m.Detected}
	a, next, alerts, err := drift.MonitorLook(ctx, in, int(total), st, m.Sensitivity, m.MinEvents)
	var invalid *engine.InputError
	if errors.As(err, &invalid) {
		// The stored events or the monitor's baseline cannot be analysed (a baseline.until
		// with no event on one side of it): nothing to retry until more events come.
		l.Logger.Warn("drift monitor: look cannot analyse the agent's events", "monitor_id", m.ID, "err", err)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	analysis, ev, err := lookRecords(m, a, len(alerts) > 0, now)
	if err != nil {
		return false, err
	}
	prevLooks := m.Looks
	m.EventsSeen, m.Spent, m.Detected = int64(next.EventsSeen), next.Spent, next.Detected
	m.Looks++
	m.LastEvaluatedAt = &now
	for _, sp := range alerts {
		m.Alerts = append(m.Alerts, store.DriftMonitorAlert{Party: sp.Party, AnalysisID: analysis.ID, EventID: ev.ID,
			RaisedAt: now, ChangePointAt: sp.ChangePointAt})
	}
	err = l.Store.RecordDriftMonitorLook(ctx, m, prevLooks, analysis, ev)
	switch {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return false, nil // another process looked first, or the monitor was deleted
	case err != nil:
		return false, err
	}
	if ev != nil && l.Notify != nil {
		l.Notify()
	}
	after, err := l.Store.CountDriftEvents(ctx, m.AccountID, m.Mode, m.AgentID)
	if err != nil {
		return false, err
	}
	return after > m.EventsSeen, nil
}

// lookInput is the analysis input of a look: the monitor's principal and baseline, the
// agent's stored events (decoded as one array: much cheaper than one decode per event).
// baselineShare is the part of a look's events that the baseline period of a monitor with
// baseline.until may take when the agent has more events than one analysis takes: the
// default baseline's 30 %.
const baselineShare = drift.MaxEvents * 3 / 10

// lookEvents reads the events a look analyses: all the agent's events while they fit one
// analysis (drift.MaxEvents), else the newest drift.MaxEvents. For a monitor whose baseline is
// the events before baseline.until, a longer history is the first events before until (at
// most baselineShare) followed by the newest events from until on, so the look still has its
// baseline. Which events are read depends only on counts and timestamps, never on their
// content, so each look stays a test at its level (docs/methods/drift.md §11.3).
func (l *Looker) lookEvents(ctx context.Context, m store.DriftMonitor, baseline *drift.Baseline, total int64) ([]store.DriftEvent, error) {
	if total <= drift.MaxEvents {
		return l.Store.DriftEvents(ctx, m.AccountID, m.Mode, m.AgentID, nil, nil, drift.MaxEvents)
	}
	if baseline == nil || baseline.Until == nil {
		return l.Store.LatestDriftEvents(ctx, m.AccountID, m.Mode, m.AgentID, drift.MaxEvents)
	}
	before, err := l.Store.DriftEvents(ctx, m.AccountID, m.Mode, m.AgentID, nil, baseline.Until, baselineShare)
	if err != nil {
		return nil, err
	}
	latest, err := l.Store.LatestDriftEvents(ctx, m.AccountID, m.Mode, m.AgentID, drift.MaxEvents-len(before))
	if err != nil {
		return nil, err
	}
	// The newest events from until on; those before it that came late are in the baseline
	// part or, past its share, left out.
	for _, ev := range latest {
		if !ev.Timestamp.Before(*baseline.Until) {
			before = append(before, ev)
		}
	}
	return before, nil
}

// lookInput is the analysis input of a look without its events: the monitor's agent,
// principal and baseline.
func lookInput(m store.DriftMonitor) (drift.Input, error) {
	in := drift.Input{AgentID: m.AgentID}
	if m.PrincipalID != "" {
		p := m.PrincipalID
		in.PrincipalID = &p
	}
	if len(m.Baseline) > 0 {
		var b drift.Baseline
		if err := json.Unmarshal(m.Baseline, &b); err != nil {
			return drift.Input{}, fmt.Errorf("monitor %s baseline: %w", m.ID, err)
		}
		in.Baseline = &b
	}
	return in, nil
}

// lookHeader is the members a look's analysis starts with: the stored analysis's header and
// the monitor that made it.
type lookHeader struct {
	resource.Header
	MonitorID string `json:"monitor_id"`
}

// lookRecords are the stored analysis of a look and, when it alerts, its event.
func lookRecords(m store.DriftMonitor, a drift.Analysis, alert bool, now time.Time) (store.Analysis, *store.Event, error) {
	p := product.Drift
	h := lookHeader{Header: resource.Header{ID: ident.New(p.Results.IDPrefix), Object: p.Results.Object,
		Livemode: m.Mode == store.ModeLive, CreatedAt: resource.FormatTime(now)}, MonitorID: m.ID}
	payload, err := resource.Join(h, a)
	if err != nil {
		return store.Analysis{}, nil, err
	}
	rec := store.Analysis{ID: h.ID, AccountID: m.AccountID, Mode: m.Mode, Product: p.Name, Subject: m.AgentID,
		Payload: payload, CreatedAt: now}
	if !alert {
		return rec, nil, nil
	}
	ev, err := event.New(m.AccountID, m.Mode, p.Event, jsontext.Value(payload), now)
	if err != nil {
		return store.Analysis{}, nil, err
	}
	return rec, &ev, nil
}
