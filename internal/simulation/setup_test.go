package simulation

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/cascade"
	"riskapi/internal/ident"
	"riskapi/internal/product"
	"riskapi/internal/simulation/simulationtest"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/testclock"
	"riskapi/internal/testlog"
)

// bundle is one test's account in a real SQLite store, with a clock that leases follow.
type bundle struct {
	t       *testing.T
	store   *simulationtest.Watch // the store, watched: tests wait for the runner's steps
	clock   *testclock.Clock
	logger  *slog.Logger
	account string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{t: t, store: &simulationtest.Watch{Store: st}, clock: testclock.New(time.Date(2026, 11, 21, 10, 20, 30, 0, time.UTC)),
		logger: slog.New(slog.NewJSONHandler(&testlog.Buffer{}, nil)), account: ident.New("acct")}
	err = st.CreateAccount(ctx, store.Account{ID: b.account, Name: "Acme", Email: "risk@acme.test", Plan: store.PlanStarter,
		Region: store.RegionDefault, CreatedAt: b.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return b
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

// queue stores a queued test-mode simulation of in, as POST /v1/cascade/simulate does with
// an async request, and returns its id.
func (b *bundle) queue(in cascade.Input) string {
	b.t.Helper()
	now := b.clock.Now().UTC().Truncate(time.Millisecond)
	sim, err := Queued(store.Simulation{ID: ident.New(product.Cascade.Results.IDPrefix), AccountID: b.account, Mode: store.ModeTest,
		CreatedAt: now, UpdatedAt: now}, in)
	if err == nil {
		err = b.store.CreateSimulation(context.Background(), sim, nil)
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return sim.ID
}

// runner starts a Runner named owner for the test and returns its stop function, which
// waits for the runner to hand back what it holds.
func (b *bundle) runner(owner string) func() {
	r, err := NewRunner(RunnerConfig{Store: b.store, Logger: b.logger, Owner: owner, Now: b.clock.Now})
	if err != nil {
		b.t.Fatal(err)
	}
	return simulationtest.Start(b.t, r.Run)
}

// stored is a simulation as the store holds it, with its object (as GET returns it) decoded.
type stored struct {
	store.Simulation
	object map[string]any
}

func (b *bundle) simulation(id string) stored {
	b.t.Helper()
	sim, err := b.store.Simulation(context.Background(), b.account, store.ModeTest, id)
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
	var s stored
	b.store.WaitFor(b.t, 20*time.Second, "simulation "+id+" "+status, func() bool {
		s = b.simulation(id)
		return s.object["status"] == status
	})
	return s
}

// completionEvents counts the account's cascade.simulation_completed events.
func (b *bundle) completionEvents() int64 {
	b.t.Helper()
	page, err := b.store.ListEvents(context.Background(), b.account, store.ModeTest, product.Cascade.Event, store.PageQuery{Limit: 1})
	if err != nil {
		b.t.Fatal(err)
	}
	return page.TotalCount
}
