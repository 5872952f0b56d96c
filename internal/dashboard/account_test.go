package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"riskapi/internal/store"
)

// A visitor signs up, lands on the keys page signed in, signs out (the session ends on the
// server: the old cookie no longer works), and signs in again.
func TestSignUpSignOutSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.browser()
	wantStatus(t, "sign-up form", br.get("/dashboard/signup"), http.StatusOK)
	res := br.post("/dashboard/signup", url.Values{"name": {"Babbage Risk"}, "email": {" Ada@Babbage.example "}, "password": {testPassword}})
	wantRedirect(t, "sign up", res, "/dashboard/settings/keys?done=welcome")
	session := br.cookie(sessionCookie)
	if session == nil {
		t.Fatal("no session cookie after sign-up")
	}
	var raw string
	for _, c := range res.header.Values("Set-Cookie") {
		if strings.HasPrefix(c, sessionCookie+"=") {
			raw = c
		}
	}
	for _, attr := range []string{"Path=/dashboard", "HttpOnly", "SameSite=Lax", "Max-Age=43200"} {
		if !strings.Contains(raw, attr) {
			t.Errorf("session cookie %q lacks %s", raw, attr)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("session cookie over plain http is Secure: %q", raw)
	}
	page := br.get("/dashboard/settings/keys?done=welcome")
	wantStatus(t, "keys page", page, http.StatusOK)
	if !strings.Contains(page.body, "Babbage Risk") || !strings.Contains(page.body, "Your account is ready") {
		t.Fatalf("keys page after sign-up:\n%s", page.body)
	}
	u, err := b.store.UserByEmail(context.Background(), "ada@babbage.example")
	if err != nil {
		t.Fatalf("no user after sign-up: %v", err)
	}
	acct, err := b.store.Account(context.Background(), u.AccountID)
	if err != nil || acct.Plan != store.PlanFreeTrial || acct.Name != "Babbage Risk" {
		t.Fatalf("account after sign-up: %+v, %v", acct, err)
	}
	if strings.Contains(b.logs.String(), testPassword) {
		t.Fatal("the password reached the log")
	}

	// The same email again (another case) is refused.
	other := b.browser()
	other.get("/dashboard/signup")
	res = other.post("/dashboard/signup", url.Values{"name": {"Copycat"}, "email": {"ADA@babbage.example"}, "password": {testPassword}})
	wantStatus(t, "second sign-up with the email", res, http.StatusBadRequest)
	if !strings.Contains(res.body, "already exists") {
		t.Fatalf("second sign-up: %s", res.body)
	}

	wantRedirect(t, "sign out", br.post("/dashboard/signout", nil), "/dashboard/signin")
	// A copy of the old cookie is worthless: the session is gone from the store.
	thief := b.browser()
	u2, _ := url.Parse(b.url + "/dashboard/")
	thief.c.Jar.SetCookies(u2, []*http.Cookie{{Name: sessionCookie, Value: session.Value, Path: "/dashboard"}})
	wantRedirect(t, "old session cookie", thief.get("/dashboard/settings/keys"), "/dashboard/signin")

	br.get("/dashboard/signin")
	res = br.post("/dashboard/signin", url.Values{"email": {"ada@babbage.example"}, "password": {"wrong password!"}})
	wantStatus(t, "wrong password", res, http.StatusBadRequest)
	if !strings.Contains(res.body, "The email or password is not right.") {
		t.Fatalf("wrong password page: %s", res.body)
	}
	res = br.post("/dashboard/signin", url.Values{"email": {"nobody@babbage.example"}, "password": {testPassword}})
	if res.status != http.StatusBadRequest || !strings.Contains(res.body, "The email or password is not right.") {
		t.Fatalf("unknown email must look like a wrong password: %d %s", res.status, res.body)
	}
	res = br.post("/dashboard/signin", url.Values{"email": {"ADA@babbage.example "}, "password": {testPassword}})
	wantRedirect(t, "sign in", res, "/dashboard/settings/keys")
}

func TestSignUpValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.browser()
	br.get("/dashboard/signup")
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"name": {""}, "email": {"a@b.example"}, "password": {testPassword}}, "Enter a name"},
		{url.Values{"name": {"X"}, "email": {"not an email"}, "password": {testPassword}}, "valid email"},
		{url.Values{"name": {"X"}, "email": {"a@b.example"}, "password": {"short"}}, "at least 10 characters"},
	} {
		res := br.post("/dashboard/signup", tc.form)
		if res.status != http.StatusBadRequest || !strings.Contains(res.body, tc.want) {
			t.Errorf("sign-up %v: %d, want 400 with %q\n%s", tc.form, res.status, tc.want, res.body)
		}
	}
}

func TestSignUpTurnedOff(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.SignUp = false })
	br := b.browser()
	page := br.get("/dashboard/signin")
	if strings.Contains(page.body, "/dashboard/signup") {
		t.Fatal("the sign-in page links to sign-up although it is off")
	}
	wantStatus(t, "sign-up form", br.get("/dashboard/signup"), http.StatusForbidden)
	br.get("/dashboard/signin") // for a valid form token
	res := br.post("/dashboard/signup", url.Values{"name": {"X"}, "email": {"a@b.example"}, "password": {testPassword}})
	wantStatus(t, "sign-up post", res, http.StatusForbidden)
	if _, err := b.store.UserByEmail(context.Background(), "a@b.example"); err == nil {
		t.Fatal("an account was created with sign-up off")
	}
	_, u := b.newUser(store.PlanStarter)
	br.signIn(u) // operators' users still sign in
}

// Every form needs the token of the browser's own session (or, before sign-in, of its form
// cookie); a cross-site request is refused even with a token.
func TestCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct, u := b.newUser(store.PlanStarter)
	br := b.browser()
	br.signIn(u)
	br.get("/dashboard/settings/keys/new")
	good := br.csrf()
	form := func(token string) url.Values {
		return url.Values{"csrf": {token}, "type": {"test"}, "name": {"csrf probe"}}
	}
	wantStatus(t, "no token", br.post("/dashboard/settings/keys/new", form("")), http.StatusForbidden)
	wantStatus(t, "forged token", br.post("/dashboard/settings/keys/new", form(csrfToken("guess", "session"))), http.StatusForbidden)
	wantStatus(t, "cross-site", br.post("/dashboard/settings/keys/new", form(good), "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)

	// Another user's token does not work in this session.
	_, u2 := b.newUser(store.PlanStarter)
	other := b.browser()
	other.signIn(u2)
	other.get("/dashboard/settings")
	wantStatus(t, "another session's token", br.post("/dashboard/settings/keys/new", form(other.csrf())), http.StatusForbidden)

	keys, err := b.store.ListAPIKeys(context.Background(), acct.ID, store.PageQuery{Limit: 10})
	if err != nil || len(keys.Items) != 0 {
		t.Fatalf("a refused form created keys: %d, %v", len(keys.Items), err)
	}
	wantStatus(t, "the real token", br.post("/dashboard/settings/keys/new", form(good), "Sec-Fetch-Site", "same-origin"), http.StatusOK)

	// Login CSRF: a sign-in without the form cookie's token is refused.
	fresh := b.browser()
	res := fresh.post("/dashboard/signin", url.Values{"csrf": {"x"}, "email": {u.Email}, "password": {testPassword}})
	wantStatus(t, "sign-in without the form cookie", res, http.StatusForbidden)
	if fresh.cookie(sessionCookie) != nil {
		t.Fatal("a forged sign-in set a session")
	}
}

// Sessions end on sign-out-everywhere, after 2 idle hours, and 12 hours after sign-in however
// busy; a password change ends every other session.
func TestSessionLifetimeAndRevocation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, u := b.newUser(store.PlanStarter)
	one, two := b.browser(), b.browser()
	one.signIn(u)
	two.signIn(u)
	one.get("/dashboard/settings")
	wantRedirect(t, "sign out everywhere", one.post("/dashboard/settings/sessions/revoke", nil), "/dashboard/signin?done=signed-out-all")
	wantRedirect(t, "the other session", two.get("/dashboard/usage"), "/dashboard/signin")
	wantRedirect(t, "this session", one.get("/dashboard/usage"), "/dashboard/signin")

	one.signIn(u)
	b.clock.Advance(sessionIdle - time.Minute)
	wantStatus(t, "just before the idle limit", one.get("/dashboard/usage"), http.StatusOK)
	b.clock.Advance(sessionIdle - time.Minute)
	wantStatus(t, "kept alive by use", one.get("/dashboard/usage"), http.StatusOK)
	b.clock.Advance(sessionIdle)
	wantRedirect(t, "idle for 2 hours", one.get("/dashboard/usage"), "/dashboard/signin")

	one.signIn(u)
	for range 13 {
		b.clock.Advance(time.Hour)
		res := one.get("/dashboard/usage")
		if res.status != http.StatusOK {
			wantRedirect(t, "past the lifetime", res, "/dashboard/signin")
			break
		}
	}
	if res := one.get("/dashboard/usage"); res.status == http.StatusOK {
		t.Fatal("a session outlived its 12 hours")
	}

	one.signIn(u)
	two.signIn(u)
	one.get("/dashboard/settings")
	res := one.post("/dashboard/settings/password", url.Values{"current": {testPassword}, "new": {"a brand new password"}})
	wantRedirect(t, "change password", res, "/dashboard/settings?done=password")
	wantStatus(t, "this browser stays signed in", one.get("/dashboard/settings"), http.StatusOK)
	wantRedirect(t, "the other session after a password change", two.get("/dashboard/settings"), "/dashboard/signin")
}

