package store

import (
	"context"
	"time"
)

// Cascade simulation statuses. A simulation is queued (accepted, waiting for a runner),
// running (a runner holds its lease), completed or failed (with a reason in its payload).
const (
	SimulationQueued    = "queued"
	SimulationRunning   = "running"
	SimulationCompleted = "completed"
	SimulationFailed    = "failed"
)

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
type SimulationStore interface {
	// CreateSimulation inserts sim and, when ev is not nil, the event about it with its
	// deliveries, in one transaction. ErrConflict if the id exists.
	CreateSimulation(ctx context.Context, sim Simulation, ev *Event) error
	// Simulation returns the simulation of that account and mode, or ErrNotFound.
	Simulation(ctx context.Context, accountID string, mode Mode, id string) (Simulation, error)
	// ListSimulations pages through an account's simulations of one mode, newest first, each
	// with Payload set to its Summary when it has one, and without its Request.
	ListSimulations(ctx context.Context, accountID string, mode Mode, q PageQuery) (Page[Simulation], error)
	// ClaimSimulation leases the oldest simulation that is queued, or running under an expired
	// lease, to owner until now+lease: its status becomes running and Attempts grows by one.
	// It returns ErrNotFound when there is none. Concurrent claimers never get the same one.
	ClaimSimulation(ctx context.Context, owner string, lease time.Duration, now time.Time) (Simulation, error)
	// UpdateSimulation replaces the payload of a simulation owner holds and extends the lease
	// to until; ErrLeaseLost if owner no longer holds it.
	UpdateSimulation(ctx context.Context, id, owner string, payload []byte, until, now time.Time) error
	// FinishSimulation records the final status (completed or failed), payload and summary of
	// a simulation owner holds, and ev when not nil, in one transaction, releasing the lease;
	// ErrLeaseLost if owner no longer holds it.
	FinishSimulation(ctx context.Context, id, owner, status string, payload, summary []byte, ev *Event, now time.Time) error
	// ReleaseSimulation hands a simulation owner holds back to the queue (status queued, the
	// attempt not counted), for a runner that stops before finishing (shutdown).
	ReleaseSimulation(ctx context.Context, id, owner string, payload []byte, now time.Time) error
}
