package dashboard

import (
	"html/template"
	"net/http"
	"strings"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/product"
	"riskapi/internal/ratepolicy"
	"riskapi/internal/store"
)

// usageDays is how many UTC days the Usage page shows, today included.
const usageDays = 30

type usageData struct {
	From, To  string
	Live      bool
	Chart     template.HTML
	Products  []string
	Totals    []string // per product, in Products' order
	Days      []usageDayRow
	Limits    []limitRow
	KeyLimits []limitRow
	// LimitsUnavailable: the rate limiter did not answer.
	LimitsUnavailable bool
}

type usageDayRow struct {
	Date  string
	Units []string // per product
	Total string
}

type limitRow struct {
	Name, Used, Limit, Remaining, Reset string
	Meter                               template.HTML
}

func policyName(s ratepolicy.State) string {
	switch {
	case s.Product != "":
		p, _ := product.Lookup(s.Product)
		return p.Title + " (per hour)"
	case s.Policy == ratepolicy.Platform:
		return "Account, usage, webhooks and events (per hour)"
	case s.Policy == ratepolicy.TestDay:
		return "Test mode, every endpoint (per UTC day)"
	}
	return s.Policy
}

func newLimitRow(name string, s ratepolicy.State) limitRow {
	return limitRow{Name: name, Used: formatInt(s.Used), Limit: formatInt(s.Limit), Remaining: formatInt(s.Remaining),
		Reset: s.Reset.UTC().Format("15:04 UTC"),
		Meter: meterChart(name+": "+formatInt(s.Used)+" of "+formatInt(s.Limit)+" used", s.Used, s.Limit)}
}

// handleUsage shows billable requests per product and day (live mode: test requests are never
// billed) and the current window of every rate limit the mode's keys count against.
func (h *Handler) handleUsage() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		ctx := r.Context()
		now := h.cfg.Now().UTC()
		to := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		from := to.AddDate(0, 0, -(usageDays - 1))
		products := product.Names()
		data := usageData{From: from.Format("2006-01-02"), To: to.Format("2006-01-02"), Live: v.mode == store.ModeLive}
		for _, p := range product.All {
			data.Products = append(data.Products, p.Title)
		}
		labels := make([]string, usageDays)
		series := make([]chartSeries, len(products))
		for i, p := range product.All {
			series[i] = chartSeries{Name: p.Title, Values: make([]float64, usageDays)}
		}
		totals := make([]int64, len(products))
		if data.Live {
			units, err := h.cfg.Store.Usage(ctx, v.account.ID, from, to)
			if err != nil {
				h.cfg.Logger.Error("dashboard: usage", "err", err)
				h.renderError(w, r, http.StatusServiceUnavailable, "Usage cannot be shown right now. Try again.")
				return
			}
			perDay := map[string][]int64{}
			for _, u := range units {
				day := int(u.Day.Sub(from).Hours() / 24)
				pi := indexOf(products, u.Product)
				if day < 0 || day >= usageDays || pi < 0 {
					continue
				}
				series[pi].Values[day] += float64(u.Units)
				totals[pi] += u.Units
				key := u.Day.Format("2006-01-02")
				if perDay[key] == nil {
					perDay[key] = make([]int64, len(products))
				}
				perDay[key][pi] += u.Units
			}
			for d := usageDays - 1; d >= 0; d-- {
				key := from.AddDate(0, 0, d).Format("2006-01-02")
				counts := perDay[key]
				if counts == nil {
					continue
				}
				row := usageDayRow{Date: key}
				var sum int64
				for _, c := range counts {
					row.Units = append(row.Units, formatInt(c))
					sum += c
				}
				row.Total = formatInt(sum)
				data.Days = append(data.Days, row)
			}
		}
		for i := range labels {
			labels[i] = from.AddDate(0, 0, i).Format("01-02")
		}
		for _, t := range totals {
			data.Totals = append(data.Totals, formatInt(t))
		}
		data.Chart = stackedBarChart("Billable requests per product and day, "+data.From+" to "+data.To, labels, series, 5)

		limits := ratepolicy.Policy{UnlimitedCeiling: h.cfg.UnlimitedCeiling}
		states, err := limits.Peek(ctx, h.cfg.Limiter, auth.Principal{Account: v.account, Key: store.APIKey{Mode: v.mode}}, now)
		if err != nil {
			h.cfg.Logger.Warn("dashboard: rate limiter unavailable for usage", "err", err)
			data.LimitsUnavailable = true
		}
		for _, s := range states {
			data.Limits = append(data.Limits, newLimitRow(policyName(s), s))
		}
		keys, err := h.accountKeys(r, v)
		if err != nil {
			h.cfg.Logger.Warn("dashboard: list keys for usage", "err", err)
		}
		for _, k := range keys {
			if k.RateLimit <= 0 || auth.Status(k, now) != "active" {
				continue
			}
			states, err := limits.Peek(ctx, h.cfg.Limiter, auth.Principal{Account: v.account, Key: k}, now)
			if err != nil {
				data.LimitsUnavailable = true
				break
			}
			for _, s := range states {
				if s.Policy == ratepolicy.Key {
					name := "Key " + auth.Display(k)
					if k.Name != "" {
						name += " (" + k.Name + ")"
					}
					data.KeyLimits = append(data.KeyLimits, newLimitRow(name+" (per hour)", s))
				}
			}
		}
		page := v.view("Usage", "usage")
		page.Data = data
		h.render(w, r, http.StatusOK, "usage", page)
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if strings.EqualFold(x, s) {
			return i
		}
	}
	return -1
}
