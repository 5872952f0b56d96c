package faulttest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
)

// readBackSample is how many answered objects are also read one by one (GET by id); the
// rest are found in the list. A 15-minute run answers 100,000 to 150,000 analyses, which
// one GET each would take most of an hour to read back on a loaded 2-core machine.
const readBackSample = 500

// checkReadBack checks invariant 1 over the analyses of ids (Idempotency-Key → the analysis
// id every 2xx answer named): every answered analysis is in the list of the key's analyses,
// read page by page to the end, the list holds nothing else (one key, one analysis), and an
// evenly spread sample of readBackSample also reads back by id.
func checkReadBack(t *testing.T, base, key, path string, ids map[string]string) {
	t.Helper()
	listed := listIDs(t, base, key, path)
	for k, id := range ids {
		if !listed[id] {
			t.Errorf("key %s: analysis %s answered but not stored", k, id)
		}
	}
	if len(listed) != len(ids) {
		t.Errorf("%d analyses stored for %d keys: a key ran twice or an answer was lost", len(listed), len(ids))
	}
	step := max(1, len(ids)/readBackSample)
	i := 0
	for k, id := range ids {
		if i%step == 0 {
			if status := get(t, base, key, path+"/"+id); status != http.StatusOK {
				t.Errorf("key %s: analysis %s answered but reads %d", k, id, status)
			}
		}
		i++
	}
	t.Logf("read back: %d analyses listed, %d read by id", len(listed), (len(ids)+step-1)/step)
}

// listIDs reads every page of the list at path (100 a page) and returns the ids it holds.
func listIDs(t *testing.T, base, key, path string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	cursor := ""
	for {
		q := url.Values{"limit": {"100"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		req, _ := http.NewRequest(http.MethodGet, base+path+"?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("list %s: %d %v %s", path, res.StatusCode, err, raw)
		}
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			Pagination struct {
				HasMore    bool   `json:"has_more"`
				NextCursor string `json:"next_cursor"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			t.Fatalf("list %s: %v", path, err)
		}
		for _, d := range page.Data {
			if ids[d.ID] {
				t.Fatalf("list %s: %s listed twice", path, d.ID)
			}
			ids[d.ID] = true
		}
		if !page.Pagination.HasMore {
			return ids
		}
		cursor = page.Pagination.NextCursor
	}
}
