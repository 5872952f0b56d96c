package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"riskapi/internal/testlog"
)

type testlogBuffer = testlog.Buffer

// readmeSection returns the shell blocks of the README section headed title.
func readmeSection(t *testing.T, title string) []string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("README has no section %q", title)
	}
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// The README's "Try it in test mode" walk-through, run as written against a fresh server:
// generate a shadow agent, analyse it by id, and the receiver gets drift.shadow_detected.
// Only the key, the base URL and the receiver's port are filled in.
func TestReadmeTestModeWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the README walk-through: %v", tool, err)
		}
	}
	blocks := readmeSection(t, "Try it in test mode")
	if len(blocks) != 2 || !strings.Contains(blocks[0], "RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true go run ./cmd/riskapi serve") {
		t.Fatalf("the section's blocks changed: %q", blocks)
	}
	svc := startServe(t, env{"RISKAPI_DATA_DIR": t.TempDir(), "RISKAPI_ALLOW_PRIVATE_WEBHOOKS": "true"})
	key := testKeyPattern.FindString(svc.stdout.String())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	script := blocks[1]
	for old, repl := range map[string]string{
		"BASE=http://127.0.0.1:8080/v1": "BASE=" + svc.url + "/v1",
		"KEY=sk_test_...":               "KEY=" + key,
		"9000":                          port,
	} {
		if !strings.Contains(script, old) {
			t.Fatalf("the walk-through no longer contains %q", old)
		}
		script = strings.ReplaceAll(script, old, repl)
	}
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = t.TempDir()
	var buf testlogBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the walk-through did not finish within 60 s:\n%s", buf.String())
	}
	out := []byte(buf.String())
	if err != nil {
		t.Fatalf("walk-through: %v\n%s", err, out)
	}
	for _, want := range []string{"expected True", "analysed True", "received drift.shadow_detected"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("walk-through output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("%s", out)
}
