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

// testSimulationLifecycle: queued → claimed (running, attempt 1) → updated → finished with its
// event; a finished simulation is never claimed again; reads are scoped to account and mode.
func testSimulationLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	endpoint := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, kindCascade))
	sim := newSimulation(acct, store.SimulationQueued, t0)
	if err := s.CreateSimulation(ctx, sim, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSimulation(ctx, sim, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateSimulation twice: %v, want ErrConflict", err)
	}
	got, err := s.Simulation(ctx, acct, store.ModeTest, sim.ID)
	if err != nil || got.Status != store.SimulationQueued || string(got.Request) != string(sim.Request) || string(got.Payload) != string(sim.Payload) {
		t.Fatalf("Simulation = %+v, %v", got, err)
	}
	if _, err := s.Simulation(ctx, acct, store.ModeLive, sim.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other mode: %v, want ErrNotFound", err)
	}
	if _, err := s.Simulation(ctx, ident.New("acct"), store.ModeTest, sim.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other account: %v, want ErrNotFound", err)
	}

	// Other tests share the store (and claim from one queue): claim until this one comes up.
	claimed := claimUntil(t, s, "runner-1", sim.ID, t0)
	if claimed.Status != store.SimulationRunning || claimed.Attempts != 1 || string(claimed.Request) != string(sim.Request) {
		t.Fatalf("claimed = %+v, want running, attempt 1, with its request", claimed)
	}
	if err := s.UpdateSimulation(ctx, sim.ID, "runner-2", []byte(`{}`), t0.Add(time.Minute), t0); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("UpdateSimulation by another runner: %v, want ErrLeaseLost", err)
	}
	if err := s.UpdateSimulation(ctx, sim.ID, "runner-1", []byte(`{"status":"running"}`), t0.Add(time.Minute), t0); err != nil {
		t.Fatal(err)
	}
	ev := newEvent(acct, store.ModeTest, kindCascade, t0)
	if err := s.FinishSimulation(ctx, sim.ID, "runner-1", store.SimulationQueued, []byte(`{}`), []byte(`{"summary":true}`), nil, t0); err == nil {
		t.Fatal("FinishSimulation with a non-final status succeeded")
	}
	if err := s.FinishSimulation(ctx, sim.ID, "runner-1", store.SimulationCompleted, []byte(`{"status":"completed"}`), []byte(`{"summary":true}`), &ev, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Simulation(ctx, acct, store.ModeTest, sim.ID)
	if got.Status != store.SimulationCompleted || string(got.Payload) != `{"status":"completed"}` || !got.UpdatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("after finish: %+v", got)
	}
	if ds := mustListDeliveries(t, s, acct, store.ModeTest, endpoint.ID); len(ds) != 1 || ds[0].EventID != ev.ID {
		t.Fatalf("deliveries after finish = %v, want the event's", deliveryIDs(ds))
	}
	// Lists show a finished simulation's summary in place of its payload.
	page, err := s.ListSimulations(ctx, acct, store.ModeTest, store.PageQuery{Limit: 10})
	if err != nil || len(page.Items) != 1 || string(page.Items[0].Payload) != `{"summary":true}` {
		t.Fatalf("ListSimulations after finish = %+v, %v; want the summary as payload", page.Items, err)
	}
	if err := s.FinishSimulation(ctx, sim.ID, "runner-1", store.SimulationFailed, []byte(`{}`), []byte(`{"summary":true}`), nil, t0); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("finishing twice: %v, want ErrLeaseLost", err)
	}
}

// claimUntil claims (far in the future, so every lease is expired) until it gets want, and
// hands back every other simulation it took.
func claimUntil(t *testing.T, s store.Store, owner, want string, now time.Time) store.Simulation {
	t.Helper()
	ctx := context.Background()
	for range 1000 {
		sim, err := s.ClaimSimulation(ctx, owner, time.Minute, now)
		if err != nil {
			t.Fatalf("ClaimSimulation looking for %s: %v", want, err)
		}
		if sim.ID == want {
			return sim
		}
		// Someone else's: the lease keeps it out of our way until it expires.
	}
	t.Fatalf("never claimed %s", want)
	return store.Simulation{}
}

// testSimulationLeases: an expired lease is claimed again with the attempt counted; the old
// holder has lost it; a release returns it to the queue without counting the attempt.
func testSimulationLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	// Far in the future, so this test's claims never meet the other tests' fresh leases twice.
	now := t0.Add(24 * 365 * time.Hour)
	sim := newSimulation(acct, store.SimulationQueued, now.Add(-time.Hour))
	if err := s.CreateSimulation(ctx, sim, nil); err != nil {
		t.Fatal(err)
	}
	first := claimUntil(t, s, "runner-a", sim.ID, now)
	// While the lease runs nobody else gets it.
	for {
		other, err := s.ClaimSimulation(ctx, "runner-b", time.Minute, now.Add(30*time.Second))
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if other.ID == sim.ID {
			t.Fatal("a simulation under lease was claimed again")
		}
	}
	second := claimUntil(t, s, "runner-b", sim.ID, now.Add(2*time.Minute))
	if second.Attempts != first.Attempts+1 {
		t.Fatalf("attempts after an expired lease = %d, want %d", second.Attempts, first.Attempts+1)
	}
	if err := s.UpdateSimulation(ctx, sim.ID, "runner-a", []byte(`{}`), now.Add(time.Hour), now); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the first runner after losing its lease: %v, want ErrLeaseLost", err)
	}
	if err := s.ReleaseSimulation(ctx, sim.ID, "runner-b", []byte(`{"status":"queued"}`), now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Simulation(ctx, acct, store.ModeTest, sim.ID)
	if got.Status != store.SimulationQueued || got.Attempts != first.Attempts || string(got.Payload) != `{"status":"queued"}` {
		t.Fatalf("after release: %+v, want queued with %d attempts", got, first.Attempts)
	}
	third := claimUntil(t, s, "runner-c", sim.ID, now.Add(2*time.Minute))
	if third.Attempts != first.Attempts+1 {
		t.Fatalf("attempts after a release = %d, want %d", third.Attempts, first.Attempts+1)
	}
}

// testListSimulations: newest first, without requests, scoped to account and mode.
func testListSimulations(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	var ids []string
	for i := range 12 {
		sim := newSimulation(acct, store.SimulationCompleted, t0.Add(time.Duration(i)*time.Second))
		if err := s.CreateSimulation(ctx, sim, nil); err != nil {
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

// testSimulationClaimConcurrent: concurrent claimers never take the same simulation.
func testSimulationClaimConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	now := t0.Add(2 * 24 * 365 * time.Hour)
	const n = 20
	for i := range n {
		if err := s.CreateSimulation(ctx, newSimulation(acct, store.SimulationQueued, now.Add(-time.Hour+time.Duration(i))), nil); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu    sync.Mutex
		taken = map[string]string{}
		wg    sync.WaitGroup
	)
	for c := range 4 {
		wg.Go(func() {
			owner := fmt.Sprintf("runner-%d", c)
			for {
				sim, err := s.ClaimSimulation(ctx, owner, time.Hour, now)
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, dup := taken[sim.ID]; dup {
					t.Errorf("%s claimed by %s and %s", sim.ID, prev, owner)
				}
				taken[sim.ID] = owner
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	mine := 0
	for id := range taken {
		if sim, err := s.Simulation(ctx, acct, store.ModeTest, id); err == nil && sim.Status == store.SimulationRunning {
			mine++
		}
	}
	if mine != n {
		t.Fatalf("claimed %d of this account's %d queued simulations", mine, n)
	}
}
