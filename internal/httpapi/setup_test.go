package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/contracttest"
	"riskapi/internal/ident"
	"riskapi/internal/ratelimit"
	"riskapi/internal/simulation/simulationtest"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/testclock"
	"riskapi/internal/testlog"
	"riskapi/internal/usage"
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
	sims *simulationtest.Watch
}

// setup starts a server; edit adjusts its Config before it is built, and mount adds
// routes that exist only in tests.
func setup(t testing.TB, edit func(*Config), mount func(*Server)) *bundle {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlitetest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return setupOn(t, st, edit, mount)
}

// setupOn is setup over a store the caller opened (and closes), for the benchmarks that
// compare the embedded store with PostgreSQL.
func setupOn(t testing.TB, st store.Store, edit func(*Config), mount func(*Server)) *bundle {
	t.Helper()
	ctx := context.Background()
	var err error
	// A fixed instant in the middle of an hour: rate-limit windows never roll over mid-test.
	clock := testclock.New(time.Date(2026, 11, 21, 10, 20, 30, 0, time.UTC))
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	b := &bundle{t: t, store: st, clock: clock, logs: logs, contract: contracttest.Load(t), sims: &simulationtest.Watch{Store: st}}
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
	// The body is kept to check the request against the contract. Only bodies of a known
	// length are read ahead (and re-sent with that length); a streamed one is sent as it is,
	// without a Content-Length, and not checked.
	var sent []byte
	bodyKnown := true
	switch r := body.(type) {
	case nil:
	case *bytes.Reader, *strings.Reader, *bytes.Buffer:
		data, err := io.ReadAll(r)
		if err != nil {
			b.t.Fatal(err)
		}
		sent, body = data, bytes.NewReader(data)
	default:
		bodyKnown = false
	}
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
		// A request the service accepted must be one the document allows (these tests send
		// malformed requests on purpose, so only the accepted ones are held to it).
		if res.StatusCode < 300 && bodyKnown {
			if err := b.contract.ValidateRequest(req, sent); err != nil {
				b.t.Errorf("contract: the service accepted a request the document does not allow: %v", err)
			}
		}
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
