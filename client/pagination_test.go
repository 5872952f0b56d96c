package client_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"riskapi/client"
)

// countingTransport counts the requests that pass through it.
type countingTransport struct {
	next  http.RoundTripper
	count atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.count.Add(1)
	return c.next.RoundTrip(req)
}

// The iterator follows next_cursor across pages: every item once, newest first, one
// request per page, and no request after the caller stops.
func TestIteratorFollowsPages(t *testing.T) {
	t.Parallel()
	s := startService(t)
	ctx := t.Context()
	counter := &countingTransport{next: s.checked()}
	c := s.client(s.testKey, client.WithHTTPClient(&http.Client{Transport: counter}))

	var created []client.Resource
	for i := range 12 {
		we, err := c.CreateWebhook(ctx, client.WebhookCreateParams{URL: fmt.Sprintf("https://8.8.8.8/hook/%d", i), Events: []string{"*"}, Secret: testSecret})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, we.Resource)
	}
	want := newestFirst(created)

	counter.count.Store(0)
	all := collect(t, c.ListWebhooks(ctx, client.ListParams{Limit: 5}))
	if got := ids(all, func(w client.WebhookEndpoint) string { return w.ID }); !slices.Equal(got, want) {
		t.Fatalf("iterated %v, want %v", got, want)
	}
	if n := counter.count.Load(); n != 3 {
		t.Fatalf("12 items in pages of 5 took %d requests, want 3", n)
	}

	// Stopping after 7 items fetches only the two pages that hold them.
	counter.count.Store(0)
	var seen []string
	for we, err := range c.ListWebhooks(ctx, client.ListParams{Limit: 5}) {
		if err != nil {
			t.Fatal(err)
		}
		if seen = append(seen, we.ID); len(seen) == 7 {
			break
		}
	}
	if n := counter.count.Load(); n != 2 || !slices.Equal(seen, want[:7]) {
		t.Fatalf("breaking after 7 items: %d requests, items %v", n, seen)
	}

	// One page at a time, by hand, gives the same order; TotalCount counts them all.
	var paged []string
	params := client.ListParams{Limit: 5}
	for {
		page, err := c.WebhooksPage(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if page.TotalCount != 12 {
			t.Fatalf("total_count %d, want 12", page.TotalCount)
		}
		paged = append(paged, ids(page.Data, func(w client.WebhookEndpoint) string { return w.ID })...)
		if !page.HasMore {
			if page.NextCursor != "" {
				t.Fatalf("last page has next cursor %q", page.NextCursor)
			}
			break
		}
		params.Cursor = page.NextCursor
	}
	if !slices.Equal(paged, want) {
		t.Fatalf("paged %v, want %v", paged, want)
	}

	// Starting from a cursor resumes after the page it came from.
	first, err := c.WebhooksPage(ctx, client.ListParams{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	rest := collect(t, c.ListWebhooks(ctx, client.ListParams{Limit: 5, Cursor: first.NextCursor}))
	if got := ids(rest, func(w client.WebhookEndpoint) string { return w.ID }); !slices.Equal(got, want[5:]) {
		t.Fatalf("from the first page's cursor: %v, want %v", got, want[5:])
	}

	// An error ends the iteration with that error, once.
	var errs int
	for _, err := range c.ListWebhooks(ctx, client.ListParams{Limit: 500}) {
		if err == nil {
			t.Fatal("limit 500 yielded an item")
		}
		errs++
	}
	if errs != 1 {
		t.Fatalf("%d errors yielded, want 1", errs)
	}
}
