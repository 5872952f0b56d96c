package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"riskapi/internal/store"
)

// listAllKeys pages through an account's keys, 100 at a time.
func listAllKeys(ctx context.Context, s store.Store, accountID string) ([]store.APIKey, error) {
	return store.CollectAll(func(q store.PageQuery) (store.Page[store.APIKey], error) {
		return s.ListAPIKeys(ctx, accountID, q)
	}, store.KeyPosition)
}

func testListAPIKeysPages(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	mustCreateAccount(t, s, a)
	// 25 keys, several sharing a millisecond, so page boundaries fall inside ties.
	var want []string
	for i := range 25 {
		k := newKey(a.ID)
		k.CreatedAt = t0.Add(time.Duration(i/3) * time.Millisecond)
		mustCreateKey(t, s, k)
		want = append(want, k.ID)
	}
	q := store.PageQuery{Limit: 10}
	var got []string
	pages := 0
	for {
		page, err := s.ListAPIKeys(ctx, a.ID, q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if page.TotalCount != 25 {
			t.Fatalf("page %d: total_count %d, want 25", pages, page.TotalCount)
		}
		if wantLen := min(10, 25-len(got)); len(page.Items) != wantLen {
			t.Fatalf("page %d has %d items, want %d", pages, len(page.Items), wantLen)
		}
		for i, k := range page.Items {
			got = append(got, k.ID)
			if i > 0 {
				prev := page.Items[i-1]
				if k.CreatedAt.After(prev.CreatedAt) || (k.CreatedAt.Equal(prev.CreatedAt) && k.ID > prev.ID) {
					t.Fatalf("page %d not newest first at %d", pages, i)
				}
			}
		}
		if !page.HasMore {
			break
		}
		after := store.KeyPosition(page.Items[len(page.Items)-1])
		q.After = &after
	}
	if pages != 3 || len(got) != 25 {
		t.Fatalf("%d pages, %d keys; want 3 pages of 25 keys", pages, len(got))
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("key %s listed twice", id)
		}
		seen[id] = true
	}
	for _, id := range want {
		if !seen[id] {
			t.Fatalf("key %s never listed", id)
		}
	}
}

// testPagingUnderConcurrentInserts pages through 1,000 keys while other goroutines insert
// more: every key that existed before paging began is listed exactly once.
func testPagingUnderConcurrentInserts(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newAccount()
	mustCreateAccount(t, s, a)
	before := map[string]bool{}
	for i := range 1000 {
		k := newKey(a.ID)
		k.CreatedAt = t0.Add(time.Duration(i/4) * time.Millisecond)
		mustCreateKey(t, s, k)
		before[k.ID] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var insertErr error
	var mu sync.Mutex
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := newKey(a.ID)
				k.CreatedAt = time.Now().UTC().Truncate(time.Millisecond) // newer than every existing key
				if err := s.CreateAPIKey(ctx, k); err != nil {
					mu.Lock()
					insertErr = fmt.Errorf("writer %d insert %d: %w", w, i, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	seen := map[string]int{}
	q := store.PageQuery{Limit: 37}
	for {
		page, err := s.ListAPIKeys(ctx, a.ID, q)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		for _, k := range page.Items {
			seen[k.ID]++
		}
		if !page.HasMore {
			break
		}
		after := store.KeyPosition(page.Items[len(page.Items)-1])
		q.After = &after
	}
	close(stop)
	wg.Wait()
	if insertErr != nil {
		t.Fatal(insertErr)
	}
	for id := range before {
		if seen[id] != 1 {
			t.Fatalf("pre-existing key %s listed %d times, want once", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("key %s listed %d times", id, n)
		}
	}
}
