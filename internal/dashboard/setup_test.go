package dashboard

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/delivery"
	"riskapi/internal/httpapi"
	"riskapi/internal/ident"
	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/testclock"
	"riskapi/internal/testlog"
	"riskapi/internal/usage"
)

// bundle is one test's dashboard beside the real API (each on its own test server, as
// cmd/riskapi serves them on one port), over a real SQLite store.
type bundle struct {
	t       *testing.T
	store   store.Store
	clock   *testclock.Clock
	limiter *ratelimit.Memory
	logs    *testlog.Buffer
	handler *Handler
	url     string // the dashboard's server
	apiURL  string // the API's server
	notify  chan struct{}
}

const testPassword = "correct horse battery staple"

// testHash is the hash of testPassword, made once: argon2id costs tens of milliseconds (and
// several times that under the race detector), so tests that only need a user reuse it.
var testHash = sync.OnceValue(func() string { return HashPassword(testPassword) })

func setup(t *testing.T, edit func(*Config)) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlitetest.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// The middle of an hour: no rate-limit window ends during a test unless it moves the clock.
	clock := testclock.New(time.Date(2026, 11, 21, 10, 20, 30, 0, time.UTC))
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	limiter := ratelimit.NewMemory()
	authn := auth.NewAuthenticator(st, clock.Now, logger)
	b := &bundle{t: t, store: st, clock: clock, limiter: limiter, logs: logs, notify: make(chan struct{}, 100)}
	api, err := httpapi.NewServer(httpapi.Config{Store: st, Auth: authn, Limiter: limiter, Meter: usage.NewMeter(st, logger),
		Logger: logger, Now: clock.Now, CursorKey: []byte(ident.Random(32))})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: st, Limiter: limiter, Logger: logger, Now: clock.Now, SignUp: true,
		Targets: delivery.Targets{AllowPrivate: true}, KeyRevoked: authn.Forget,
		Notify: func() {
			select {
			case b.notify <- struct{}{}:
			default:
			}
		}}
	if edit != nil {
		edit(&cfg)
	}
	b.handler, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dash := httptest.NewServer(b.handler)
	t.Cleanup(dash.Close)
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	b.url, b.apiURL = dash.URL, apiSrv.URL
	return b
}

// newUser creates an account and a user with testPassword directly in the store.
func (b *bundle) newUser(plan store.Plan) (store.Account, store.User) {
	b.t.Helper()
	now := b.clock.Now().UTC().Truncate(time.Millisecond)
	a := store.Account{ID: ident.New("acct"), Name: "Lovelace Analytics", Email: "ops@lovelace.example", Plan: plan,
		Region: store.RegionDefault, CreatedAt: now}
	u := store.User{ID: ident.New("usr"), AccountID: a.ID, Email: "user-" + strings.ToLower(ident.Random(8)) + "@lovelace.example",
		PasswordHash: testHash(), CreatedAt: now, UpdatedAt: now}
	if err := b.store.CreateAccountWithUser(context.Background(), a, u); err != nil {
		b.t.Fatal(err)
	}
	return a, u
}

// browser is a client with its own cookies that does not follow redirects, so tests see them.
type browser struct {
	b    *bundle
	c    *http.Client
	last string // body of the last page, where csrf tokens come from
}

func (b *bundle) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{b: b, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) location() string { return r.header.Get("Location") }

func (br *browser) do(req *http.Request) response {
	br.b.t.Helper()
	res, err := br.c.Do(req)
	if err != nil {
		br.b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		br.b.t.Fatal(err)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		br.last = string(raw)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(raw)}
}

func (br *browser) get(path string) response {
	br.b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, br.b.url+path, nil)
	if err != nil {
		br.b.t.Fatal(err)
	}
	return br.do(req)
}

var csrfPattern = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the token of the last page's forms.
func (br *browser) csrf() string {
	m := csrfPattern.FindStringSubmatch(br.last)
	if m == nil {
		br.b.t.Fatalf("no csrf token on the last page:\n%s", br.last)
	}
	return m[1]
}

// post sends a form; the csrf field is added from the last page unless form sets it.
func (br *browser) post(path string, form url.Values, headers ...string) response {
	br.b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", br.csrf())
	}
	req, err := http.NewRequest(http.MethodPost, br.b.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		br.b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return br.do(req)
}

// signIn signs the browser in as u (password testPassword).
func (br *browser) signIn(u store.User) {
	br.b.t.Helper()
	br.get("/dashboard/signin")
	res := br.post("/dashboard/signin", url.Values{"email": {u.Email}, "password": {testPassword}})
	if res.status != http.StatusSeeOther || res.location() != "/dashboard/settings/keys" {
		br.b.t.Fatalf("sign in: %d %s\n%s", res.status, res.location(), res.body)
	}
}

func (br *browser) cookie(name string) *http.Cookie {
	u, _ := url.Parse(br.b.url + "/dashboard/")
	for _, c := range br.c.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// api calls the API with a key.
func (b *bundle) api(method, path, key, body string) int {
	b.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.apiURL+path, r)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func wantStatus(t *testing.T, what string, got response, status int) {
	t.Helper()
	if got.status != status {
		t.Fatalf("%s: status %d, want %d\n%s", what, got.status, status, got.body)
	}
}

func wantRedirect(t *testing.T, what string, got response, location string) {
	t.Helper()
	if got.status != http.StatusSeeOther || got.location() != location {
		t.Fatalf("%s: %d to %q, want 303 to %q\n%s", what, got.status, got.location(), location, got.body)
	}
}
