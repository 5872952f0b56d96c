package httpapi

import (
	"net/http"

	"riskapi/internal/auth"
	"riskapi/internal/resource"
	"riskapi/internal/store"
)

// AccountObject is an account as the API and the command line's --json output show it.
type AccountObject struct {
	ID           string           `json:"id"`
	Object       string           `json:"object"`
	Name         string           `json:"name"`
	Email        string           `json:"email"`
	Plan         store.Plan       `json:"plan"`
	Region       string           `json:"region"`
	CustomLimits map[string]int64 `json:"custom_limits"`
	CreatedAt    string           `json:"created_at"`
}

// NewAccountObject renders an account.
func NewAccountObject(a store.Account) AccountObject {
	limits := a.CustomLimits
	if limits == nil {
		limits = map[string]int64{}
	}
	return AccountObject{
		ID:           a.ID,
		Object:       "account",
		Name:         a.Name,
		Email:        a.Email,
		Plan:         a.Plan,
		Region:       a.Region,
		CustomLimits: limits,
		CreatedAt:    resource.FormatTime(a.CreatedAt),
	}
}

// APIKeyObject shows a key without the key: Display is its prefix and last four characters.
type APIKeyObject struct {
	ID         string        `json:"id"`
	Object     string        `json:"object"`
	Type       store.KeyType `json:"type"`
	Mode       store.Mode    `json:"mode"`
	Name       string        `json:"name"`
	Display    string        `json:"display"`
	Scopes     []string      `json:"scopes"`
	RateLimit  *int64        `json:"rate_limit"`
	CreatedAt  string        `json:"created_at"`
	LastUsedAt *string       `json:"last_used_at"`
	ExpiresAt  *string       `json:"expires_at"`
	RevokedAt  *string       `json:"revoked_at"`
}

// NewAPIKeyObject renders a stored key.
func NewAPIKeyObject(k store.APIKey) APIKeyObject {
	var limit *int64
	if k.RateLimit > 0 {
		limit = &k.RateLimit
	}
	return APIKeyObject{
		ID:         k.ID,
		Object:     "api_key",
		Type:       k.Type,
		Mode:       k.Mode,
		Name:       k.Name,
		Display:    auth.Display(k),
		Scopes:     k.Scopes,
		RateLimit:  limit,
		CreatedAt:  resource.FormatTime(k.CreatedAt),
		LastUsedAt: resource.FormatTimePtr(k.LastUsedAt),
		ExpiresAt:  resource.FormatTimePtr(k.ExpiresAt),
		RevokedAt:  resource.FormatTimePtr(k.RevokedAt),
	}
}

// accountView is GET /v1/account: the account, the mode the calling key acts in, and the key.
type accountView struct {
	AccountObject `json:",inline"`
	Livemode      bool         `json:"livemode"`
	APIKey        APIKeyObject `json:"api_key"`
}

// handleAccount is GET /v1/account: the authenticated account and the calling key.
func handleAccount() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		writeData(w, r, http.StatusOK, accountView{
			AccountObject: NewAccountObject(p.Account),
			Livemode:      p.Livemode(),
			APIKey:        NewAPIKeyObject(p.Key),
		})
	})
}
