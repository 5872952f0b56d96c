package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/ident"
	"riskapi/internal/ratelimit"
	"riskapi/internal/ratepolicy"
	"riskapi/internal/store"

	"riskapi/internal/testlog"
)

// newAccount stores another account of the given plan and returns it with a live key.
func (b *bundle) newAccount(plan store.Plan, limits map[string]int64) (store.Account, string) {
	b.t.Helper()
	a := store.Account{ID: ident.New("acct"), Name: "Other", Email: "o@o.test", Plan: plan, Region: store.RegionDefault,
		CustomLimits: limits, CreatedAt: b.clock.Now().UTC().Truncate(time.Millisecond)}
	if err := b.store.CreateAccount(context.Background(), a); err != nil {
		b.t.Fatal(err)
	}
	k, secret, err := auth.NewAPIKey(auth.KeyParams{AccountID: a.ID, Type: store.KeyLive}, b.clock.Now())
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.store.CreateAPIKey(context.Background(), k); err != nil {
		b.t.Fatal(err)
	}
	return a, secret
}

func (b *bundle) postProbe(key, body string, header map[string]string) response {
	b.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	return b.do(http.MethodPost, "/v1/_test/drift", strings.NewReader(body), h)
}

func headerInt(t *testing.T, r response, name string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(r.header.Get(name), 10, 64)
	if err != nil {
		t.Fatalf("header %s = %q: %v", name, r.header.Get(name), err)
	}
	return n
}

func TestFreeTrialDriftLimitIs100PerHour(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	_, key := b.newAccount(store.PlanFreeTrial, nil)
	hourEnd := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC).Unix()
	for i := range 100 {
		r := b.postProbe(key, `{"value": "x"}`, nil)
		if r.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.status, r.raw)
		}
		if got := headerInt(t, r, "X-RateLimit-Remaining"); got != int64(99-i) {
			t.Fatalf("request %d: X-RateLimit-Remaining %d, want %d", i+1, got, 99-i)
		}
		if headerInt(t, r, "X-RateLimit-Limit") != 100 || headerInt(t, r, "X-RateLimit-Reset") != hourEnd {
			t.Fatalf("request %d: limit/reset headers %v", i+1, r.header)
		}
	}
	r := b.postProbe(key, `{"value": "x"}`, nil)
	r.wantError(t, http.StatusTooManyRequests, "rate_limit_error", CodeRateLimited)
	// The clock stands at 10:20:30, so the window ends in 39 min 30 s.
	if got := headerInt(t, r, "Retry-After"); got != 39*60+30 {
		t.Fatalf("Retry-After = %d, want %d", got, 39*60+30)
	}
	if headerInt(t, r, "X-RateLimit-Remaining") != 0 {
		t.Fatalf("429 with remaining %s", r.header.Get("X-RateLimit-Remaining"))
	}
	if got := r.header.Get("RateLimit-Policy"); got != `"drift";q=100;w=3600` {
		t.Fatalf("RateLimit-Policy = %q", got)
	}
	if got := r.header.Get("RateLimit"); got != `"drift";r=0;t=2370` {
		t.Fatalf("RateLimit = %q", got)
	}
	if p.executions.Load() != 100 {
		t.Fatalf("%d executions, want 100", p.executions.Load())
	}
	// Other products and the platform bucket are separate.
	if r := b.get("/v1/account", key); r.status != http.StatusOK || headerInt(t, r, "X-RateLimit-Limit") != ratepolicy.PlatformLimit {
		t.Fatalf("account after drift exhausted: %d %v", r.status, r.header)
	}
	// The next hour starts afresh.
	b.clock.Advance(40 * time.Minute)
	if r := b.postProbe(key, `{"value": "x"}`, nil); r.status != http.StatusOK || headerInt(t, r, "X-RateLimit-Remaining") != 99 {
		t.Fatalf("next hour: %d remaining %s", r.status, r.header.Get("X-RateLimit-Remaining"))
	}
}

