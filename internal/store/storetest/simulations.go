package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	if err := s.CreateSimulation(ctx, sim, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSimulation(ctx, sim, nil, nil); !errors.Is(err, store.ErrConflict) {
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
	if err := s.CreateSimulation(ctx, sim, nil, nil); err != nil {
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

// testSimulationClaimConcurrent: concurrent claimers never take the same simulation, nor two
// of one account.
func testSimulationClaimConcurrent(t *testing.T, s store.Store) {
	SimulationClaimRace(t, 4, s)
}

// SimulationClaimRace has claimers claim concurrently from 10 accounts with 3 queued
// simulations each, and checks that every claim is of a different simulation and a different
// account (one runs per account at a time), that all 10 accounts are served, and that once
// those finish the next 10 are claimed the same way. stores are used round-robin, so passing
// two stores opened on one database checks that processes, not only goroutines, are
// serialised.
func SimulationClaimRace(t *testing.T, claimers int, stores ...store.Store) {
	t.Helper()
	ctx := context.Background()
	now := t0.Add(2 * 24 * 365 * time.Hour)
	const accounts, each = 10, 3
	for i := range accounts {
		acct := ident.New("acct")
		for j := range each {
			sim := newSimulation(acct, store.SimulationQueued, now.Add(-time.Hour+time.Duration(i*each+j)*time.Millisecond))
			if err := stores[0].CreateSimulation(ctx, sim, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	taken := map[string]bool{}
	for round := range each {
		var (
			mu      sync.Mutex
			claimed []store.Simulation
			wg      sync.WaitGroup
		)
		for c := range claimers {
			wg.Go(func() {
				s := stores[c%len(stores)]
				for {
					sim, err := s.ClaimSimulation(ctx, fmt.Sprintf("runner-%d", c), time.Hour, now)
					if errors.Is(err, store.ErrNotFound) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					claimed = append(claimed, sim)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		running := map[string]bool{}
		for _, sim := range claimed {
			if taken[sim.ID] {
				t.Errorf("round %d: %s claimed twice", round, sim.ID)
			}
			if running[sim.AccountID] {
				t.Errorf("round %d: two simulations of %s claimed while one runs", round, sim.AccountID)
			}
			taken[sim.ID], running[sim.AccountID] = true, true
		}
		if len(claimed) != accounts {
			t.Fatalf("round %d: %d claims, want one per account (%d)", round, len(claimed), accounts)
		}
		for _, sim := range claimed {
			if err := stores[0].FinishSimulation(ctx, sim.ID, "", store.SimulationCompleted, nil, nil, nil, now); !errors.Is(err, store.ErrLeaseLost) {
				t.Fatalf("finish by a runner that does not hold it: %v, want ErrLeaseLost", err)
			}
		}
		for c := range claimers {
			for _, sim := range claimed {
				_ = stores[0].FinishSimulation(ctx, sim.ID, fmt.Sprintf("runner-%d", c), store.SimulationCompleted, nil, nil, nil, now)
			}
		}
	}
}

// testSimulationFairness: the claim order is round-robin by account (the one served least
// recently first, then its oldest simulation), one simulation of an account runs at a time,
// and the other mode is another queue.
func testSimulationFairness(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := t0.Add(3 * 24 * 365 * time.Hour)
	a, b, c := ident.New("acct"), ident.New("acct"), ident.New("acct")
	// Every time below is in milliseconds after now, the store's resolution.
	ms := func(at int) time.Time { return now.Add(time.Duration(at) * time.Millisecond) }
	queue := func(acct string, mode store.Mode, at int) string {
		sim := newSimulation(acct, store.SimulationQueued, ms(at))
		sim.Mode = mode
		if err := s.CreateSimulation(ctx, sim, nil, nil); err != nil {
			t.Fatal(err)
		}
		return sim.ID
	}
	a1, a2, a3 := queue(a, store.ModeTest, 1), queue(a, store.ModeTest, 2), queue(a, store.ModeTest, 3)
	b1 := queue(b, store.ModeTest, 4)
	aLive := queue(a, store.ModeLive, 5)
	claim := func(at int) string {
		t.Helper()
		sim, err := s.ClaimSimulation(ctx, "runner", time.Minute, ms(at))
		if errors.Is(err, store.ErrNotFound) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return sim.ID
	}
	finish := func(id string, at int) {
		t.Helper()
		if err := s.FinishSimulation(ctx, id, "runner", store.SimulationCompleted, nil, nil, nil, ms(at)); err != nil {
			t.Fatal(err)
		}
	}
	// Nobody has been served: oldest first, one per account and mode.
	if got := []string{claim(10), claim(11), claim(12), claim(13)}; !slices.Equal(got, []string{a1, b1, aLive, ""}) {
		t.Fatalf("first claims %v, want a1 b1 a-live, then nothing while each account runs one", got)
	}
	// c, never served, goes before a, served at 10, though a's next simulation is older.
	c1 := queue(c, store.ModeTest, 20)
	finish(a1, 21)
	if got := claim(22); got != c1 {
		t.Fatalf("after a's first: claimed %s, want c's (never served) before a's second %s", got, a2)
	}
	if got := claim(23); got != a2 {
		t.Fatalf("then %s, want a's second", got)
	}
	// b, served at 11, before a, served at 23, once both are free again.
	b2 := queue(b, store.ModeTest, 24)
	finish(a2, 25)
	finish(b1, 26)
	if got := claim(27); got != b2 {
		t.Fatalf("claimed %s, want b's second (b served longer ago than a)", got)
	}
	if got := claim(28); got != a3 {
		t.Fatalf("claimed %s, want a's third", got)
	}
	// A running simulation whose lease expired is claimed again, even though a has another
	// queued: it is a's oldest, and a has nothing running under a live lease any more.
	a4 := queue(a, store.ModeTest, 29)
	for i, id := range []string{aLive, c1, b2} { // every other lease would expire too
		finish(id, 30+i)
	}
	if got := claim(28 + 60_001); got != a3 { // a3's lease of a minute from 28 has expired
		t.Fatalf("after a's lease expired: claimed %s, want a's third again, not %s", got, a4)
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

// testSimulationCancel: a queued simulation canceled is never claimed; a running one is lost
// to its runner, which can no longer update, finish or release it; a finished one answers
// ErrSimulationFinished; another account's or an unknown id, ErrNotFound.
func testSimulationCancel(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	now := t0.Add(4 * 24 * 365 * time.Hour)
	queued := newSimulation(acct, store.SimulationQueued, now)
	running := newSimulation(acct, store.SimulationQueued, now.Add(-time.Second))
	for _, sim := range []store.Simulation{queued, running} {
		if err := s.CreateSimulation(ctx, sim, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := claimUntil(t, s, "runner", running.ID, now); got.ID != running.ID {
		t.Fatal("the older simulation was not claimed first")
	}
	if lost, err := s.LostSimulations(ctx, "runner", []string{running.ID}); err != nil || len(lost) != 0 {
		t.Fatalf("LostSimulations while held = %v, %v; want none", lost, err)
	}
	for _, id := range []string{queued.ID, running.ID} {
		got, err := s.CancelSimulation(ctx, acct, store.ModeTest, id, []byte(`{"status":"canceled"}`), now.Add(time.Second))
		if err != nil || got.Status != store.SimulationCanceled || string(got.Payload) != `{"status":"canceled"}` || !got.UpdatedAt.Equal(now.Add(time.Second)) {
			t.Fatalf("CancelSimulation(%s) = %+v, %v", id, got, err)
		}
	}
	if lost, err := s.LostSimulations(ctx, "runner", []string{running.ID, queued.ID}); err != nil || len(lost) != 2 {
		t.Fatalf("LostSimulations after cancel = %v, %v; want both", lost, err)
	}
	if err := s.UpdateSimulation(ctx, running.ID, "runner", []byte(`{}`), now.Add(time.Hour), now); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("update after cancel: %v, want ErrLeaseLost", err)
	}
	if err := s.FinishSimulation(ctx, running.ID, "runner", store.SimulationCompleted, []byte(`{}`), nil, nil, now); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("finish after cancel: %v, want ErrLeaseLost", err)
	}
	if err := s.ReleaseSimulation(ctx, running.ID, "runner", []byte(`{}`), now); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("release after cancel: %v, want ErrLeaseLost", err)
	}
	if sim, err := s.ClaimSimulation(ctx, "runner", time.Minute, now.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim after cancel: %s, %v; want nothing", sim.ID, err)
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
