package store

import (
	"context"
	"time"
)

// Analysis is a stored result of a synchronous analysis endpoint (a Drift analysis, a
// Convergence analysis, a Meridian quality check). Payload is the object exactly as GET
// returns it, so every read and the event about it carry the same bytes.
type Analysis struct {
	ID        string // dra_…, cva_…, mqc_…
	AccountID string
	Mode      Mode
	Product   string // the product's registry name (internal/product): "drift", "convergence", "meridian"
	// Subject is what the product's list filters on: the agent_id (Drift), market_id
	// (Convergence) or source_id (Meridian); "" when the request named none.
	Subject   string
	Payload   []byte
	CreatedAt time.Time
}

// AnalysisPosition is an analysis's place in the newest-first order.
func AnalysisPosition(a Analysis) Position { return Position{CreatedAt: a.CreatedAt, ID: a.ID} }

// DriftEvent is one stored event of an agent's history (POST /v1/drift/events). Payload is the
// event as the API accepted it (JSON), so analysing stored events sees exactly what was sent.
type DriftEvent struct {
	// EventID is the client's id, the de-duplication key within the agent; "" when the event
	// had none (such events are never duplicates).
	EventID   string
	Timestamp time.Time
	Payload   []byte
}

// DriftEventsJSON joins the events' payloads into one JSON array: decoding it once is much
// cheaper than decoding each payload on its own (an analysis of stored events, a monitor's
// look, the dashboard's timeline all read them so).
func DriftEventsJSON(events []DriftEvent) []byte {
	n := 2
	for _, ev := range events {
		n += len(ev.Payload) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i, ev := range events {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, ev.Payload...)
	}
	return append(buf, ']')
}

// DriftEventBatch is the outcome of adding events to an agent's history.
type DriftEventBatch struct {
	Accepted   int   // events stored
	Duplicates int   // events skipped: their id was stored before, or came earlier in the batch
	Total      int64 // the agent's stored events afterwards
}

// AnalysisStore keeps analyses. Every read is scoped to an account, mode and product: an
// object of another account, mode or product is ErrNotFound.
type AnalysisStore interface {
	// CreateAnalysis inserts a and, when ev is not nil, the event about it and its deliveries,
	// all in one transaction: a stored analysis always has its event, a failed insert leaves
	// neither. ErrConflict if the analysis or event id exists. When done is not nil the same
	// transaction completes its Idempotency-Key (ErrIdempotencyLost, and nothing stored, if
	// its token no longer holds the key).
	CreateAnalysis(ctx context.Context, a Analysis, ev *Event, done *IdempotencyCompletion) error
	// Analysis returns the analysis of that account, mode and product, or ErrNotFound.
	Analysis(ctx context.Context, accountID string, mode Mode, product, id string) (Analysis, error)
	// ListAnalyses pages through an account's analyses of one product and mode, newest first;
	// subject "" lists them all, otherwise only those with that Subject.
	ListAnalyses(ctx context.Context, accountID string, mode Mode, product, subject string, q PageQuery) (Page[Analysis], error)
}

// DriftEventStore keeps agents' event histories for Drift.
type DriftEventStore interface {
	// AddDriftEvents appends events to the history of (account, mode, agent) in one
	// transaction, skipping every event whose EventID is already stored for that agent or
	// appears earlier in events. Concurrent calls never store one EventID twice. When answer
	// is not nil, the completion it builds from the batch's counts commits in the same
	// transaction (IdempotencyCompletion): a retry replays those counts, and events without an
	// id are never stored twice for one Idempotency-Key.
	AddDriftEvents(ctx context.Context, accountID string, mode Mode, agentID string, events []DriftEvent, answer func(DriftEventBatch) (*IdempotencyCompletion, error)) (DriftEventBatch, error)
	// DriftEvents returns up to limit events of the agent in insertion order, only those with
	// from <= Timestamp < to when from or to is not nil. The caller asks for one more than it
	// accepts to learn that there are too many.
	DriftEvents(ctx context.Context, accountID string, mode Mode, agentID string, from, to *time.Time, limit int) ([]DriftEvent, error)
	// LatestDriftEvents returns the agent's newest limit events (the last stored), in
	// insertion order: a monitor's look at an agent whose history is longer than one analysis
	// takes.
	LatestDriftEvents(ctx context.Context, accountID string, mode Mode, agentID string, limit int) ([]DriftEvent, error)
	// CountDriftEvents returns how many events the agent has stored, in any window.
	CountDriftEvents(ctx context.Context, accountID string, mode Mode, agentID string) (int64, error)
}
