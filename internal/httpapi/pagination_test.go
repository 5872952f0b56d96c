package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/store"
)

// mountKeyList adds GET /v1/_test/keys, a list that exists only in tests: the account's API
// keys through the one pagination helper, with a "label" filter bound into the cursor.
func mountKeyList(s *Server) {
	s.mux.Handle("GET /v1/_test/keys", s.protected("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, "test_keys", "label")
		if e != nil {
			writeError(w, r, e)
			return
		}
		keys := s.cfg.Store.(store.Store) // the API lists no keys; tests run it over the whole store
		page, err := keys.ListAPIKeys(r.Context(), principalFrom(r.Context()).Account.ID, q.page)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writePage(s, w, r, "test_keys", q, page, store.KeyPosition, func(k store.APIKey) any { return NewAPIKeyObject(k) })
	})))
}

// listAll pages through /v1/_test/keys and returns the ids in order.
func (b *bundle) listAll(key, query string, limit int) (ids []string, pages int) {
	b.t.Helper()
	cursor := ""
	for {
		path := fmt.Sprintf("/v1/_test/keys?limit=%d%s", limit, query)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := b.get(path, key)
		if r.status != http.StatusOK {
			b.t.Fatalf("%s: %d %s", path, r.status, r.raw)
		}
		pages++
		for _, item := range r.body["data"].([]any) {
			ids = append(ids, item.(map[string]any)["id"].(string))
		}
		more := r.field("pagination.has_more").(bool)
		next, _ := r.field("pagination.next_cursor").(string)
		if more != (next != "") {
			b.t.Fatalf("has_more %v with next_cursor %q", more, next)
		}
		if !more {
			return ids, pages
		}
		cursor = next
	}
}

func TestListOf25InPagesOf10(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, mountKeyList)
	for range 23 { // plus the bundle's two keys
		b.newKey(auth.KeyParams{Type: store.KeyTest})
		b.clock.Advance(time.Millisecond)
	}
	r := b.get("/v1/_test/keys?limit=10", b.testKey)
	if r.field("pagination.total_count") != 25.0 || len(r.body["data"].([]any)) != 10 || r.field("pagination.has_more") != true {
		t.Fatalf("first page: %s", r.raw)
	}
	ids, pages := b.listAll(b.testKey, "", 10)
	if pages != 3 || len(ids) != 25 {
		t.Fatalf("%d pages, %d items; want 3 and 25", pages, len(ids))
	}
	// The default page size is 10; the last page has next_cursor null.
	if r := b.get("/v1/_test/keys", b.testKey); len(r.body["data"].([]any)) != 10 {
		t.Fatalf("default page size: %d", len(r.body["data"].([]any)))
	}
	last := b.get("/v1/_test/keys?limit=100", b.testKey)
	if last.field("pagination.has_more") != false || last.field("pagination.next_cursor") != nil || !strings.Contains(string(last.raw), `"next_cursor":null`) {
		t.Fatalf("last page: %s", last.raw)
	}
}

func TestPagingDuringConcurrentInsertsListsEachItemOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, mountKeyList)
	before := map[string]bool{}
	for range 998 {
		k, _, err := auth.NewAPIKey(auth.KeyParams{AccountID: b.account.ID, Type: store.KeyTest}, b.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.store.CreateAPIKey(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		before[k.ID] = true
		b.clock.Advance(time.Millisecond / 2) // pairs of keys share a millisecond
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			k, _, _ := auth.NewAPIKey(auth.KeyParams{AccountID: b.account.ID, Type: store.KeyTest}, time.Now().Add(time.Hour))
			if err := b.store.CreateAPIKey(context.Background(), k); err != nil {
				t.Error(err)
				return
			}
		}
	})
	ids, _ := b.listAll(b.testKey, "", 33)
	close(stop)
	wg.Wait()
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for id := range before {
		if seen[id] != 1 {
			t.Fatalf("pre-existing item %s listed %d times", id, seen[id])
		}
	}
}

func TestBadPaginationParameters(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, mountKeyList)
	for range 3 {
		b.newKey(auth.KeyParams{Type: store.KeyTest})
	}
	for query, received := range map[string]string{"limit=0": "number", "limit=101": "number", "limit=abc": "string", "limit=1.5": "number", "limit=-3": "number", "limit=": "string"} {
		r := b.get("/v1/_test/keys?"+query, b.testKey)
		r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_LIMIT")
		if r.field("error.details.expected") != "integer (1-100)" || r.field("error.details.received") != received {
			t.Fatalf("%s: details %v", query, r.field("error.details"))
		}
	}
	first := b.get("/v1/_test/keys?limit=1&label=a", b.testKey)
	cursor := first.field("pagination.next_cursor").(string)
	payload, mac, _ := strings.Cut(cursor, ".")
	tampered := payload[:len(payload)-2] + "AA." + mac
	_, otherKey := b.newAccount(store.PlanStarter, nil)
	for name, c := range map[string]struct{ key, query string }{
		"garbage":        {b.testKey, "cursor=hello&label=a"},
		"tampered":       {b.testKey, "cursor=" + url.QueryEscape(tampered) + "&label=a"},
		"filter changed": {b.testKey, "cursor=" + url.QueryEscape(cursor) + "&label=b"},
		"filter dropped": {b.testKey, "cursor=" + url.QueryEscape(cursor)},
		"other mode":     {b.liveKey, "cursor=" + url.QueryEscape(cursor) + "&label=a"},
		"other account":  {otherKey, "cursor=" + url.QueryEscape(cursor) + "&label=a"},
		"mac of another": {b.testKey, "cursor=" + url.QueryEscape(payload+"."+strings.Repeat("A", len(mac))) + "&label=a"},
	} {
		r := b.get("/v1/_test/keys?"+c.query, c.key)
		r.wantError(t, http.StatusBadRequest, "validation_error", "INVALID_CURSOR")
		if r.field("error.details.field") != "cursor" || r.field("error.details.expected") != "cursor from a previous page" {
			t.Fatalf("%s: details %v", name, r.field("error.details"))
		}
	}
	// The genuine cursor works with its filter.
	if r := b.get("/v1/_test/keys?limit=1&label=a&cursor="+url.QueryEscape(cursor), b.testKey); r.status != http.StatusOK {
		t.Fatalf("genuine cursor: %d %s", r.status, r.raw)
	}
	b.get("/v1/_test/keys?limt=5", b.testKey).wantError(t, http.StatusBadRequest, "validation_error", CodeUnknownField)
	b.get("/v1/_test/keys?limit=5&limit=6", b.testKey).wantError(t, http.StatusBadRequest, "validation_error", "INVALID_LIMIT")
	b.get("/v1/_test/keys?limit=%zz", b.testKey).wantError(t, http.StatusBadRequest, "invalid_request_error", CodeBadRequest)
}
