package store

import (
	"errors"
	"time"
)

// ErrLimitReached: creating the object would exceed a per-account limit (16 webhook
// endpoints per account and mode).
var ErrLimitReached = errors.New("store: limit reached")

// ErrLeaseLost: the dispatcher no longer holds the delivery it reports on (its lease
// expired and another dispatcher claimed it); the outcome is discarded.
var ErrLeaseLost = errors.New("store: delivery lease lost")

// Event is a notification that something happened to an account's object. Payload is the
// event object exactly as it is delivered to webhooks and returned by GET /v1/events/{id},
// so every delivery attempt sends the same bytes.
type Event struct {
	ID        string // evt_…
	AccountID string
	Mode      Mode
	Type      string // e.g. "drift.shadow_detected", "webhook.test"
	Payload   []byte
	CreatedAt time.Time
}

// Webhook endpoint statuses, and why an endpoint was disabled.
const (
	EndpointEnabled  = "enabled"
	EndpointDisabled = "disabled"

	DisabledByUser  = "user"    // PATCH status=disabled
	DisabledGone    = "gone"    // the receiver answered 410 Gone
	DisabledFailing = "failing" // no success for 5 days and at least 10 failed deliveries
)

// AllEvents is the Events entry that subscribes an endpoint to every kind.
const AllEvents = "*"

// MaxEndpointsPerMode is how many webhook endpoints an account may have in each mode.
const MaxEndpointsPerMode = 16

// WebhookEndpoint is a receiver URL that gets the events it subscribes to, of its own
// account and mode only. Secret signs deliveries and is never shown after creation.
type WebhookEndpoint struct {
	ID             string // we_…
	AccountID      string
	Mode           Mode
	URL            string
	Events         []string // kinds, or exactly ["*"]
	Secret         string
	Description    string
	Status         string // EndpointEnabled or EndpointDisabled
	DisabledReason string // "" while enabled
	CreatedAt      time.Time
	UpdatedAt      time.Time
	LastSuccessAt  *time.Time // last successful delivery (written at most once a minute), nil if none yet
}

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Delivery is one event on its way to one endpoint, with the record of its attempts.
type Delivery struct {
	ID             string // dlv_…
	EndpointID     string
	EventID        string
	EventType      string
	AccountID      string
	Mode           Mode
	Status         string // DeliveryPending, DeliverySucceeded or DeliveryFailed
	Attempts       int
	LastStatusCode int    // 0 when no HTTP status was received
	LastError      string // "" when the last attempt succeeded or none was made
	NextAttemptAt  *time.Time
	// ManualRetry: a manual retry was requested and its attempt has not been made yet.
	ManualRetry bool
	CreatedAt   time.Time
	CompletedAt *time.Time
}

// ClaimedDelivery is a delivery a dispatcher holds a lease on, with what it needs to send it.
type ClaimedDelivery struct {
	Delivery
	Payload []byte // the event's payload
	URL     string // the endpoint's URL and secret at claim time
	Secret  string
}

// AttemptOutcome is the result of one delivery attempt, as the dispatcher reports it.
type AttemptOutcome struct {
	At         time.Time
	StatusCode int    // 0 when no response arrived
	Error      string // "" on success; otherwise why the attempt failed
	Succeeded  bool
	// NextAttemptAt schedules the next automatic attempt after a failure; nil means the
	// schedule is exhausted and the delivery fails. Ignored on success, and for a manual
	// attempt (which leaves the delivery's status and schedule as they were on failure).
	NextAttemptAt *time.Time
	// DisableEndpoint, when not "", disables the endpoint with this reason (DisabledGone).
	DisableEndpoint string
	// AutoDisableAfter and AutoDisableFailures: when the delivery ends failed, disable the
	// endpoint (DisabledFailing) if it has had no successful delivery for AutoDisableAfter
	// (counting from its creation if it never had one) and at least AutoDisableFailures of
	// its deliveries failed since its last success. Zero values turn the rule off.
	AutoDisableAfter    time.Duration
	AutoDisableFailures int
}

// ClaimPolicy bounds what one ClaimDeliveries call takes.
type ClaimPolicy struct {
	Owner string        // identifies the dispatcher (process) taking the leases
	Lease time.Duration // how long the claim lasts; a crashed dispatcher's deliveries are retried after it
	Limit int           // deliveries per call
	// PerEndpoint caps the deliveries of one endpoint under an unexpired lease, so a slow
	// receiver holds at most that many.
	PerEndpoint int
}
