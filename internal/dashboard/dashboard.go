// Package dashboard is the customer dashboard served under /dashboard by the same binary as
// the API (cmd/riskapi sends it every path from /dashboard down): sign-up and sign-in, API
// keys (generated with the command line's rules and shown once), usage and rate-limit state,
// webhooks and recent analyses, each for the live or the test mode. Pages are rendered on
// the server from embedded templates; the only script is a copy-to-clipboard helper, and
// every page works without it.
package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"riskapi/internal/delivery"
	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
)

// Store is what the dashboard reads and writes; store.Store is one. Lookups of one object
// return store.ErrNotFound when it does not exist (or belongs to another account or mode),
// CreateAccountWithUser store.ErrConflict when the email is taken, and CreateWebhookEndpoint
// store.ErrLimitReached when the mode already has max endpoints.
type Store interface {
	// Accounts, their users and the users' sign-in sessions.
	Account(ctx context.Context, id string) (store.Account, error)
	CreateAccountWithUser(ctx context.Context, a store.Account, u store.User) error
	UserByEmail(ctx context.Context, email string) (store.User, error)
	User(ctx context.Context, id string) (store.User, error)
	SetPasswordHash(ctx context.Context, userID, hash string, at time.Time) error
	CreateSession(ctx context.Context, s store.Session) error
	SessionByTokenHash(ctx context.Context, tokenHash string) (store.Session, error)
	TouchSession(ctx context.Context, tokenHash string, at time.Time) error
	RevokeSession(ctx context.Context, tokenHash string) error
	RevokeUserSessions(ctx context.Context, userID string) (int64, error)
	PurgeSessions(ctx context.Context, now, idleBefore time.Time) (int64, error)

	// API keys (Settings → API keys) and billable usage (Usage).
	APIKey(ctx context.Context, id string) (store.APIKey, error)
	CreateAPIKey(ctx context.Context, k store.APIKey) error
	ListAPIKeys(ctx context.Context, accountID string, q store.PageQuery) (store.Page[store.APIKey], error)
	RevokeAPIKey(ctx context.Context, id string, at time.Time) (store.APIKey, error)
	Usage(ctx context.Context, accountID string, from, to time.Time) ([]store.UsageUnits, error)

	// Webhook endpoints, their delivery logs and the webhook.test event (Webhooks).
	CreateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint, max int, done *store.IdempotencyCompletion) error
	WebhookEndpoint(ctx context.Context, accountID string, mode store.Mode, id string) (store.WebhookEndpoint, error)
	ListWebhookEndpoints(ctx context.Context, accountID string, mode store.Mode, q store.PageQuery) (store.Page[store.WebhookEndpoint], error)
	SetWebhookEndpointStatus(ctx context.Context, accountID string, mode store.Mode, id, status, reason string, at time.Time) error
	DeleteWebhookEndpoint(ctx context.Context, accountID string, mode store.Mode, id string) error
	ListDeliveries(ctx context.Context, accountID string, mode store.Mode, endpointID string, q store.PageQuery) (store.Page[store.Delivery], error)
	CreateEventFor(ctx context.Context, ev store.Event, endpointID string, answer func(store.Delivery) (*store.IdempotencyCompletion, error)) (store.Delivery, error)

	// Recent results (Analyses).
	ListAnalyses(ctx context.Context, accountID string, mode store.Mode, product, subject string, q store.PageQuery) (store.Page[store.Analysis], error)
	ListSimulations(ctx context.Context, accountID string, mode store.Mode, q store.PageQuery) (store.Page[store.Simulation], error)

	// An agent's timeline (Drift): its stored events, its monitor and the looks' analyses.
	LatestDriftEvents(ctx context.Context, accountID string, mode store.Mode, agentID string, limit int) ([]store.DriftEvent, error)
	DriftMonitorOfAgent(ctx context.Context, accountID string, mode store.Mode, agentID string) (store.DriftMonitor, error)
	Analysis(ctx context.Context, accountID string, mode store.Mode, product, id string) (store.Analysis, error)
}

