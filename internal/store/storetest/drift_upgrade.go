package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"riskapi/internal/store"
)

// DriftUpgradeAccount is the account of DriftUpgradeRows.
const DriftUpgradeAccount = "acct_upgrade"

// DriftUpgradeRows are drift_events rows as migration 11 stored them (account_id, mode,
// agent_id, event_id or nil, ts, payload), in insertion order: two agents of one account and
// mode interleaved, the first one's id repeated by the second, an event without an id, and the
// first agent's id in test mode.
var DriftUpgradeRows = [][]any{
	{DriftUpgradeAccount, "live", "agent_1", "e1", int64(1), []byte(`{"id":"e1"}`)},
	{DriftUpgradeAccount, "live", "agent_2", "e1", int64(2), []byte(`{"id":"e1","n":2}`)},
	{DriftUpgradeAccount, "live", "agent_1", nil, int64(3), []byte(`{}`)},
	{DriftUpgradeAccount, "test", "agent_1", "e2", int64(4), []byte(`{"id":"e2"}`)},
	{DriftUpgradeAccount, "live", "agent_1", "e3", int64(5), []byte(`{"id":"e3"}`)},
}

// CheckDriftUpgrade checks a store opened on a database that held DriftUpgradeRows before
// migration 12: each agent keeps its events in their order with their count, and a batch
// repeating a stored id skips it and appends the rest after the old events.
func CheckDriftUpgrade(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	payloads := func(mode store.Mode, agent string) []string {
		t.Helper()
		evs, err := s.DriftEvents(ctx, DriftUpgradeAccount, mode, agent, nil, nil, 100)
		if err != nil {
			t.Fatalf("DriftEvents(%s, %s): %v", mode, agent, err)
		}
		var out []string
		for _, ev := range evs {
			out = append(out, string(ev.Payload))
		}
		return out
	}
	counts := []struct {
		mode  store.Mode
		agent string
		want  int64
	}{{store.ModeLive, "agent_1", 3}, {store.ModeLive, "agent_2", 1}, {store.ModeTest, "agent_1", 1}, {store.ModeTest, "agent_2", 0}}
	for _, c := range counts {
		if n, err := s.CountDriftEvents(ctx, DriftUpgradeAccount, c.mode, c.agent); err != nil || n != c.want {
			t.Errorf("CountDriftEvents(%s, %s) after the upgrade = %d, %v; want %d", c.mode, c.agent, n, err, c.want)
		}
	}
	if got, want := payloads(store.ModeLive, "agent_1"), []string{`{"id":"e1"}`, `{}`, `{"id":"e3"}`}; !slices.Equal(got, want) {
		t.Errorf("agent_1's events after the upgrade = %v, want %v", got, want)
	}
	batch := []store.DriftEvent{
		{EventID: "e3", Timestamp: time.Unix(0, 6), Payload: []byte(`{"id":"e3","again":true}`)},
		{EventID: "e4", Timestamp: time.Unix(0, 7), Payload: []byte(`{"id":"e4"}`)},
	}
	got, err := s.AddDriftEvents(ctx, DriftUpgradeAccount, store.ModeLive, "agent_1", batch, nil)
	if err != nil {
		t.Fatalf("AddDriftEvents after the upgrade: %v", err)
	}
	if want := (store.DriftEventBatch{Accepted: 1, Duplicates: 1, Total: 4}); got != want {
		t.Errorf("AddDriftEvents after the upgrade = %+v, want %+v", got, want)
	}
	if got, want := payloads(store.ModeLive, "agent_1"), []string{`{"id":"e1"}`, `{}`, `{"id":"e3"}`, `{"id":"e4"}`}; !slices.Equal(got, want) {
		t.Errorf("agent_1's events after a new batch = %v, want %v", got, want)
	}
}
