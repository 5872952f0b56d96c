// Package ratepolicy is the rate-limit policy of the platform contract §4: the buckets a
// request counts against — in live mode one per product and one for the other endpoints
// ("platform"), in test mode one per UTC day, the key's own if it has a limit, and one per
// client address for failed authentication — and their sizes, from the product registry and
// the account's plan. The API applies it to every request; the dashboard shows its state.
package ratepolicy

import (
	"context"
	"slices"
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
	// PlatformLimit: live-mode requests per account and hour to non-product endpoints.
	PlatformLimit = 1000
	// TestModeDailyLimit: test-mode requests per account and UTC day, all endpoints together.
	TestModeDailyLimit = 1000
	// FailedAuthLimit: requests failing authentication per client IP and hour.
	FailedAuthLimit = 300
)

// The policy names of the buckets that are not a product's, as the IETF RateLimit-Policy
// field and GET /v1/usage name them.
const (
	Platform   = "platform"
	TestDay    = "test-day"
	Key        = "key"
	FailedAuth = "failed-auth"
)

// Limit is a rate-limit bucket together with its policy name (a product's name or one of
// the names above) and the product it limits ("" for the others).
type Limit struct {
	Policy  string
	Product string
	Bucket  ratelimit.Bucket
}

// Policy sizes the buckets. The zero value is the contract's policy with
// DefaultUnlimitedCeiling.
type Policy struct {
	// UnlimitedCeiling is the hourly value behind the plan table's "Unlimited"; zero means
	// DefaultUnlimitedCeiling.
	UnlimitedCeiling int64
}

func (p Policy) ceiling() int64 {
	if p.UnlimitedCeiling <= 0 {
		return DefaultUnlimitedCeiling
	}
	return p.UnlimitedCeiling
}

// For lists the buckets an authenticated request to an endpoint of product counts against
// ("" for a non-product endpoint). Keys carry the account id as a Redis Cluster hash tag, so
// one request's buckets share a slot and are counted in one round trip.
func (p Policy) For(who auth.Principal, product string) []Limit {
	acct := "{" + who.Account.ID + "}"
	var out []Limit
	switch {
	case !who.Livemode():
		out = append(out, Limit{TestDay, "", ratelimit.Bucket{Key: acct + ":test", Limit: TestModeDailyLimit, Window: ratelimit.Day}})
	case product != "":
		out = append(out, Limit{product, product, ratelimit.Bucket{Key: acct + ":" + product, Limit: hourlyLimit(who.Account, product, p.ceiling()), Window: ratelimit.Hour}})
	default:
		out = append(out, Limit{Platform, "", ratelimit.Bucket{Key: acct + ":platform", Limit: PlatformLimit, Window: ratelimit.Hour}})
	}
	if who.Key.RateLimit > 0 {
		out = append(out, Limit{Key, "", ratelimit.Bucket{Key: acct + ":key:" + who.Key.ID, Limit: who.Key.RateLimit, Window: ratelimit.Hour}})
	}
	return out
}

// FailedAuthFrom is the bucket of requests from the client address ip that fail
// authentication.
func FailedAuthFrom(ip string) Limit {
	return Limit{FailedAuth, "", ratelimit.Bucket{Key: "ip:" + ip, Limit: FailedAuthLimit, Window: ratelimit.Hour}}
}

// Buckets returns the limiter's buckets of limits, in their order.
func Buckets(limits []Limit) []ratelimit.Bucket {
	buckets := make([]ratelimit.Bucket, len(limits))
	for i, l := range limits {
		buckets[i] = l.Bucket
	}
	return buckets
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

// State is one bucket's current window, as GET /v1/usage and the dashboard report it.
type State struct {
	Policy    string // as in Limit
	Product   string // the product limited, "" for the other buckets
	Window    ratelimit.Window
	Limit     int64
	Used      int64 // requests counted in the current window
	Remaining int64
	Reset     time.Time // end of the current window
}

// Peek returns, without counting anything, the state at now of every bucket the requests
// of who's key count against: one per product and the platform bucket in live mode, the
// daily bucket in test mode, and the key's own bucket, once and last, if it has a limit.
func (p Policy) Peek(ctx context.Context, limiter ratelimit.Limiter, who auth.Principal, now time.Time) ([]State, error) {
	categories := []string{""}
	if who.Livemode() {
		categories = slices.Concat(product.Names(), categories)
	}
	var applied, keyBucket []Limit
	for _, product := range categories {
		for _, l := range p.For(who, product) {
			if l.Policy == Key {
				keyBucket = []Limit{l} // the same bucket for every category: list it once, last
				continue
			}
			applied = append(applied, l)
		}
	}
	applied = append(applied, keyBucket...)
	states, err := limiter.Peek(ctx, now, Buckets(applied)...)
	if err != nil {
		return nil, err
	}
	out := make([]State, len(states))
	for i, st := range states {
		out[i] = State{Policy: applied[i].Policy, Product: applied[i].Product, Window: st.Bucket.Window,
			Limit: st.Bucket.Limit, Used: st.Count, Remaining: st.Remaining(), Reset: st.Reset}
	}
	return out, nil
}
