// Package store defines the service's persistent objects and the Store interface that the
// embedded SQLite store (the default) and the PostgreSQL store both implement. The HTTP layer
// and the command line depend only on this package; storetest holds the conformance suite
// that every implementation must pass.
package store

import (
	"context"
	"errors"
	"time"

	"riskapi/internal/jobs"
)

// Errors returned by every Store implementation. Callers test them with errors.Is.
var (
	// ErrNotFound: no object with that id (or key hash) exists.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique constraint was violated (an id or key hash already exists).
	ErrConflict = errors.New("store: conflict")
)

// Plan is an account's billing plan; it selects the hourly rate limits per product.
type Plan string

const (
	PlanFreeTrial    Plan = "free_trial"
	PlanStarter      Plan = "starter"
	PlanProfessional Plan = "professional"
	PlanEnterprise   Plan = "enterprise"
)

// Plans lists every plan in the order of the seed's limit table.
var Plans = []Plan{PlanFreeTrial, PlanStarter, PlanProfessional, PlanEnterprise}

// Valid reports whether p is one of Plans.
func (p Plan) Valid() bool {
	for _, q := range Plans {
		if p == q {
			return true
		}
	}
	return false
}

// Region names a deployment's data region. Data of one region lives only in its own store.
const (
	RegionDefault = "default"
	RegionEU      = "eu"
)

// ValidRegion reports whether r is a known region.
func ValidRegion(r string) bool { return r == RegionDefault || r == RegionEU }

// Account is a customer. Every other object belongs to exactly one account.
type Account struct {
	ID     string // acct_…
	Name   string
	Email  string
	Plan   Plan
	Region string
	// CustomLimits overrides the plan's requests per hour for a product ("cascade" → 10000).
	// Empty for most accounts.
	CustomLimits map[string]int64
	CreatedAt    time.Time
}

// KeyType is the kind of API key, visible in its prefix.
type KeyType string

const (
	KeyLive       KeyType = "live"       // sk_live_: production, every scope
	KeyTest       KeyType = "test"       // sk_test_: sandboxed, every scope
	KeyRestricted KeyType = "restricted" // sk_rstr_: the scopes given at creation, either mode
)

// Valid reports whether t is a known key type.
func (t KeyType) Valid() bool { return t == KeyLive || t == KeyTest || t == KeyRestricted }

// Mode separates production data from the sandbox. Objects of one mode are invisible to the other.
type Mode string

