package store

import (
	"context"
	"errors"
	"time"
)

// ErrLimitReached: creating the object would exceed a per-account limit (16 webhook
// endpoints per account and mode).
var ErrLimitReached = errors.New("store: limit reached")

// ErrLeaseLost: the dispatcher no longer holds the delivery it reports on (its lease
// expired and another dispatcher claimed it); the outcome is discarded.
var ErrLeaseLost = errors.New("store: delivery lease lost")

// ErrSecretUnavailable: a webhook secret is stored encrypted under a key the store was not
// given (RISKAPI_SECRET_KEY and RISKAPI_SECRET_KEY_PREVIOUS), or its ciphertext does not
// open (altered, or copied from another row).
var ErrSecretUnavailable = errors.New("store: webhook secret cannot be decrypted with the configured keys")

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
// account and mode only. Secret signs deliveries and is never shown after creation; the
// store keeps it encrypted when it was opened with keys (see SecretKeyStore), and always
// reads and writes it here in plaintext.
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
	// SecretErr, when not nil, is why Secret could not be read (it wraps
	// ErrSecretUnavailable; Secret is ""). The delivery must not be sent: the dispatcher
	// records a failed attempt, and the delivery goes out once the key is configured again.
	SecretErr error
}

// SecretRotation is what RotateWebhookSecrets did.
type SecretRotation struct {
	KeyID string // the id of the current key, which every re-encrypted secret is under now
	// Reencrypted counts the secrets moved under the current key; FromPlaintext of them were
	// stored in plaintext before.
	Reencrypted, FromPlaintext int64
	// AlreadyCurrent counts the secrets that were under the current key already.
	AlreadyCurrent int64
	// Unopened counts, by key id, the secrets left as they were because they do not open with
	// the configured keys (their key is not configured, or they were altered).
	Unopened map[string]int64
	// Scrubbed reports that the database files no longer hold the old forms of the rewritten
	// secrets (SQLite: deleted content is zeroed and the write-ahead log was checkpointed and
	// truncated). False on PostgreSQL, whose old row versions stay in the table's files until
	// VACUUM reuses their space, and when SQLite's checkpoint could not finish because
	// another connection was reading.
	Scrubbed bool
}

// SecretKeyStore is how webhook secrets are kept at rest. A store opened with keys stores
// every secret it writes encrypted (AES-256-GCM) under the current key, with the key's id
// beside it, and decrypts with whichever configured key matches; a store opened without keys
// writes plaintext and reads plaintext only.
type SecretKeyStore interface {
	// WebhookSecretKeyIDs counts the stored webhook secrets by the id of the key that
	// encrypted them; "" counts those stored in plaintext.
	WebhookSecretKeyIDs(ctx context.Context) (map[string]int64, error)
	// RotateWebhookSecrets re-encrypts under the current key every webhook secret that is
	// stored in plaintext or under another configured key, in transactions of a few hundred
	// endpoints each (a concurrent update of a secret waits for, or is seen by, the batch
	// that holds it). Secrets that do not open are left as they are and counted in
	// Unopened. It fails if the store was opened without keys.
	RotateWebhookSecrets(ctx context.Context) (SecretRotation, error)
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

// HandOff is how RecordAttemptAndHandOff leases the next delivery of the endpoint whose
// attempt it records.
type HandOff struct {
	// Lease is how long the new lease lasts, as ClaimPolicy.Lease.
	Lease time.Duration
	// MinLeft: the lease is handed on only while the released one has at least MinLeft to
	// run at the outcome's time. A lease that has expired (or is about to) may no longer be
	// counted by other dispatchers' claims, so passing it on could exceed the per-endpoint
	// cap. It is also the margin by which the released lease outlasts the next attempt, so
	// it must be at least the time that attempt can take to be made and recorded.
	MinLeft time.Duration
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
