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
	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
)

// Products whose endpoints are rate limited per product (platform contract §4). Any other
// endpoint (account, webhooks, events, usage) counts in the "platform" bucket.
var products = []string{"drift", "convergence", "cascade", "meridian"}

// unlimited marks a plan cell the seed calls "Unlimited": it becomes the safety ceiling.
// customLimit marks Enterprise Cascade's "Custom": the account's own value, else 10,000.
const (
	unlimited   int64 = -1
	customLimit int64 = -2
	// defaultEnterpriseCascade is Enterprise Cascade's hourly limit when the account has none.
	defaultEnterpriseCascade = 10_000
	// DefaultUnlimitedCeiling is the safety ceiling per hour behind "Unlimited".
	DefaultUnlimitedCeiling = 1_000_000
	// platformLimit: live-mode requests per account and hour to non-product endpoints.
	platformLimit = 1000
	// testModeDailyLimit: test-mode requests per account and UTC day, all endpoints together.
	testModeDailyLimit = 1000
	// failedAuthLimit: requests failing authentication per client IP and hour.
	failedAuthLimit = 300
)

// planLimits is the seed's table of requests per hour by product and plan.
var planLimits = map[store.Plan]map[string]int64{
	store.PlanFreeTrial:    {"drift": 100, "convergence": 50, "cascade": 10, "meridian": 1000},
	store.PlanStarter:      {"drift": 1000, "convergence": 500, "cascade": 100, "meridian": 10_000},
	store.PlanProfessional: {"drift": 10_000, "convergence": 5000, "cascade": 1000, "meridian": 100_000},
	store.PlanEnterprise:   {"drift": unlimited, "convergence": unlimited, "cascade": customLimit, "meridian": unlimited},
}

// productOfScope names the product an endpoint belongs to from the scope it needs
// ("drift:write" → "drift"), or "" for a non-product endpoint.
func productOfScope(scope string) string {
	resource, _, _ := strings.Cut(scope, ":")
	for _, p := range products {
		if p == resource {
			return p
		}
	}
	return ""
}

// hourlyLimit is an account's live-mode limit per hour for a product: its custom value if it
// has one, else its plan's, with "Unlimited" replaced by the ceiling.
func hourlyLimit(a store.Account, product string, ceiling int64) int64 {
	if v := a.CustomLimits[product]; v > 0 {
		return v
	}
	switch v := planLimits[a.Plan][product]; v {
	case unlimited, 0:
		return ceiling
	case customLimit:
		return defaultEnterpriseCascade
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
