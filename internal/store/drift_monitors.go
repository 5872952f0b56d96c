package store

import (
	"context"
	"time"
)

// Drift monitor statuses.
const (
	MonitorActive = "active"
	MonitorPaused = "paused"
)

// DriftMonitor watches one agent's stored Drift events and looks again as they arrive
// (shared/spec/agents.md §2). There is at most one per account, mode and agent. The
// configuration (PrincipalID, Sensitivity, Baseline, MinEvents, Description, Status) is the
// client's; the rest is the monitor's state, written by RecordDriftMonitorLook.
type DriftMonitor struct {
	ID        string // drm_…
	AccountID string
	Mode      Mode
	AgentID   string
	// PrincipalID is the declared principal; "" when the monitor was created without one.
	PrincipalID string
	Sensitivity float64
	// Baseline is the analysis's baseline member as the client sent it (JSON), nil for the
	// default.
	Baseline    []byte
	MinEvents   int
	Description string
	Status      string // MonitorActive or MonitorPaused

	// EventsSeen is how many events the agent had at the last look (0 before the first; a
	// look of a history longer than one analysis analyses the newest of them); Looks counts the looks; Spent is the sum of the levels the looks so far have
	// run at (the alpha-spending rule, docs/methods/drift.md §11).
	EventsSeen      int64
	Looks           int
	Spent           float64
	LastEvaluatedAt *time.Time
	Alerts          []DriftMonitorAlert
	// Detected are the parties the last look detected: a party in it does not alert again
	// until a look no longer detects it.
	Detected []string

	CreatedAt time.Time
	UpdatedAt time.Time
}

// DriftMonitorAlert is a party's first detection by a monitor's look.
type DriftMonitorAlert struct {
	Party         string     `json:"party"`
	AnalysisID    string     `json:"analysis_id"`
	EventID       string     `json:"event_id"` // the drift.shadow_detected event
	RaisedAt      time.Time  `json:"raised_at"`
	ChangePointAt *time.Time `json:"change_point_at"`
}

// DriftMonitorPosition is a monitor's place in the newest-first order.
func DriftMonitorPosition(m DriftMonitor) Position {
	return Position{CreatedAt: m.CreatedAt, ID: m.ID}
}

// DriftMonitorStore keeps Drift monitors. Reads are scoped to an account and mode: a monitor
// of another account or mode is ErrNotFound.
type DriftMonitorStore interface {
	// CreateDriftMonitor inserts m, completing done's Idempotency-Key in the same transaction
	// when done is not nil; ErrConflict when the agent already has a monitor in m's mode.
	CreateDriftMonitor(ctx context.Context, m DriftMonitor, done *IdempotencyCompletion) error
	// DriftMonitor returns the monitor, or ErrNotFound.
	DriftMonitor(ctx context.Context, accountID string, mode Mode, id string) (DriftMonitor, error)
	// BackgroundDriftMonitor returns a monitor by id alone, for the job that looks; ErrNotFound
	// if there is none.
	BackgroundDriftMonitor(ctx context.Context, id string) (DriftMonitor, error)
	// DriftMonitorOfAgent returns the agent's monitor in that mode, or ErrNotFound.
	DriftMonitorOfAgent(ctx context.Context, accountID string, mode Mode, agentID string) (DriftMonitor, error)
	// ListDriftMonitors pages through the account's monitors of one mode, newest first; only
	// the agent's when agentID is not "".
	ListDriftMonitors(ctx context.Context, accountID string, mode Mode, agentID string, q PageQuery) (Page[DriftMonitor], error)
	// UpdateDriftMonitor stores m's configuration (Sensitivity, Description, Status,
	// UpdatedAt) and leaves its state alone; ErrNotFound when it does not exist.
	UpdateDriftMonitor(ctx context.Context, m DriftMonitor) error
	// DeleteDriftMonitor deletes the monitor (its looks' analyses stay); ErrNotFound if absent.
	DeleteDriftMonitor(ctx context.Context, accountID string, mode Mode, id string) error
	// RecordDriftMonitorLook stores a look in one transaction: m's state (EventsSeen, Looks,
	// Spent, LastEvaluatedAt, Alerts, Detected), the look's analysis a and, when ev is not
	// nil, its event with deliveries. The state is written only if the stored monitor still
	// has prevLooks looks: a look recorded meanwhile by another process makes this one
	// ErrConflict and stores nothing. ErrNotFound when the monitor was deleted.
	RecordDriftMonitorLook(ctx context.Context, m DriftMonitor, prevLooks int, a Analysis, ev *Event) error
	// ScheduleDriftMonitorLook queues a look of the monitor, whose last look saw seen events,
	// as a background job to run at at (now when at is zero). While a job of the same monitor,
	// seen and kind (soon or not) waits or runs, another is not queued.
	ScheduleDriftMonitorLook(ctx context.Context, monitorID string, seen int64, soon bool, at time.Time) error
}
