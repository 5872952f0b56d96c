package faulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// answer is one attempt of one request: what the client saw.
type answer struct {
	Key    string // the request's Idempotency-Key
	Status int    // -1: no answer (connection refused or cut)
	ID     string // data.id of a 2xx answer
	Code   string // error.code of an error answer
	Retry  string // Retry-After of an error answer
	At     time.Time
}

// history is every attempt of every request, in the order they ended.
type history struct {
	mu      sync.Mutex
	answers []answer
	keys    []string // every key sent, in order
}

func (h *history) record(a answer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers = append(h.answers, a)
}

// load sends idempotent POSTs from workers until ctx ends: each request is retried with the
// same key and body until it gets an answer that is not a fault's (no answer, 503, 409 in
// flight, 429), as a careful client does, or until settle after ctx ended.
type load struct {
	url     func() string
	key     string
	path    string
	body    func(rng *rand.Rand) []byte
	workers int
	settle  time.Duration
	pause   time.Duration // between one request's end and the next one's start
}

// start runs the load in the background until ctx ends; the channel closes once every
// request has settled.
func (l load) start(ctx context.Context, t *testing.T, h *history) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.run(ctx, t, h)
	}()
	return done
}

// roundRobin spreads requests over the servers, one after the other (safe for the load's
// concurrent workers).
func roundRobin(servers []*server) func() string {
	var next atomic.Uint64
	return func() string { return servers[next.Add(1)%uint64(len(servers))].URL() }
}

func (l load) run(ctx context.Context, t *testing.T, h *history) {
	var wg sync.WaitGroup
	for w := range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("fault-%d-%d-%d", time.Now().UnixNano(), w, i)
				h.mu.Lock()
				h.keys = append(h.keys, key)
				h.mu.Unlock()
				l.until(t, h, key, l.body(rng), time.Now().Add(l.settle))
				time.Sleep(l.pause)
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
}

// until sends one request until it gets a final answer or the deadline passes.
func (l load) until(t *testing.T, h *history, key string, body []byte, deadline time.Time) {
	for pause := 20 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		a := l.send(key, body)
		h.record(a)
		// A fault's answers are retried: no answer, 503, 409 (the key in flight) and 429 (the
		// account's concurrent requests in one process, with Retry-After: 1).
		final := a.Status > 0 && a.Status != http.StatusServiceUnavailable && a.Status != http.StatusConflict &&
			a.Status != http.StatusTooManyRequests
		if final || time.Now().After(deadline) {
			return
		}
		time.Sleep(pause)
	}
}

func (l load) send(key string, body []byte) answer {
	a := answer{Key: key, Status: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, l.url()+l.path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+l.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	a.At = time.Now()
	if err != nil {
		return a
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		return a // cut mid-answer: no answer
	}
	a.Status, a.Retry = res.StatusCode, res.Header.Get("Retry-After")
	var env struct {
		Data  struct{ ID string }   `json:"data"`
		Error struct{ Code string } `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil {
		a.ID, a.Code = env.Data.ID, env.Error.Code
	}
	return a
}

// check verifies the invariants over the history: no 500; every 503 carries Retry-After;
// every key got a 2xx in the end; one key, one object: every 2xx answer of a key names the
// same id. It returns the ids, one per key.
func (h *history) check(t *testing.T) map[string]string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := map[string]string{}
	counts := map[int]int{}
	for _, a := range h.answers {
		counts[a.Status]++
		switch {
		case a.Status >= 500 && a.Status != http.StatusServiceUnavailable:
			t.Errorf("key %s: %d %s", a.Key, a.Status, a.Code)
		case a.Status == http.StatusServiceUnavailable && a.Retry == "":
			t.Errorf("key %s: 503 without Retry-After", a.Key)
		case a.Status >= 200 && a.Status < 300:
			if prev, ok := ids[a.Key]; ok && prev != a.ID {
				t.Errorf("key %s answered two objects: %s and %s", a.Key, prev, a.ID)
			}
			ids[a.Key] = a.ID
		}
	}
	for _, k := range h.keys {
		if _, ok := ids[k]; !ok {
			t.Errorf("key %s never got a 2xx", k)
		}
	}
	t.Logf("history: %d requests, %d attempts, answers by status %v", len(h.keys), len(h.answers), counts)
	return ids
}
