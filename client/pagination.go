package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"

	"github.com/go-json-experiment/json"
)

// ListParams are the pagination parameters every list takes.
type ListParams struct {
	// Limit is the page size, 1–100; zero means the service's default, 10. An iterator
	// fetches pages of this size.
	Limit int
	// Cursor starts the list after the item a previous page ended with (its NextCursor);
	// empty means the first page. Filters are bound into it: pass the same ones again.
	Cursor string
}

func (p ListParams) values() url.Values {
	q := url.Values{}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// Page is one page of a list, newest first.
type Page[T any] struct {
	Data []T
	// HasMore is true when further pages exist; NextCursor then fetches the next one.
	HasMore    bool
	NextCursor string
	// TotalCount counts every item that matches the list's filters.
	TotalCount int
}

// listPage fetches one page of path with query (the filters, limit and cursor).
func listPage[T any](ctx context.Context, c *Client, path string, query url.Values, opts []RequestOption) (*Page[T], error) {
	env, err := c.call(ctx, "GET", path, query, nil, opts)
	if err != nil {
		return nil, err
	}
	page := &Page[T]{}
	if err := json.Unmarshal(env.Data, &page.Data); err != nil {
		return nil, decodeError(env, err)
	}
	if p := env.Pagination; p != nil {
		page.HasMore, page.TotalCount = p.HasMore, p.TotalCount
		if p.NextCursor != nil {
			page.NextCursor = *p.NextCursor
		}
	}
	return page, nil
}

// all iterates over every item of a list from query's cursor on, one page request at a
// time, following next_cursor while has_more. It stops at the first error, which it yields
// with the zero T; breaking out of the loop stops it without fetching further pages.
func all[T any](ctx context.Context, c *Client, path string, query url.Values, opts []RequestOption) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := url.Values{}
		for k, v := range query {
			q[k] = append([]string(nil), v...)
		}
		for {
			page, err := listPage[T](ctx, c, path, q, opts)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range page.Data {
				if !yield(item, nil) {
					return
				}
			}
			if !page.HasMore || page.NextCursor == "" {
				return
			}
			q.Set("cursor", page.NextCursor)
		}
	}
}
