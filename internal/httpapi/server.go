// Package httpapi is the service's HTTP/JSON API: the server, its routes (routes.go lists
// them all), the middleware every request passes through, the envelope and error mapping,
// the one JSON decoder, and one file of handlers per resource.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"riskapi/internal/admission"
	"riskapi/internal/auth"
	"riskapi/internal/delivery"
	"riskapi/internal/ident"
	"riskapi/internal/ratelimit"
	"riskapi/internal/ratepolicy"
	"riskapi/internal/store"
	"riskapi/internal/usage"
)

// Store is what the API reads and writes; store.Store is one. Lookups of one object return
// store.ErrNotFound when it does not exist in the caller's account and mode, and
// CreateWebhookEndpoint store.ErrLimitReached when the mode already has max endpoints.
type Store interface {
	// Ping checks that the store answers, for GET /readyz.
	Ping(ctx context.Context) error
	// Idempotent POSTs (idempotency.go).
	BeginIdempotent(ctx context.Context, k store.IdempotencyKey, p store.IdempotencyPolicy, now time.Time) (state store.IdempotencyState, token string, resp store.StoredResponse, err error)
	CompleteIdempotent(ctx context.Context, k store.IdempotencyKey, token string, resp store.StoredResponse, now time.Time) error
	RenewIdempotent(ctx context.Context, k store.IdempotencyKey, token string, now time.Time) error
	ReleaseIdempotent(ctx context.Context, k store.IdempotencyKey, token string) error
	// GET /v1/usage.
	Usage(ctx context.Context, accountID string, from, to time.Time) ([]store.UsageUnits, error)

	// The products' results, each written with its event in one transaction.
	CreateAnalysis(ctx context.Context, a store.Analysis, ev *store.Event, done *store.IdempotencyCompletion) error
	Analysis(ctx context.Context, accountID string, mode store.Mode, product, id string) (store.Analysis, error)
	ListAnalyses(ctx context.Context, accountID string, mode store.Mode, product, subject string, q store.PageQuery) (store.Page[store.Analysis], error)
	AddDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, events []store.DriftEvent, answer func(store.DriftEventBatch) (*store.IdempotencyCompletion, error)) (store.DriftEventBatch, error)
	CountDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string) (int64, error)
	DriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, from, to *time.Time, limit int) ([]store.DriftEvent, error)
	// Drift monitors; ScheduleDriftMonitorLook queues a look after events are stored.
	CreateDriftMonitor(ctx context.Context, m store.DriftMonitor, done *store.IdempotencyCompletion) error
	DriftMonitor(ctx context.Context, accountID string, mode store.Mode, id string) (store.DriftMonitor, error)
	DriftMonitorOfAgent(ctx context.Context, accountID string, mode store.Mode, agentID string) (store.DriftMonitor, error)
	ListDriftMonitors(ctx context.Context, accountID string, mode store.Mode, agentID string, q store.PageQuery) (store.Page[store.DriftMonitor], error)
	UpdateDriftMonitor(ctx context.Context, m store.DriftMonitor) error
	DeleteDriftMonitor(ctx context.Context, accountID string, mode store.Mode, id string) error
	ScheduleDriftMonitorLook(ctx context.Context, monitorID string, seen int64, soon bool, at time.Time) error
	CreateSimulation(ctx context.Context, sim store.Simulation, ev *store.Event, done *store.IdempotencyCompletion) error
	QueueSimulation(ctx context.Context, sim store.Simulation, max int, done *store.IdempotencyCompletion) error
	UnfinishedSimulations(ctx context.Context, accountID string, mode store.Mode) (int, error)
	Simulation(ctx context.Context, accountID string, mode store.Mode, id string) (store.Simulation, error)
	ListSimulations(ctx context.Context, accountID string, mode store.Mode, q store.PageQuery) (store.Page[store.Simulation], error)
	CancelSimulation(ctx context.Context, accountID string, mode store.Mode, id string, payload []byte, now time.Time) (store.Simulation, error)

	// Events, webhook endpoints and their deliveries.
	Event(ctx context.Context, accountID string, mode store.Mode, id string) (store.Event, error)
	ListEvents(ctx context.Context, accountID string, mode store.Mode, eventType string, q store.PageQuery) (store.Page[store.Event], error)
	CreateEventFor(ctx context.Context, ev store.Event, endpointID string, answer func(store.Delivery) (*store.IdempotencyCompletion, error)) (store.Delivery, error)
	CreateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint, max int, done *store.IdempotencyCompletion) error
	WebhookEndpoint(ctx context.Context, accountID string, mode store.Mode, id string) (store.WebhookEndpoint, error)
	ListWebhookEndpoints(ctx context.Context, accountID string, mode store.Mode, q store.PageQuery) (store.Page[store.WebhookEndpoint], error)
	UpdateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint) error
	DeleteWebhookEndpoint(ctx context.Context, accountID string, mode store.Mode, id string) error
	ListDeliveries(ctx context.Context, accountID string, mode store.Mode, endpointID string, q store.PageQuery) (store.Page[store.Delivery], error)
	RequestManualRetry(ctx context.Context, accountID string, mode store.Mode, endpointID, id string, now time.Time) (store.Delivery, error)
}