const (
	ModeLive Mode = "live"
	ModeTest Mode = "test"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool { return m == ModeLive || m == ModeTest }

// APIKey is a stored key. The key itself is never stored: only its SHA-256 (Hash) and the
// parts needed to show it again as "sk_live_…wxyz" (Prefix, Last4).
type APIKey struct {
	ID        string // key_…
	AccountID string
	Type      KeyType
	Mode      Mode
	Name      string
	// Scopes the key holds, as granted (for example "drift:*" stays "drift:*").
	Scopes []string
	// RateLimit is an optional per-key ceiling in requests per hour; 0 means none.
	RateLimit int64
	// Hash is the lower-case hex SHA-256 of the full key; unique across the store.
	Hash       string
	Prefix     string // "sk_live_", "sk_test_" or "sk_rstr_"
	Last4      string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	ExpiresAt  *time.Time
}

// Store is the persistence the service needs. Implementations are safe for concurrent use
// and keep times with millisecond precision in UTC.
type Store interface {
	// Ping checks that the store answers; /readyz uses it.
	Ping(ctx context.Context) error
	// Close releases connections. The store is unusable afterwards.
	Close() error
	// JobDriver is River's driver over the store's database: the process's job worker works
	// the background jobs the store inserts in its transactions.
	JobDriver() jobs.Driver

	// CreateAccount inserts a new account. ErrConflict if the id exists.
	CreateAccount(ctx context.Context, a Account) error
	// Account returns the account with that id, or ErrNotFound.
	Account(ctx context.Context, id string) (Account, error)
	// Bootstrap inserts the account and key in one transaction if, and only if, the store
	// holds no account yet. It reports whether it inserted them; concurrent callers on one
	// store never insert twice.
	Bootstrap(ctx context.Context, a Account, k APIKey) (bool, error)

	// CreateAPIKey inserts a key. ErrNotFound if its account does not exist; ErrConflict if
	// the id or hash exists.
	CreateAPIKey(ctx context.Context, k APIKey) error
	// APIKey returns the key with that id, or ErrNotFound.
	APIKey(ctx context.Context, id string) (APIKey, error)
	// APIKeyByHash returns the key whose Hash equals hash, revoked or not, or ErrNotFound.
	APIKeyByHash(ctx context.Context, hash string) (APIKey, error)
	// ListAPIKeys returns a page of an account's keys, newest first (created_at, then id,
	// descending). An unknown account has no keys.
	ListAPIKeys(ctx context.Context, accountID string, q PageQuery) (Page[APIKey], error)
	// RevokeAPIKey sets RevokedAt to at unless the key is already revoked, and returns the
	// key as stored afterwards (an earlier revocation time is kept). ErrNotFound if absent.
	RevokeAPIKey(ctx context.Context, id string, at time.Time) (APIKey, error)
	// TouchAPIKeys records last-use times for many keys in one transaction. A time older
	// than the stored LastUsedAt is ignored, so out-of-order flushes never move it back.
	// Unknown ids are ignored.
	TouchAPIKeys(ctx context.Context, lastUsed map[string]time.Time) error

	// BeginIdempotent claims k for one execution, or reports why it cannot. It returns
	// IdempotencyStarted with a token when no live record of k exists, when the record has
	// expired (older than p.ExpireAfter), or when an in-flight record of the same request is
	// older than p.ReclaimAfter; IdempotencyCompleted with the stored response when the same
	// request finished; IdempotencyInFlight while it runs; IdempotencyMismatch when the live
	// record has another fingerprint. Of any number of concurrent callers with one key,
	// exactly one is Started.
	BeginIdempotent(ctx context.Context, k IdempotencyKey, p IdempotencyPolicy, now time.Time) (state IdempotencyState, token string, resp StoredResponse, err error)
	// CompleteIdempotent stores the response of the execution holding token. ErrNotFound if
	// the token no longer holds the key (the record was reclaimed or purged) or the record is
	// already complete (see IdempotencyCompletion for completing it inside a write).
	CompleteIdempotent(ctx context.Context, k IdempotencyKey, token string, resp StoredResponse, now time.Time) error
	// RenewIdempotent extends the lease of the in-flight record held by token: its lock time
	// becomes now, so BeginIdempotent does not reclaim it for another p.ReclaimAfter.
	// ErrIdempotencyLost if the token no longer holds an in-flight record of k.
	RenewIdempotent(ctx context.Context, k IdempotencyKey, token string, now time.Time) error
	// ReleaseIdempotent forgets the in-flight record held by token, so a retry executes
	// again (after a 5xx). Releasing a record the token no longer holds does nothing.
	ReleaseIdempotent(ctx context.Context, k IdempotencyKey, token string) error
	// PurgeIdempotency deletes records created before before and returns how many.
	PurgeIdempotency(ctx context.Context, before time.Time) (int64, error)

	// AddUsage adds the units of every entry to the stored daily totals, in one transaction.
	AddUsage(ctx context.Context, units []UsageUnits) error
	// Usage returns an account's daily totals for the UTC days from..to inclusive, ordered
	// by day, product and endpoint.
	Usage(ctx context.Context, accountID string, from, to time.Time) ([]UsageUnits, error)

	// Secret returns the secret stored under name, storing candidate first if there is
	// none; every process sharing the store gets the same value.
	Secret(ctx context.Context, name string, candidate []byte) ([]byte, error)

	EventStore
	WebhookStore
	SecretKeyStore
	AnalysisStore
	DriftEventStore
	DriftMonitorStore
	SimulationStore
	UserStore
}

// EventStore keeps the event outbox. Products write an event in the same transaction as
// the object it reports through their own store methods; CreateEvent is the same step on
// its own.
type EventStore interface {
	// CreateEvent inserts ev and, in the same transaction, one pending delivery (due now)
	// for every enabled endpoint of ev's account and mode that subscribes to ev.Type or to
	// "*". It returns the deliveries created.
	CreateEvent(ctx context.Context, ev Event) ([]Delivery, error)
	// CreateEventFor inserts ev and one pending delivery to the endpoint endpointID of ev's
	// account and mode, whatever the endpoint subscribes to and even if it is disabled (the
	// webhook.test event). ErrNotFound if there is no such endpoint. When answer is not nil,
	// the completion it builds from the delivery commits in the same transaction
	// (IdempotencyCompletion).
	CreateEventFor(ctx context.Context, ev Event, endpointID string, answer func(Delivery) (*IdempotencyCompletion, error)) (Delivery, error)
	// Event returns the event of that account and mode, or ErrNotFound.
	Event(ctx context.Context, accountID string, mode Mode, id string) (Event, error)
	// ListEvents pages through an account's events of one mode, newest first; eventType ""
	// lists every type.
	ListEvents(ctx context.Context, accountID string, mode Mode, eventType string, q PageQuery) (Page[Event], error)
	// PurgeEvents deletes events created before before, with their deliveries that are no
	// longer pending; events that still have a pending delivery are kept until it ends.
	PurgeEvents(ctx context.Context, before time.Time) (int64, error)
}

// WebhookStore keeps webhook endpoints and the delivery queue. Every read and write of
// endpoints and deliveries is scoped to an account and mode: another account's or mode's
// object is ErrNotFound.
type WebhookStore interface {
	// CreateWebhookEndpoint inserts e unless its account and mode already have max
	// endpoints (ErrLimitReached); the check and the insert are atomic, and done, when not
	// nil, completes the request's Idempotency-Key in the same transaction.
	CreateWebhookEndpoint(ctx context.Context, e WebhookEndpoint, max int, done *IdempotencyCompletion) error
	WebhookEndpoint(ctx context.Context, accountID string, mode Mode, id string) (WebhookEndpoint, error)
	ListWebhookEndpoints(ctx context.Context, accountID string, mode Mode, q PageQuery) (Page[WebhookEndpoint], error)
	// UpdateWebhookEndpoint stores URL, Events, Secret, Description, Status, DisabledReason
	// and UpdatedAt of e (found by account, mode and id). ErrNotFound if absent.
	UpdateWebhookEndpoint(ctx context.Context, e WebhookEndpoint) error
	// SetWebhookEndpointStatus changes only the status, disabled reason and updated time of
	// the endpoint, so that it never undoes a concurrent change of its URL or secret.
	// ErrNotFound if absent.
	SetWebhookEndpointStatus(ctx context.Context, accountID string, mode Mode, id, status, reason string, at time.Time) error
	// DeleteWebhookEndpoint deletes the endpoint and its deliveries. ErrNotFound if absent.
	DeleteWebhookEndpoint(ctx context.Context, accountID string, mode Mode, id string) error

	// Delivery returns a delivery of the endpoint, or ErrNotFound.
	Delivery(ctx context.Context, accountID string, mode Mode, endpointID, id string) (Delivery, error)
	// ListDeliveries pages through an endpoint's deliveries, newest first.
	ListDeliveries(ctx context.Context, accountID string, mode Mode, endpointID string, q PageQuery) (Page[Delivery], error)
	// RequestManualRetry asks for one more attempt of the delivery now, whatever its
	// status, and returns the delivery with ManualRetry set.
	RequestManualRetry(ctx context.Context, accountID string, mode Mode, endpointID, id string, now time.Time) (Delivery, error)

	// ClaimDeliveries leases up to p.Limit deliveries that are due at now — pending with
	// NextAttemptAt <= now, or with ManualRetry set — whose endpoint is enabled (a manual
	// retry is sent to a disabled endpoint too) and whose lease is free or expired, oldest
	// due first, at most p.PerEndpoint under lease per endpoint. On PostgreSQL concurrent
	// claimers never get the same delivery (FOR UPDATE SKIP LOCKED).
	ClaimDeliveries(ctx context.Context, p ClaimPolicy, now time.Time) ([]ClaimedDelivery, error)
	// RecordAttempt applies an attempt's outcome to a delivery p.Owner holds, and releases
	// the lease: ErrLeaseLost if the lease is no longer p.Owner's.
	RecordAttempt(ctx context.Context, owner, deliveryID string, o AttemptOutcome) (Delivery, error)
	// RecordAttemptAndHandOff is RecordAttempt, and in the same transaction passes the
	// released lease on to the oldest due delivery of the same endpoint (see HandOff): the
	// endpoint's count of deliveries under lease does not change, so the per-endpoint cap
	// holds without a claim. It returns that delivery, or nil when none was handed on.
	RecordAttemptAndHandOff(ctx context.Context, owner, deliveryID string, o AttemptOutcome, h HandOff) (Delivery, *ClaimedDelivery, error)
	// PendingDeliveries counts deliveries not yet ended, for the queue-depth metric.
	PendingDeliveries(ctx context.Context) (int64, error)
}
