package httpapi

import (
	"math"
	"net/http"
	"slices"
	"strconv"
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
	h[headerRateLimitLimit] = []string{strconv.FormatInt(tight.Bucket.Limit, 10)}
	h[headerRateLimitRemaining] = []string{strconv.FormatInt(tight.Remaining(), 10)}
	h[headerRateLimitReset] = []string{strconv.FormatInt(tight.Reset.Unix(), 10)}
	// `"name";q=limit;w=window` and `"name";r=remaining;t=seconds`, joined with ", ",
	// appended in one buffer each: fmt.Sprintf and strings.Join took a third of the
	// middleware's header work.
	var policies, current []byte
	for i, st := range states {
		if i > 0 {
			policies, current = append(policies, ", "...), append(current, ", "...)
		}
		name := applied[i].Policy
		policies = strconv.AppendQuote(policies, name)
		policies = append(policies, ";q="...)
		policies = strconv.AppendInt(policies, st.Bucket.Limit, 10)
		policies = append(policies, ";w="...)
		policies = strconv.AppendInt(policies, st.Bucket.Window.Seconds(), 10)
		current = strconv.AppendQuote(current, name)
		current = append(current, ";r="...)
		current = strconv.AppendInt(current, st.Remaining(), 10)
		current = append(current, ";t="...)
		current = strconv.AppendInt(current, secondsUntil(now, st.Reset), 10)
	}
	h[headerRateLimitPolicy] = []string{string(policies)}
	h[headerRateLimit] = []string{string(current)}
	if refused {
		h.Set("Retry-After", strconv.FormatInt(secondsUntil(now, tight.Reset), 10))
	}
	return index
}

// The names of the headers every request gets, in their canonical form
// (textproto.CanonicalMIMEHeaderKey, TestHeaderNamesAreCanonical), so that they are set in
// the header map directly: http.Header.Set canonicalizes the name on every call, which was
// a tenth of the middleware's cost on GET /v1/account. On the wire they read the same as
// with Set, which writes the canonical form too.
const (
	headerRequestID          = "X-Request-Id"
	headerRateLimitLimit     = "X-Ratelimit-Limit"
	headerRateLimitRemaining = "X-Ratelimit-Remaining"
	headerRateLimitReset     = "X-Ratelimit-Reset"
	headerRateLimitPolicy    = "Ratelimit-Policy"
	headerRateLimit          = "Ratelimit"
	headerContentType        = "Content-Type"
	headerContentLength      = "Content-Length"
)

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