// Config holds the dashboard's dependencies and settings. Store, Limiter and Logger are
// required.
type Config struct {
	Store Store
	// Limiter counts failed sign-ins and sign-ups (shared by every process when it is the
	// Redis limiter) and is peeked at for the rate-limit state the Usage page shows.
	Limiter ratelimit.Limiter
	Logger  *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SignUp lets visitors create an account; off for invite-only deployments, where
	// operators create accounts and give access with `riskapi accounts set-password`.
	SignUp bool
	// Region is recorded on accounts created by sign-up ("default" or "eu").
	Region string
	// SecureCookies marks cookies Secure even when the request arrived over plain HTTP,
	// for deployments behind a TLS-terminating proxy (a public URL starting with https://).
	// Requests that arrive over TLS always get Secure cookies.
	SecureCookies bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names the client, for
	// throttling sign-ins per client address.
	TrustedProxies []netip.Prefix
	// UnlimitedCeiling is the hourly value behind the plan table's "Unlimited" (0: the API's
	// default), so the Usage page shows the limits the API applies.
	UnlimitedCeiling int64
	// Targets is the webhook URL policy, the same the API applies.
	Targets delivery.Targets
	// Notify wakes the webhook dispatcher after a delivery was created; nil does nothing.
	Notify func()
	// KeyRevoked is told the id of every key revoked here, so the API's key cache forgets it
	// at once (auth.Authenticator.Forget); nil does nothing.
	KeyRevoked func(keyID string)
}

