package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"riskapi/internal/ident"
	"riskapi/internal/jobs"
	"riskapi/internal/store"
)

// queuedJob is one River job of a simulation, as the store queued it.
type queuedJob struct {
	kind  string
	chunk int
	queue string
}

// simulationJobs lists the River jobs queued for simulation id, in insertion order.
func simulationJobs(t *testing.T, s store.Store, id string) []queuedJob {
	t.Helper()
	c, err := jobs.NewInserter(s.JobDriver())
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.JobList(context.Background(), river.NewJobListParams().
		Kinds(jobs.SimulationChunk{}.Kind(), jobs.SimulationMerge{}.Kind()).First(10_000))
	if err != nil {
		t.Fatal(err)
	}
	var out []queuedJob
	for _, j := range res.Jobs {
		var args jobs.SimulationChunk
		if err := json.Unmarshal(j.EncodedArgs, &args); err != nil {
			t.Fatal(err)
		}
		if args.SimulationID == id {
			out = append(out, queuedJob{kind: j.Kind, chunk: args.Chunk, queue: j.Queue})
		}
	}
	return out
}

func chunkJobs(js []queuedJob) (chunks []int, merges int) {
	for _, j := range js {
		if j.kind == (jobs.SimulationMerge{}).Kind() {
			merges++
		} else {
			chunks = append(chunks, j.chunk)
		}
	}
	slices.Sort(chunks)
	return chunks, merges
}

