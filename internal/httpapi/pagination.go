package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"riskapi/internal/store"
)

// Page sizes of every list endpoint (platform contract §6).
const (
	defaultPageLimit = 10
	maxPageLimit     = 100
)

// listQuery is a parsed list request: the page to read and the filters it is bound to.
type listQuery struct {
	page    store.PageQuery
	filters map[string]string
}

// cursorPayload is what a cursor carries. Binding the list, account, mode and filters into it
// makes a cursor useless anywhere but on the list it came from; the HMAC makes it tamper-evident.
type cursorPayload struct {
	List      string            `json:"l"`
	Account   string            `json:"a"`
	Mode      string            `json:"m"`
	Filters   map[string]string `json:"f,omitempty"`
	CreatedAt int64             `json:"t"`
	ID        string            `json:"i"`
}

// cursorMACLength: 128 bits of HMAC-SHA256 are ample against forgery and keep cursors short.
const cursorMACLength = 16

// parseList reads limit, cursor and the given filter parameters of a list endpoint.
func (s *Server) parseList(r *http.Request, list string, filterNames ...string) (listQuery, *Error) {
	known := append([]string{"limit", "cursor"}, filterNames...)
	values, e := queryParams(r, known...)
	if e != nil {
		return listQuery{}, e
	}
	q := listQuery{page: store.PageQuery{Limit: defaultPageLimit}, filters: map[string]string{}}
	if raw, ok := values["limit"]; ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxPageLimit {
			received := "number"
			if _, ferr := strconv.ParseFloat(raw, 64); ferr != nil {
				received = "string"
			}
			return listQuery{}, invalidField("limit", "integer (1-100)", received, "limit must be a whole number from 1 to %d (got %q).", maxPageLimit, raw)
		}
		q.page.Limit = n
	}
	for _, name := range filterNames {
		if v, ok := values[name]; ok {
			q.filters[name] = v
		}
	}
	if raw, ok := values["cursor"]; ok {
		after, e := s.openCursor(r, list, q.filters, raw)
		if e != nil {
			return listQuery{}, e
		}
		q.page.After = &after
	}
	return q, nil
}

// queryParams parses the query string of a GET endpoint that accepts the named parameters,
// each at most once. Any other parameter is UNKNOWN_FIELD and a repeated one is
// INVALID_<NAME>, so a typo never passes silently; a malformed query string is BAD_REQUEST.
func queryParams(r *http.Request, known ...string) (map[string]string, *Error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, newError(CodeBadRequest, "The query string is malformed: %v.", err)
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make(map[string]string, len(values))
	for _, name := range names {
		if !slices.Contains(known, name) {
			e := unknownField(name, nil, "string")
			e.Message = "The query parameter " + name + " is not accepted here; accepted: " + strings.Join(known, ", ") + "."
			return nil, e
		}
		if len(values[name]) > 1 {
			return nil, invalidField(name, "string", "array", "Give the query parameter %s once, not %d times.", name, len(values[name]))
		}
		out[name] = values[name][0]
	}
	return out, nil
}

// openCursor verifies a cursor and returns the position it continues after.
func (s *Server) openCursor(r *http.Request, list string, filters map[string]string, cursor string) (store.Position, *Error) {
	invalid := invalidField("cursor", "cursor from a previous page", "string",
		"cursor is not a cursor this list handed out with these filters. Pass pagination.next_cursor of the previous page unchanged, with the same filters.")
	encoded, mac, ok := strings.Cut(cursor, ".")
	if !ok {
		return store.Position{}, invalid
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(encoded)
	gotMAC, err2 := base64.RawURLEncoding.DecodeString(mac)
	if err1 != nil || err2 != nil || !hmac.Equal(gotMAC, s.cursorMAC(payload)) {
		return store.Position{}, invalid
	}
	var c cursorPayload
	if err := json.Unmarshal(payload, &c); err != nil {
		return store.Position{}, invalid
	}
	p := principalFrom(r.Context())
	if c.List != list || c.Account != p.Account.ID || c.Mode != string(p.Key.Mode) || !sameFilters(c.Filters, filters) {
		return store.Position{}, invalid
	}
	return store.Position{CreatedAt: time.UnixMilli(c.CreatedAt).UTC(), ID: c.ID}, nil
}

// sealCursor makes the cursor that continues after position.
func (s *Server) sealCursor(r *http.Request, list string, filters map[string]string, after store.Position) string {
	p := principalFrom(r.Context())
	if len(filters) == 0 {
		filters = nil
	}
	payload, _ := json.Marshal(cursorPayload{List: list, Account: p.Account.ID, Mode: string(p.Key.Mode),
		Filters: filters, CreatedAt: after.CreatedAt.UnixMilli(), ID: after.ID}, json.Deterministic(true))
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(s.cursorMAC(payload))
}

func (s *Server) cursorMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, s.cfg.CursorKey)
	m.Write(payload)
	return m.Sum(nil)[:cursorMACLength]
}

func sameFilters(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// writePage answers a list request with one page: the rendered items, has_more,
// total_count and, when more follow, the cursor of the next page.
func writePage[T any](s *Server, w http.ResponseWriter, r *http.Request, list string, q listQuery,
	page store.Page[T], position func(T) store.Position, render func(T) any) {
	items := make([]any, len(page.Items))
	for i, item := range page.Items {
		items[i] = render(item)
	}
	p := pagination{HasMore: page.HasMore, TotalCount: page.TotalCount}
	if page.HasMore && len(page.Items) > 0 {
		next := s.sealCursor(r, list, q.filters, position(page.Items[len(page.Items)-1]))
		p.NextCursor = &next
	}
	writeList(w, r, items, p)
}