// Config holds the server's dependencies and settings. Store, Auth, Limiter, Meter, Logger
// and CursorKey are required.
type Config struct {
	Store   Store
	Auth    *auth.Authenticator
	Limiter ratelimit.Limiter
	Meter   *usage.Meter
	Logger  *slog.Logger
	// CursorKey signs pagination cursors (HMAC-SHA256); every process of a deployment must
	// share it, so it is kept in the store (see store.Secret). At least 32 bytes.
	CursorKey []byte
	// Now is the clock for rate-limit windows and idempotency records; nil means time.Now.
	Now func() time.Time
	// IdempotencyRenewal is how often a running request renews the lease on its
	// Idempotency-Key (15 s, idempotencyLease); zero means every 5 seconds.
	IdempotencyRenewal time.Duration
	// Metrics receives the HTTP metrics; /metrics serves it. A nil value gets a fresh registry.
	Metrics *prometheus.Registry

	// Region is this deployment's region, "default" or "eu".
	Region string
	// PublicURL and EUPublicURL are the base_urls GET /v1 reports; EUPublicURL may be empty.
	PublicURL   string
	EUPublicURL string
	// MaxBodyBytes caps request bodies (413 beyond it). Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Deprecation, when set, marks v1 deprecated: responses carry Deprecation, Sunset and Link.
	Deprecation *Deprecation
	// UnlimitedCeiling is the hourly ceiling behind the plan table's "Unlimited"; zero means
	// ratepolicy.DefaultUnlimitedCeiling.
	UnlimitedCeiling int64
	// Webhooks is how endpoints' URLs are checked and how the dispatcher is woken.
	Webhooks WebhookConfig
	// WakeSimulations wakes the background simulation runner after a simulation was queued
	// or canceled, so it starts or stops at once rather than at its next poll
	// (simulation.Runner.Wake). Nil means no runner runs in this process; another process's
	// runner picks the simulation up, or notices the cancel.
	WakeSimulations func()
	// Bounds is how much of the process one request, and one account, may take.
	Bounds Bounds
	// Memory is the process's memory budget, shared with the background simulation runner;
	// nil builds one from Bounds.MemoryLimit and Bounds.MemoryWait.
	Memory *admission.Memory
	// TrustedProxies are the networks of reverse proxies whose X-Forwarded-For is believed
	// when finding a client's IP (for the failed-authentication limit). Empty: trust none.
	TrustedProxies []netip.Prefix
}

// Bounds are the limits of platform contract §11 (bounded work); zero values take the
// defaults.
type Bounds struct {
	// SyncBudget is the most work, in estimated CPU time of one core, that a request may do
	// while the client waits; above it Cascade runs in the background and the other products
	// refuse with 400 WORK_LIMIT_EXCEEDED. Default engine.DefaultSyncBudget (5 s).
	SyncBudget time.Duration
	// BackgroundBudget is the most work one background simulation may do; above it the
	// request is refused with WORK_LIMIT_EXCEEDED. Default DefaultBackgroundBudget.
	BackgroundBudget time.Duration
	// PerAccount is how many product requests of one account run at once in this process;
	// beyond it 429 RATE_LIMITED with Retry-After: 1. Default admission.DefaultPerAccount (4).
	PerAccount int
	// MemoryLimit is the process-wide budget, in bytes, that product requests are admitted
	// against by their estimated peak. Default admission.DefaultMemoryLimit() (half of the
	// machine's or cgroup's memory), or 1 GiB when that cannot be read.
	MemoryLimit int64
	// MemoryWait is how long a request waits for memory before 503. Default 10 s.
	MemoryWait time.Duration
}

