package enginetest

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

var update = flag.Bool("update-golden", false, "rewrite the golden files of the engines' stable-output tests")

// Case is one analysis of a stable-output test: its name and the engine's answer.
type Case struct {
	Name   string
	Result any
	Err    error
}

// ScenariosKeepTheirBytes runs analyze on every scenario with seeds 1..seeds and checks the
// results with SameBytesAsBefore (case names "scenario/seed").
func ScenariosKeepTheirBytes(t *testing.T, file string, scenarios []string, seeds int64, analyze func(scenario string, seed int64) (any, error)) {
	t.Helper()
	var cases []Case
	for _, scenario := range scenarios {
		for seed := int64(1); seed <= seeds; seed++ {
			res, err := analyze(scenario, seed)
			cases = append(cases, Case{Name: scenario + "/" + strconv.FormatInt(seed, 10), Result: res, Err: err})
		}
	}
	SameBytesAsBefore(t, file, cases)
}

// SameBytesAsBefore fails unless every case's result encodes (keys sorted) to the same
// SHA-256 as recorded in testdata/<file>: a change of the code that is meant to keep an
// engine's results — a refactoring, a speed-up — must keep them to the byte. A change that
// is meant to change them rewrites the file with `go test -run <test> -update-golden` and says
// why in its commit.
func SameBytesAsBefore(t *testing.T, file string, cases []Case) {
	t.Helper()
	var b strings.Builder
	for _, c := range cases {
		digest := "error: " + errString(c.Err)
		if c.Err == nil {
			out, err := json.Marshal(c.Result, json.Deterministic(true))
			if err != nil {
				t.Fatalf("%s: encode: %v", c.Name, err)
			}
			sum := sha256.Sum256(out)
			digest = hex.EncodeToString(sum[:12])
		}
		b.WriteString(c.Name + " " + digest + "\n")
	}
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update-golden)", err)
	}
	got := strings.Split(b.String(), "\n")
	for i, line := range strings.Split(string(want), "\n") {
		if i >= len(got) || got[i] != line {
			t.Errorf("%s line %d: got %q, recorded %q", path, i+1, at(got, i), line)
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
