package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/ratelimit"
	"riskapi/internal/ratepolicy"
	"riskapi/internal/store"
)

// loopbackClients is how many clients send at once in the loopback benchmarks: 32, as in
// the wrk measurement of docs/operations.md ("Request overhead").
const loopbackClients = 32

// loopbackRound is how many requests each target answers in one round of a loopback
// benchmark; rounds alternate between the targets, so a load that comes and goes on the
// machine weighs on both alike. It is the platform's 1,000 an hour (ratepolicy.PlatformLimit):
// each round of the API starts in a new hour of its clock, so every answer is a 200.
const loopbackRound = ratepolicy.PlatformLimit

// loopbackTarget is one server a loopback benchmark drives: its address, the request it is
// sent, one kept-alive connection per client, and the requests and time it took so far.
// The clients speak HTTP/1.1 on raw sockets, as wrk does: a request is one write of bytes
// prepared once and a response is read by its Content-Length, so their own cost (a few µs)
// does not hide the servers' in a process that shares the cores with them.
type loopbackTarget struct {
	name    string
	addr    string
	request []byte
	conns   []*bufio.ReadWriter
	elapsed time.Duration
	served  int
	// before runs before each round (the API's clock moves to the next hour).
	before func()
}

// apiTarget is GET /v1/account of bb's server, with a new enterprise account's live key.
func apiTarget(b *testing.B, name string, bb *bundle) *loopbackTarget {
	_, key := bb.newAccount(store.PlanEnterprise, nil)
	t := newLoopbackTarget(b, name, bb.http, "/v1/account", key)
	t.before = func() { bb.clock.Advance(time.Hour) }
	return t
}

func newLoopbackTarget(b *testing.B, name string, srv *httptest.Server, path, key string) *loopbackTarget {
	addr := srv.Listener.Addr().String()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: loopback-bench\r\n"
	if key != "" {
		req += "Authorization: Bearer " + key + "\r\n"
	}
	t := &loopbackTarget{name: name, addr: addr, request: []byte(req + "\r\n")}
	for range loopbackClients {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		t.conns = append(t.conns, bufio.NewReadWriter(bufio.NewReaderSize(conn, 16<<10), bufio.NewWriter(conn)))
	}
	return t
}

// exchange sends the target's request on conn and reads the response, which must be a 200.
func (t *loopbackTarget) exchange(conn *bufio.ReadWriter) error {
	if _, err := conn.Write(t.request); err != nil {
		return err
	}
	if err := conn.Flush(); err != nil {
		return err
	}
	status, err := conn.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("%s: %q", t.name, bytes.TrimSpace(status))
	}
	length := -1
	for {
		line, err := conn.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(name), "Content-Length") {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return fmt.Errorf("%s: Content-Length %q", t.name, value)
			}
		}
	}
	if length < 0 {
		return fmt.Errorf("%s: response without Content-Length", t.name)
	}
	_, err = conn.Discard(length)
	return err
}

// round sends n requests from loopbackClients clients at once, each checked for 200, and
// adds their wall time to the target's.
func (t *loopbackTarget) round(b *testing.B, n int) {
	if t.before != nil {
		t.before()
	}
	var wg sync.WaitGroup
	var failed sync.Once
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	start := time.Now()
	for _, conn := range t.conns {
		wg.Go(func() {
			for range work {
				if err := t.exchange(conn); err != nil {
					failed.Do(func() { b.Error(err) })
					return
				}
			}
		})
	}
	wg.Wait()
	t.elapsed += time.Since(start)
	t.served += n
}

func (t *loopbackTarget) perSecond() float64 { return float64(t.served) / t.elapsed.Seconds() }

// compareLoopback drives floor and subject in alternating rounds of loopbackRound requests
// (one round of each per iteration) and reports each one's requests a second and
// subject's as a fraction of floor's ("ratio"; 1 would be no overhead over the floor).
func compareLoopback(b *testing.B, floor, subject *loopbackTarget) {
	for _, t := range []*loopbackTarget{floor, subject} { // open the connections first
		t.round(b, loopbackRound)
		t.elapsed, t.served = 0, 0
	}
	for b.Loop() {
		floor.round(b, loopbackRound)
		subject.round(b, loopbackRound)
	}
	b.ReportMetric(floor.perSecond(), floor.name+"-req/s")
	b.ReportMetric(subject.perSecond(), subject.name+"-req/s")
	b.ReportMetric(subject.perSecond()/floor.perSecond(), "ratio")
}

// bareAccount is the floor's answer: GET /v1/account's envelope (about 700 bytes) as
// encoding/json writes it, the same types and sizes without the API's own encoder.
type bareAccount struct {
	Success  bool            `json:"success"`
	Data     accountView     `json:"data"`
	Metadata successMetadata `json:"metadata"`
}

// bareJSONServer is a plain net/http server answering every request with bareAccount: what
// a lean Go JSON handler spends on a request (connection, parsing, encoding, writing), the
// floor the API's own overhead is measured above.
func bareJSONServer(b *testing.B) *httptest.Server {
	acct := store.Account{ID: "acct_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4", Name: "Acme", Email: "risk@acme.test", Plan: store.PlanEnterprise,
		Region: store.RegionDefault, CreatedAt: time.Now()}
	key := store.APIKey{ID: "key_4Tn8Qw2Ez6Ry1Ui5Op9As3Df7", Type: store.KeyLive, Mode: store.ModeLive, Scopes: []string{"*"}, CreatedAt: time.Now()}
	view := accountView{AccountObject: NewAccountObject(acct), Livemode: true, APIKey: NewAPIKeyObject(key)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := bareAccount{Success: true, Data: view}
		v.Metadata.RequestID = "req_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4"
		v.Metadata.Timestamp = time.Now().UTC().Format(time.RFC3339Nano)
		body, _ := json.Marshal(v)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkLoopbackAccount drives, over loopback sockets with 32 clients at once, a bare
// net/http JSON handler (the floor) and the API's GET /v1/account with an enterprise live
// key, in alternating rounds of one run: account-req/s over bare-req/s is the fraction of a
// bare handler's throughput the API keeps on its lightest authenticated endpoint. The
// clients run in the same process, so both sides share the machine's cores with them, as
// they do with wrk on the same machine (scripts/wrk-overhead.sh measures that way).
func BenchmarkLoopbackAccount(b *testing.B) {
	floor := bareJSONServer(b)
	compareLoopback(b, newLoopbackTarget(b, "bare", floor, "/", ""), apiTarget(b, "account", setup(b, benchConfig, nil)))
}

// BenchmarkLoopbackAccountRedis drives GET /v1/account as BenchmarkLoopbackAccount does on
// two servers, one counting rate limits in process memory and one in the Redis at
// RISKAPI_TEST_REDIS_URL (through Failover, as riskapi serve does), in alternating rounds:
// redis-req/s over memory-req/s is what sharing the counts across processes costs.
func BenchmarkLoopbackAccountRedis(b *testing.B) {
	limiter := benchRedisLimiter(b)
	memory := setup(b, benchConfig, nil)
	redis := setup(b, func(c *Config) {
		benchConfig(c)
		c.Limiter = ratelimit.NewFailover(limiter, ratelimit.NewMemory(), nil, 0)
	}, nil)
	compareLoopback(b, apiTarget(b, "memory", memory), apiTarget(b, "redis", redis))
}
