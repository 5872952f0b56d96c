package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"riskapi/internal/store/sqlite/sqlitetest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSecurityReproductions replays, at their full sizes, the requests with which a free test
// key could take the server down (platform contract §4 and §11), against `riskapi serve` as
// its own process, so that its CPU time and peak memory can be read from /proc. It logs the
// figures docs/operations.md quotes and asserts the contract's bounds. It takes a few
// minutes and gigabytes of memory, so it runs only with RISKAPI_TEST_REPRODUCE=1; each
// product's package holds the scaled regression tests that CI runs.
func TestSecurityReproductions(t *testing.T) {
	if os.Getenv("RISKAPI_TEST_REPRODUCE") != "1" {
		t.Skip("set RISKAPI_TEST_REPRODUCE=1 to replay the full-size reproductions")
	}
	const memoryLimit = 2 << 30
	dir := sqlitetest.Dir(t)
	e := env{"RISKAPI_DATA_DIR": dir}
	cli(t, e, "migrate")
	keyOf := func(name string) string {
		var acct struct{ ID string }
		if err := json.Unmarshal([]byte(cli(t, e, "accounts", "create", "--name", name, "--email", name+"@repro.test", "--plan", "free_trial", "--json")), &acct); err != nil {
			t.Fatal(err)
		}
		m := keyPattern.FindStringSubmatch(cli(t, e, "keys", "create", "--account", acct.ID, "--type", "test", "--json"))
		if m == nil {
			t.Fatal("keys create printed no key")
		}
		return m[1]
	}
	attacker, victim := keyOf("attacker"), keyOf("victim")
	p := startProcess(t, buildBinary(t), []string{"RISKAPI_DATA_DIR=" + dir, "RISKAPI_MEMORY_LIMIT=" + strconv.Itoa(memoryLimit)})
	pid := p.cmd.Process.Pid
	post := func(ctx context.Context, key, path string, body []byte) (int, []byte, time.Duration) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return -1, []byte(err.Error()), time.Since(start)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, raw, time.Since(start)
	}
	within2s := func(name string, status int, took time.Duration, raw []byte, want ...int) {
		t.Helper()
		t.Logf("%s: %d in %v: %.300s", name, status, took.Round(time.Millisecond), raw)
		if took > 2*time.Second || !containsInt(want, status) {
			t.Errorf("%s: %d after %v, want one of %v within 2 s", name, status, took, want)
		}
	}

	t.Run("1 cascade independent_cascade 2,000 nodes 200,000 edges", func(t *testing.T) {
		status, raw, took := post(context.Background(), attacker, "/v1/cascade/simulate", cascadeBody(2000, 200_000, "independent_cascade", 10_000))
		within2s("cascade", status, took, raw, http.StatusAccepted, http.StatusBadRequest)
		if status == http.StatusAccepted {
			id := jsonField(t, raw, "data", "id")
			cpu := cpuSeconds(t, pid)
			status, raw, took = post(context.Background(), attacker, "/v1/cascade/simulations/"+id+"/cancel", nil)
			t.Logf("cancel: %d in %v: %.200s", status, took.Round(time.Millisecond), raw)
			time.Sleep(100 * time.Millisecond)
			before := cpuSeconds(t, pid)
			time.Sleep(time.Second)
			t.Logf("background CPU until the cancel: %.2f s; CPU in the second after it (from +100 ms): %.2f s", before-cpu, cpuSeconds(t, pid)-before)
		}
	})
	t.Run("2 meridian regex [a-z]{1000}x x10 on 300,000 characters", func(t *testing.T) {
		status, raw, took := post(context.Background(), attacker, "/v1/meridian/quality-check", regexBody(10, "[a-z]{1000}x", 300_000))
		within2s("regex", status, took, raw, http.StatusBadRequest)
		// A heavy request under the budget, its client gone at 300 ms: the CPU stops.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		body := regexBody(2, "[a-z]{400}x", 300_000)
		start := cpuSeconds(t, pid)
		status, _, took = post(ctx, attacker, "/v1/meridian/quality-check", body)
		time.Sleep(100 * time.Millisecond)
		after := cpuSeconds(t, pid)
		time.Sleep(time.Second)
		t.Logf("disconnect: %d after %v; CPU until +100 ms %.2f s, in the second after %.2f s", status, took.Round(time.Millisecond), after-start, cpuSeconds(t, pid)-after)
		if used := cpuSeconds(t, pid) - after; used > 0.1 {
			t.Errorf("the server used %.2f s of CPU in the second after the client left", used)
		}
	})
	t.Run("3 convergence 250,000 firms in two periods", func(t *testing.T) {
		status, raw, took := post(context.Background(), attacker, "/v1/convergence/analyze-market", marketBody(250_000))
		within2s("market division", status, took, raw, http.StatusOK, http.StatusBadRequest)
	})
	t.Run("4 async cascade of another account behind a large one", func(t *testing.T) {
		status, raw, _ := post(context.Background(), attacker, "/v1/cascade/simulate", withAsync(cascadeBody(5000, 50_000, "threshold", 100_000)))
		if status != http.StatusAccepted {
			t.Fatalf("large job: %d %.300s", status, raw)
		}
		large := jsonField(t, raw, "data", "id")
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		status, raw, _ = post(context.Background(), victim, "/v1/cascade/simulate", withAsync(cascadeBody(20, 40, "threshold", 100)))
		if status != http.StatusAccepted {
			t.Fatalf("small job: %d %.300s", status, raw)
		}
		small := jsonField(t, raw, "data", "id")
		for simulationStatus(t, p.url, victim, small) != "completed" {
			if time.Since(start) > 60*time.Second {
				t.Fatal("the small job did not complete within 60 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("the small job of another account completed %v after it was submitted behind a large one", time.Since(start).Round(time.Millisecond))
		if time.Since(start) > 5*time.Second {
			t.Errorf("the small job took %v, want at most 5 s", time.Since(start))
		}
		post(context.Background(), attacker, "/v1/cascade/simulations/"+large+"/cancel", nil)
	})
	t.Run("5 three meridian CSVs of 1,000 columns x 12,500 distinct values", func(t *testing.T) {
		body := wideCSVBody(1000, 12_500)
		t.Logf("body %d bytes; memory limit %d bytes", len(body), memoryLimit)
		resetPeakRSS(pid)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := attacker
				if i == 2 {
					key = victim
				}
				status, raw, took := post(context.Background(), key, "/v1/meridian/quality-check", body)
				t.Logf("request %d: %d in %v: %.200s", i, status, took.Round(time.Millisecond), raw)
			}()
		}
		wg.Wait()
		peak := peakRSS(t, pid)
		t.Logf("peak RSS of the server: %d bytes (%.2f GiB), limit %.2f GiB", peak, float64(peak)/(1<<30), float64(memoryLimit)/(1<<30))
		if peak > memoryLimit {
			t.Errorf("peak RSS %d bytes is over the memory limit %d", peak, memoryLimit)
		}
	})
	t.Run("6 a valid key after 300 failed authentications from its address", func(t *testing.T) {
		for i := range 300 {
			post(context.Background(), "sk_test_junk"+strconv.Itoa(i), "/v1/drift/analyze", []byte(`{}`))
		}
		req, _ := http.NewRequest(http.MethodGet, p.url+"/v1/account", nil)
		req.Header.Set("Authorization", "Bearer "+victim)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		t.Logf("valid key after 300 failures: %d", res.StatusCode)
		if res.StatusCode != http.StatusOK {
			t.Errorf("valid key refused: %d", res.StatusCode)
		}
	})
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func jsonField(t *testing.T, raw []byte, path ...string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %.200s", err, raw)
	}
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

func simulationStatus(t *testing.T, url, key, id string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/cascade/simulations/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return jsonField(t, raw, "data", "status")
}

// cpuSeconds is the user and system CPU time of process pid (/proc/pid/stat, in ticks of
// 1/100 s).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100
}

