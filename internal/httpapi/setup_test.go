package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/contracttest"
	"riskapi/internal/ident"
	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/testclock"
	"riskapi/internal/usage"

	"riskapi/internal/testlog"
)

// bundle is one test's server over a real SQLite store, with an account and its keys.
type bundle struct {
	t        testing.TB
	store    store.Store
	auth     *auth.Authenticator
	meter    *usage.Meter
	clock    *testclock.Clock
	server   *Server
	http     *httptest.Server
	contract *contracttest.Contract
	account  store.Account
	testKey  string
	liveKey  string
	logs     *testlog.Buffer
	// sims is the server's store, watched: tests wait on it for the simulation runner's steps.
	sims *simulationWatch
}

// simulationWatch passes every call on to the store, and tells waiting tests when the
// background simulation runner has claimed, or failed to claim, a simulation or written one,
// so that they wait for its next step rather than polling on a timer.
type simulationWatch struct {
	store.Store
	mu          sync.Mutex
	changed     chan struct{}  // closed, and replaced, after every runner call
	emptyClaims map[string]int // claims that found nothing due, by owner
}

func (w *simulationWatch) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// next returns a channel closed after the runner's next call; take it before checking.
func (w *simulationWatch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

// emptyClaimsBy returns how many of owner's claims found nothing due.
func (w *simulationWatch) emptyClaimsBy(owner string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.emptyClaims[owner]
}

// waitFor checks cond now and after each of the runner's calls until it holds; it fails the
// test with what after timeout.
func (w *simulationWatch) waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		next := w.next()
		if cond() {
			return
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

func (w *simulationWatch) ClaimSimulation(ctx context.Context, owner string, lease time.Duration, now time.Time) (store.Simulation, error) {
	sim, err := w.Store.ClaimSimulation(ctx, owner, lease, now)
	if errors.Is(err, store.ErrNotFound) {
		w.mu.Lock()
		if w.emptyClaims == nil {
			w.emptyClaims = map[string]int{}
		}
		w.emptyClaims[owner]++
		w.mu.Unlock()
	}
	w.notify()
	return sim, err
}

func (w *simulationWatch) UpdateSimulation(ctx context.Context, id, owner string, payload []byte, until, now time.Time) error {
	defer w.notify()
	return w.Store.UpdateSimulation(ctx, id, owner, payload, until, now)
}

func (w *simulationWatch) FinishSimulation(ctx context.Context, id, owner, status string, payload, summary []byte, ev *store.Event, now time.Time) error {
	defer w.notify()
	return w.Store.FinishSimulation(ctx, id, owner, status, payload, summary, ev, now)
}

func (w *simulationWatch) ReleaseSimulation(ctx context.Context, id, owner string, payload []byte, now time.Time) error {
	defer w.notify()
	return w.Store.ReleaseSimulation(ctx, id, owner, payload, now)
}

// setup starts a server; edit adjusts its Config before it is built, and mount adds
// routes that exist only in tests.
func setup(t testing.TB, edit func(*Config), mount func(*Server)) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// A fixed instant in the middle of an hour: rate-limit windows never roll over mid-test.
	clock := testclock.New(time.Date(2026, 11, 21, 10, 20, 30, 0, time.UTC))
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	b := &bundle{t: t, store: st, clock: clock, logs: logs, contract: contracttest.Load(t), sims: &simulationWatch{Store: st}}
	b.auth = auth.NewAuthenticator(st, clock.Now, logger)
	b.meter = usage.NewMeter(st, logger)
	cfg := Config{Store: b.sims, Auth: b.auth, Limiter: ratelimit.NewMemory(), Meter: b.meter, Logger: logger, Now: clock.Now,
		CursorKey: []byte(ident.Random(32)), PublicURL: "http://api.test"}
	if edit != nil {
		edit(&cfg)
	}
	b.server, err = NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if mount != nil {
		mount(b.server)
	}
	b.http = httptest.NewServer(b.server)
	t.Cleanup(b.http.Close)

	b.account = store.Account{ID: ident.New("acct"), Name: "Acme", Email: "risk@acme.test",
		Plan: store.PlanStarter, Region: store.RegionDefault, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	if err := st.CreateAccount(ctx, b.account); err != nil {
		t.Fatal(err)
	}
	b.testKey = b.newKey(auth.KeyParams{Type: store.KeyTest, Name: "ci"})
	b.liveKey = b.newKey(auth.KeyParams{Type: store.KeyLive})
	return b
}

// newKey stores a key for the bundle's account and returns the secret.
func (b *bundle) newKey(p auth.KeyParams) string {
	b.t.Helper()
	p.AccountID = b.account.ID
	k, secret, err := auth.NewAPIKey(p, b.clock.Now())
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.store.CreateAPIKey(context.Background(), k); err != nil {
		b.t.Fatal(err)
	}
	return secret
}

// response is one observed exchange, already checked against the contract.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request and checks the response against api/openapi.yaml.
func (b *bundle) do(method, path string, body io.Reader, header map[string]string) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.http.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := b.http.Client().Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	r := response{status: res.StatusCode, header: res.Header, raw: raw}
	testOnlySuccess := strings.HasPrefix(path, "/v1/_test/") && res.StatusCode < 400
	if !testOnlySuccess {
		b.contract.Check(b.t, req, res.StatusCode, res.Header, raw)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			b.t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, path, err, raw)
		}
	}
	if testOnlySuccess {
		// Routes that exist only in tests are not in the contract: their errors are checked
		// against the error envelope above, their successes against the envelope here.
		r.wantSuccess(b.t)
	}
	return r
}

// get sends GET with the key (none when key is "").
func (b *bundle) get(path, key string) response {
	b.t.Helper()
	h := map[string]string{}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	return b.do(http.MethodGet, path, nil, h)
}

// field digs a value out of a decoded body by a dotted path ("error.details.field").
func (r response) field(path string) any {
	var v any = r.body
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

// wantError asserts an error envelope with this status, type and code.
func (r response) wantError(t *testing.T, status int, typ, code string) {
	t.Helper()
	if r.status != status || r.field("error.type") != typ || r.field("error.code") != code {
		t.Fatalf("got %d %v %v, want %d %s %s\n%s", r.status, r.field("error.type"), r.field("error.code"), status, typ, code, r.raw)
	}
	if r.field("success") != false {
		t.Fatalf("error envelope without success:false: %s", r.raw)
	}
	if id, _ := r.field("metadata.request_id").(string); id == "" || id != r.header.Get("X-Request-Id") {
		t.Fatalf("metadata.request_id %q does not match X-Request-Id %q", id, r.header.Get("X-Request-Id"))
	}
}

// wantSuccess asserts the success envelope's shape.
func (r response) wantSuccess(t testing.TB) {
	t.Helper()
	if r.field("success") != true || r.body["data"] == nil {
		t.Fatalf("not a success envelope: %s", r.raw)
	}
	if id, _ := r.field("metadata.request_id").(string); id == "" || id != r.header.Get("X-Request-Id") {
		t.Fatalf("metadata.request_id %q does not match X-Request-Id", id)
	}
	if _, ok := r.field("metadata.processing_time_ms").(float64); !ok {
		t.Fatalf("no processing_time_ms: %s", r.raw)
	}
}
