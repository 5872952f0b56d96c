package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/product"
	"riskapi/internal/store"
)

// keyRow is one key of the list.
type keyRow struct {
	ID, Name, Display, Type, Mode, Scopes, Limit, Created, LastUsed, Status string
	Active                                                                  bool
}

type keysData struct {
	Keys    []keyRow
	Revoked int
}

// accountKeys returns every key of the account in the mode, newest first.
func (h *Handler) accountKeys(r *http.Request, v *visitor) ([]store.APIKey, error) {
	all, err := store.CollectAll(func(q store.PageQuery) (store.Page[store.APIKey], error) {
		return h.cfg.Store.ListAPIKeys(r.Context(), v.account.ID, q)
	}, store.KeyPosition)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(k store.APIKey) bool { return k.Mode != v.mode }), nil
}

// handleListKeys is Settings → API Keys: the mode's keys, shown as prefix and last four.
func (h *Handler) handleListKeys() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		keys, err := h.accountKeys(r, v)
		if err != nil {
			h.cfg.Logger.Error("dashboard: list keys", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "The keys cannot be listed right now. Try again.")
			return
		}
		now := h.cfg.Now()
		var data keysData
		for _, k := range keys {
			scopes := strings.Join(k.Scopes, " ")
			if k.Type != store.KeyRestricted {
				scopes = "all scopes"
			}
			limit := "plan limits"
			if k.RateLimit > 0 {
				limit = formatInt(k.RateLimit) + " / hour"
			}
			status := auth.Status(k, now)
			if status == "revoked" {
				data.Revoked++
			}
			if k.ExpiresAt != nil && status == "active" {
				status = "active, expires " + formatTime(*k.ExpiresAt)
			}
			data.Keys = append(data.Keys, keyRow{ID: k.ID, Name: k.Name, Display: auth.Display(k), Type: string(k.Type),
				Mode: string(k.Mode), Scopes: scopes, Limit: limit, Created: formatTime(k.CreatedAt),
				LastUsed: formatTimePtr(k.LastUsedAt), Status: status, Active: k.RevokedAt == nil})
		}
		page := v.view("API keys", "keys")
		page.Notice = noticeFor(r)
		page.Data = data
		h.render(w, r, http.StatusOK, "keys", page)
	}
}

// keyForm is the Generate New Key form, as sent.
type keyForm struct {
	Name      string
	Type      string
	Mode      string
	Scopes    []string
	RateLimit string
	Expires   string
}

type keyFormData struct {
	Form      keyForm
	AllScopes []scopeOption
	Expiries  []option
}

type scopeOption struct {
	Value   string
	Checked bool
}

type option struct{ Value, Label string }

// expiries are the lifetimes the form offers.
var expiries = []option{{"", "Never"}, {"30d", "30 days"}, {"90d", "90 days"}, {"365d", "1 year"}}

func expiryDuration(v string) (time.Duration, bool) {
	switch v {
	case "":
		return 0, true
	case "30d":
		return 30 * 24 * time.Hour, true
	case "90d":
		return 90 * 24 * time.Hour, true
	case "365d":
		return 365 * 24 * time.Hour, true
	}
	return 0, false
}

func newKeyFormData(f keyForm) keyFormData {
	d := keyFormData{Form: f, Expiries: expiries}
	choices := slices.Clone(auth.Scopes)
	for _, resource := range append(product.Names(), "webhooks") {
		choices = append(choices, resource+":*")
	}
	for _, s := range choices {
		d.AllScopes = append(d.AllScopes, scopeOption{Value: s, Checked: slices.Contains(f.Scopes, s)})
	}
	return d
}

func (h *Handler) handleNewKeyForm() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		page := v.view("Generate a new key", "keys")
		page.Data = newKeyFormData(keyForm{Type: string(store.KeyRestricted), Mode: string(v.mode)})
		h.render(w, r, http.StatusOK, "key_new", page)
	}
}

type keyCreatedData struct {
	Key     string
	Display string
	Type    string
	Mode    string
	Scopes  string
	Limit   string
}

