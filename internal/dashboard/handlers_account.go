package dashboard

import (
	"errors"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"riskapi/internal/clientip"
	"riskapi/internal/ident"
	"riskapi/internal/store"
)

type signInData struct{ Email string }

type signUpData struct{ Name, Email string }

func (h *Handler) clientIP(r *http.Request) string { return clientip.Of(r, h.cfg.TrustedProxies) }

// handleSignInForm shows the sign-in form, or sends a signed-in visitor on.
func (h *Handler) handleSignInForm() anonymousHandler {
	return func(w http.ResponseWriter, r *http.Request, csrf string) {
		if _, ok := h.loadVisitor(w, r); ok {
			http.Redirect(w, r, "/dashboard/settings/keys", http.StatusSeeOther)
			return
		}
		h.render(w, r, http.StatusOK, "signin", view{Title: "Sign in", CSRF: csrf, Notice: noticeFor(r), Data: signInData{}})
	}
}

// handleSignIn checks an email and password. Failures count against the email and the client
// address; beyond the limits the form answers 429 with Retry-After. An unknown email costs the
// same hashing time as a wrong password and gets the same message, so the form does not tell
// which emails have accounts.
func (h *Handler) handleSignIn() anonymousHandler {
	return func(w http.ResponseWriter, r *http.Request, csrf string) {
		ctx := r.Context()
		email := store.NormalizeEmail(r.PostFormValue("email"))
		password := r.PostFormValue("password")
		fail := func(status int, message string) {
			h.render(w, r, status, "signin", view{Title: "Sign in", CSRF: csrf, Error: message, Data: signInData{Email: email}})
		}
		now := h.cfg.Now()
		if email == "" || password == "" {
			fail(http.StatusBadRequest, "Enter your email and password.")
			return
		}
		wait, err := h.admit(ctx, now, signInBuckets(email, h.clientIP(r))...)
		if err != nil {
			h.renderError(w, r, http.StatusServiceUnavailable, "Signing in is not possible right now. Try again in a minute.")
			return
		}
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
			fail(http.StatusTooManyRequests, "Too many sign-in attempts for this email or from your network. Try again in "+minutesText(wait)+".")
			return
		}
		var ok, outdated bool
		u, err := h.cfg.Store.UserByEmail(ctx, email)
		switch {
		case errors.Is(err, store.ErrNotFound):
			err = h.passwords.burn(ctx, password)
		case err != nil:
			h.cfg.Logger.Error("dashboard: sign-in: load user", "err", err)
		default:
			ok, outdated, err = h.passwords.verify(ctx, u.PasswordHash, password)
		}
		if err != nil {
			h.renderError(w, r, http.StatusServiceUnavailable, "Signing in is not possible right now. Try again in a minute.")
			return
		}
		if !ok {
			fail(http.StatusBadRequest, "The email or password is not right.")
			return
		}
		if outdated {
			if err := h.cfg.Store.SetPasswordHash(ctx, u.ID, h.passwords.hash(password), now.UTC().Truncate(time.Millisecond)); err != nil {
				h.cfg.Logger.Warn("dashboard: re-hash password", "err", err)
			}
		}
		if err := h.startSession(w, r, u); err != nil {
			h.cfg.Logger.Error("dashboard: start session", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "Signing in is not possible right now. Try again in a minute.")
			return
		}
		h.cfg.Logger.Info("dashboard sign-in", "account", u.AccountID, "user", u.ID)
		http.Redirect(w, r, "/dashboard/settings/keys", http.StatusSeeOther)
	}
}

const signUpOff = "Sign-up is turned off on this deployment. Ask your operator for access."

func (h *Handler) handleSignUpForm() anonymousHandler {
	return func(w http.ResponseWriter, r *http.Request, csrf string) {
		if !h.cfg.SignUp {
			h.renderError(w, r, http.StatusForbidden, signUpOff)
			return
		}
		h.render(w, r, http.StatusOK, "signup", view{Title: "Create an account", CSRF: csrf, Data: signUpData{}})
	}
}

// handleSignUp creates an account (plan free_trial) and its first user, and signs them in.
// Every attempt counts against the client address (signUpsPerIP an hour).
func (h *Handler) handleSignUp() anonymousHandler {
	return func(w http.ResponseWriter, r *http.Request, csrf string) {
		if !h.cfg.SignUp {
			h.renderError(w, r, http.StatusForbidden, signUpOff)
			return
		}
		ctx := r.Context()
		data := signUpData{Name: strings.TrimSpace(r.PostFormValue("name")), Email: strings.TrimSpace(r.PostFormValue("email"))}
		password := r.PostFormValue("password")
		fail := func(status int, message string) {
			h.render(w, r, status, "signup", view{Title: "Create an account", CSRF: csrf, Error: message, Data: data})
		}
		now := h.cfg.Now()
		wait, err := h.admit(ctx, now, signUpBucket(h.clientIP(r)))
		if err != nil {
			h.renderError(w, r, http.StatusServiceUnavailable, "Creating an account is not possible right now. Try again in a minute.")
			return
		}
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
			fail(http.StatusTooManyRequests, "Too many accounts were created from your network. Try again in "+minutesText(wait)+".")
			return
		}
		if n := utf8.RuneCountInString(data.Name); n == 0 || n > 200 {
			fail(http.StatusBadRequest, "Enter a name for the account (at most 200 characters).")
			return
		}
		if addr, err := mail.ParseAddress(data.Email); err != nil || addr.Address != data.Email || len(data.Email) > 254 {
			fail(http.StatusBadRequest, "Enter a valid email address, such as risk@example.com.")
			return
		}
		if err := CheckPassword(password); err != nil {
			fail(http.StatusBadRequest, sentence(err))
			return
		}
		at := now.UTC().Truncate(time.Millisecond)
		acct := store.Account{ID: ident.New("acct"), Name: data.Name, Email: data.Email, Plan: store.PlanFreeTrial,
			Region: h.cfg.Region, CreatedAt: at}
		u := store.User{ID: ident.New("usr"), AccountID: acct.ID, Email: data.Email,
			PasswordHash: h.passwords.hash(password), CreatedAt: at, UpdatedAt: at}
		err = h.cfg.Store.CreateAccountWithUser(ctx, acct, u)
		if errors.Is(err, store.ErrConflict) {
			fail(http.StatusBadRequest, "An account with this email already exists. Sign in instead.")
			return
		}
		if err != nil {
			h.cfg.Logger.Error("dashboard: sign-up", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "Creating the account is not possible right now. Try again in a minute.")
			return
		}
		u.Email = store.NormalizeEmail(u.Email)
		if err := h.startSession(w, r, u); err != nil {
			h.cfg.Logger.Error("dashboard: start session", "err", err)
			http.Redirect(w, r, "/dashboard/signin", http.StatusSeeOther)
			return
		}
		h.cfg.Logger.Info("dashboard sign-up", "account", acct.ID, "user", u.ID)
		http.Redirect(w, r, "/dashboard/settings/keys?done=welcome", http.StatusSeeOther)
	}
}