// Ten attempts at one email from one address lock that pair for the rest of the hour (429
// with Retry-After, even for the right password); the owner on another address still signs
// in; attempts sent at once are counted before any password is checked, so no more than the
// limit are ever checked; one address is capped across emails.
func TestSignInThrottling(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, u := b.newUser(store.PlanStarter)
	br := b.browser()
	br.get("/dashboard/signin")
	for i := range signInAttemptsPerEmailAndIP {
		res := br.post("/dashboard/signin", url.Values{"email": {u.Email}, "password": {"wrong password " + strconv.Itoa(i)}})
		wantStatus(t, "wrong password", res, http.StatusBadRequest)
	}
	res := br.post("/dashboard/signin", url.Values{"email": {u.Email}, "password": {testPassword}})
	wantStatus(t, "after 10 attempts", res, http.StatusTooManyRequests)
	// 10:20:30 → the window ends at 11:00:00.
	if got := res.header.Get("Retry-After"); got != "2370" {
		t.Fatalf("Retry-After = %q, want 2370", got)
	}
	if !strings.Contains(res.body, "Try again in 40 minutes") {
		t.Fatalf("throttled page: %s", res.body)
	}
	// The guesses from that address do not lock the owner out elsewhere.
	now := b.clock.Now()
	if wait, err := b.handler.admit(context.Background(), now, signInBuckets(u.Email, "192.0.2.7")...); err != nil || wait > 0 {
		t.Fatalf("the owner on another address: wait %v, %v", wait, err)
	}
	b.clock.Advance(40 * time.Minute)
	wantRedirect(t, "next hour", br.post("/dashboard/signin", url.Values{"email": {u.Email}, "password": {testPassword}}), "/dashboard/settings/keys")

	// Per address: with the sign-in above, the limiter holds all but one attempt of this
	// address; one more fills it for every email.
	now = b.clock.Now()
	for range signInAttemptsPerIP - 2 {
		b.limiter.Take(context.Background(), now, signInBuckets("someone@else.example", "127.0.0.1")[1])
	}
	other := b.browser()
	other.get("/dashboard/signin")
	wantStatus(t, "last attempt of the address", other.post("/dashboard/signin", url.Values{"email": {"x@y.example"}, "password": {"nope nope nope"}}), http.StatusBadRequest)
	wantStatus(t, "any email from the address", other.post("/dashboard/signin", url.Values{"email": {u.Email}, "password": {testPassword}}), http.StatusTooManyRequests)
}

