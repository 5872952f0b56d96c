package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"riskapi/internal/store"
)

// Cookies. All are HttpOnly, SameSite=Lax, limited to /dashboard (the API never sees them) and
// Secure when the dashboard is served over https.
const (
	// sessionCookie holds the session token; the store keeps only its SHA-256.
	sessionCookie = "riskapi_session"
	// formCookie is a random value that ties the CSRF token of the sign-in and sign-up forms
	// to the browser that loaded them (there is no session yet to tie it to).
	formCookie = "riskapi_form"
	// modeCookie remembers whether the visitor looks at live or test data.
	modeCookie = "riskapi_mode"
	cookiePath = "/dashboard"
	// csrfField is the hidden form field carrying the CSRF token.
	csrfField = "csrf"
)

// visitor is a signed-in user, their account and session, and the mode they are looking at.
type visitor struct {
	token   string // the session token from the cookie
	session store.Session
	user    store.User
	account store.Account
	mode    store.Mode
	csrf    string
}

// accessInfo carries what the access log line names about a request.
type accessInfo struct{ account string }

type accessKey struct{}

func withAccessInfo(ctx context.Context, a *accessInfo) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

func accessFrom(ctx context.Context) *accessInfo {
	if a, ok := ctx.Value(accessKey{}).(*accessInfo); ok {
		return a
	}
	return &accessInfo{}
}

// newToken returns 32 random bytes as unpadded base64url: a session token or form secret.
func newToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("dashboard: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashToken is the form in which the store keeps a session token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// csrfToken derives a form's CSRF token from a secret only this browser holds (the session
// token, or the form cookie before sign-in): HMAC-SHA256(secret, purpose). A page of another
// site can neither read the cookie nor compute the token, so it cannot forge a form.
func csrfToken(secret, purpose string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(purpose))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func validCSRF(r *http.Request, secret, purpose string) bool {
	if secret == "" {
		return false
	}
	// A browser that sends Fetch metadata says when a request comes from another site;
	// refuse those outright, whatever they carry.
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	got := r.PostFormValue(csrfField)
	want := csrfToken(secret, purpose)
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (h *Handler) secure(r *http.Request) bool { return h.cfg.SecureCookies || r.TLS != nil }

// setCookie sets a cookie for maxAge, or for the browser session when maxAge is 0.
func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: cookiePath, HttpOnly: true,
		Secure: h.secure(r), SameSite: http.SameSiteLaxMode}
	if maxAge > 0 {
		c.MaxAge = int(maxAge.Seconds())
	}
	http.SetCookie(w, c)
}

func (h *Handler) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: cookiePath, HttpOnly: true,
		Secure: h.secure(r), SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// loadVisitor returns the signed-in visitor of r, if its session cookie names a live session.
// An expired or idle session is deleted and its cookie cleared.
func (h *Handler) loadVisitor(w http.ResponseWriter, r *http.Request) (*visitor, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return nil, false
	}
	ctx := r.Context()
	hash := hashToken(c.Value)
	se, err := h.cfg.Store.SessionByTokenHash(ctx, hash)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.cfg.Logger.Warn("dashboard: load session", "err", err)
		}
		h.clearCookie(w, r, sessionCookie)
		return nil, false
	}
	now := h.cfg.Now()
	if !now.Before(se.ExpiresAt) || now.Sub(se.LastSeenAt) >= sessionIdle {
		if err := h.cfg.Store.RevokeSession(ctx, hash); err != nil {
			h.cfg.Logger.Warn("dashboard: end expired session", "err", err)
		}
		h.clearCookie(w, r, sessionCookie)
		return nil, false
	}
	user, err := h.cfg.Store.User(ctx, se.UserID)
	if err != nil {
		return nil, false
	}
	acct, err := h.cfg.Store.Account(ctx, se.AccountID)
	if err != nil {
		return nil, false
	}
	if now.Sub(se.LastSeenAt) >= touchEvery {
		if err := h.cfg.Store.TouchSession(ctx, hash, now); err != nil {
			h.cfg.Logger.Warn("dashboard: touch session", "err", err)
		}
	}
	mode := store.ModeTest
	if m, err := r.Cookie(modeCookie); err == nil && m.Value == string(store.ModeLive) {
		mode = store.ModeLive
	}
	accessFrom(ctx).account = acct.ID
	return &visitor{token: c.Value, session: se, user: user, account: acct, mode: mode,
		csrf: csrfToken(c.Value, "session")}, true
}

// signedInHandler is a page or action for a signed-in visitor.
type signedInHandler func(w http.ResponseWriter, r *http.Request, v *visitor)

// signedIn runs next for a signed-in visitor; others are sent to the sign-in page. A POST must
// carry the session's CSRF token.
func (h *Handler) signedIn(next signedInHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, ok := h.loadVisitor(w, r)
		if !ok {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/dashboard/signin", http.StatusSeeOther)
				return
			}
			h.renderError(w, r, http.StatusForbidden, "Your session has ended. Sign in again.")
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if !validCSRF(r, v.token, "session") {
				h.renderError(w, r, http.StatusForbidden, "This form has expired or was sent from another site. Reload the page and try again.")
				return
			}
		}
		next(w, r, v)
	})
}

// maxFormBytes bounds a form body; the largest form (a webhook) is well under 16 KiB.
const maxFormBytes = 64 << 10

// anonymousHandler is a sign-in or sign-up page; csrf is the token its form must carry.
type anonymousHandler func(w http.ResponseWriter, r *http.Request, csrf string)

// anonymous gives the sign-in and sign-up pages a form cookie and checks, on POST, that the
// form carries the token derived from it (login CSRF: no other site can sign a browser in to
// an account of its choosing).
func (h *Handler) anonymous(next anonymousHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret := ""
		if c, err := r.Cookie(formCookie); err == nil && len(c.Value) >= 32 && len(c.Value) <= 128 {
			secret = c.Value
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if !validCSRF(r, secret, "form") {
				h.renderError(w, r, http.StatusForbidden, "This form has expired or was sent from another site. Reload the page and try again.")
				return
			}
		}
		if secret == "" {
			secret = newToken()
			h.setCookie(w, r, formCookie, secret, 0)
		}
		next(w, r, csrfToken(secret, "form"))
	})
}

// startSession signs user in: a new session, its cookie, and a clean form cookie.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, u store.User) error {
	now := h.cfg.Now().UTC().Truncate(time.Millisecond)
	token := newToken()
	se := store.Session{TokenHash: hashToken(token), UserID: u.ID, AccountID: u.AccountID,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(sessionLifetime)}
	if err := h.cfg.Store.CreateSession(r.Context(), se); err != nil {
		return err
	}
	// Sessions that ended are deleted here, at sign-in, so no background job is needed.
	if _, err := h.cfg.Store.PurgeSessions(r.Context(), now, now.Add(-sessionIdle)); err != nil {
		h.cfg.Logger.Warn("dashboard: purge sessions", "err", err)
	}
	h.setCookie(w, r, sessionCookie, token, sessionLifetime)
	h.clearCookie(w, r, formCookie)
	accessFrom(r.Context()).account = u.AccountID
	return nil
}
