package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/contracttest"
	"riskapi/internal/store/postgres/pgtest"

	"riskapi/internal/testlog"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// env is a fake environment for run.
type env map[string]string

func (e env) get(name string) string { return e[name] }

// cli runs one command in-process and returns its stdout; it fails the test on error.
func cli(t *testing.T, e env, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), append([]string{"riskapi"}, args...), e.get, &out, &errOut); err != nil {
		t.Fatalf("riskapi %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// service is a running `riskapi serve`.
type service struct {
	url    string
	stdout *testlog.Buffer
	stderr *testlog.Buffer
	stop   func() error
}

var listening = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// startServe runs `riskapi serve` on a free port and waits until /healthz answers.
func startServe(t *testing.T, e env, args ...string) *service {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &service{stdout: &testlog.Buffer{}, stderr: &testlog.Buffer{}}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"riskapi", "serve", "--addr", "127.0.0.1:0"}, args...), e.get, s.stdout, s.stderr)
	}()
	var once sync.Once
	var stopErr error
	exited := func(err error) { once.Do(func() { stopErr = err }) }
	s.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(30 * time.Second):
				stopErr = errors.New("serve did not stop within 30 s")
			}
		})
		return stopErr
	}
	t.Cleanup(func() { s.stop() })
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for s.url == "" {
		written := s.stdout.Changed()
		if m := listening.FindStringSubmatch(s.stdout.String()); m != nil {
			s.url = m[1]
			break
		}
		select {
		case err := <-done:
			exited(err)
			t.Fatalf("serve exited early: %v\n%s", err, s.stderr.String())
		case <-written:
		case <-deadline.C:
			t.Fatalf("serve did not start listening within 20 s\nstdout: %s\nstderr: %s", s.stdout.String(), s.stderr.String())
		}
	}
	// serve listens before it prints the line, so /healthz answers at once.
	res, err := http.Get(s.url + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v\nstderr: %s", err, s.stderr.String())
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d\nstderr: %s", res.StatusCode, s.stderr.String())
	}
	return s
}

// pollUntil checks cond every interval until it holds, and fails the test with what after
// within. It is for the service's state, read through its API: the service is a black box
// that announces nothing to the test. Conditions on the receiver wait on the receiver's
// signal instead (receiver.waitFor).
func pollUntil(t *testing.T, every, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			if cond() {
				return
			}
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

// call sends a request to the service and checks the response against the contract.
func (s *service) call(t *testing.T, method, path, authorization string, body io.Reader) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	contracttest.Load(t).Check(t, req, res.StatusCode, res.Header, raw)
	var decoded map[string]any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, raw)
	}
	return res.StatusCode, decoded
}

func dig(m map[string]any, path string) any {
	var v any = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// wantStatus asserts a status and, for errors, the envelope's code and request id.
func wantStatus(t *testing.T, what string, status int, body map[string]any, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("%s: status %d, want %d: %v", what, status, wantStatus, body)
	}
	if wantCode != "" && dig(body, "error.code") != wantCode {
		t.Fatalf("%s: code %v, want %s", what, dig(body, "error.code"), wantCode)
	}
	if id, _ := dig(body, "metadata.request_id").(string); !strings.HasPrefix(id, "req_") {
		t.Fatalf("%s: no metadata.request_id: %v", what, body)
	}
}

var testKeyPattern = regexp.MustCompile(`sk_test_[0-9A-Za-z]{38}`)

func TestQuickStartPrintsAWorkingTestKey(t *testing.T) {
	t.Parallel()
	e := env{"RISKAPI_DATA_DIR": t.TempDir()}
	svc := startServe(t, e)
	key := testKeyPattern.FindString(svc.stdout.String())
	if key == "" {
		t.Fatalf("serve printed no test key:\n%s", svc.stdout.String())
	}
	status, body := svc.call(t, http.MethodGet, "/v1/account", "Bearer "+key, nil)
	wantStatus(t, "GET /v1/account", status, body, http.StatusOK, "")
	if dig(body, "data.livemode") != false || dig(body, "data.api_key.type") != "test" {
		t.Fatalf("demo key is not a test key: %v", body)
	}
	if strings.Contains(svc.stderr.String(), key) {
		t.Fatal("the demo key was written to the log")
	}
	if err := svc.stop(); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	// A second start on the same store prints no new key.
	again := startServe(t, e)
	if k := testKeyPattern.FindString(again.stdout.String()); k != "" {
		t.Fatalf("second start printed another key %s", k)
	}
	status, _ = again.call(t, http.MethodGet, "/v1/account", "Bearer "+key, nil)
	wantStatus(t, "key after restart", status, body, http.StatusOK, "")
}

