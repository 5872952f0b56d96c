package simulation

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/cascade"
	"riskapi/internal/ident"
	"riskapi/internal/product"
	"riskapi/internal/simulation/simulationtest"
	"riskapi/internal/store"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/testclock"
	"riskapi/internal/testlog"
)

// bundle is one test's account in a real SQLite store, with a clock for the stored times.
type bundle struct {
	t *testing.T
	// open opens another store on the bundle's database: it stands for another process.
	open    func() store.Store
	store   *simulationtest.Watch // the store, watched: tests wait for the runner's steps
	clock   *testclock.Clock
	logger  *slog.Logger
	account string
	mu      sync.Mutex
	owners  map[string]string // the account of each simulation queued
}

// setup is a bundle on a SQLite store of its own.
func setup(t *testing.T) *bundle {
	t.Helper()
	dir := sqlitetest.Dir(t)
	return setupOn(t, func() store.Store {
		st, err := sqlite.Open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// setupPostgres is a bundle on a PostgreSQL database of its own; it skips the test unless
// RISKAPI_TEST_POSTGRES_URL is set.
func setupPostgres(t *testing.T) *bundle {
	t.Helper()
	url := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	return setupOn(t, func() store.Store {
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func setupOn(t *testing.T, open func() store.Store) *bundle {
	t.Helper()
	b := &bundle{t: t, open: open, store: &simulationtest.Watch{Store: open()}, clock: testclock.New(time.Date(2026, 11, 21, 10, 20, 30, 0, time.UTC)),
		logger: slog.New(slog.NewJSONHandler(&testlog.Buffer{}, nil)), owners: map[string]string{}}
	b.account = b.newAccount()
	return b
}

// newAccount stores another account and returns its id.
func (b *bundle) newAccount() string {
	b.t.Helper()
	id := ident.New("acct")
	err := b.store.CreateAccount(context.Background(), store.Account{ID: id, Name: "Acme", Email: "risk@acme.test", Plan: store.PlanStarter,
		Region: store.RegionDefault, CreatedAt: b.clock.Now()})
	if err != nil {
		b.t.Fatal(err)
	}
	return id
}

// chain is a line of n banks where each is exposed to the previous one with more than its
// capital: one failure at the head takes the whole chain down.
func chain(n, simulations int, seed int64, scenarios ...cascade.ScenarioSpec) cascade.Input {
	one, two, recovery := 1.0, 2.0, 12.0
	in := cascade.Input{Simulations: &simulations, Seed: &seed, Scenarios: scenarios, Async: true}
	for i := range n {
		in.Network.Nodes = append(in.Network.Nodes, cascade.Node{ID: fmt.Sprintf("b%d", i), Capital: &one, Value: &one,
			Provider: fmt.Sprintf("p%d", i%2), RecoveryHours: &recovery})
		if i > 0 {
			in.Network.Edges = append(in.Network.Edges, cascade.Edge{Source: fmt.Sprintf("b%d", i-1), Target: fmt.Sprintf("b%d", i), Weight: &two})
		}
	}
	return in
}

// queue stores a queued test-mode simulation of in for the bundle's account, as POST
// /v1/cascade/simulate does with an async request, and returns its id.
func (b *bundle) queue(in cascade.Input) string { return b.queueFor(b.account, in) }

// queueFor is queue for another account.
func (b *bundle) queueFor(account string, in cascade.Input) string {
	b.t.Helper()
	now := b.clock.Now().UTC().Truncate(time.Millisecond)
	sim, err := Queued(store.Simulation{ID: ident.New(product.Cascade.Results.IDPrefix), AccountID: account, Mode: store.ModeTest,
		CreatedAt: now, UpdatedAt: now}, in)
	if err == nil {
		err = b.store.QueueSimulation(context.Background(), sim, 5, nil)
	}
	if err != nil {
		b.t.Fatal(err)
	}
	b.mu.Lock()
	b.owners[sim.ID] = account
	b.mu.Unlock()
	return sim.ID
}

// cancel cancels a queued or running simulation, as POST /v1/cascade/simulations/{id}/cancel
// does (without waking a runner).
func (b *bundle) cancel(id string) {
	b.t.Helper()
	sim := b.simulation(id)
	payload, err := Canceled(sim.Payload, b.clock.Now())
	if err == nil {
		_, err = b.store.CancelSimulation(context.Background(), sim.AccountID, sim.Mode, id, payload, b.clock.Now())
	}
	if err != nil {
		b.t.Fatal(err)
	}
}

// runner starts a Runner named owner, working chunks with the default concurrency, for the
// test and returns its stop function (a shutdown: running chunks go back to the queue).
func (b *bundle) runner(owner string) func() {
	_, stop := b.startRunner(RunnerConfig{Store: b.store, Owner: owner}, 0)
	return stop
}

// startRunner starts a Runner configured by cfg, with the bundle's logger and clock, and its
// River client working concurrency chunks at once (0: DefaultConcurrency), on cfg's store;
// it returns the runner and the function that stops both.
func (b *bundle) startRunner(cfg RunnerConfig, concurrency int) (*Runner, func()) {
	cfg.Logger, cfg.Now = b.logger, b.clock.Now
	r, err := NewRunner(cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	if concurrency == 0 {
		concurrency = DefaultConcurrency()
	}
	stopRun := simulationtest.Start(b.t, r.Run)
	stopJobs := simulationtest.StartJobs(b.t, cfg.Store.(store.Store).JobDriver(), r.Register, r.Periodic(), concurrency, 0)
	return r, func() { stopJobs(); stopRun() }
}

// stored is a simulation as the store holds it, with its object (as GET returns it) decoded.
type stored struct {
	store.Simulation
	object map[string]any
}

func (b *bundle) simulation(id string) stored {
	b.t.Helper()
	b.mu.Lock()
	account := b.owners[id]
	b.mu.Unlock()
	sim, err := b.store.Simulation(context.Background(), account, store.ModeTest, id)
	if err != nil {
		b.t.Fatal(err)
	}
	s := stored{Simulation: sim}
	if err := json.Unmarshal(sim.Payload, &s.object); err != nil {
		b.t.Fatalf("simulation %s: %v\n%s", id, err, sim.Payload)
	}
	return s
}

// await reads the simulation now and after each of the runner's steps until its object has
// status.
func (b *bundle) await(id, status string) stored {
	b.t.Helper()
	return b.awaitWithin(id, status, 20*time.Second)
}

// awaitWithin is await with its own deadline, for the simulations whose work alone takes
// tens of seconds under the race detector.
func (b *bundle) awaitWithin(id, status string, deadline time.Duration) stored {
	b.t.Helper()
	var s stored
	b.store.WaitFor(b.t, deadline, "simulation "+id+" "+status, func() bool {
		s = b.simulation(id)
		return s.object["status"] == status
	})
	return s
}

// completionEvents counts the cascade.simulation_completed events of the bundle's account.
func (b *bundle) completionEvents() int64 { return b.completionEventsOf(b.account) }

// completionEventsOf counts an account's cascade.simulation_completed events.
func (b *bundle) completionEventsOf(account string) int64 {
	b.t.Helper()
	page, err := b.store.ListEvents(context.Background(), account, store.ModeTest, product.Cascade.Event, store.PageQuery{Limit: 1})
	if err != nil {
		b.t.Fatal(err)
	}
	return page.TotalCount
}
