package store

import (
	"context"
	"errors"
	"time"
)

// Cascade simulation statuses. A simulation is queued (accepted, waiting for a runner),
// running (a runner holds its lease), and then completed, failed (with a reason in its
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
	// Attempts counts the runs started in the background (claims); a simulation whose runs keep
	// being interrupted is failed rather than retried forever.
	Attempts  int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SimulationPosition is a simulation's place in the newest-first order.
func SimulationPosition(s Simulation) Position { return Position{CreatedAt: s.CreatedAt, ID: s.ID} }

// SimulationStore keeps Cascade simulations and hands background runs to runners with leases,
// like the delivery queue: a runner that dies stops renewing its lease, and the simulation is
// claimed again when the lease expires.
//
// The queue is shared fairly between accounts: an account and mode has at most a limit of
// unfinished simulations (QueueSimulation), at most one of them runs at a time across every
// runner sharing the store, and ClaimSimulation serves the account that was served least
// recently first, so one account's long simulations never hold another's back.
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
	// ClaimSimulation leases to owner until now+lease a simulation that is queued, or running
	// under an expired lease, of an account and mode that has no other simulation running under
	// a live lease: of those, the oldest simulation of the account whose last claim is the
	// oldest (an account never served comes first). Its status becomes running and Attempts
	// grows by one. It returns ErrNotFound when there is none. Concurrent claimers, in one
	// process or several, never get the same simulation nor two of one account and mode.
	ClaimSimulation(ctx context.Context, owner string, lease time.Duration, now time.Time) (Simulation, error)
	// UpdateSimulation replaces the payload of a simulation owner holds and extends the lease
	// to until; ErrLeaseLost if owner no longer holds it.
	UpdateSimulation(ctx context.Context, id, owner string, payload []byte, until, now time.Time) error
	// FinishSimulation records the final status (completed or failed), payload and summary of
	// a simulation owner holds, and ev when not nil, in one transaction, releasing the lease;
	// ErrLeaseLost if owner no longer holds it (a canceled simulation, for one).
	FinishSimulation(ctx context.Context, id, owner, status string, payload, summary []byte, ev *Event, now time.Time) error
	// ReleaseSimulation hands a simulation owner holds back to the queue (status queued, the
	// attempt not counted), for a runner that stops before finishing (shutdown).
	ReleaseSimulation(ctx context.Context, id, owner string, payload []byte, now time.Time) error
	// LostSimulations returns those of ids that owner no longer holds: canceled, or taken by
	// another runner after the lease expired. A runner asks while it runs them, and stops them.
	LostSimulations(ctx context.Context, owner string, ids []string) ([]string, error)
	// CancelSimulation marks a queued or running simulation of that account and mode canceled,
	// with payload, and releases its lease: a runner never claims it again, and the runner
	// that holds it can no longer update or finish it. It returns the simulation as stored
	// afterwards; ErrNotFound if there is none, ErrSimulationFinished (with the simulation)
	// if it has already finished.
	CancelSimulation(ctx context.Context, accountID string, mode Mode, id string, payload []byte, now time.Time) (Simulation, error)
}