func TestBlackBoxOnSQLite(t *testing.T) {
	t.Parallel()
	blackBox(t, env{"RISKAPI_DATA_DIR": t.TempDir()})
}

func TestBlackBoxOnPostgres(t *testing.T) {
	t.Parallel()
	blackBox(t, env{"RISKAPI_DATABASE_URL": pgtest.NewDatabase(t)})
}

// blackBox runs the foundation's acceptance checks against a served store: keys made with
// the command line authenticate; revoked, expired, mistyped, missing and Bearer-less keys
// get 401 in the envelope; unknown routes, other versions and wrong methods get 404/405.
func blackBox(t *testing.T, e env) {
	if out := cli(t, e, "migrate"); !regexp.MustCompile(`schema version [1-9][0-9]*\n$`).MatchString(out) {
		t.Fatalf("migrate printed %q", out)
	}
	var acct struct{ ID string }
	if err := json.Unmarshal([]byte(cli(t, e, "accounts", "create", "--name", "Acme", "--email", "risk@acme.test", "--plan", "starter", "--json")), &acct); err != nil || !strings.HasPrefix(acct.ID, "acct_") {
		t.Fatalf("accounts create --json: %v %q", err, acct.ID)
	}
	newKey := func(args ...string) (id, key string) {
		var k struct{ ID, Key string }
		out := cli(t, e, append([]string{"keys", "create", "--account", acct.ID, "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &k); err != nil || k.Key == "" {
			t.Fatalf("keys create %v: %v %s", args, err, out)
		}
		return k.ID, k.Key
	}
	_, live := newKey("--type", "live")
	_, test := newKey("--type", "test", "--name", "ci")
	_, restricted := newKey("--type", "restricted", "--mode", "test", "--scopes", "drift:read,meridian:*", "--rate-limit", "100")
	revokedID, revoked := newKey("--type", "test")
	_, expiring := newKey("--type", "test", "--expires-in", "1s")

	svc := startServe(t, e, "--no-bootstrap")
	for name, key := range map[string]string{"live": live, "test": test, "restricted": restricted, "revoked": revoked} {
		status, body := svc.call(t, http.MethodGet, "/v1/account", "Bearer "+key, nil)
		wantStatus(t, name+" key", status, body, http.StatusOK, "")
		if dig(body, "data.id") != acct.ID {
			t.Fatalf("%s key: account %v", name, dig(body, "data.id"))
		}
	}

	if out := cli(t, e, "keys", "revoke", revokedID); !strings.Contains(out, revokedID) {
		t.Fatalf("keys revoke printed %q", out)
	}
	list := cli(t, e, "keys", "list", "--account", acct.ID)
	if !strings.Contains(list, "revoked") || strings.Count(list, "\n") != 6 || strings.Contains(list, test) {
		t.Fatalf("keys list:\n%s", list)
	}
	// Revocation by another process and expiry both take effect within about a second.
	pollUnauthorized(t, svc, "revoked key", revoked)
	pollUnauthorized(t, svc, "expired key", expiring)

	typo := []byte(test)
	typo[20]++ // stays in the alphabet for most characters; either way the checksum fails
	for name, header := range map[string]string{
		"missing":         "",
		"Bearer-less":     test,
		"mistyped":        "Bearer " + string(typo),
		"unknown":         "Bearer sk_live_00000000000000000000000000000000" + "2wjyrI",
		"wrong scheme":    "Token " + test,
		"trailing spaces": "Bearer " + test + " extra",
	} {
		status, body := svc.call(t, http.MethodGet, "/v1/account", header, nil)
		wantStatus(t, name, status, body, http.StatusUnauthorized, "UNAUTHORIZED")
	}

	status, body := svc.call(t, http.MethodGet, "/v1/nope", "Bearer "+test, nil)
	wantStatus(t, "unknown route", status, body, http.StatusNotFound, "NOT_FOUND")
	status, body = svc.call(t, http.MethodGet, "/v2/account", "Bearer "+test, nil)
	wantStatus(t, "/v2", status, body, http.StatusNotFound, "NOT_FOUND")
	status, body = svc.call(t, http.MethodPost, "/v1/account", "Bearer "+test, strings.NewReader(`{}`))
	wantStatus(t, "wrong method", status, body, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	status, body = svc.call(t, http.MethodGet, "/readyz", "", nil)
	wantStatus(t, "readyz", status, body, http.StatusOK, "")
}

// pollUnauthorized waits up to 3 s for a key to be refused. It polls: the key's expiry and
// the server's cached view of a revocation made by another process run on the real clock.
func pollUnauthorized(t *testing.T, svc *service, what, key string) {
	t.Helper()
	var status int
	var body map[string]any
	pollUntil(t, 50*time.Millisecond, 3*time.Second, what+" refused", func() bool {
		status, body = svc.call(t, http.MethodGet, "/v1/account", "Bearer "+key, nil)
		return status == http.StatusUnauthorized
	})
	wantStatus(t, what, status, body, http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestCommandLineMistakes(t *testing.T) {
	t.Parallel()
	e := env{"RISKAPI_DATA_DIR": t.TempDir()}
	var usage *usageError
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"accounts", "create", "--name", "A", "--email", "not-an-email", "--plan", "starter"},
		{"accounts", "create", "--name", "A", "--email", "a@b.test", "--plan", "gold"},
		{"keys", "create", "--type", "live"},
		{"keys", "create", "--account", "acct_x", "--type", "restricted"},
		{"keys", "create", "--account", "acct_x", "--type", "test", "--mode", "live"},
		{"keys", "create", "--account", "acct_x", "--type", "restricted", "--scopes", "drift:delete"},
		{"keys", "create", "--account", "acct_x", "--type", "test", "--expires-in", "soon"},
		{"keys", "revoke"},
		{"serve", "--region", "mars"},
		{"serve", "--simulation-workers", "0"},
		{"serve", "--rate-limit-processes", "0"},
		{"serve", "--rate-limit-processes", "three"},
	} {
		err := run(context.Background(), append([]string{"riskapi"}, args...), e.get, io.Discard, io.Discard)
		if !errors.As(err, &usage) {
			t.Errorf("riskapi %v: err = %v, want a usage error", args, err)
		}
	}
	// Well-formed commands about things that do not exist fail without a usage error.
	for _, args := range [][]string{
		{"keys", "create", "--account", "acct_missing", "--type", "test"},
		{"keys", "revoke", "key_missing"},
		{"keys", "list", "--account", "acct_missing"},
	} {
		err := run(context.Background(), append([]string{"riskapi"}, args...), e.get, io.Discard, io.Discard)
		if err == nil || errors.As(err, &usage) || !strings.Contains(err.Error(), "no ") {
			t.Errorf("riskapi %v: err = %v", args, err)
		}
	}
	if out := cli(t, e, "version"); !strings.HasPrefix(out, "riskapi ") {
		t.Errorf("version printed %q", out)
	}
}

func TestRateLimitProcessesSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  env
		want int
	}{
		{nil, env{}, 1},
		{nil, env{"RISKAPI_RATE_LIMIT_PROCESSES": "4"}, 4},
		{[]string{"--rate-limit-processes", "6"}, env{"RISKAPI_RATE_LIMIT_PROCESSES": "4"}, 6},
	} {
		c, err := parseServeConfig(tc.args, tc.env.get, io.Discard)
		if err != nil || c.rateLimitProcesses != tc.want {
			t.Errorf("serve %v with %v: processes %d, err %v; want %d", tc.args, tc.env, c.rateLimitProcesses, err, tc.want)
		}
	}
}

func TestParseLifetime(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"90d": 90 * 24 * time.Hour, "12h": 12 * time.Hour, "1d12h": 36 * time.Hour, "30m": 30 * time.Minute} {
		if got, err := parseLifetime(in); err != nil || got != want {
			t.Errorf("parseLifetime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "-1d", "0s", "1w", "1dx"} {
		if _, err := parseLifetime(bad); err == nil {
			t.Errorf("parseLifetime(%q) accepted", bad)
		}
	}
}