func TestEveryRequestCountsAndCarriesHeaders(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	_, key := b.newAccount(store.PlanFreeTrial, map[string]int64{"drift": 3})
	// A validation error and a success both count; both carry the headers.
	r := b.postProbe(key, `{}`, nil)
	r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_VALUE")
	if headerInt(t, r, "X-RateLimit-Remaining") != 2 || headerInt(t, r, "X-RateLimit-Limit") != 3 {
		t.Fatalf("400 headers: %v", r.header)
	}
	b.postProbe(key, `{"value":"a"}`, nil)
	b.postProbe(key, `{"value":"a"}`, nil)
	b.postProbe(key, `{"value":"a"}`, nil).wantError(t, http.StatusTooManyRequests, "rate_limit_error", CodeRateLimited)
	// 403 (scope) comes after the limit and carries its headers too.
	readOnly := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Scopes: []string{"drift:read"}})
	r = b.postProbe(readOnly, `{"value":"a"}`, nil)
	r.wantError(t, http.StatusForbidden, "permission_error", CodeForbidden)
	if r.header.Get("X-RateLimit-Limit") == "" {
		t.Fatal("403 without rate-limit headers")
	}
}

func TestPerKeyLimitTighterWins(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	key := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Scopes: []string{"drift:*"}, RateLimit: 5})
	for i := range 5 {
		r := b.postProbe(key, `{"value":"a"}`, nil)
		if r.status != http.StatusOK || headerInt(t, r, "X-RateLimit-Limit") != 5 || headerInt(t, r, "X-RateLimit-Remaining") != int64(4-i) {
			t.Fatalf("request %d: %d %v", i+1, r.status, r.header)
		}
		if !strings.Contains(r.header.Get("RateLimit-Policy"), `"key";q=5;w=3600`) || !strings.Contains(r.header.Get("RateLimit-Policy"), `"drift";q=1000;w=3600`) {
			t.Fatalf("RateLimit-Policy = %q", r.header.Get("RateLimit-Policy"))
		}
	}
	r := b.postProbe(key, `{"value":"a"}`, nil)
	r.wantError(t, http.StatusTooManyRequests, "rate_limit_error", CodeRateLimited)
	if r.field("error.details.policy") != "key" {
		t.Fatalf("429 names policy %v, want key", r.field("error.details.policy"))
	}
	// The account's own keys are not affected by this key's limit.
	if r := b.postProbe(b.liveKey, `{"value":"a"}`, nil); r.status != http.StatusOK {
		t.Fatalf("another key of the account: %d", r.status)
	}
}

func TestTestModeIs1000PerDayAcrossEndpoints(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	for i := range 1000 {
		var r response
		if i%2 == 0 {
			r = b.postProbe(b.testKey, `{"value":"a"}`, nil)
		} else {
			r = b.get("/v1/account", b.testKey)
		}
		if r.status != http.StatusOK {
			t.Fatalf("test-mode request %d: %d", i+1, r.status)
		}
	}
	r := b.get("/v1/account", b.testKey)
	r.wantError(t, http.StatusTooManyRequests, "rate_limit_error", CodeRateLimited)
	if r.field("error.details.window") != "day" || headerInt(t, r, "X-RateLimit-Limit") != 1000 {
		t.Fatalf("1001st test request: %s %v", r.raw, r.header)
	}
	if midnight := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).Unix(); headerInt(t, r, "X-RateLimit-Reset") != midnight {
		t.Fatalf("reset %s, want UTC midnight %d", r.header.Get("X-RateLimit-Reset"), midnight)
	}
	// Live mode of the same account is untouched.
	if r := b.get("/v1/account", b.liveKey); r.status != http.StatusOK {
		t.Fatalf("live key after test quota: %d", r.status)
	}
}

func TestFailedAuthenticationIsLimitedPerIP(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for i := range ratepolicy.FailedAuthLimit {
		r := b.get("/v1/account", "")
		r.wantError(t, http.StatusUnauthorized, "authentication_error", CodeUnauthorized)
		if headerInt(t, r, "X-RateLimit-Limit") != ratepolicy.FailedAuthLimit || headerInt(t, r, "X-RateLimit-Remaining") != int64(ratepolicy.FailedAuthLimit-1-i) {
			t.Fatalf("401 number %d headers: %v", i+1, r.header)
		}
	}
	// Beyond the limit, a malformed key is refused without a lookup, and a well-formed key
	// that fails the lookup gets 429 instead of 401.
	for _, key := range []string{"", "sk_test_not_a_key", auth.GenerateKey(store.KeyTest)} {
		r := b.get("/v1/account", key)
		r.wantError(t, http.StatusTooManyRequests, "rate_limit_error", CodeRateLimited)
		if r.header.Get("Retry-After") == "" || r.field("error.details.policy") != "failed-auth" {
			t.Fatalf("429 for %q: %s %v", key, r.raw, r.header)
		}
	}
	// A valid key is never refused because other requests from its address failed.
	if r := b.get("/v1/account", b.testKey); r.status != http.StatusOK {
		t.Fatalf("a valid key from the address that failed 300 times: %d %s", r.status, r.raw)
	}
	// Public endpoints are not counted or refused.
	if r := b.get("/v1", ""); r.status != http.StatusOK {
		t.Fatalf("public endpoint: %d", r.status)
	}
}