// handleGenerateKey creates a key through auth.NewAPIKey (the command line's rules) and
// answers with the one page that shows it. The key is not stored, logged or put in a URL:
// this response, marked no-store, is the only place it ever appears.
func (h *Handler) handleGenerateKey() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		if err := r.ParseForm(); err != nil {
			h.renderError(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		f := keyForm{
			Name: strings.TrimSpace(r.PostForm.Get("name")), Type: r.PostForm.Get("type"), Mode: r.PostForm.Get("mode"),
			Scopes: r.PostForm["scopes"], RateLimit: strings.TrimSpace(r.PostForm.Get("rate_limit")), Expires: r.PostForm.Get("expires"),
		}
		fail := func(message string) {
			page := v.view("Generate a new key", "keys")
			page.Error = message
			page.Data = newKeyFormData(f)
			h.render(w, r, http.StatusBadRequest, "key_new", page)
		}
		if len(f.Name) > 200 {
			fail("The name may have at most 200 characters.")
			return
		}
		params := auth.KeyParams{AccountID: v.account.ID, Type: store.KeyType(f.Type), Name: f.Name}
		mode := store.Mode(f.Mode)
		switch params.Type {
		case store.KeyRestricted:
			if mode == "" {
				mode = v.mode // a restricted key acts in the mode being viewed unless told otherwise
			}
			params.Mode, params.Scopes = mode, f.Scopes
		case store.KeyLive:
			mode = store.ModeLive
		case store.KeyTest:
			mode = store.ModeTest
		}
		if mode.Valid() && mode != v.mode {
			// Keys are listed and revoked per mode: one made here must appear here.
			fail("This page shows " + string(v.mode) + "-mode keys; switch to " + string(mode) + " mode to create a " + string(mode) + "-mode key.")
			return
		}
		if f.RateLimit != "" {
			n, err := strconv.ParseInt(f.RateLimit, 10, 64)
			if err != nil || n < 1 || n > 1_000_000_000 {
				fail("The hourly limit must be a whole number of requests, at least 1 (or empty for the plan's limits).")
				return
			}
			params.RateLimit = n
		}
		now := h.cfg.Now()
		d, ok := expiryDuration(f.Expires)
		if !ok {
			fail("Choose an expiry from the list.")
			return
		}
		if d > 0 {
			params.ExpiresAt = now.Add(d)
		}
		key, secret, err := auth.NewAPIKey(params, now)
		if err != nil {
			fail(sentence(err))
			return
		}
		if err := h.cfg.Store.CreateAPIKey(r.Context(), key); err != nil {
			h.cfg.Logger.Error("dashboard: create key", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "The key could not be created right now. Try again.")
			return
		}
		h.cfg.Logger.Info("dashboard key created", "account", key.AccountID, "key_id", key.ID, "type", string(key.Type), "mode", string(key.Mode))
		scopes := strings.Join(key.Scopes, " ")
		if key.Type != store.KeyRestricted {
			scopes = "all scopes"
		}
		limit := "the plan's limits"
		if key.RateLimit > 0 {
			limit = formatInt(key.RateLimit) + " requests an hour"
		}
		page := v.view("Your new API key", "keys")
		page.Data = keyCreatedData{Key: secret, Display: auth.Display(key), Type: string(key.Type), Mode: string(key.Mode),
			Scopes: scopes, Limit: limit}
		h.render(w, r, http.StatusOK, "key_created", page)
	}
}

// visitorKey loads the key named in the path if it belongs to the visitor's account and the
// mode being viewed.
func (h *Handler) visitorKey(w http.ResponseWriter, r *http.Request, v *visitor) (store.APIKey, bool) {
	k, err := h.cfg.Store.APIKey(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) || (err == nil && (k.AccountID != v.account.ID || k.Mode != v.mode)) {
		h.renderError(w, r, http.StatusNotFound, "There is no such key.")
		return k, false
	}
	if err != nil {
		h.cfg.Logger.Error("dashboard: load key", "err", err)
		h.renderError(w, r, http.StatusServiceUnavailable, "The key cannot be loaded right now. Try again.")
		return k, false
	}
	return k, true
}

type keyRevokeData struct{ ID, Name, Display, Type, Mode string }

// handleRevokeKeyConfirm asks before revoking (a page rather than a script, so it works
// everywhere).
func (h *Handler) handleRevokeKeyConfirm() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		k, ok := h.visitorKey(w, r, v)
		if !ok {
			return
		}
		if k.RevokedAt != nil {
			http.Redirect(w, r, "/dashboard/settings/keys", http.StatusSeeOther)
			return
		}
		page := v.view("Revoke key", "keys")
		page.Data = keyRevokeData{ID: k.ID, Name: k.Name, Display: auth.Display(k), Type: string(k.Type), Mode: string(k.Mode)}
		h.render(w, r, http.StatusOK, "key_revoke", page)
	}
}

// handleRevokeKey revokes the key; the API refuses it at once in this process and within a
// second in every other.
func (h *Handler) handleRevokeKey() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		k, ok := h.visitorKey(w, r, v)
		if !ok {
			return
		}
		if _, err := h.cfg.Store.RevokeAPIKey(r.Context(), k.ID, h.cfg.Now().UTC().Truncate(time.Millisecond)); err != nil {
			h.cfg.Logger.Error("dashboard: revoke key", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "The key could not be revoked right now. Try again.")
			return
		}
		h.cfg.KeyRevoked(k.ID)
		h.cfg.Logger.Info("dashboard key revoked", "account", k.AccountID, "key_id", k.ID)
		http.Redirect(w, r, "/dashboard/settings/keys?done=revoked", http.StatusSeeOther)
	}
}