// Attempts sent at the same time cannot slip past the count: of 30 concurrent wrong
// passwords for one email from one address, only the limit's worth are checked.
func TestSignInThrottlingUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, u := b.newUser(store.PlanStarter)
	var wg sync.WaitGroup
	var checked, refused atomic.Int64
	for i := range 30 {
		br := b.browser()
		br.get("/dashboard/signin")
		wg.Go(func() {
			res := br.post("/dashboard/signin", url.Values{"email": {u.Email}, "password": {"wrong " + strconv.Itoa(i)}})
			switch res.status {
			case http.StatusBadRequest:
				checked.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if checked.Load() != signInAttemptsPerEmailAndIP || refused.Load() != 30-signInAttemptsPerEmailAndIP {
		t.Fatalf("%d passwords checked, %d refused; want %d and %d", checked.Load(), refused.Load(), signInAttemptsPerEmailAndIP, 30-signInAttemptsPerEmailAndIP)
	}
}

func TestSignUpThrottling(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.browser()
	br.get("/dashboard/signup")
	for range signUpsPerIP {
		// Invalid sign-ups count too, and cost no hashing.
		wantStatus(t, "sign-up", br.post("/dashboard/signup", url.Values{"name": {""}}), http.StatusBadRequest)
	}
	res := br.post("/dashboard/signup", url.Values{"name": {"X"}, "email": {"a@b.example"}, "password": {testPassword}})
	wantStatus(t, "beyond the limit", res, http.StatusTooManyRequests)
	if res.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.browser()
	for _, path := range []string{"/dashboard/signin", "/dashboard/static/dashboard.css", "/dashboard/nope"} {
		res := br.get(path)
		h := res.header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP allows inline code: %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	if res := br.get("/dashboard/nope"); res.status != http.StatusNotFound {
		t.Errorf("unknown page: %d", res.status)
	}
	if res := br.get("/dashboard/signin"); res.header.Get("Cache-Control") != "no-store" {
		t.Errorf("pages must not be cached: %q", res.header.Get("Cache-Control"))
	}
	// No page has inline script: every <script> has a src.
	page := br.get("/dashboard/signin").body
	if strings.Contains(page, "<script>") || strings.Contains(page, " onclick=") || strings.Contains(page, "style=") {
		t.Error("the page has inline script or style, which the CSP would block")
	}
}

func TestSecureCookiesBehindTLSProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.SecureCookies = true })
	br := b.browser()
	res := br.get("/dashboard/signin")
	for _, c := range res.header.Values("Set-Cookie") {
		if !strings.Contains(c, "Secure") {
			t.Fatalf("cookie without Secure: %q", c)
		}
	}
}

// The live/test switch sets what every page shows and returns to the page it was used on;
// it never redirects off the dashboard.
func TestModeSwitch(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, u := b.newUser(store.PlanStarter)
	br := b.browser()
	br.signIn(u)
	page := br.get("/dashboard/usage")
	if !strings.Contains(page.body, "Test data") {
		t.Fatal("new sessions should start on test data")
	}
	wantRedirect(t, "switch to live", br.post("/dashboard/mode", url.Values{"mode": {"live"}, "back": {"/dashboard/usage"}}), "/dashboard/usage")
	page = br.get("/dashboard/usage")
	if !strings.Contains(page.body, "Live data") || !strings.Contains(page.body, "Drift (per hour)") {
		t.Fatal("live mode does not show live data and the plan's product limits")
	}
	for _, back := range []string{"https://evil.example/", "//evil.example/dashboard/", "/dashboard/../v1", "/v1/account"} {
		wantRedirect(t, "back="+back, br.post("/dashboard/mode", url.Values{"mode": {"test"}, "back": {back}}), "/dashboard/settings/keys")
	}
	wantStatus(t, "unknown mode", br.post("/dashboard/mode", url.Values{"mode": {"staging"}}), http.StatusBadRequest)
}
