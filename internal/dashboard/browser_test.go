package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"riskapi/internal/testlog"
)

// The browser test runs e2e/dashboard.e2e.mjs (playwright-core driving Debian's Chromium)
// against a real `riskapi serve` built from this tree. It is opt-in, so that `go test ./...`
// works on a machine without a browser: RISKAPI_TEST_BROWSER=1 runs it, and then anything
// missing fails the test instead of skipping it. .ci/run installs what it needs.
//
//	RISKAPI_TEST_BROWSER=1            run it
//	RISKAPI_TEST_CHROMIUM             the browser (default /usr/bin/chromium)
//	RISKAPI_TEST_PLAYWRIGHT_DIR       a directory with node_modules/playwright-core
//	                                  (default internal/dashboard/e2e after `npm ci` there)
//	RISKAPI_TEST_SCREENSHOTS          where to keep the screenshots (default a new temporary
//	                                  directory, kept and logged)
const browserTimeout = 100 * time.Second

// screenshotPages are the pages the script must have shot, each at 1280 and 390 px.
var screenshotPages = []string{"signin", "signup", "keys-empty", "key-new", "key-created", "keys", "analyses", "agent", "usage",
	"webhooks-empty", "webhook-created", "webhook", "webhooks", "webhook-delete", "key-revoke", "keys-after-revoke",
	"settings", "usage-live", "not-found"}

func TestBrowser(t *testing.T) {
	required := os.Getenv("RISKAPI_TEST_BROWSER") == "1"
	missing := func(format string, args ...any) {
		t.Helper()
		if required {
			t.Fatalf("RISKAPI_TEST_BROWSER=1 but "+format, args...)
		}
		t.Skipf("skipping the browser test: "+format+" (set RISKAPI_TEST_BROWSER=1 to require it; .ci/run does)", args...)
	}
	if !required {
		missing("RISKAPI_TEST_BROWSER is not set")
	}
	chromium := os.Getenv("RISKAPI_TEST_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("no Chromium at %s (apt-get install chromium): %v", chromium, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: %v", err)
	}
	playwright := os.Getenv("RISKAPI_TEST_PLAYWRIGHT_DIR")
	if playwright == "" {
		playwright, _ = filepath.Abs("e2e")
	}
	if _, err := os.Stat(filepath.Join(playwright, "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core is not installed in %s (npm install there, see e2e/package.json): %v", playwright, err)
	}
	shots := os.Getenv("RISKAPI_TEST_SCREENSHOTS")
	if shots == "" {
		if shots, err = os.MkdirTemp("", "riskapi-dashboard-screenshots-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("e2e", "dashboard.e2e.mjs"))
	if err != nil {
		t.Fatal(err)
	}

	// A receiver for the webhook test event.
	var received atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Webhook-Event") == "webhook.test" && strings.HasPrefix(r.Header.Get("X-Webhook-Signature"), "sha256=") {
			received.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	tmp := t.TempDir()
	bin := filepath.Join(tmp, "riskapi")
	if out, err := exec.Command("go", "build", "-o", bin, "riskapi/cmd/riskapi").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	base, logs := startBinary(t, bin, filepath.Join(tmp, "data"))

	secretsFile := filepath.Join(tmp, "secrets.json")
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(),
		"DASHBOARD_URL="+base, "CHROMIUM="+chromium, "PLAYWRIGHT_DIR="+playwright, "SCREENSHOT_DIR="+shots,
		"SECRETS_FILE="+secretsFile, "WEBHOOK_URL="+receiver.URL+"/hook")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("browser script: %v\n%s\nserver log (last 4 KiB):\n%s", err, out, tail(logs.String(), 4096))
	}
	t.Logf("browser script:\n%s", out)
	t.Logf("screenshots in %s", shots)

	raw, err := os.ReadFile(secretsFile)
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	if err := json.Unmarshal(raw, &secrets); err != nil || len(secrets) < 3 {
		t.Fatalf("the script reported %d keys and secrets (%v), want 3", len(secrets), err)
	}
	serverOutput := logs.String()
	for _, s := range secrets {
		if len(s) < 20 {
			t.Fatalf("implausible key or secret %q", s)
		}
		if strings.Contains(serverOutput, s) || strings.Contains(serverOutput, s[len(s)-20:]) {
			t.Fatalf("a key or secret (%s…) appears in the server's output", s[:8])
		}
	}
	if !strings.Contains(serverOutput, `"dashboard request"`) {
		t.Fatal("the server logged no dashboard requests: is the log captured?")
	}
	if received.Load() < 1 {
		t.Fatal("the webhook receiver got no signed webhook.test delivery")
	}
	for _, name := range screenshotPages {
		for _, width := range []string{"1280", "390"} {
			path := filepath.Join(shots, name+"-"+width+".png")
			data, err := os.ReadFile(path)
			if err != nil || len(data) < 1000 || string(data[1:4]) != "PNG" {
				t.Errorf("screenshot %s is missing or not a PNG: %v", path, err)
			}
		}
	}
}

var listeningOn = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// startBinary runs `riskapi serve` on a free port with private webhook targets allowed (the
// receiver is on loopback) and returns its URL and everything it writes to stdout and stderr.
func startBinary(t *testing.T, bin, data string) (string, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data, "--no-bootstrap", "--log-level", "debug")
	cmd.Env = append(os.Environ(), "RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true", "RISKAPI_DASHBOARD_SIGNUP=true")
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := listeningOn.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case base := <-found:
		// serve listens before it prints the line, so /healthz answers at once.
		res, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz: %v\n%s", err, logs.String())
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("riskapi serve is not healthy: GET /healthz answered %d\n%s", res.StatusCode, logs.String())
		}
		return base, logs
	case <-time.After(60 * time.Second):
		t.Fatalf("riskapi serve did not start:\n%s", logs.String())
	}
	return "", nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
