package store

import "time"

// PageQuery asks for one page of a list ordered newest first (created_at, then id,
// descending). Keyset pagination: the page starts strictly after After, so items inserted
// while a client pages (they are newer) never shift the pages it has not read yet.
type PageQuery struct {
	// Limit is the page size; the HTTP layer keeps it within 1–100.
	Limit int
	// After is the position of the last item of the previous page; nil for the first page.
	After *Position
}

// Position is an item's place in the newest-first order.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// Page is one page of a list.
type Page[T any] struct {
	Items []T
	// HasMore reports whether items follow the last one of this page.
	HasMore bool
	// TotalCount is the number of items matching the list's filters, on every page.
	TotalCount int64
}

// CollectAll pages through a whole list, 100 items a page: list fetches one page and
// position gives an item's place, to continue after it. For command-line tools and tests;
// the API hands pages to clients instead.
func CollectAll[T any](list func(PageQuery) (Page[T], error), position func(T) Position) ([]T, error) {
	var all []T
	q := PageQuery{Limit: 100}
	for {
		page, err := list(q)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if !page.HasMore || len(page.Items) == 0 {
			return all, nil
		}
		after := position(page.Items[len(page.Items)-1])
		q.After = &after
	}
}

// KeyPosition is an API key's place in the newest-first order.
func KeyPosition(k APIKey) Position { return Position{CreatedAt: k.CreatedAt, ID: k.ID} }
