package client_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"riskapi/client"
	"riskapi/internal/auth"
	"riskapi/internal/contracttest"
	"riskapi/internal/delivery"
	"riskapi/internal/httpapi"
	"riskapi/internal/ident"
	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/usage"
)

// service is the real API (internal/httpapi) over a real SQLite store in a temporary
// directory, served on a loopback httptest server, with one account and a test and a live
// key. No webhook dispatcher or simulation runner runs: deliveries and background
// simulations stay pending.
type service struct {
	t       testing.TB // nil in examples
	store   store.Store
	meter   *usage.Meter
	http    *httptest.Server
	account store.Account
	testKey string
	liveKey string
}

// euBaseURL is the EU deployment's base URL the service reports in GET /v1.
const euBaseURL = "https://eu.api.example.com"

// launch starts a service with its store in dir; stop closes both. wrap, when not nil,
// stands between the API and the store (to hold a request at a chosen step).
func launch(dir string, wrap func(store.Store) httpapi.Store) (s *service, stop func(), err error) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	s = &service{store: st, meter: usage.NewMeter(st, logger)}
	s.http = httptest.NewUnstartedServer(nil) // 127.0.0.1
	var api httpapi.Store = st
	if wrap != nil {
		api = wrap(st)
	}
	server, err := httpapi.NewServer(httpapi.Config{
		Store: api, Auth: auth.NewAuthenticator(st, time.Now, logger), Limiter: ratelimit.NewMemory(),
		Meter: s.meter, Logger: logger, CursorKey: []byte(ident.Random(32)),
		PublicURL: "http://" + s.http.Listener.Addr().String(), EUPublicURL: euBaseURL,
		Webhooks: httpapi.WebhookConfig{Targets: delivery.Targets{}},
	})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	s.http.Config.Handler = server
	s.http.Start()
	stop = func() { s.http.Close(); st.Close() }

	s.account = store.Account{ID: ident.New("acct"), Name: "Acme", Email: "risk@acme.test",
		Plan: store.PlanStarter, Region: store.RegionDefault, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	if err := st.CreateAccount(ctx, s.account); err != nil {
		stop()
		return nil, nil, err
	}
	if s.testKey, err = s.newKey(auth.KeyParams{Type: store.KeyTest, Name: "ci"}); err != nil {
		stop()
		return nil, nil, err
	}
	if s.liveKey, err = s.newKey(auth.KeyParams{Type: store.KeyLive, Name: "prod"}); err != nil {
		stop()
		return nil, nil, err
	}
	return s, stop, nil
}

// startService launches a service for one test.
func startService(t testing.TB) *service {
	t.Helper()
	return startServiceWith(t, nil)
}

// startServiceWith launches a service whose store wrap wraps.
func startServiceWith(t testing.TB, wrap func(store.Store) httpapi.Store) *service {
	t.Helper()
	s, stop, err := launch(sqlitetest.Dir(t), wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	s.t = t
	return s
}

// newKey stores a key of the service's account and returns the key itself.
func (s *service) newKey(p auth.KeyParams) (string, error) {
	p.AccountID = s.account.ID
	k, secret, err := auth.NewAPIKey(p, time.Now())
	if err != nil {
		return "", err
	}
	return secret, s.store.CreateAPIKey(context.Background(), k)
}

// checked is a transport to the service that checks every response against
// api/openapi.yaml, as internal/httpapi's tests do, and marks its operation exercised.
func (s *service) checked() http.RoundTripper {
	return &contractChecker{t: s.t, contract: contracttest.Load(s.t), next: http.DefaultTransport}
}

// client returns a client of the service with key, whose every response is checked against
// api/openapi.yaml; opts come after the test's defaults (fast backoff), so they win.
func (s *service) client(key string, opts ...client.Option) *client.Client {
	s.t.Helper()
	hc := &http.Client{Transport: s.checked()}
	all := append([]client.Option{
		client.WithBaseURL(s.http.URL), client.WithAPIKey(key), client.WithHTTPClient(hc),
		client.WithBackoff(time.Millisecond, 10*time.Millisecond),
	}, opts...)
	c, err := client.New(all...)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// contractChecker is a transport that checks every response against the contract (as
// internal/httpapi's tests do), and marks the operation exercised. It also checks every
// request against the contract (contracttest.CheckRequest), so a body or parameter the
// client sends that the document does not allow fails the test, except where the service
// refused the request as malformed, which tests of error handling do on purpose.
type contractChecker struct {
	t        testing.TB
	contract *contracttest.Contract
	next     http.RoundTripper
}

func (c *contractChecker) RoundTrip(req *http.Request) (*http.Response, error) {
	var sent []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		if sent, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(sent))
	}
	res, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	c.contract.Check(c.t, req, res.StatusCode, res.Header, raw)
	c.contract.CheckRequest(c.t, req, sent, res.StatusCode)
	res.Body = io.NopCloser(bytes.NewReader(raw))
	return res, nil
}