// DefaultBackgroundBudget bounds one background simulation: an hour of one core (12 minutes
// on a 5-core share of the machine), far above the contract's 10-minute example job.
const DefaultBackgroundBudget = time.Hour

// WebhookConfig connects the API to webhook delivery.
type WebhookConfig struct {
	// Targets decides which URLs an endpoint may have (https in live mode, no private
	// addresses unless RISKAPI_ALLOW_PRIVATE_WEBHOOKS).
	Targets delivery.Targets
	// Notify wakes the dispatcher after deliveries were created, so they start at once
	// rather than at its next poll. Nil means no dispatcher runs in this process.
	Notify func()
}

// Deprecation announces the end of an API version (RFC 9745 Deprecation, RFC 8594 Sunset).
type Deprecation struct {
	At             time.Time // when the version was deprecated
	Sunset         time.Time // when it stops answering; zero if not yet decided
	MigrationGuide string    // URL of the migration guide, sent as Link rel="deprecation"
}

// DefaultMaxBodyBytes is the default request body limit: 64 MiB, enough for 100,000 Drift
// events or 1,000,000 CSV rows of Meridian input.
const DefaultMaxBodyBytes = 64 << 20

// Server is the API as an http.Handler.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	metrics *httpMetrics
	// limits are the rate-limit buckets requests count against.
	limits ratepolicy.Policy
	// patterns are the routes as mounted (routes.go), in order.
	patterns []string
	// accounts and memory admit product requests (admit.go).
	accounts *admission.Accounts
	memory   *admission.Memory
	// cores grants the goroutines a request may split its work over (admission.Cores).
	cores *admission.Cores
	// streams ends when the process stops: long-lived streams (GET /mcp) end with it, so a
	// graceful shutdown does not wait for clients that would keep them open (EndStreams).
	streams    context.Context
	endStreams context.CancelFunc
}

// EndStreams ends the long-lived streams the server holds open (the MCP sessions' GET
// /mcp); the clients reconnect to another process. Register it with
// http.Server.RegisterOnShutdown: Shutdown waits for every open request, and a stream is
// one until its client leaves.
func (s *Server) EndStreams() { s.endStreams() }

// NewServer builds the API over cfg's dependencies.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Auth == nil || cfg.Limiter == nil || cfg.Meter == nil || cfg.Logger == nil {
		return nil, fmt.Errorf("httpapi: Store, Auth, Limiter, Meter and Logger are required")
	}
	if len(cfg.CursorKey) < 32 {
		return nil, fmt.Errorf("httpapi: CursorKey must be at least 32 bytes")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Webhooks.Notify == nil {
		cfg.Webhooks.Notify = func() {}
	}
	if cfg.WakeSimulations == nil {
		cfg.WakeSimulations = func() {}
	}
	if cfg.Region == "" {
		cfg.Region = store.RegionDefault
	}
	if !store.ValidRegion(cfg.Region) {
		return nil, fmt.Errorf("httpapi: unknown region %q (want default or eu)", cfg.Region)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	cfg.Bounds = cfg.Bounds.WithDefaults()
	metrics, err := newHTTPMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), metrics: metrics, limits: ratepolicy.Policy{UnlimitedCeiling: cfg.UnlimitedCeiling},
		accounts: admission.NewAccounts(cfg.Bounds.PerAccount), memory: cfg.Memory, cores: admission.NewCores(0)}
	s.streams, s.endStreams = context.WithCancel(context.Background())
	if s.memory == nil {
		s.memory = admission.NewMemory(cfg.Bounds.MemoryLimit, cfg.Bounds.MemoryWait)
	}
	s.routes()
	return s, nil
}

// storeDown pings the store (at most 1 s): a failed ping means the store is unreachable now.
func (s *Server) storeDown(ctx context.Context) bool {
	ping, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return s.cfg.Store.Ping(ping) != nil
}

// ServeHTTP gives every request an id, a panic guard, metrics and an access log line, then
// routes it. Unknown routes and wrong methods are answered here, in the envelope, before
// any authentication (platform contract §1: route and method are checked first).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := &requestInfo{id: "req_" + ident.Random(24), start: time.Now(), base: s.cfg.Logger, storeDown: s.storeDown}
	r = r.WithContext(withRequestInfo(r.Context(), info))
	rec := &statusRecorder{ResponseWriter: w}
	info.recorder = rec
	rec.Header()[headerRequestID] = []string{info.id}
	s.addDeprecationHeaders(rec.Header())

	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v) // the handler asked to abort the connection; let net/http do it
			}
			info.logger().Error("panic serving request", "panic", v, "stack", string(stack()))
			if !rec.wroteHeader {
				writeError(rec, r, errInternal)
			}
		}
		s.observe(r, info, rec.status())
	}()

	_, pattern := s.mux.Handler(r)
	if pattern == "" || !isCanonicalPath(r.URL.Path) {
		info.route = "unmatched"
		writeError(rec, r, s.unrouted(rec, r))
		return
	}
	_, info.route, _ = strings.Cut(pattern, " ") // "GET /v1/account" → "/v1/account"
	s.mux.ServeHTTP(rec, r)
}

