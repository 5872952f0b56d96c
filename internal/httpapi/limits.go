package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"riskapi/internal/product"
	"riskapi/internal/ratelimit"
	"riskapi/internal/ratepolicy"
)

// productOfScope names the product an endpoint belongs to from the scope it needs
// ("drift:write" → "drift"), or "" for a non-product endpoint, whose requests count in the
// "platform" bucket (account, webhooks, events, usage).
func productOfScope(scope string) string {
	p, _ := product.OfScope(scope)
	return p.Name
}

// setLimitHeaders writes the rate-limit headers for the tightest of states (ratelimit.Tightest:
// fewest remaining, then latest reset) and returns its index: the X-RateLimit-* triple (Reset
// in Unix epoch seconds), the IETF RateLimit-Policy and RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers) for every bucket, and, when the request is refused,
// Retry-After in whole seconds until the tightest bucket's window ends. states is not empty.
func setLimitHeaders(h http.Header, applied []ratepolicy.Limit, states []ratelimit.State, now time.Time, refused bool) int {
	tight := ratelimit.Tightest(states)
	index := slices.IndexFunc(states, func(st ratelimit.State) bool { return st.Bucket == tight.Bucket })
	h.Set("X-RateLimit-Limit", strconv.FormatInt(tight.Bucket.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(tight.Remaining(), 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(tight.Reset.Unix(), 10))
	policies := make([]string, len(states))
	current := make([]string, len(states))
	for i, st := range states {
		name := applied[i].Policy
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
