package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

	"github.com/redis/go-redis/v9"

	"riskapi/internal/ident"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
)

// redisTestURL names the Redis server of the scale-out tests; CI sets it.
const redisTestURL = "RISKAPI_TEST_REDIS_URL"

// process is a `riskapi serve` running as its own operating-system process.
type process struct {
	cmd      *exec.Cmd
	url      string
	stopOnce sync.Once
	stopErr  error
}

// stop sends SIGTERM and waits for the process to exit: serve finishes its requests and
// webhook attempts in flight first. After 20 s it kills the process and returns an error.
// Later calls return the first call's result; on a process already killed it only reaps it.
func (p *process) stop() error {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
			p.stopErr = errors.New("riskapi serve did not stop within 20 s of SIGTERM")
		}
	})
	return p.stopErr
}

// binary is this command, built once for all the tests that run it as a process; TestMain
// removes its directory.
var binary struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildBinary returns the path of this command, built on the first call.
func buildBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "riskapi-test-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "riskapi")
		if out, err := exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// startProcess starts `riskapi serve` on a free port with env added to the environment
// and returns once it listens.
func startProcess(t *testing.T, bin string, env []string) *process {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--no-bootstrap", "--log-level", "warn")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	})
	found := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			if m := listening.FindStringSubmatch(scanner.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case p.url = <-found:
		return p
	case <-time.After(30 * time.Second):
		t.Fatal("riskapi serve did not start listening within 30 s")
		return nil
	}
}

var keyPattern = regexp.MustCompile(`"key":\s*"(sk_[a-z]+_[0-9A-Za-z]{38})"`)

// TestTwoProcessesShareOneLimit starts two `riskapi serve` processes on one PostgreSQL
// database and one Redis and sends 200 requests for a key limited to 50 per hour, in five
// bursts of 40 concurrent requests split between the processes: exactly 50 are admitted,
// all 40 of the first burst (so both processes admit some), then 10 of the second burst's
// 40, which race across the two processes for the last 10, then none.
func TestTwoProcessesShareOneLimit(t *testing.T) {
	redisURL := os.Getenv(redisTestURL)
	if redisURL == "" {
		t.Skipf("%s is not set; skipping the scale-out test (CI sets it)", redisTestURL)
	}
	dbURL := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatalf("%s: %v", redisTestURL, err)
	}
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("Redis at %s is not reachable: %v", opts.Addr, err)
	}
	prefix := "riskapitest:" + ident.Random(12) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})

	e := env{"RISKAPI_DATABASE_URL": dbURL}
	cli(t, e, "migrate")
	var acct struct{ ID string }
	if err := json.Unmarshal([]byte(cli(t, e, "accounts", "create", "--name", "Scale", "--email", "s@scale.test", "--plan", "starter", "--json")), &acct); err != nil {
		t.Fatal(err)
	}
	newKey := func() string {
		m := keyPattern.FindStringSubmatch(cli(t, e, "keys", "create", "--account", acct.ID, "--type", "restricted", "--scopes", "usage:read", "--rate-limit", "50", "--json"))
		if m == nil {
			t.Fatal("keys create printed no key")
		}
		return m[1]
	}

	bin := buildBinary(t)
	procEnv := []string{"RISKAPI_DATABASE_URL=" + dbURL, "RISKAPI_REDIS_URL=" + redisURL, "RISKAPI_REDIS_PREFIX=" + prefix}
	servers := []*process{startProcess(t, bin, procEnv), startProcess(t, bin, procEnv)}

	// The limit is per clock hour (UTC). Bursts that straddle the turn of the hour count
	// against two windows, so they prove nothing: they are sent again with a new key.
	var bursts [5][]int
	for try := 1; ; try++ {
		hour := time.Now().UTC().Truncate(time.Hour)
		key := newKey()
		for i := range bursts {
			bursts[i] = burst(t, servers, key, 40)
		}
		if time.Now().UTC().Truncate(time.Hour).Equal(hour) {
			break
		}
		if try == 2 {
			t.Fatal("two runs of the bursts straddled the turn of an hour")
		}
		t.Log("the bursts straddled the turn of the hour; sending them again with a new key")
	}
	admitted := [2]int{} // per process
	for i, statuses := range bursts {
		counts := map[int]int{}
		for j, s := range statuses {
			counts[s]++
			if s == http.StatusOK {
				admitted[j%2]++
			}
		}
		want := map[int]int{http.StatusTooManyRequests: 40}
		switch i {
		case 0:
			want = map[int]int{http.StatusOK: 40}
		case 1:
			want = map[int]int{http.StatusOK: 10, http.StatusTooManyRequests: 30}
		}
		if !maps.Equal(counts, want) {
			t.Errorf("burst %d of 40: statuses %v, want %v (the two processes share one limit of 50)", i+1, counts, want)
		}
	}
	if admitted[0] < 20 || admitted[1] < 20 {
		t.Errorf("admitted per process %v: each should have admitted its 20 of the first burst", admitted)
	}
	// The counters are in Redis under the test's prefix, not in either process.
	keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
	if err != nil || len(keys) == 0 || !strings.Contains(strings.Join(keys, " "), acct.ID) {
		t.Fatalf("Redis keys under %s: %v, %v", prefix, keys, err)
	}
}

// burst sends n concurrent GET /v1/account requests with key, alternating between the
// servers, and returns their statuses in order.
func burst(t *testing.T, servers []*process, key string, n int) []int {
	t.Helper()
	var wg sync.WaitGroup
	statuses := make([]int, n)
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range statuses {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, servers[i%len(servers)].url+"/v1/account", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		})
	}
	wg.Wait()
	return statuses
}