func TestConcurrentRequestsAdmitExactlyTheLimit(t *testing.T) {
	t.Parallel()
	p := &probe{}
	b := setup(t, nil, p.mount)
	key := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Scopes: []string{"drift:write"}, RateLimit: 50})
	var wg sync.WaitGroup
	statuses := make([]int, 200)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = b.postProbe(key, fmt.Sprintf(`{"value":"%d"}`, i), nil).status
		})
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts[http.StatusOK] != 50 || counts[http.StatusTooManyRequests] != 150 {
		t.Fatalf("statuses %v, want 50×200 and 150×429", counts)
	}
	if p.executions.Load() != 50 {
		t.Fatalf("%d executions, want 50", p.executions.Load())
	}
}

func TestRedisDownFallsBackToProcessMemory(t *testing.T) {
	t.Parallel()
	client, err := ratelimit.OpenRedis(context.Background(), "redis://127.0.0.1:1/0")
	if err == nil || client == nil {
		t.Fatalf("OpenRedis on a closed port: client %v, err %v; want a client and an error", client, err)
	}
	defer client.Close()
	logs := &testlog.Buffer{}
	p := &probe{}
	b := setup(t, func(c *Config) {
		c.Limiter = ratelimit.NewFailover(ratelimit.NewRedis(client, "riskapi:test:"), ratelimit.NewMemory(),
			slog.New(slog.NewJSONHandler(logs, nil)), time.Hour)
	}, p.mount)
	key := b.newKey(auth.KeyParams{Type: store.KeyRestricted, Scopes: []string{"drift:write"}, RateLimit: 3})
	for i := range 3 {
		if r := b.postProbe(key, `{"value":"a"}`, nil); r.status != http.StatusOK || headerInt(t, r, "X-RateLimit-Remaining") != int64(2-i) {
			t.Fatalf("request %d with Redis down: %d %v", i+1, r.status, r.header)
		}
	}
	b.postProbe(key, `{"value":"a"}`, nil).wantError(t, http.StatusTooManyRequests, "rate_limit_error", CodeRateLimited)
	if !strings.Contains(logs.String(), "WARN") {
		t.Fatal("the fall-back was not logged")
	}
}

func TestHeaderNamesAreCanonical(t *testing.T) {
	for _, name := range []string{headerRequestID, headerRateLimitLimit, headerRateLimitRemaining, headerRateLimitReset,
		headerRateLimitPolicy, headerRateLimit, headerContentType, headerContentLength} {
		if c := textproto.CanonicalMIMEHeaderKey(name); c != name {
			t.Errorf("header name %q is not canonical (%q): a map write would not be found by Get", name, c)
		}
	}
}

// The IETF fields list every bucket, in order, as `"name";q=limit;w=window` and
// `"name";r=remaining;t=seconds`.
func TestSetLimitHeadersFields(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 20, 30, 0, time.UTC)
	applied := []ratepolicy.Limit{
		{Policy: "drift", Bucket: ratelimit.Bucket{Key: "{a}:drift", Limit: 500, Window: ratelimit.Hour}},
		{Policy: "key", Bucket: ratelimit.Bucket{Key: "{a}:key:k", Limit: 60, Window: ratelimit.Hour}},
	}
	states := []ratelimit.State{
		{Bucket: applied[0].Bucket, Count: 10, Reset: ratelimit.Hour.End(now)},
		{Bucket: applied[1].Bucket, Count: 60, Reset: ratelimit.Hour.End(now)},
	}
	h := http.Header{}
	if i := setLimitHeaders(h, applied, states, now, false); i != 1 {
		t.Errorf("tightest index %d, want 1", i)
	}
	want := map[string]string{
		"X-RateLimit-Limit":     "60",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     strconv.FormatInt(ratelimit.Hour.End(now).Unix(), 10),
		"RateLimit-Policy":      `"drift";q=500;w=3600, "key";q=60;w=3600`,
		"RateLimit":             `"drift";r=490;t=2370, "key";r=0;t=2370`,
		"Retry-After":           "",
	}
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("%s: %q, want %q", name, got, v)
		}
	}
	setLimitHeaders(h, applied[:1], states[:1], now, true)
	if got := h.Get("Retry-After"); got != "2370" {
		t.Errorf("Retry-After %q on a refusal, want 2370", got)
	}
}
