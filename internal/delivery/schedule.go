package delivery

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Schedule says when a failed delivery is tried again. Delays[i] is the wait after the
// (i+1)-th failed automatic attempt, so a delivery makes at most 1+len(Delays) automatic
// attempts; Jitter spreads each wait uniformly over ±Jitter of it (0.1 is ±10 %), so that
// deliveries failed together by one outage do not all come back in the same second.
type Schedule struct {
	Delays []time.Duration
	Jitter float64
}

// DefaultSchedule is the contract's schedule: after the first attempt, waits of 5 s, 5 min,
// 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h, each ±10 %. That is 10 attempts over about
// 75.6 hours (3.1 days), so a receiver that is down over a long weekend still gets its
// events, and one that is gone for good is given up on within the 30 days events are kept.
var DefaultSchedule = Schedule{
	Delays: []time.Duration{
		5 * time.Second,
		5 * time.Minute,
		30 * time.Minute,
		2 * time.Hour,
		5 * time.Hour,
		10 * time.Hour,
		14 * time.Hour,
		20 * time.Hour,
		24 * time.Hour,
	},
	Jitter: 0.1,
}

// maxScheduleDelays bounds an overriding schedule: 100 retries is already far beyond any
// sensible policy, and the bound keeps a typo from queueing deliveries for ever.
const maxScheduleDelays = 100

// ParseSchedule reads RISKAPI_WEBHOOK_RETRY_SCHEDULE: comma-separated Go durations, each
// greater than zero ("1s,1s,1s", "500ms, 1m"). No jitter is added to an override, so tests
// and special deployments get exactly the waits they asked for. An empty string is an
// error: leave the variable unset to use DefaultSchedule.
func ParseSchedule(s string) (Schedule, error) {
	if strings.TrimSpace(s) == "" {
		return Schedule{}, errors.New("retry schedule is empty: give comma-separated durations such as 5s,5m,30m, or leave it unset for the default")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxScheduleDelays {
		return Schedule{}, fmt.Errorf("retry schedule has %d delays; at most %d are allowed", len(parts), maxScheduleDelays)
	}
	delays := make([]time.Duration, 0, len(parts))
	for i, part := range parts {
		part = strings.TrimSpace(part)
		d, err := time.ParseDuration(part)
		if err != nil {
			return Schedule{}, fmt.Errorf("retry schedule delay %d %q is not a duration such as 30s or 5m", i+1, part)
		}
		if d <= 0 {
			return Schedule{}, fmt.Errorf("retry schedule delay %d %q must be greater than zero", i+1, part)
		}
		delays = append(delays, d)
	}
	return Schedule{Delays: delays}, nil
}

// String formats the delays as ParseSchedule reads them, with the jitter if any.
func (s Schedule) String() string {
	parts := make([]string, len(s.Delays))
	for i, d := range s.Delays {
		parts[i] = d.String()
	}
	out := strings.Join(parts, ",")
	if s.Jitter > 0 {
		out += fmt.Sprintf(" (±%g%%)", s.Jitter*100)
	}
	return out
}

// Next returns when the next automatic attempt is due after failedAttempts failed automatic
// attempts, the last of them ending at now, and false when the schedule is exhausted (the
// delivery then fails). failedAttempts 0 is the first attempt, due at now. random returns a
// number in [0, 1) that places the jitter; nil uses math/rand/v2. The wait is
// Delays[failedAttempts-1] × (1 + Jitter × (2×random − 1)), so within ±Jitter of the delay.
func (s Schedule) Next(failedAttempts int, now time.Time, random func() float64) (time.Time, bool) {
	if failedAttempts <= 0 {
		return now, true
	}
	if failedAttempts > len(s.Delays) {
		return time.Time{}, false
	}
	delay := s.Delays[failedAttempts-1]
	if s.Jitter > 0 {
		if random == nil {
			random = rand.Float64
		}
		factor := 1 + s.Jitter*(2*random()-1)
		delay = time.Duration(float64(delay) * factor)
		if delay < 0 { // only with Jitter > 1, which NewDispatcher refuses
			delay = 0
		}
	}
	return now.Add(delay), true
}
