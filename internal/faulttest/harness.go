// Package faulttest runs riskapi as real processes while faults strike them — kill -9,
// dependency outages — records every request and answer (a history), and checks the
// service's promises over the history and the store once the faults stop: nothing lost,
// nothing done twice. It is opt-in (RISKAPI_TEST_FAULTS=1), like the PostgreSQL suite, since it
// builds the binary and runs for minutes; CI runs it in a short form.
package faulttest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildOnce builds cmd/riskapi once per test binary.
var buildOnce struct {
	sync.Once
	path string
	err  error
}

// binary returns the path of riskapi built from this module.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildOnce.err = err
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "riskapi-faults-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "riskapi")
		cmd := exec.Command("go", "build", "-o", buildOnce.path, "./cmd/riskapi")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

// cli runs one riskapi command with env and returns its stdout.
func cli(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("riskapi %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

var keyPattern = regexp.MustCompile(`"key":\s*"(sk_[a-z]+_[0-9A-Za-z]+)"`)

// liveKey creates an enterprise account and a live key in the store env names: live mode,
// since test mode allows 1,000 requests a day, fewer than a long run sends.
func liveKey(t *testing.T, env []string) string {
	live, _ := keys(t, env)
	return live
}

// keys creates an enterprise account with a live key and a test key.
func keys(t *testing.T, env []string) (live, test string) {
	t.Helper()
	acct := account(t, env)
	return createKey(t, env, acct, "--type", "live"), createKey(t, env, acct, "--type", "test")
}

// limitedKey creates an account with a restricted key allowed perHour usage reads an hour.
func limitedKey(t *testing.T, env []string, perHour int) string {
	t.Helper()
	return createKey(t, env, account(t, env), "--type", "restricted", "--scopes", "usage:read", "--rate-limit", fmt.Sprint(perHour))
}

func account(t *testing.T, env []string) string {
	t.Helper()
	var acct struct{ ID string }
	if err := json.Unmarshal([]byte(cli(t, env, "accounts", "create", "--name", "Faults", "--email", "faults@example.test", "--plan", "enterprise", "--json")), &acct); err != nil {
		t.Fatal(err)
	}
	return acct.ID
}

func createKey(t *testing.T, env []string, account string, args ...string) string {
	t.Helper()
	m := keyPattern.FindStringSubmatch(cli(t, env, append(append([]string{"keys", "create", "--account", account}, args...), "--json")...))
	if m == nil {
		t.Fatal("keys create printed no key")
	}
	return m[1]
}

var listening = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// server is one `riskapi serve` process, restartable on the same address.
type server struct {
	t    *testing.T
	env  []string
	args []string // after the harness's own flags, so they override them
	addr string   // 127.0.0.1:port once first started
	mu   sync.Mutex
	cmd  *exec.Cmd
	url  string
	logs *strings.Builder // every start's stderr (its log), guarded by mu
}

// newServer starts a server with env and extra serve flags.
func newServer(t *testing.T, env []string, args ...string) *server {
	s := &server{t: t, env: env, args: args, addr: "127.0.0.1:0", logs: &strings.Builder{}}
	s.start()
	t.Cleanup(func() { s.kill(syscall.SIGTERM) })
	return s
}

// start runs the process and waits until it listens (at most 30 s).
func (s *server) start() {
	s.t.Helper()
	cmd := exec.Command(binary(s.t), append([]string{"serve", "--addr", s.addr, "--no-bootstrap", "--log-level", "warn"}, s.args...)...)
	cmd.Env = append(os.Environ(), s.env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	// A writer rather than a pipe: exec copies stderr as it comes and Wait returns after the
	// copy, so a killed process's log is complete once kill returns.
	cmd.Stderr = logWriter{s}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case url := <-found:
		s.mu.Lock()
		s.cmd, s.url = cmd, url
		s.addr = strings.TrimPrefix(url, "http://")
		s.mu.Unlock()
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		s.t.Fatal("riskapi serve did not listen within 30 s")
	}
}

// kill sends sig to the process and waits for it to exit.
func (s *server) kill(sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// logWriter appends a process's stderr to its server's logs.
type logWriter struct{ s *server }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.logs.Write(p)
}

// log returns what the server's processes have logged so far.
func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// URL is the base URL of the server (the same across restarts).
func (s *server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// waitReady polls /readyz until it answers 200, at most within.
func waitReady(ctx context.Context, url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/readyz not ready within %v (last: %v)", url, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
