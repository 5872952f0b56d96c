package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

func newSimulation(accountID string, status string, at time.Time) store.Simulation {
	id := ident.New("csm")
	return store.Simulation{
		ID: id, AccountID: accountID, Mode: store.ModeTest, Status: status,
		Request:   []byte(`{"network":{"nodes":[{"id":"a"}],"edges":[]}}`),
		Payload:   fmt.Appendf(nil, `{"id":%q,"status":%q}`, id, status),
		CreatedAt: at, UpdatedAt: at,
	}
}

// testListSimulations: newest first, without requests, scoped to account and mode.
func testListSimulations(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	var ids []string
	for i := range 12 {
		sim := newSimulation(acct, store.SimulationCompleted, t0.Add(time.Duration(i)*time.Second))
		if err := s.CreateSimulation(ctx, sim, nil, nil); err != nil {
			t.Fatal(err)
		}
		ids = append([]string{sim.ID}, ids...)
	}
	all, err := store.CollectAll(func(q store.PageQuery) (store.Page[store.Simulation], error) {
		q.Limit = 5
		return s.ListSimulations(ctx, acct, store.ModeTest, q)
	}, store.SimulationPosition)
	if err != nil || len(all) != 12 {
		t.Fatalf("ListSimulations = %d, %v", len(all), err)
	}
	for i, sim := range all {
		if sim.ID != ids[i] || len(sim.Request) != 0 || len(sim.Payload) == 0 {
			t.Fatalf("item %d = %s (request %d bytes), want %s without its request", i, sim.ID, len(sim.Request), ids[i])
		}
	}
	if page, _ := s.ListSimulations(ctx, acct, store.ModeLive, store.PageQuery{Limit: 10}); page.TotalCount != 0 {
		t.Fatalf("live mode lists %d test simulations", page.TotalCount)
	}
}

// testSimulationQueueLimit: QueueSimulation refuses beyond max unfinished simulations of an
// account and mode; another account, the other mode, and the same account once one finished
// are accepted; UnfinishedSimulations counts them.
func testSimulationQueueLimit(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	const max = 3
	var ids []string
	for i := range max {
		sim := newSimulation(acct, store.SimulationQueued, t0.Add(time.Duration(i)))
		if err := s.QueueSimulation(ctx, sim, max, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sim.ID)
	}
	if err := s.QueueSimulation(ctx, newSimulation(acct, store.SimulationQueued, t0), max, nil); !errors.Is(err, store.ErrLimitReached) {
		t.Fatalf("queue beyond the limit: %v, want ErrLimitReached", err)
	}
	if err := s.QueueSimulation(ctx, newSimulation(ident.New("acct"), store.SimulationQueued, t0), max, nil); err != nil {
		t.Fatalf("another account: %v", err)
	}
	live := newSimulation(acct, store.SimulationQueued, t0)
	live.Mode = store.ModeLive
	if err := s.QueueSimulation(ctx, live, max, nil); err != nil {
		t.Fatalf("the other mode: %v", err)
	}
	if n, err := s.UnfinishedSimulations(ctx, acct, store.ModeTest); err != nil || n != max {
		t.Fatalf("UnfinishedSimulations = %d, %v; want %d", n, err, max)
	}
	if _, err := s.CancelSimulation(ctx, acct, store.ModeTest, ids[0], []byte(`{}`), t0); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.UnfinishedSimulations(ctx, acct, store.ModeTest); n != max-1 {
		t.Fatalf("UnfinishedSimulations after a cancel = %d, want %d", n, max-1)
	}
	if err := s.QueueSimulation(ctx, newSimulation(acct, store.SimulationQueued, t0), max, nil); err != nil {
		t.Fatalf("after one was canceled: %v", err)
	}
	SimulationQueueRace(t, 10, max, s)
}

// SimulationQueueRace has callers queue simulations concurrently in one account and mode
// against max, and checks that exactly max succeed and the others get ErrLimitReached. stores
// are used round-robin, so passing two stores opened on one database checks that processes,
// not only goroutines, are serialised.
func SimulationQueueRace(t *testing.T, callers, max int, stores ...store.Store) {
	t.Helper()
	ctx := context.Background()
	acct := ident.New("acct")
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			errs[i] = stores[i%len(stores)].QueueSimulation(ctx, newSimulation(acct, store.SimulationQueued, t0), max, nil)
		})
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrLimitReached):
			t.Errorf("queue %d: %v, want nil or ErrLimitReached", i, err)
		}
	}
	if n, err := stores[0].UnfinishedSimulations(ctx, acct, store.ModeTest); ok != max || n != max || err != nil {
		t.Fatalf("%d queued, %d unfinished (%v); want exactly %d", ok, n, err, max)
	}
}

