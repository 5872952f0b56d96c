package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"riskapi/internal/admission"
	"riskapi/internal/auth"
	"riskapi/internal/dashboard"
	"riskapi/internal/delivery"
	"riskapi/internal/httpapi"
	"riskapi/internal/ident"
	"riskapi/internal/jobs"
	"riskapi/internal/logbuffer"
	"riskapi/internal/monitor"
	"riskapi/internal/ratelimit"
	"riskapi/internal/ratepolicy"
	"riskapi/internal/simulation"
	"riskapi/internal/store"
	"riskapi/internal/usage"
)

// Server timeouts. Slow clients cannot pin connections: headers must arrive within 10 s,
// a whole body (up to 64 MiB) within 2 min, and idle keep-alive connections close after 2 min.
// The write timeout leaves room for the largest synchronous analyses.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 2 * time.Minute
	writeTimeout      = 5 * time.Minute
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
	// lastUsedFlushInterval: how often key last-use times are written, in one batch.
	lastUsedFlushInterval = 10 * time.Second
	// usageFlushInterval: how often billable units are written; a crash loses at most this much.
	usageFlushInterval = 2 * time.Second
	// redisRetryAfter: after a Redis failure the limiter counts in memory for this long
	// before it tries Redis again.
	redisRetryAfter = 5 * time.Second
)

// openLimiter returns the rate limiter: Redis (with the in-process limiter as fallback) when
// a URL is set, else the in-process limiter alone. An unreachable Redis at start-up is not
// fatal: the process starts on the fallback and moves to Redis when it answers.
//
// processes is how many server processes share each limit while Redis is unreachable: each
// admits at most its share (ratelimit.Failover).
func openLimiter(ctx context.Context, redisURL, prefix string, processes int, memory *ratelimit.Memory, logger *slog.Logger) (ratelimit.Limiter, func(), error) {
	if redisURL == "" {
		return memory, func() {}, nil
	}
	client, err := ratelimit.OpenRedis(ctx, redisURL)
	if client == nil {
		return nil, nil, fmt.Errorf("redis: %w", err)
	}
	if err != nil {
		logger.Warn("redis unreachable at start-up; counting in process memory until it answers", "err", err)
	}
	limiter := ratelimit.NewFailover(ratelimit.NewRedis(client, prefix), memory, logger, redisRetryAfter)
	limiter.SetProcesses(processes)
	logger.Info("rate limits shared in redis", "outage_processes", processes)
	return limiter, func() { client.Close() }, nil
}

// dispatcherOwner names this process's webhook dispatcher in delivery leases, and its
// simulation runner in simulation leases.
func dispatcherOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), ident.Random(6))
}

