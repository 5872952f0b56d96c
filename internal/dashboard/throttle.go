package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"time"

	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
)

// Throttling of sign-in and sign-up, counted in clock hours by the service's rate limiter, so
// that with Redis every process shares the counts. Only failed sign-ins count: a person who
// types the password right is never locked out by their own successful sign-ins.
const (
	// signInFailuresPerEmail stops guessing one account's password: 10 wrong passwords an
	// hour, whichever addresses they come from.
	signInFailuresPerEmail = 10
	// signInFailuresPerIP stops one address trying many accounts.
	signInFailuresPerIP = 30
	// signUpsPerIP bounds the accounts one address can create in an hour.
	signUpsPerIP = 10
)

// throttleBuckets are the sign-in buckets of an email and a client address. The email is
// hashed so the limiter's keys hold no personal data; every key shares one Redis Cluster hash
// tag so that one call counts them all.
func signInBuckets(email, ip string) []ratelimit.Bucket {
	sum := sha256.Sum256([]byte(store.NormalizeEmail(email)))
	return []ratelimit.Bucket{
		{Key: "{dashboard}:signin:email:" + hex.EncodeToString(sum[:16]), Limit: signInFailuresPerEmail, Window: ratelimit.Hour},
		{Key: "{dashboard}:signin:ip:" + ip, Limit: signInFailuresPerIP, Window: ratelimit.Hour},
	}
}

func signUpBucket(ip string) ratelimit.Bucket {
	return ratelimit.Bucket{Key: "{dashboard}:signup:ip:" + ip, Limit: signUpsPerIP, Window: ratelimit.Hour}
}

// throttled peeks at buckets and, when one is exhausted, returns how long until it admits a
// request again. A limiter that cannot answer admits (as the API's limiter fails open).
func (h *Handler) throttled(ctx context.Context, now time.Time, buckets ...ratelimit.Bucket) (time.Duration, bool) {
	states, err := h.cfg.Limiter.Peek(ctx, now, buckets...)
	if err != nil {
		h.cfg.Logger.Warn("dashboard: rate limiter unavailable; not throttling", "err", err)
		return 0, false
	}
	var wait time.Duration
	for _, st := range states {
		if st.Exhausted() {
			wait = max(wait, st.Reset.Sub(now))
		}
	}
	return wait, wait > 0
}

// count records one attempt in every bucket.
func (h *Handler) count(ctx context.Context, now time.Time, buckets ...ratelimit.Bucket) []ratelimit.State {
	states, err := h.cfg.Limiter.Take(ctx, now, buckets...)
	if err != nil {
		h.cfg.Logger.Warn("dashboard: rate limiter unavailable; not counting", "err", err)
	}
	return states
}

// retryAfterSeconds is a wait in whole seconds, rounded up and at least 1.
func retryAfterSeconds(d time.Duration) int64 { return max(1, int64(math.Ceil(d.Seconds()))) }

// minutesText is a wait in words: "1 minute", "23 minutes".
func minutesText(d time.Duration) string {
	m := int64(math.Ceil(d.Minutes()))
	if m <= 1 {
		return "1 minute"
	}
	return itoa(m) + " minutes"
}
