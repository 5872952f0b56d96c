package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/product"
	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
)

// Constants of the platform contract §4 that are not per product (the per-product plan
// table is the registry's, internal/product).
const (
	// DefaultUnlimitedCeiling is the safety ceiling per hour behind "Unlimited".
	DefaultUnlimitedCeiling = 1_000_000
	// platformLimit: live-mode requests per account and hour to non-product endpoints.
	platformLimit = 1000
	// testModeDailyLimit: test-mode requests per account and UTC day, all endpoints together.
	testModeDailyLimit = 1000
	// failedAuthLimit: requests failing authentication per client IP and hour.
	failedAuthLimit = 300
)

// productOfScope names the product an endpoint belongs to from the scope it needs
// ("drift:write" → "drift"), or "" for a non-product endpoint, whose requests count in the
// "platform" bucket (account, webhooks, events, usage).
func productOfScope(scope string) string {
	p, _ := product.OfScope(scope)
	return p.Name
}

// hourlyLimit is an account's live-mode limit per hour for a product: its custom value if it
// has one, else its plan's, with "Unlimited" replaced by the ceiling.
func hourlyLimit(a store.Account, name string, ceiling int64) int64 {
	if v := a.CustomLimits[name]; v > 0 {
		return v
	}
	p, _ := product.Lookup(name)
	switch v := p.HourlyLimits[a.Plan]; v {
	case product.Unlimited, 0:
		return ceiling
	case product.Custom:
		return product.DefaultCustomLimit
	default:
		return v
	}
}

// limitBucket is a rate-limit bucket together with its policy name, the name the IETF
// RateLimit-Policy and RateLimit fields give it, and the product it limits ("" for others).
type limitBucket struct {
	policy  string
	product string
	bucket  ratelimit.Bucket
}

// bucketsFor lists the buckets an authenticated request counts against. Keys carry the
// account id as a Redis Cluster hash tag, so one request's buckets share a slot and are
// counted in one round trip.
func (s *Server) bucketsFor(p auth.Principal, product string) []limitBucket {
	acct := "{" + p.Account.ID + "}"
	var out []limitBucket
	switch {
	case !p.Livemode():
		out = append(out, limitBucket{"test-day", "", ratelimit.Bucket{Key: acct + ":test", Limit: testModeDailyLimit, Window: ratelimit.Day}})
	case product != "":
		out = append(out, limitBucket{product, product, ratelimit.Bucket{Key: acct + ":" + product, Limit: hourlyLimit(p.Account, product, s.cfg.UnlimitedCeiling), Window: ratelimit.Hour}})
	default:
		out = append(out, limitBucket{"platform", "", ratelimit.Bucket{Key: acct + ":platform", Limit: platformLimit, Window: ratelimit.Hour}})
	}
	if p.Key.RateLimit > 0 {
		out = append(out, limitBucket{"key", "", ratelimit.Bucket{Key: acct + ":key:" + p.Key.ID, Limit: p.Key.RateLimit, Window: ratelimit.Hour}})
	}
	return out
}

// failedAuthBucket is the bucket of requests from one client IP that fail authentication.
func failedAuthBucket(ip string) limitBucket {
	return limitBucket{"failed-auth", "", ratelimit.Bucket{Key: "ip:" + ip, Limit: failedAuthLimit, Window: ratelimit.Hour}}
}

// setLimitHeaders writes the rate-limit headers for the tightest of states (ratelimit.Tightest:
// fewest remaining, then latest reset) and returns its index: the X-RateLimit-* triple (Reset
// in Unix epoch seconds), the IETF RateLimit-Policy and RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers) for every bucket, and, when the request is refused,
// Retry-After in whole seconds until the tightest bucket's window ends. states is not empty.
func setLimitHeaders(h http.Header, applied []limitBucket, states []ratelimit.State, now time.Time, refused bool) int {
	tight := ratelimit.Tightest(states)
	index := slices.IndexFunc(states, func(st ratelimit.State) bool { return st.Bucket == tight.Bucket })
	h.Set("X-RateLimit-Limit", strconv.FormatInt(tight.Bucket.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(tight.Remaining(), 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(tight.Reset.Unix(), 10))
	policies := make([]string, len(states))
	current := make([]string, len(states))
	for i, st := range states {
		name := applied[i].policy
		policies[i] = fmt.Sprintf("%q;q=%d;w=%d", name, st.Bucket.Limit, st.Bucket.Window.Seconds())
		current[i] = fmt.Sprintf("%q;r=%d;t=%d", name, st.Remaining(), secondsUntil(now, st.Reset))
	}
	h.Set("RateLimit-Policy", strings.Join(policies, ", "))
	h.Set("RateLimit", strings.Join(current, ", "))
	if refused {
		h.Set("Retry-After", strconv.FormatInt(secondsUntil(now, tight.Reset), 10))
	}
	return index
}

// secondsUntil is the whole seconds from now to t, rounded up and at least 1, so a client
// that waits that long is never early.
func secondsUntil(now, t time.Time) int64 {
	return max(1, int64(math.Ceil(t.Sub(now).Seconds())))
}

// errRateLimited is the 429 answer; the headers say when to retry.
func errRateLimited(state ratelimit.State, policy string) *Error {
	e := newError(CodeRateLimited, "Rate limit exceeded: %d requests per %s (%s). Retry after the time in the Retry-After header.",
		state.Bucket.Limit, state.Bucket.Window, policy)
	e.Details["limit"] = state.Bucket.Limit
	e.Details["window"] = state.Bucket.Window.String()
	e.Details["policy"] = policy
	e.Details["reset"] = state.Reset.Unix()
	return e
}