// newHandler is the whole service on one port: /dashboard and everything under it goes to
// the dashboard, every other request to the API, untouched (no path cleaning or redirects
// of its own: each side answers unknown paths in its own way).
func newHandler(api, dash http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dashboard" || strings.HasPrefix(r.URL.Path, "/dashboard/") {
			dash.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

type serveConfig struct {
	store        storeSettings
	addr         string
	noBootstrap  bool
	region       string
	publicURL    string
	euPublicURL  string
	maxBodyBytes int64
	shutdown     time.Duration
	logLevel     slog.Level
	deprecation  *httpapi.Deprecation
	redisURL     string
	redisPrefix  string
	// rateLimitProcesses: while Redis is unreachable each process admits 1/N of what is left.
	rateLimitProcesses int
	// webhooks
	allowPrivateWebhooks bool
	retrySchedule        delivery.Schedule
	webhookTimeout       time.Duration
	ceiling              int64
	proxies              []netip.Prefix
	// simulationWorkers is how many chunks of background simulations this process runs at once.
	simulationWorkers int
	// jobRescueAfter is River's RescueStuckJobsAfter (jobs.DefaultRescueAfter by default).
	jobRescueAfter time.Duration
	// dashboardSignUp lets visitors create accounts in the dashboard (off: invite-only).
	dashboardSignUp bool
	bounds          httpapi.Bounds
}

func parseServeConfig(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	fs := newFlagSet("riskapi serve", stderr)
	c.store.register(fs, getenv)
	bounds := registerBounds(fs, getenv)
	fs.StringVar(&c.addr, "addr", envOr(getenv, "RISKAPI_ADDR", "127.0.0.1:8080"), "listen address (env RISKAPI_ADDR)")
	fs.BoolVar(&c.noBootstrap, "no-bootstrap", getenv("RISKAPI_NO_BOOTSTRAP") == "true",
		"do not create the demo account and test key on an empty embedded store (env RISKAPI_NO_BOOTSTRAP=true)")
	fs.StringVar(&c.region, "region", envOr(getenv, "RISKAPI_REGION", store.RegionDefault), "deployment region: default or eu (env RISKAPI_REGION)")
	fs.StringVar(&c.publicURL, "public-url", getenv("RISKAPI_PUBLIC_URL"), "public base URL reported by GET /v1 (env RISKAPI_PUBLIC_URL; default http://<addr>)")
	fs.StringVar(&c.euPublicURL, "eu-public-url", getenv("RISKAPI_EU_PUBLIC_URL"), "public base URL of the EU deployment (env RISKAPI_EU_PUBLIC_URL; default none)")
	maxBody := envOr(getenv, "RISKAPI_MAX_BODY_BYTES", strconv.Itoa(httpapi.DefaultMaxBodyBytes))
	fs.StringVar(&maxBody, "max-body-bytes", maxBody, "request body limit in bytes (env RISKAPI_MAX_BODY_BYTES)")
	shutdown := envOr(getenv, "RISKAPI_SHUTDOWN_TIMEOUT", "30s")
	fs.StringVar(&shutdown, "shutdown-timeout", shutdown, "how long shutdown waits for in-flight requests (env RISKAPI_SHUTDOWN_TIMEOUT)")
	logLevel := envOr(getenv, "RISKAPI_LOG_LEVEL", "info")
	fs.StringVar(&logLevel, "log-level", logLevel, "debug, info, warn or error (env RISKAPI_LOG_LEVEL)")
	deprecatedAt := fs.String("deprecated-at", getenv("RISKAPI_DEPRECATED_AT"), "mark v1 deprecated since this RFC 3339 time (env RISKAPI_DEPRECATED_AT)")
	sunsetAt := fs.String("sunset-at", getenv("RISKAPI_SUNSET_AT"), "with --deprecated-at: when v1 stops answering, RFC 3339 (env RISKAPI_SUNSET_AT)")
	migrationGuide := fs.String("migration-guide", getenv("RISKAPI_MIGRATION_GUIDE_URL"), "with --deprecated-at: migration guide URL (env RISKAPI_MIGRATION_GUIDE_URL)")
	c.redisURL = getenv("RISKAPI_REDIS_URL")
	c.redisPrefix = envOr(getenv, "RISKAPI_REDIS_PREFIX", "riskapi:")
	processes := fs.String("rate-limit-processes", envOr(getenv, "RISKAPI_RATE_LIMIT_PROCESSES", "1"),
		"server processes sharing the Redis rate limits: while Redis is unreachable each admits 1/N of what was left of a limit (env RISKAPI_RATE_LIMIT_PROCESSES)")
	ceiling := envOr(getenv, "RISKAPI_UNLIMITED_CEILING", strconv.Itoa(ratepolicy.DefaultUnlimitedCeiling))
	fs.StringVar(&ceiling, "unlimited-ceiling", ceiling, "hourly safety ceiling behind the plan table's Unlimited (env RISKAPI_UNLIMITED_CEILING)")
	fs.BoolVar(&c.allowPrivateWebhooks, "allow-private-webhooks", getenv("RISKAPI_ALLOW_PRIVATE_WEBHOOKS") == "true",
		"development: let webhook endpoints point at loopback and private addresses (env RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true)")
	schedule := fs.String("webhook-retry-schedule", getenv("RISKAPI_WEBHOOK_RETRY_SCHEDULE"),
		"comma-separated delays between delivery attempts, e.g. 1s,1s,1s (env RISKAPI_WEBHOOK_RETRY_SCHEDULE; default 5s,5m,30m,2h,5h,10h,14h,20h,24h with ±10% jitter)")
	webhookTimeout := fs.String("webhook-timeout", envOr(getenv, "RISKAPI_WEBHOOK_TIMEOUT", "10s"),
		"how long a receiver has to answer a delivery (env RISKAPI_WEBHOOK_TIMEOUT)")
	workers := fs.String("simulation-workers", envOr(getenv, "RISKAPI_SIMULATION_WORKERS", strconv.Itoa(simulation.DefaultConcurrency())),
		"chunks of background Cascade simulations this process runs at once, each on one core (env RISKAPI_SIMULATION_WORKERS; default GOMAXPROCS)")
	rescue := fs.String("job-rescue-after", envOr(getenv, "RISKAPI_JOB_RESCUE_AFTER", jobs.DefaultRescueAfter.String()),
		"how long a background job may run before another process takes it for abandoned and runs it again (env RISKAPI_JOB_RESCUE_AFTER)")
	proxies := fs.String("trusted-proxies", getenv("RISKAPI_TRUSTED_PROXIES"),
		"comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (env RISKAPI_TRUSTED_PROXIES)")
	signUp := true
	if v := getenv("RISKAPI_DASHBOARD_SIGNUP"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, usagef("RISKAPI_DASHBOARD_SIGNUP=%q: use true or false", v)
		}
		signUp = b
	}
	fs.BoolVar(&c.dashboardSignUp, "dashboard-signup", signUp,
		"let visitors create accounts in the dashboard at /dashboard; --dashboard-signup=false for invite-only (env RISKAPI_DASHBOARD_SIGNUP=false)")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	var err error
	if c.ceiling, err = strconv.ParseInt(ceiling, 10, 64); err != nil || c.ceiling < 1 {
		return c, usagef("unlimited ceiling %q: want a positive integer", ceiling)
	}
	if c.rateLimitProcesses, err = strconv.Atoi(*processes); err != nil || c.rateLimitProcesses < 1 {
		return c, usagef("rate limit processes %q: want a positive integer (the number of server processes)", *processes)
	}
	if c.simulationWorkers, err = strconv.Atoi(*workers); err != nil || c.simulationWorkers < 1 {
		return c, usagef("simulation workers %q: want a positive integer", *workers)
	}
	if c.jobRescueAfter, err = time.ParseDuration(*rescue); err != nil || c.jobRescueAfter < jobs.MinRescueAfter {
		return c, usagef("job rescue after %q: want a duration of at least %s", *rescue, jobs.MinRescueAfter)
	}
	for _, cidr := range strings.FieldsFunc(*proxies, func(r rune) bool { return r == ',' || r == ' ' }) {
		prefix, err := netip.ParsePrefix(cidr)
		if err != nil {
			return c, usagef("trusted proxies: %q is not a CIDR such as 10.0.0.0/8", cidr)
		}
		c.proxies = append(c.proxies, prefix.Masked())
	}
	c.retrySchedule = delivery.DefaultSchedule
	if *schedule != "" {
		if c.retrySchedule, err = delivery.ParseSchedule(*schedule); err != nil {
			return c, usagef("webhook retry schedule: %v", err)
		}
	}
	if c.webhookTimeout, err = time.ParseDuration(*webhookTimeout); err != nil || c.webhookTimeout <= 0 {
		return c, usagef("webhook timeout %q: want a positive duration such as 10s", *webhookTimeout)
	}
	if c.redisURL != "" && !strings.HasPrefix(c.redisURL, "redis://") && !strings.HasPrefix(c.redisURL, "rediss://") {
		return c, usagef("RISKAPI_REDIS_URL must be a redis:// or rediss:// URL")
	}
	if fs.NArg() > 0 {
		return c, usagef("serve takes no arguments, got %q", fs.Args())
	}
	if c.bounds, err = bounds.parse(); err != nil {
		return c, err
	}
	if !store.ValidRegion(c.region) {
		return c, usagef("region %q: want default or eu", c.region)
	}
	n, err := strconv.ParseInt(maxBody, 10, 64)
	if err != nil || n < 1024 {
		return c, usagef("max body bytes %q: want an integer of at least 1024", maxBody)
	}
	c.maxBodyBytes = n
	if c.shutdown, err = time.ParseDuration(shutdown); err != nil || c.shutdown <= 0 {
		return c, usagef("shutdown timeout %q: want a positive duration such as 30s", shutdown)
	}
	if err := c.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return c, usagef("log level %q: want debug, info, warn or error", logLevel)
	}
	if *deprecatedAt != "" {
		d := &httpapi.Deprecation{MigrationGuide: *migrationGuide}
		if d.At, err = time.Parse(time.RFC3339, *deprecatedAt); err != nil {
			return c, usagef("deprecated-at %q: want an RFC 3339 time", *deprecatedAt)
		}
		if *sunsetAt != "" {
			if d.Sunset, err = time.Parse(time.RFC3339, *sunsetAt); err != nil {
				return c, usagef("sunset-at %q: want an RFC 3339 time", *sunsetAt)
			}
		}
		c.deprecation = d
	}
	return c, nil
}

