package store

import (
	"context"
	"errors"
	"time"
)

// Cascade simulation statuses. A simulation is queued (accepted, waiting for its first job),
// running (its chunks are being worked), and then completed, failed (with a reason in its
// payload) or canceled (by its account, before it finished).
const (
	SimulationQueued    = "queued"
	SimulationRunning   = "running"
	SimulationCompleted = "completed"
	SimulationFailed    = "failed"
	SimulationCanceled  = "canceled"
)

// ErrSimulationFinished: the simulation has already completed, failed or been canceled, so it
// cannot be canceled.
var ErrSimulationFinished = errors.New("store: simulation already finished")

// Simulation is a Cascade simulation: the request it runs (kept so that a background run can
// start again after a restart) and the object as GET returns it, rewritten at every change of
// status.
type Simulation struct {
	ID        string // csm_…
	AccountID string
	Mode      Mode
	Status    string
	// Request is the validated request body; Payload the object as GET returns it; Summary,
	// once finished, the object without its per-node array (what lists and the event show).
	Request []byte
	Payload []byte
	Summary []byte
	// Attempts counts the starts of its first job; a simulation whose first job keeps being
	// interrupted is failed rather than retried forever.
	Attempts  int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SimulationChunk is one stored chunk result of a background simulation: its index, its bytes
// (cascade.ChunkResult.MarshalBinary) and the worker (process) that computed it.
type SimulationChunk struct {
	Chunk  int
	Body   []byte
	Worker string
}

// SimulationPosition is a simulation's place in the newest-first order.
func SimulationPosition(s Simulation) Position { return Position{CreatedAt: s.CreatedAt, ID: s.ID} }

// SimulationStore keeps Cascade simulations and the state of their background runs, which are
// River jobs (internal/jobs) inserted in the store's transactions: each simulation runs as
// chunks of runs, any process working any chunk, then a merge.
//
// The work is shared fairly between accounts: an account and mode has at most a limit of
// unfinished simulations (QueueSimulation), and only one of them is dispatched (has jobs in
// River's queue) at a time, with a window of chunks queued: the queue holds a few chunks of
// each account's current simulation, and the workers take them in turn (round-robin).
type SimulationStore interface {
	// CreateSimulation inserts sim and, when ev is not nil, the event about it with its
	// deliveries, in one transaction. ErrConflict if the id exists. When done is not nil the
	// same transaction completes its Idempotency-Key (see CreateAnalysis).
	CreateSimulation(ctx context.Context, sim Simulation, ev *Event, done *IdempotencyCompletion) error
	// QueueSimulation inserts sim, a queued simulation, unless its account and mode already
	// have max unfinished (queued or running) simulations: ErrLimitReached then. The count
	// and the insert are atomic, also across processes sharing the store. ErrConflict if the
	// id exists. When done is not nil the same transaction completes its Idempotency-Key
	// (see CreateAnalysis).
	QueueSimulation(ctx context.Context, sim Simulation, max int, done *IdempotencyCompletion) error
	// UnfinishedSimulations counts the account's queued and running simulations of one mode.
	UnfinishedSimulations(ctx context.Context, accountID string, mode Mode) (int, error)
	// Simulation returns the simulation of that account and mode, or ErrNotFound.
	Simulation(ctx context.Context, accountID string, mode Mode, id string) (Simulation, error)
	// ListSimulations pages through an account's simulations of one mode, newest first, each
	// with Payload set to its Summary when it has one, and without its Request.
	ListSimulations(ctx context.Context, accountID string, mode Mode, q PageQuery) (Page[Simulation], error)
	// BackgroundSimulation returns a simulation by id alone, its request included, for the job
	// that works it; ErrNotFound if there is none.
	BackgroundSimulation(ctx context.Context, id string) (Simulation, error)
	// StartSimulation marks a queued simulation running with payload, records its number of
	// chunks and queues the jobs of chunks 1 … window, in one transaction; on a running one
	// (an earlier attempt started it) it changes nothing but Attempts. It returns Attempts,
	// which grows by one at each call; ErrSimulationFinished if it has finished or been
	// canceled.
	StartSimulation(ctx context.Context, id string, chunks, window int, payload []byte, now time.Time) (attempts int, err error)
	// StoreSimulationChunk keeps chunk c's result (bytes stored earlier for the same chunk
	// stay), rewrites the payload with progress(stored chunks, in order), queues the next
	// chunk of the window and, once every chunk is stored, the merge job; one transaction.
	// ErrSimulationFinished if the simulation is no longer running.
	StoreSimulationChunk(ctx context.Context, id string, c int, body []byte, worker string, progress func(done []int) ([]byte, error), now time.Time) error
	// SimulationChunks returns a simulation's stored chunks in chunk order.
	SimulationChunks(ctx context.Context, id string) ([]SimulationChunk, error)
	// FinishSimulation records the final status (completed or failed), payload and summary of
	// a queued or running simulation, and ev when not nil, drops its chunks and dispatches the
	// account's next simulation, in one transaction; ErrSimulationFinished if it had already
	// finished or been canceled (so a merge run twice stores one event).
	FinishSimulation(ctx context.Context, id, status string, payload, summary []byte, ev *Event, now time.Time) error
	// StoppedSimulations returns those of ids that are no longer queued or running; a worker
	// asks while it runs their chunks, and stops them.
	StoppedSimulations(ctx context.Context, ids []string) ([]string, error)
	// DispatchQueuedSimulations dispatches the next simulation of every account and mode that
	// has queued ones and none dispatched, and returns how many (a periodic sweep).
	DispatchQueuedSimulations(ctx context.Context) (int, error)
	// CancelSimulation marks a queued or running simulation of that account and mode canceled,
	// with payload, drops its chunks and dispatches the account's next simulation: its jobs
	// find it canceled and stop, and nothing can finish it any more. It returns the simulation as stored
	// afterwards; ErrNotFound if there is none, ErrSimulationFinished (with the simulation)
	// if it has already finished.
	CancelSimulation(ctx context.Context, accountID string, mode Mode, id string, payload []byte, now time.Time) (Simulation, error)
}