// peakRSS is the high-water mark of process pid's resident memory (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kib, _ := strconv.ParseInt(f[1], 10, 64)
			return kib << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// resetPeakRSS resets VmHWM to the current RSS (writing 5 to clear_refs, Linux ≥ 4.0).
func resetPeakRSS(pid int) { _ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) }

func cascadeBody(nodes, edges int, model string, simulations int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString(`{"network": {"nodes": [`)
	for i := range nodes {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": "n%d", "capital": 2, "value": 10}`, i)
	}
	b.WriteString(`], "edges": [`)
	for i := range edges {
		if i > 0 {
			b.WriteByte(',')
		}
		s, d := rng.IntN(nodes), rng.IntN(nodes-1)
		if d >= s {
			d++
		}
		fmt.Fprintf(&b, `{"source": "n%d", "target": "n%d", "weight": 1, "probability": 0.2}`, s, d)
	}
	fmt.Fprintf(&b, `]}, "model": %q, "scenarios": [{"name": "one", "type": "random_node", "count": 1}], "simulations": %d, "seed": 7}`, model, simulations)
	return []byte(b.String())
}

func withAsync(body []byte) []byte {
	return append(bytes.TrimSuffix(body, []byte("}")), []byte(`, "async": true}`)...)
}

func regexBody(checks int, pattern string, length int) []byte {
	var cs []string
	for range checks {
		q, _ := json.Marshal(pattern)
		cs = append(cs, fmt.Sprintf(`{"type": "regex", "column": "v", "pattern": %s}`, q))
	}
	return []byte(fmt.Sprintf(`{"source_id": "repro", "data": {"records": [{"v": %q}]}, "checks": [%s]}`, strings.Repeat("a", length), strings.Join(cs, ",")))
}

// marketBody is firms firms with a segment and a quantity in two periods, and two more firms
// over ten periods, so that the market has the ten periods an analysis needs.
func marketBody(firms int) []byte {
	var b strings.Builder
	b.WriteString(`{"market_id": "repro", "observations": [`)
	for period := 1; period <= 2; period++ {
		for f := range firms {
			fmt.Fprintf(&b, `{"firm": "f%d", "period": %d, "price": %d.5, "quantity": 3, "segment": "s%d"},`, f, period, 10+f%7, f%50)
		}
	}
	for period := 1; period <= 10; period++ {
		fmt.Fprintf(&b, `{"firm": "a", "period": %d, "price": 10}, {"firm": "b", "period": %d, "price": 11}`, period, period)
		if period < 10 {
			b.WriteByte(',')
		}
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func wideCSVBody(columns, rows int) []byte {
	var csv strings.Builder
	for c := range columns {
		if c > 0 {
			csv.WriteByte(',')
		}
		fmt.Fprintf(&csv, "c%d", c)
	}
	csv.WriteByte('\n')
	for r := range rows {
		for c := range columns {
			if c > 0 {
				csv.WriteByte(',')
			}
			csv.WriteString(strconv.FormatInt(int64(r*7919+c)%1_000_000, 36))
		}
		csv.WriteByte('\n')
	}
	text, _ := json.Marshal(csv.String())
	return []byte(`{"source_id": "wide", "data": {"csv": ` + string(text) + `}}`)
}