// runServe migrates the store, bootstraps a demo account on an empty embedded store, and
// serves until ctx ends; then it stops accepting, lets in-flight requests finish (bounded
// by the shutdown timeout), flushes key last-use times and closes the store.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServeConfig(args, getenv, stderr)
	if err != nil {
		return helpOK(err)
	}
	// Access lines are written in batches, every other line at once (internal/logbuffer);
	// the deferred Flush, the first defer, runs last.
	logOut := logbuffer.NewWriter(stderr)
	defer logOut.Flush()
	logger := slog.New(logbuffer.NewHandler(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.logLevel}), logOut, httpapi.AccessLogMessage))
	applyMemoryLimit(cfg.bounds, getenv)

	st, err := cfg.store.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := checkSecretKeys(ctx, st, cfg.store, logger); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	defer ln.Close()
	baseURL := "http://" + ln.Addr().String()
	if cfg.publicURL == "" {
		cfg.publicURL = baseURL
	}

	if cfg.store.embedded() && !cfg.noBootstrap {
		if err := bootstrapDemo(ctx, st, cfg.region, baseURL, stdout); err != nil {
			return err
		}
	}

	cursorKey, err := st.Secret(ctx, "pagination-cursor", []byte(ident.Random(64)))
	if err != nil {
		return fmt.Errorf("load the pagination key: %w", err)
	}
	memory := ratelimit.NewMemory()
	limiter, closeLimiter, err := openLimiter(ctx, cfg.redisURL, cfg.redisPrefix+"rl:", cfg.rateLimitProcesses, memory, logger)
	if err != nil {
		return err
	}
	defer closeLimiter()
	authn := auth.NewAuthenticator(st, time.Now, logger)
	meter := usage.NewMeter(st, logger)
	metrics := prometheus.NewRegistry()
	targets := delivery.Targets{AllowPrivate: cfg.allowPrivateWebhooks}
	dispatcher, err := delivery.NewDispatcher(delivery.DispatcherConfig{
		Store:    st,
		Client:   targets.Client(cfg.webhookTimeout),
		Schedule: cfg.retrySchedule,
		// A crashed process's claimed deliveries are sent again once their lease ends: the
		// attempt's timeout plus as long again (at least 5 s) to record its outcome.
		Lease:   cfg.webhookTimeout + max(5*time.Second, cfg.webhookTimeout),
		Owner:   dispatcherOwner(),
		Logger:  logger,
		Metrics: metrics,
	})
	if err != nil {
		return err
	}
	// Background Cascade simulations: resumed from the store after a restart or a crash.
	bounds := cfg.bounds.WithDefaults()
	memoryBudget := admission.NewMemory(bounds.MemoryLimit, bounds.MemoryWait)
	logger.Info("bounded work", "memory_limit_bytes", bounds.MemoryLimit, "sync_budget", bounds.SyncBudget.String(),
		"background_budget", bounds.BackgroundBudget.String(), "account_concurrency", bounds.PerAccount)
	owner := dispatcherOwner()
	simulations, err := simulation.NewRunner(simulation.RunnerConfig{
		Memory: memoryBudget,
		Store:  st,
		Logger: logger,
		Owner:  owner,
		Notify: dispatcher.Notify,
	})
	if err != nil {
		return err
	}
	looks := &monitor.Looker{Store: st, Now: time.Now, Notify: dispatcher.Notify, Logger: logger}
	jobClient, err := newJobClient(st, simulations, looks, cfg, owner, logger)
	if err != nil {
		return err
	}
	api, err := httpapi.NewServer(httpapi.Config{
		Store:            st,
		Auth:             authn,
		Limiter:          limiter,
		Meter:            meter,
		CursorKey:        cursorKey,
		UnlimitedCeiling: cfg.ceiling,
		TrustedProxies:   cfg.proxies,
		Webhooks:         httpapi.WebhookConfig{Targets: targets, Notify: dispatcher.Notify},
		WakeSimulations:  simulations.Wake,
		Metrics:          metrics,
		Logger:           logger,
		Region:           cfg.region,
		PublicURL:        cfg.publicURL,
		EUPublicURL:      cfg.euPublicURL,
		MaxBodyBytes:     cfg.maxBodyBytes,
		Deprecation:      cfg.deprecation,
		Bounds:           bounds,
		Memory:           memoryBudget,
	})
	if err != nil {
		return err
	}
	if len(cfg.proxies) > 0 && !strings.HasPrefix(cfg.publicURL, "https://") {
		// Behind a TLS-terminating proxy the process itself sees plain HTTP: only the public
		// URL tells it to mark session cookies Secure.
		logger.Warn("trusted proxies are set but RISKAPI_PUBLIC_URL is not https://; dashboard session cookies are not marked Secure")
	}
	dash, err := dashboard.New(dashboard.Config{
		Store:            st,
		Limiter:          limiter,
		Logger:           logger,
		SignUp:           cfg.dashboardSignUp,
		Region:           cfg.region,
		SecureCookies:    strings.HasPrefix(cfg.publicURL, "https://"),
		TrustedProxies:   cfg.proxies,
		UnlimitedCeiling: cfg.ceiling,
		Targets:          targets,
		Notify:           dispatcher.Notify,
		KeyRevoked:       authn.Forget,
	})
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           newHandler(api, dash),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	// Open MCP streams (GET /mcp) end when shutdown begins: Shutdown would wait for them.
	srv.RegisterOnShutdown(api.EndStreams)

	background, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { authn.Run(background, lastUsedFlushInterval) })
	wg.Go(func() { meter.Run(background, usageFlushInterval) })
	wg.Go(func() { memory.Run(background) })
	wg.Go(func() { dispatcher.Run(background) })
	wg.Go(func() { simulations.Run(background) })
	if err := jobClient.Start(background); err != nil {
		stopBackground()
		wg.Wait()
		return fmt.Errorf("start background jobs: %w", err)
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "riskapi %s listening on %s (store: %s)\n", buildVersion(), baseURL, cfg.store.describe())
	logger.Info("listening", "addr", ln.Addr().String(), "region", cfg.region)

	select {
	case err = <-serveErr:
		err = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		logger.Info("shutting down", "timeout", cfg.shutdown.String())
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdown)
		err = srv.Shutdown(shutdownCtx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("shutdown: in-flight requests still running after %s", cfg.shutdown)
			srv.Close()
		}
	}
	stopJobs(jobClient, logger)
	stopBackground()
	wg.Wait()
	logger.Info("stopped")
	return err
}

// bootstrapDemo creates a demo account and a test key on an empty store and prints the
// key once. The key is not logged; only stdout shows it.
func bootstrapDemo(ctx context.Context, st store.Store, region, baseURL string, stdout io.Writer) error {
	now := time.Now()
	acct := store.Account{
		ID:        newAccountID(),
		Name:      "Demo account",
		Email:     "demo@example.com",
		Plan:      store.PlanFreeTrial,
		Region:    region,
		CreatedAt: now.UTC().Truncate(time.Millisecond),
	}
	key, secret, err := auth.NewAPIKey(auth.KeyParams{AccountID: acct.ID, Type: store.KeyTest, Name: "Demo test key"}, now)
	if err != nil {
		return err
	}
	created, err := st.Bootstrap(ctx, acct, key)
	if err != nil {
		return fmt.Errorf("bootstrap demo account: %w", err)
	}
	if !created {
		return nil
	}
	fmt.Fprintf(stdout, `Created demo account %s with a test-mode API key. It is shown only this once:

    %s

Try it:
    curl -H "Authorization: Bearer %s" %s/v1/account

`, acct.ID, secret, secret, baseURL)
	return nil
}
