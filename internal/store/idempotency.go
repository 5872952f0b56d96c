package store

import (
	"errors"
	"time"
)

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

// IdempotencyCompletion completes the in-flight record of Key held by Token with Response,
// inside the transaction of the write that produced it (CreateAnalysis, CreateSimulation,
// QueueSimulation, CreateWebhookEndpoint, AddDriftEvents, CreateEventFor): the object, its event and the key's answer commit together, so a process
// that dies after the commit leaves a key that replays the answer, never one that runs the
// request a second time. If Token no longer holds the key (its lease ran out and a retry took
// it over), the whole write is rolled back with ErrIdempotencyLost.
type IdempotencyCompletion struct {
	Key      IdempotencyKey
	Token    string
	Response StoredResponse
	At       time.Time
}

// ErrIdempotencyLost: the execution no longer holds its Idempotency-Key (the lease expired and
// another execution of the same request took it over), so its write was not committed.
var ErrIdempotencyLost = errors.New("store: idempotency key no longer held")

// IdempotencyPolicy carries the two durations of the idempotency contract.
type IdempotencyPolicy struct {
	// ReclaimAfter is the lease of an in-flight record: its holder renews it
	// (RenewIdempotent) while the request runs, so a record not renewed for this long belongs
	// to a process that died, and a retry of the same request may take it over.
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