// handleSignOut ends this session on the server, not only in the browser.
func (h *Handler) handleSignOut() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		if err := h.cfg.Store.RevokeSession(r.Context(), v.session.TokenHash); err != nil {
			h.cfg.Logger.Error("dashboard: sign out", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "Signing out did not work. Try again.")
			return
		}
		h.clearCookie(w, r, sessionCookie)
		http.Redirect(w, r, "/dashboard/signin", http.StatusSeeOther)
	}
}

// handleSwitchMode switches between live and test data and returns to the page it came from.
func (h *Handler) handleSwitchMode() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		mode := store.Mode(r.PostFormValue("mode"))
		if !mode.Valid() {
			h.renderError(w, r, http.StatusBadRequest, "Choose live or test.")
			return
		}
		h.setCookie(w, r, modeCookie, string(mode), 365*24*time.Hour)
		http.Redirect(w, r, localPath(r.PostFormValue("back")), http.StatusSeeOther)
	}
}

// localPath returns p if it is a path of the dashboard's own pages, else the keys page, so a
// form can never redirect elsewhere.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/dashboard/") || strings.ContainsAny(p, "\\?#") || strings.Contains(p, "//") ||
		strings.Contains(p, "/..") || len(p) > 200 {
		return "/dashboard/settings/keys"
	}
	return p
}

type settingsData struct {
	Account store.Account
	Created string
}

func (h *Handler) handleSettings() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		page := v.view("Settings", "settings")
		page.Notice = noticeFor(r)
		page.Data = settingsData{Account: v.account, Created: formatTime(v.account.CreatedAt)}
		h.render(w, r, http.StatusOK, "settings", page)
	}
}

// handleChangePassword needs the current password (wrong guesses count like failed
// sign-ins), stores the new hash, signs out every session of the user and starts a new one
// here.
func (h *Handler) handleChangePassword() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		ctx := r.Context()
		now := h.cfg.Now()
		fail := func(status int, message string) {
			page := v.view("Settings", "settings")
			page.Error = message
			page.Data = settingsData{Account: v.account, Created: formatTime(v.account.CreatedAt)}
			h.render(w, r, status, "settings", page)
		}
		wait, err := h.admit(ctx, now, signInBuckets(v.user.Email, h.clientIP(r))...)
		if err != nil {
			fail(http.StatusServiceUnavailable, "The password cannot be changed right now. Try again in a minute.")
			return
		}
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
			fail(http.StatusTooManyRequests, "Too many password attempts. Try again in "+minutesText(wait)+".")
			return
		}
		ok, _, err := h.passwords.verify(ctx, v.user.PasswordHash, r.PostFormValue("current"))
		if err != nil {
			fail(http.StatusServiceUnavailable, "The password cannot be changed right now. Try again in a minute.")
			return
		}
		if !ok {
			fail(http.StatusBadRequest, "The current password is not right.")
			return
		}
		next := r.PostFormValue("new")
		if err := CheckPassword(next); err != nil {
			fail(http.StatusBadRequest, sentence(err))
			return
		}
		if err := h.cfg.Store.SetPasswordHash(ctx, v.user.ID, h.passwords.hash(next), now.UTC().Truncate(time.Millisecond)); err != nil {
			h.cfg.Logger.Error("dashboard: set password", "err", err)
			fail(http.StatusServiceUnavailable, "The password could not be changed right now. Try again.")
			return
		}
		if _, err := h.cfg.Store.RevokeUserSessions(ctx, v.user.ID); err != nil {
			// The other sessions must not outlive a password change made to end them.
			h.cfg.Logger.Error("dashboard: revoke sessions", "err", err)
			fail(http.StatusServiceUnavailable, "The password was changed, but other sessions could not be signed out. Use Sign out everywhere, or try again.")
			return
		}
		if err := h.startSession(w, r, v.user); err != nil {
			http.Redirect(w, r, "/dashboard/signin", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/dashboard/settings?done=password", http.StatusSeeOther)
	}
}

// handleSignOutEverywhere ends every session of the user, this one included.
func (h *Handler) handleSignOutEverywhere() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		if _, err := h.cfg.Store.RevokeUserSessions(r.Context(), v.user.ID); err != nil {
			h.cfg.Logger.Error("dashboard: revoke sessions", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "Signing out did not work. Try again.")
			return
		}
		h.clearCookie(w, r, sessionCookie)
		http.Redirect(w, r, "/dashboard/signin?done=signed-out-all", http.StatusSeeOther)
	}
}
