package monitor

import (
	"context"
	"errors"
	"time"

	"riskapi/internal/store"
)

// QuietWait is how long new events wait for a look when fewer than DueEvents have come: the
// spec's 60 s, counted from the first of them (a burst of ingestion calls queues one look).
const QuietWait = 60 * time.Second

// DueEvents is how many new events make a look due at once for a monitor whose last look saw
// seen events: max(50, ⌈5 % of seen⌉). The share keeps a long-lived agent's looks (each an
// analysis of all its events) from growing quadratically in cost.
func DueEvents(seen int64) int64 { return max(50, (seen*5+99)/100) }

// ScheduleStore is what Schedule reads and writes.
type ScheduleStore interface {
	DriftMonitorOfAgent(ctx context.Context, accountID string, mode store.Mode, agentID string) (store.DriftMonitor, error)
	CountDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string) (int64, error)
	ScheduleDriftMonitorLook(ctx context.Context, monitorID string, seen int64, soon bool, at time.Time) error
}

// Schedule queues the look of the agent's monitor after its events changed: now when at
// least DueEvents new events came (or the first look's min_events are there), else QuietWait
// from now; nothing when the agent has no active monitor, no new events, or fewer than the
// monitor's min_events. The look's job is unique while it waits, in the database every
// process shares, so concurrent ingestion calls queue one look.
func Schedule(ctx context.Context, st ScheduleStore, accountID string, mode store.Mode, agentID string, now time.Time) error {
	m, err := st.DriftMonitorOfAgent(ctx, accountID, mode, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if m.Status != store.MonitorActive {
		return nil
	}
	total, err := st.CountDriftEvents(ctx, accountID, mode, agentID)
	if err != nil {
		return err
	}
	if total <= m.EventsSeen || total < int64(m.MinEvents) {
		return nil
	}
	if m.Looks == 0 || total-m.EventsSeen >= DueEvents(m.EventsSeen) {
		return st.ScheduleDriftMonitorLook(ctx, m.ID, m.EventsSeen, true, time.Time{})
	}
	return st.ScheduleDriftMonitorLook(ctx, m.ID, m.EventsSeen, false, now.Add(QuietWait))
}
