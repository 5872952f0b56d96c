package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"riskapi/internal/auth"
	"riskapi/internal/store"
)

var newKeyPattern = regexp.MustCompile(`<code id="new-key">([^<]+)</code>`)

// generate posts the Generate New Key form and returns the key the page shows.
func (br *browser) generate(form url.Values) string {
	br.b.t.Helper()
	br.get("/dashboard/settings/keys/new")
	res := br.post("/dashboard/settings/keys/new", form)
	wantStatus(br.b.t, "generate key", res, http.StatusOK)
	m := newKeyPattern.FindStringSubmatch(res.body)
	if m == nil {
		br.b.t.Fatalf("no key on the page:\n%s", res.body)
	}
	return m[1]
}

// The seed's flow: a restricted test key with drift:read only, shown once, works where its
// scope allows and nowhere else, and stops working the moment it is revoked.
func TestRestrictedKeyShownOnceThenRevoked(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct, u := b.newUser(store.PlanStarter)
	br := b.browser()
	br.signIn(u)
	key := br.generate(url.Values{"name": {"reader"}, "type": {"restricted"}, "mode": {"test"},
		"scopes": {"drift:read"}, "rate_limit": {"500"}, "expires": {"90d"}})
	if typ, err := auth.ParseKey(key); err != nil || typ != store.KeyRestricted {
		t.Fatalf("shown key %q: %v, %v", key[:8], typ, err)
	}
	stored, err := b.store.APIKeyByHash(context.Background(), auth.HashKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if stored.AccountID != acct.ID || stored.Mode != store.ModeTest || strings.Join(stored.Scopes, " ") != "drift:read" ||
		stored.RateLimit != 500 || stored.ExpiresAt == nil || stored.Name != "reader" {
		t.Fatalf("stored key: %+v", stored)
	}

	if got := b.api(http.MethodGet, "/v1/drift/analyses", key, ""); got != http.StatusOK {
		t.Fatalf("GET /v1/drift/analyses with drift:read: %d", got)
	}
	if got := b.api(http.MethodPost, "/v1/drift/analyze", key, `{"agent_id":"agent_7"}`); got != http.StatusForbidden {
		t.Fatalf("POST /v1/drift/analyze with drift:read: %d", got)
	}

	// No page shows the key again; the list shows prefix and last four.
	list := br.get("/dashboard/settings/keys")
	if !strings.Contains(list.body, "sk_rstr_…"+key[len(key)-4:]) {
		t.Fatalf("the list does not show the key as prefix and last four:\n%s", list.body)
	}
	for _, path := range []string{"/dashboard/settings/keys", "/dashboard/settings", "/dashboard/usage", "/dashboard/analyses",
		"/dashboard/webhooks", "/dashboard/settings/keys/" + stored.ID + "/revoke"} {
		if res := br.get(path); strings.Contains(res.body, key) || strings.Contains(res.body, key[8:20]) {
			t.Fatalf("%s shows the key", path)
		}
	}
	if strings.Contains(b.logs.String(), key[8:]) {
		t.Fatal("the key reached the log")
	}

	// Another account cannot see or revoke it.
	_, stranger := b.newUser(store.PlanStarter)
	other := b.browser()
	other.signIn(stranger)
	wantStatus(t, "another account's key", other.get("/dashboard/settings/keys/"+stored.ID+"/revoke"), http.StatusNotFound)
	other.get("/dashboard/settings")
	wantStatus(t, "another account revokes", other.post("/dashboard/settings/keys/"+stored.ID+"/revoke", nil), http.StatusNotFound)

	br.get("/dashboard/settings/keys/" + stored.ID + "/revoke")
	wantRedirect(t, "revoke", br.post("/dashboard/settings/keys/"+stored.ID+"/revoke", nil), "/dashboard/settings/keys?done=revoked")
	// The API process forgot the key at once; no one-second cache delay.
	if got := b.api(http.MethodGet, "/v1/drift/analyses", key, ""); got != http.StatusUnauthorized {
		t.Fatalf("revoked key: %d, want 401", got)
	}
	list = br.get("/dashboard/settings/keys?done=revoked")
	if !strings.Contains(list.body, "revoked") || strings.Contains(list.body, "/dashboard/settings/keys/"+stored.ID+"/revoke") {
		t.Fatal("the list still offers to revoke a revoked key")
	}
}

// The form's rules are auth.NewAPIKey's, so the dashboard cannot make a key the command line
// would refuse.
func TestGenerateKeyValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct, u := b.newUser(store.PlanStarter)
	br := b.browser()
	br.signIn(u)
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"type": {"restricted"}, "mode": {"test"}}, "A restricted key needs at least one scope."},
		{url.Values{"type": {"restricted"}, "mode": {"test"}, "scopes": {"drift:delete"}}, "Unknown scope"},
		{url.Values{"type": {"test"}, "rate_limit": {"-3"}}, "hourly limit must be a whole number"},
		{url.Values{"type": {"test"}, "rate_limit": {"lots"}}, "hourly limit must be a whole number"},
		{url.Values{"type": {"admin"}}, "want live, test or restricted"},
		{url.Values{"type": {"test"}, "expires": {"forever"}}, "Choose an expiry"},
	} {
		br.get("/dashboard/settings/keys/new")
		res := br.post("/dashboard/settings/keys/new", tc.form)
		if res.status != http.StatusBadRequest || !strings.Contains(res.body, tc.want) {
			t.Errorf("%v: %d, want 400 with %q", tc.form, res.status, tc.want)
		}
		if newKeyPattern.MatchString(res.body) {
			t.Errorf("%v: a key was shown", tc.form)
		}
	}
	keys, _ := b.store.ListAPIKeys(context.Background(), acct.ID, store.PageQuery{Limit: 10})
	if len(keys.Items) != 0 {
		t.Fatalf("refused forms created %d keys", len(keys.Items))
	}
	// Keys are made in the mode being viewed: a live key from the test view is refused.
	br.get("/dashboard/settings/keys/new")
	if res := br.post("/dashboard/settings/keys/new", url.Values{"type": {"live"}}); res.status != http.StatusBadRequest || !strings.Contains(res.body, "switch to live mode") {
		t.Fatalf("live key from the test view: %d", res.status)
	}
	// A live key holds every scope whatever the form's scope boxes say, and lists under live.
	br.post("/dashboard/mode", url.Values{"mode": {"live"}})
	live := br.generate(url.Values{"type": {"live"}, "scopes": {"drift:read"}})
	if !strings.HasPrefix(live, "sk_live_") {
		t.Fatalf("live key %q", live[:8])
	}
	if page := br.get("/dashboard/settings/keys").body; !strings.Contains(page, "sk_live_…"+live[len(live)-4:]) || !strings.Contains(page, "all scopes") {
		t.Fatal("the live-mode list does not show the live key with all scopes")
	}
}
