package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"time"

	"riskapi/internal/ratelimit"
	"riskapi/internal/store"
)

// Throttling of sign-in and sign-up, counted in clock hours by the service's rate limiter, so
// that with Redis every process shares the counts. Every password attempt is counted before
// the password is checked — counting only failures afterwards would let attempts sent at the
// same time all pass the check before any is counted. The tightest bucket is one email from
// one address, so an attacker elsewhere cannot lock the owner out with a handful of guesses;
// a wider per-email bucket caps guessing from many addresses.
const (
	// signInAttemptsPerEmailAndIP: one address trying one account's password.
	signInAttemptsPerEmailAndIP = 10
	// signInAttemptsPerIP: one address trying many accounts (high enough for an office
	// behind one address).
	signInAttemptsPerIP = 100
	// signInAttemptsPerEmail: one account tried from any number of addresses.
	signInAttemptsPerEmail = 50
	// signUpsPerIP bounds the accounts one address can create in an hour.
	signUpsPerIP = 10
)

// signInBuckets are the sign-in buckets of an email and a client address, in the order
// email+address, address, email. The email is hashed so the limiter's keys hold no personal
// data; every key shares one Redis Cluster hash tag so that one call counts them all.
func signInBuckets(email, ip string) []ratelimit.Bucket {
	sum := sha256.Sum256([]byte(store.NormalizeEmail(email)))
	e := hex.EncodeToString(sum[:16])
	return []ratelimit.Bucket{
		{Key: "{dashboard}:signin:email-ip:" + e + ":" + ip, Limit: signInAttemptsPerEmailAndIP, Window: ratelimit.Hour},
		{Key: "{dashboard}:signin:ip:" + ip, Limit: signInAttemptsPerIP, Window: ratelimit.Hour},
		{Key: "{dashboard}:signin:email:" + e, Limit: signInAttemptsPerEmail, Window: ratelimit.Hour},
	}
}

func signUpBucket(ip string) ratelimit.Bucket {
	return ratelimit.Bucket{Key: "{dashboard}:signup:ip:" + ip, Limit: signUpsPerIP, Window: ratelimit.Hour}
}

// admit counts one attempt in every bucket and, when one is over its limit, returns how long
// until it admits again. A limiter that cannot answer refuses (errLimiterDown): password
// guessing must not become unlimited while Redis is away.
func (h *Handler) admit(ctx context.Context, now time.Time, buckets ...ratelimit.Bucket) (time.Duration, error) {
	states, err := h.cfg.Limiter.Take(ctx, now, buckets...)
	if err != nil {
		h.cfg.Logger.Warn("dashboard: rate limiter unavailable; refusing password attempts", "err", err)
		return 0, errLimiterDown
	}
	var wait time.Duration
	for _, st := range states {
		if !st.Allowed() {
			wait = max(wait, st.Reset.Sub(now))
		}
	}
	return wait, nil
}

var errLimiterDown = errors.New("dashboard: rate limiter unavailable")

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