// testSimulationLifecycle: queued and dispatched (its first chunk's job) → started (running,
// chunks 1 … window queued) → chunks stored with progress, each queueing the next, the last
// the merge → finished with its event, its chunks dropped; reads are scoped to account and
// mode; a finished simulation cannot be started, stored into or finished again.
func testSimulationLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	acct := ident.New("acct")
	endpoint := mustCreateEndpoint(t, s, newEndpoint(acct, store.ModeTest, kindCascade))
	sim := newSimulation(acct, store.SimulationQueued, t0)
	if err := s.QueueSimulation(ctx, sim, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSimulation(ctx, sim, nil, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateSimulation of a queued id: %v, want ErrConflict", err)
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
	if js := simulationJobs(t, s, sim.ID); len(js) != 1 || js[0].chunk != 0 || js[0].queue != jobs.QueueSimulationStarts {
		t.Fatalf("jobs after queueing = %+v, want chunk 0 in the starts queue", js)
	}

	const chunks, window = 5, 2
	attempts, err := s.StartSimulation(ctx, sim.ID, chunks, window, []byte(`{"status":"running"}`), t0)
	if err != nil || attempts != 1 {
		t.Fatalf("StartSimulation = %d, %v; want attempt 1", attempts, err)
	}
	if got, _ := s.BackgroundSimulation(ctx, sim.ID); got.Status != store.SimulationRunning || string(got.Request) != string(sim.Request) {
		t.Fatalf("after start: %+v, want running with its request", got)
	}
	if cs, _ := chunkJobs(simulationJobs(t, s, sim.ID)); !slices.Equal(cs, []int{0, 1, 2}) {
		t.Fatalf("chunk jobs after start = %v, want 0, 1, 2", cs)
	}
	// An attempt that starts it again counts, and queues nothing more.
	if attempts, err := s.StartSimulation(ctx, sim.ID, chunks, window, []byte(`{}`), t0); err != nil || attempts != 2 {
		t.Fatalf("StartSimulation again = %d, %v; want attempt 2", attempts, err)
	}
	if cs, _ := chunkJobs(simulationJobs(t, s, sim.ID)); len(cs) != 3 {
		t.Fatalf("chunk jobs after a second start = %v, want still 3", cs)
	}
	store1 := func(c int, body string) error {
		return s.StoreSimulationChunk(ctx, sim.ID, c, []byte(body), "worker-a", func(done []int) ([]byte, error) {
			return fmt.Appendf(nil, `{"done":%d}`, len(done)), nil
		}, t0)
	}
	for _, c := range []int{2, 0, 1} {
		if err := store1(c, fmt.Sprintf("chunk %d", c)); err != nil {
			t.Fatal(err)
		}
	}
	// Stored again (a re-executed chunk): the first bytes stay.
	if err := store1(1, "other bytes"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Simulation(ctx, acct, store.ModeTest, sim.ID); string(got.Payload) != `{"done":3}` {
		t.Fatalf("payload after 3 chunks = %s", got.Payload)
	}
	cs, merges := chunkJobs(simulationJobs(t, s, sim.ID))
	if merges != 0 || len(cs) != 5 {
		t.Fatalf("jobs after 3 chunks stored = %v and %d merges; want chunks 0 … 4 and no merge", cs, merges)
	}
	if err := store1(chunks, "x"); err == nil {
		t.Fatal("a chunk out of range was stored")
	}
	for _, c := range []int{4, 3} {
		if err := store1(c, fmt.Sprintf("chunk %d", c)); err != nil {
			t.Fatal(err)
		}
	}
	if _, merges := chunkJobs(simulationJobs(t, s, sim.ID)); merges != 1 {
		t.Fatalf("merge jobs once every chunk is stored = %d, want 1", merges)
	}
	stored, err := s.SimulationChunks(ctx, sim.ID)
	if err != nil || len(stored) != chunks {
		t.Fatalf("SimulationChunks = %d, %v", len(stored), err)
	}
	for i, c := range stored {
		if c.Chunk != i || string(c.Body) != fmt.Sprintf("chunk %d", i) || c.Worker != "worker-a" {
			t.Fatalf("chunk %d = %+v", i, c)
		}
	}

	ev := newEvent(acct, store.ModeTest, kindCascade, t0)
	if err := s.FinishSimulation(ctx, sim.ID, store.SimulationQueued, []byte(`{}`), nil, nil, t0); err == nil {
		t.Fatal("FinishSimulation with a non-final status succeeded")
	}
	if err := s.FinishSimulation(ctx, sim.ID, store.SimulationCompleted, []byte(`{"status":"completed"}`), []byte(`{"summary":true}`), &ev, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Simulation(ctx, acct, store.ModeTest, sim.ID)
	if got.Status != store.SimulationCompleted || string(got.Payload) != `{"status":"completed"}` || !got.UpdatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("after finish: %+v", got)
	}
	if ds := mustListDeliveries(t, s, acct, store.ModeTest, endpoint.ID); len(ds) != 1 || ds[0].EventID != ev.ID {
		t.Fatalf("deliveries after finish = %v, want the event's", deliveryIDs(ds))
	}
	if stored, _ := s.SimulationChunks(ctx, sim.ID); len(stored) != 0 {
		t.Fatalf("%d chunks kept after finish", len(stored))
	}
	page, err := s.ListSimulations(ctx, acct, store.ModeTest, store.PageQuery{Limit: 10})
	if err != nil || len(page.Items) != 1 || string(page.Items[0].Payload) != `{"summary":true}` {
		t.Fatalf("ListSimulations after finish = %+v, %v; want the summary as payload", page.Items, err)
	}
	if err := s.FinishSimulation(ctx, sim.ID, store.SimulationFailed, []byte(`{}`), nil, &ev, t0); !errors.Is(err, store.ErrSimulationFinished) {
		t.Fatalf("finishing twice: %v, want ErrSimulationFinished", err)
	}
	if _, err := s.StartSimulation(ctx, sim.ID, chunks, window, []byte(`{}`), t0); !errors.Is(err, store.ErrSimulationFinished) {
		t.Fatalf("starting a finished one: %v, want ErrSimulationFinished", err)
	}
	if err := store1(0, "x"); !errors.Is(err, store.ErrSimulationFinished) {
		t.Fatalf("storing into a finished one: %v, want ErrSimulationFinished", err)
	}
	if stopped, err := s.StoppedSimulations(ctx, []string{sim.ID, "csm_unknown"}); err != nil || len(stopped) != 2 {
		t.Fatalf("StoppedSimulations = %v, %v; want both", stopped, err)
	}
	if _, err := s.BackgroundSimulation(ctx, "csm_unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("BackgroundSimulation of an unknown id: %v, want ErrNotFound", err)
	}
}

// testSimulationDispatch: an account has one simulation dispatched at a time, whatever it
// queues; another account's is dispatched beside it; when the dispatched one finishes (or is
// canceled) the account's oldest queued one is dispatched; the sweep dispatches what was
// left undispatched (CreateSimulation of a queued one, as an older version left them).
func testSimulationDispatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := ident.New("acct"), ident.New("acct")
	var as []store.Simulation
	for i := range 3 {
		sim := newSimulation(a, store.SimulationQueued, t0.Add(time.Duration(i)*time.Second))
		if err := s.QueueSimulation(ctx, sim, 5, nil); err != nil {
			t.Fatal(err)
		}
		as = append(as, sim)
	}
	bs := newSimulation(b, store.SimulationQueued, t0)
	if err := s.QueueSimulation(ctx, bs, 5, nil); err != nil {
		t.Fatal(err)
	}
	dispatched := func(sim store.Simulation) bool { return len(simulationJobs(t, s, sim.ID)) > 0 }
	if !dispatched(as[0]) || dispatched(as[1]) || dispatched(as[2]) || !dispatched(bs) {
		t.Fatal("want the first simulation of each account dispatched, and only those")
	}
	if err := s.FinishSimulation(ctx, as[0].ID, store.SimulationFailed, []byte(`{}`), nil, nil, t0); err != nil {
		t.Fatal(err)
	}
	if !dispatched(as[1]) || dispatched(as[2]) {
		t.Fatal("finishing the dispatched simulation did not dispatch the next one alone")
	}
	if _, err := s.CancelSimulation(ctx, a, store.ModeTest, as[1].ID, []byte(`{}`), t0); err != nil {
		t.Fatal(err)
	}
	if !dispatched(as[2]) {
		t.Fatal("canceling the dispatched simulation did not dispatch the next one")
	}
	orphan := newSimulation(ident.New("acct"), store.SimulationQueued, t0)
	if err := s.CreateSimulation(ctx, orphan, nil, nil); err != nil {
		t.Fatal(err)
	}
	if dispatched(orphan) {
		t.Fatal("CreateSimulation dispatched")
	}
	if n, err := s.DispatchQueuedSimulations(ctx); err != nil || n < 1 {
		t.Fatalf("DispatchQueuedSimulations = %d, %v; want at least the orphan", n, err)
	}
	if !dispatched(orphan) {
		t.Fatal("the sweep did not dispatch the orphan")
	}
	if n, err := s.DispatchQueuedSimulations(ctx); err != nil || n != 0 {
		t.Fatalf("a second sweep = %d, %v; want nothing to do", n, err)
	}
}

// SimulationChunkRace has workers store every chunk of one simulation concurrently (each
// chunk by two workers, as a rescued job and its original would), through stores used
// round-robin (pass two stores on one database to race processes), and checks that every
// chunk is queued exactly once, one merge is queued, and the progress callback saw every
// chunk in the end.
func SimulationChunkRace(t *testing.T, stores ...store.Store) {
	t.Helper()
	ctx := context.Background()
	s := stores[0]
	sim := newSimulation(ident.New("acct"), store.SimulationQueued, t0)
	if err := s.QueueSimulation(ctx, sim, 5, nil); err != nil {
		t.Fatal(err)
	}
	const chunks, window = 24, 4
	if _, err := s.StartSimulation(ctx, sim.ID, chunks, window, []byte(`{}`), t0); err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		most int
	)
	errs := make([]error, 2*chunks)
	for i := range 2 * chunks {
		wg.Go(func() {
			c := i % chunks
			errs[i] = stores[i%len(stores)].StoreSimulationChunk(ctx, sim.ID, c, fmt.Appendf(nil, "chunk %d", c), fmt.Sprintf("worker-%d", i%len(stores)),
				func(done []int) ([]byte, error) {
					mu.Lock()
					most = max(most, len(done))
					mu.Unlock()
					return []byte(`{}`), nil
				}, t0)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	cs, merges := chunkJobs(simulationJobs(t, s, sim.ID))
	want := make([]int, chunks)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(cs, want) || merges != 1 || most != chunks {
		t.Fatalf("chunk jobs %v, %d merges, progress saw %d chunks; want each chunk once, one merge, %d", cs, merges, most, chunks)
	}
}

func testSimulationChunkConcurrent(t *testing.T, s store.Store) { SimulationChunkRace(t, s) }
