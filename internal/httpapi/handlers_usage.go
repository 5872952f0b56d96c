package httpapi

import (
	"net/http"
	"time"

	"riskapi/internal/product"
)

// maxUsageDays bounds one usage query: a year and a day covers any billing period.
const maxUsageDays = 366

// usageView is GET /v1/usage: billable units per day and product in [from, to], and the
// state of every rate-limit bucket the calling key counts against right now.
type usageView struct {
	Object     string           `json:"object"`
	Livemode   bool             `json:"livemode"`
	From       string           `json:"from"`
	To         string           `json:"to"`
	Totals     map[string]int64 `json:"totals"`
	Days       []usageDay       `json:"days"`
	RateLimits []rateLimitState `json:"rate_limits"`
}

type usageDay struct {
	Date      string           `json:"date"`
	Product   string           `json:"product"`
	Units     int64            `json:"units"`
	Endpoints map[string]int64 `json:"endpoints"`
}

type rateLimitState struct {
	Policy    string `json:"policy"`
	Product   string `json:"product,omitzero"`
	Window    string `json:"window"`
	Limit     int64  `json:"limit"`
	Remaining int64  `json:"remaining"`
	Reset     int64  `json:"reset"`
}

const dateLayout = "2006-01-02"

// handleUsage is GET /v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD (UTC days, inclusive; default
// the last 30 days). Test-mode requests are never billed, so a test key sees no units, only
// its sandbox's daily limit.
func (s *Server) handleUsage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		params, e := queryParams(r, "from", "to")
		if e != nil {
			writeError(w, r, e)
			return
		}
		now := s.cfg.Now().UTC()
		to := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		from := to.AddDate(0, 0, -29)
		for _, param := range []struct {
			name string
			dst  *time.Time
		}{{"from", &from}, {"to", &to}} {
			name, dst := param.name, param.dst
			if raw, ok := params[name]; ok {
				d, err := time.Parse(dateLayout, raw)
				if err != nil {
					writeError(w, r, invalidField(name, "string (a date, YYYY-MM-DD)", "string", "%s must be a date such as 2026-11-21 (got %q).", name, raw))
					return
				}
				*dst = d
			}
		}
		switch {
		case to.Before(from):
			writeError(w, r, invalidField("to", "string (a date on or after from)", "string", "to (%s) is before from (%s).", to.Format(dateLayout), from.Format(dateLayout)))
			return
		case to.Sub(from) >= maxUsageDays*24*time.Hour:
			writeError(w, r, invalidField("to", "string (at most 366 days after from)", "string", "A usage query covers at most %d days.", maxUsageDays))
			return
		}
		p := principalFrom(r.Context())
		view := usageView{Object: "usage", Livemode: p.Livemode(), From: from.Format(dateLayout), To: to.Format(dateLayout),
			Totals: map[string]int64{}, Days: []usageDay{}}
		for _, name := range product.Names() {
			view.Totals[name] = 0
		}
		if p.Livemode() {
			units, err := s.cfg.Store.Usage(r.Context(), p.Account.ID, from, to)
			if err != nil {
				writeError(w, r, err)
				return
			}
			for _, u := range units {
				date := u.Day.Format(dateLayout)
				if n := len(view.Days); n == 0 || view.Days[n-1].Date != date || view.Days[n-1].Product != u.Product {
					view.Days = append(view.Days, usageDay{Date: date, Product: u.Product, Endpoints: map[string]int64{}})
				}
				day := &view.Days[len(view.Days)-1]
				day.Units += u.Units
				day.Endpoints[u.Endpoint] += u.Units
				view.Totals[u.Product] += u.Units
			}
		}
		states, err := s.limits.Peek(r.Context(), s.cfg.Limiter, p, s.cfg.Now())
		if err != nil {
			requestInfoFrom(r.Context()).logger().Warn("rate limiter unavailable for usage", "err", err)
		}
		view.RateLimits = make([]rateLimitState, len(states))
		for i, st := range states {
			view.RateLimits[i] = rateLimitState{Policy: st.Policy, Product: st.Product, Window: st.Window.String(),
				Limit: st.Limit, Remaining: st.Remaining, Reset: st.Reset.Unix()}
		}
		writeData(w, r, http.StatusOK, view)
	})
}
