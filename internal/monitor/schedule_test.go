package monitor

import (
	"context"
	"testing"
	"time"

	"riskapi/internal/store"
)

// scheduleStore is a monitor and an event count, recording the looks Schedule queues.
type scheduleStore struct {
	m      *store.DriftMonitor
	total  int64
	queued []queuedLook
}

type queuedLook struct {
	seen int64
	soon bool
	at   time.Time
}

func (s *scheduleStore) DriftMonitorOfAgent(context.Context, string, store.Mode, string) (store.DriftMonitor, error) {
	if s.m == nil {
		return store.DriftMonitor{}, store.ErrNotFound
	}
	return *s.m, nil
}

func (s *scheduleStore) CountDriftEvents(context.Context, string, store.Mode, string) (int64, error) {
	return s.total, nil
}

func (s *scheduleStore) ScheduleDriftMonitorLook(_ context.Context, _ string, seen int64, soon bool, at time.Time) error {
	s.queued = append(s.queued, queuedLook{seen, soon, at})
	return nil
}

// The debounce rule: the first look once min_events are stored; then at once when
// max(50, 5 % of the events seen) new events came, else 60 s later; nothing for a paused
// monitor, an agent without one, or no new events.
func TestScheduleDebounce(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	monitorAt := func(status string, seen int64, looks int) *store.DriftMonitor {
		return &store.DriftMonitor{ID: "drm_1", Status: status, MinEvents: 200, EventsSeen: seen, Looks: looks}
	}
	cases := []struct {
		name  string
		m     *store.DriftMonitor
		total int64
		want  []queuedLook
	}{
		{"no monitor", nil, 500, nil},
		{"paused", monitorAt(store.MonitorPaused, 0, 0), 500, nil},
		{"below min_events", monitorAt(store.MonitorActive, 0, 0), 199, nil},
		{"first look", monitorAt(store.MonitorActive, 0, 0), 200, []queuedLook{{0, true, time.Time{}}}},
		{"nothing new", monitorAt(store.MonitorActive, 400, 3), 400, nil},
		{"49 new: in 60 s", monitorAt(store.MonitorActive, 400, 3), 449, []queuedLook{{400, false, now.Add(time.Minute)}}},
		{"50 new: now", monitorAt(store.MonitorActive, 400, 3), 450, []queuedLook{{400, true, time.Time{}}}},
		{"5 % of 10,000 is 500: 499 wait", monitorAt(store.MonitorActive, 10000, 9), 10499, []queuedLook{{10000, false, now.Add(time.Minute)}}},
		{"500 new of 10,000: now", monitorAt(store.MonitorActive, 10000, 9), 10500, []queuedLook{{10000, true, time.Time{}}}},
	}
	for _, c := range cases {
		st := &scheduleStore{m: c.m, total: c.total}
		if err := Schedule(context.Background(), st, "acct", store.ModeTest, "agent", now); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(st.queued) != len(c.want) || (len(c.want) == 1 && st.queued[0] != c.want[0]) {
			t.Errorf("%s: queued %+v, want %+v", c.name, st.queued, c.want)
		}
	}
}