// testSimulationCancel: a queued or running simulation is canceled, with its chunks dropped,
// and can no longer be started, stored into or finished; a finished one answers
// ErrSimulationFinished with itself; another account's or mode's, ErrNotFound.
func testSimulationCancel(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	now := t0.Add(4 * 24 * 365 * time.Hour)
	running := newSimulation(acct, store.SimulationQueued, now.Add(-time.Second))
	queued := newSimulation(acct, store.SimulationQueued, now)
	for _, sim := range []store.Simulation{running, queued} {
		if err := s.QueueSimulation(ctx, sim, 5, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.StartSimulation(ctx, running.ID, 3, 2, []byte(`{}`), now); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreSimulationChunk(ctx, running.ID, 1, []byte("x"), "w", func([]int) ([]byte, error) { return []byte(`{}`), nil }, now); err != nil {
		t.Fatal(err)
	}
	if stopped, err := s.StoppedSimulations(ctx, []string{running.ID, queued.ID}); err != nil || len(stopped) != 0 {
		t.Fatalf("StoppedSimulations before cancel = %v, %v; want none", stopped, err)
	}
	for _, id := range []string{queued.ID, running.ID} {
		got, err := s.CancelSimulation(ctx, acct, store.ModeTest, id, []byte(`{"status":"canceled"}`), now.Add(time.Second))
		if err != nil || got.Status != store.SimulationCanceled || string(got.Payload) != `{"status":"canceled"}` || !got.UpdatedAt.Equal(now.Add(time.Second)) {
			t.Fatalf("CancelSimulation(%s) = %+v, %v", id, got, err)
		}
	}
	if stopped, err := s.StoppedSimulations(ctx, []string{running.ID, queued.ID}); err != nil || len(stopped) != 2 {
		t.Fatalf("StoppedSimulations after cancel = %v, %v; want both", stopped, err)
	}
	if chunks, _ := s.SimulationChunks(ctx, running.ID); len(chunks) != 0 {
		t.Fatalf("%d chunks kept after cancel", len(chunks))
	}
	if _, err := s.StartSimulation(ctx, queued.ID, 3, 2, []byte(`{}`), now); !errors.Is(err, store.ErrSimulationFinished) {
		t.Fatalf("start after cancel: %v, want ErrSimulationFinished", err)
	}
	if err := s.StoreSimulationChunk(ctx, running.ID, 0, []byte("x"), "w", func([]int) ([]byte, error) { return []byte(`{}`), nil }, now); !errors.Is(err, store.ErrSimulationFinished) {
		t.Fatalf("store after cancel: %v, want ErrSimulationFinished", err)
	}
	if err := s.FinishSimulation(ctx, running.ID, store.SimulationCompleted, []byte(`{}`), nil, nil, now); !errors.Is(err, store.ErrSimulationFinished) {
		t.Fatalf("finish after cancel: %v, want ErrSimulationFinished", err)
	}
	got, err := s.CancelSimulation(ctx, acct, store.ModeTest, running.ID, []byte(`{}`), now)
	if !errors.Is(err, store.ErrSimulationFinished) || got.Status != store.SimulationCanceled || string(got.Payload) != `{"status":"canceled"}` {
		t.Fatalf("canceling twice = %+v, %v; want ErrSimulationFinished with the stored simulation", got, err)
	}
	done := newSimulation(acct, store.SimulationCompleted, now)
	if err := s.CreateSimulation(ctx, done, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.CancelSimulation(ctx, acct, store.ModeTest, done.ID, []byte(`{}`), now); !errors.Is(err, store.ErrSimulationFinished) || got.Status != store.SimulationCompleted {
		t.Fatalf("canceling a completed one = %+v, %v; want ErrSimulationFinished", got, err)
	}
	if _, err := s.CancelSimulation(ctx, ident.New("acct"), store.ModeTest, queued.ID, []byte(`{}`), now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another account: %v, want ErrNotFound", err)
	}
	if _, err := s.CancelSimulation(ctx, acct, store.ModeLive, queued.ID, []byte(`{}`), now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the other mode: %v, want ErrNotFound", err)
	}
}
