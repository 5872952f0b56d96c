package store

import "time"

// IdempotencyKey identifies one client-chosen Idempotency-Key: keys are scoped to an account
// and a mode, and a request is identified by its fingerprint (method, path and SHA-256 of the
// raw body).
type IdempotencyKey struct {
	AccountID   string
	Mode        Mode
	Key         string
	Fingerprint string
}

// IdempotencyState is what BeginIdempotent found.
type IdempotencyState int

const (
	// IdempotencyStarted: the caller holds the key and must execute the request, then call
	// CompleteIdempotent or ReleaseIdempotent with the returned token.
	IdempotencyStarted IdempotencyState = iota + 1
	// IdempotencyCompleted: the same request finished earlier; replay its stored response.
	IdempotencyCompleted
	// IdempotencyInFlight: the same request is executing now.
	IdempotencyInFlight
	// IdempotencyMismatch: the key was used for a different request.
	IdempotencyMismatch
)

// StoredResponse is the response of a completed idempotent request, replayed byte for byte.
type StoredResponse struct {
	Status int
	Body   []byte
}

// IdempotencyPolicy carries the two durations of the idempotency contract.
type IdempotencyPolicy struct {
	// ReclaimAfter: an in-flight record older than this belongs to a process that died; a
	// retry of the same request may take it over (5 minutes).
	ReclaimAfter time.Duration
	// ExpireAfter: a record older than this is forgotten; its key may be used afresh (24 hours).
	ExpireAfter time.Duration
}

// UsageUnits is a count of billable requests of one account, product and endpoint on one
// UTC day.
type UsageUnits struct {
	AccountID string
	Day       time.Time // midnight UTC of the day
	Product   string
	Endpoint  string // route pattern, e.g. "POST /v1/drift/analyze"
	Units     int64
}