// versionPrefix matches a path that names an API version, such as /v2/drift/analyze.
var versionPrefix = regexp.MustCompile(`^/v[0-9]+(/|$)`)

// unrouted explains why no route matched: a known path with the wrong method (405 with
// Allow), an unsupported version, or no such path (404).
func (s *Server) unrouted(rw http.ResponseWriter, r *http.Request) *Error {
	if !isCanonicalPath(r.URL.Path) {
		// The mux would answer with a redirect page; an API client is better served by an
		// envelope that names the path it meant.
		return newError(CodeNotFound, "No endpoint at %s; paths have no empty, . or .. segments (did you mean %s?).", r.URL.Path, canonicalPath(r.URL.Path))
	}
	probe := &headerCapture{header: http.Header{}}
	h, _ := s.mux.Handler(r)
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		allow := probe.header.Get("Allow")
		rw.Header().Set("Allow", allow)
		e := newError(CodeMethodNotAllowed, "%s is not allowed on %s; allowed: %s.", r.Method, r.URL.Path, allow)
		e.Details["allow"] = allow
		return e
	}
	if m := versionPrefix.FindString(r.URL.Path); m != "" && !isV1(r.URL.Path) {
		e := newError(CodeNotFound, "API version %s is not supported. Supported versions: v1 (base path /v1).", trimSlashes(m))
		e.Details["supported_versions"] = []string{"v1"}
		return e
	}
	return newError(CodeNotFound, "No endpoint %s %s. The API's endpoints are listed in /v1/openapi.json.", r.Method, r.URL.Path)
}

// canonicalPath cleans a path the way http.ServeMux does: no empty, "." or ".." segments,
// a trailing slash kept.
func canonicalPath(p string) string {
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean
}

func isCanonicalPath(p string) bool { return p == canonicalPath(p) }

func isV1(path string) bool { return path == "/v1" || len(path) > 3 && path[:4] == "/v1/" }

func trimSlashes(s string) string {
	for len(s) > 0 && s[0] == '/' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

func (s *Server) addDeprecationHeaders(h http.Header) {
	d := s.cfg.Deprecation
	if d == nil {
		return
	}
	h.Set("Deprecation", fmt.Sprintf("@%d", d.At.Unix()))
	if !d.Sunset.IsZero() {
		h.Set("Sunset", d.Sunset.UTC().Format(http.TimeFormat))
	}
	if d.MigrationGuide != "" {
		h.Set("Link", fmt.Sprintf("<%s>; rel=\"deprecation\"; type=\"text/html\"", d.MigrationGuide))
	}
}

// AccessLogMessage is the message of the access log's lines, one a request; riskapi serve
// batches their writes (internal/logbuffer).
const AccessLogMessage = "request"

// observe records metrics and the access log line of a finished request. The line is
// written with typed attributes (LogAttrs), which spares boxing each value; it reads as the
// request logger's lines do, request_id first.
func (s *Server) observe(r *http.Request, info *requestInfo, status int) {
	elapsed := time.Since(info.start)
	s.metrics.observe(r.Method, info.route, status, elapsed)
	log := s.cfg.Logger
	if !log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := [8]slog.Attr{
		slog.String("request_id", info.id),
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", info.route),
		slog.Int("status", status), slog.Int64("duration_ms", elapsed.Milliseconds()),
	}
	n := 6
	if p := info.principal; p != nil {
		attrs[6], attrs[7] = slog.String("account", p.Account.ID), slog.String("key", p.Key.ID)
		n = 8
	}
	// The record goes to the handler directly: slog.Logger would look up the caller's program
	// counter for every line (runtime.Callers), which no handler here prints.
	record := slog.NewRecord(time.Now(), slog.LevelInfo, AccessLogMessage, 0)
	record.AddAttrs(attrs[:n]...)
	_ = log.Handler().Handle(context.Background(), record)
}