// Session and throttling settings.
const (
	// sessionLifetime is the longest a sign-in lasts; sessionIdle ends a session nobody used
	// for that long. touchEvery bounds the writes that keep LastSeenAt current.
	sessionLifetime = 12 * time.Hour
	sessionIdle     = 2 * time.Hour
	touchEvery      = time.Minute
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Handler is the dashboard as an http.Handler for paths under /dashboard.
type Handler struct {
	cfg       Config
	mux       *http.ServeMux
	pages     map[string]*template.Template
	static    http.Handler
	passwords *passwordHasher
}

// New builds the dashboard over cfg's dependencies.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil || cfg.Limiter == nil || cfg.Logger == nil {
		return nil, errors.New("dashboard: Store, Limiter and Logger are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Notify == nil {
		cfg.Notify = func() {}
	}
	if cfg.KeyRevoked == nil {
		cfg.KeyRevoked = func(string) {}
	}
	if cfg.Region == "" {
		cfg.Region = store.RegionDefault
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	h := &Handler{
		cfg:       cfg,
		mux:       http.NewServeMux(),
		pages:     pages,
		static:    http.StripPrefix("/dashboard/static/", http.FileServerFS(static)),
		passwords: newPasswordHasher(),
	}
	h.routes()
	return h, nil
}

// routes lists every page of the dashboard. GET pages render; POSTs act and redirect (or,
// for a new key or webhook secret, render the one page that shows it).
func (h *Handler) routes() {
	h.mux.Handle("GET /dashboard/static/", h.staticFiles())
	h.mux.Handle("GET /dashboard", h.handleHome())
	h.mux.Handle("GET /dashboard/{$}", h.handleHome())

	h.mux.Handle("GET /dashboard/signin", h.anonymous(h.handleSignInForm()))
	h.mux.Handle("POST /dashboard/signin", h.anonymous(h.handleSignIn()))
	h.mux.Handle("GET /dashboard/signup", h.anonymous(h.handleSignUpForm()))
	h.mux.Handle("POST /dashboard/signup", h.anonymous(h.handleSignUp()))
	h.mux.Handle("POST /dashboard/signout", h.signedIn(h.handleSignOut()))
	h.mux.Handle("POST /dashboard/mode", h.signedIn(h.handleSwitchMode()))

	h.mux.Handle("GET /dashboard/settings", h.signedIn(h.handleSettings()))
	h.mux.Handle("POST /dashboard/settings/password", h.signedIn(h.handleChangePassword()))
	h.mux.Handle("POST /dashboard/settings/sessions/revoke", h.signedIn(h.handleSignOutEverywhere()))

	h.mux.Handle("GET /dashboard/settings/keys", h.signedIn(h.handleListKeys()))
	h.mux.Handle("GET /dashboard/settings/keys/new", h.signedIn(h.handleNewKeyForm()))
	h.mux.Handle("POST /dashboard/settings/keys/new", h.signedIn(h.handleGenerateKey()))
	h.mux.Handle("GET /dashboard/settings/keys/{id}/revoke", h.signedIn(h.handleRevokeKeyConfirm()))
	h.mux.Handle("POST /dashboard/settings/keys/{id}/revoke", h.signedIn(h.handleRevokeKey()))

	h.mux.Handle("GET /dashboard/usage", h.signedIn(h.handleUsage()))
	h.mux.Handle("GET /dashboard/analyses", h.signedIn(h.handleAnalyses()))
	h.mux.Handle("GET /dashboard/agents/{agent_id}", h.signedIn(h.handleAgent()))

	h.mux.Handle("GET /dashboard/webhooks", h.signedIn(h.handleListWebhooks()))
	h.mux.Handle("POST /dashboard/webhooks", h.signedIn(h.handleAddWebhook()))
	h.mux.Handle("GET /dashboard/webhooks/{id}", h.signedIn(h.handleWebhook()))
	h.mux.Handle("POST /dashboard/webhooks/{id}/status", h.signedIn(h.handleWebhookStatus()))
	h.mux.Handle("POST /dashboard/webhooks/{id}/test", h.signedIn(h.handleTestWebhook()))
	h.mux.Handle("GET /dashboard/webhooks/{id}/delete", h.signedIn(h.handleDeleteWebhookConfirm()))
	h.mux.Handle("POST /dashboard/webhooks/{id}/delete", h.signedIn(h.handleDeleteWebhook()))

	h.mux.Handle("/dashboard/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.renderError(w, r, http.StatusNotFound, "There is no such page.")
	}))
}

// contentSecurityPolicy allows the dashboard's own script, styles and images and nothing
// else: no inline script, no framing, forms only to this origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP sets the security headers every dashboard response carries, guards against
// panics, routes, and writes one access log line (method, route, status, duration, account;
// never a form value, so no password, key or secret reaches the log).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
	rec := &statusRecorder{ResponseWriter: w}
	logged := &accessInfo{}
	r = r.WithContext(withAccessInfo(r.Context(), logged))
	defer func() {
		if v := recover(); v != nil {
			h.cfg.Logger.Error("dashboard panic", "path", r.URL.Path, "panic", fmt.Sprint(v))
			if rec.status == 0 {
				h.renderError(rec, r, http.StatusInternalServerError, "Something went wrong on our side. Try again.")
			}
		}
		_, pattern := h.mux.Handler(r)
		h.cfg.Logger.Info("dashboard request", "method", r.Method, "route", pattern, "status", rec.code(),
			"duration_ms", float64(time.Since(start).Microseconds())/1000, "account", logged.account)
	}()
	h.mux.ServeHTTP(rec, r)
}

func (h *Handler) staticFiles() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			h.renderError(w, r, http.StatusNotFound, "There is no such page.")
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		h.static.ServeHTTP(w, r)
	})
}

// handleHome sends a visitor to the API keys page, or to sign-in.
func (h *Handler) handleHome() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := h.loadVisitor(w, r); ok {
			http.Redirect(w, r, "/dashboard/settings/keys", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/dashboard/signin", http.StatusSeeOther)
	})
}

// statusRecorder remembers the status written, for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
