package engine

import (
	"fmt"
	"time"
)

// Cost is what a request will take, estimated from the request alone before any of its work
// starts (platform contract §11). Each engine exports Estimate(Input) (Cost, error), whose
// model covers the engine's dominant loops and is checked by a test against measured CPU
// (within 3×) on the project's benchmark inputs; docs/operations.md gives each model with
// its measured constants.
type Cost struct {
	// CPU is the estimated CPU time of the work, summed over every core it runs on.
	CPU time.Duration
	// Memory is the estimated peak of the bytes the work holds at once, beyond the decoded
	// request itself: what the API admits against its process-wide memory budget.
	Memory int64
	// Field is the input that drives the cost: details.field of WORK_LIMIT_EXCEEDED
	// ("network.edges", "checks[2]", "firms").
	Field string
	// Output is the estimated size of the encoded result where it can outgrow the input
	// (Meridian's lists of unexpected values repeat a long value once per failing check);
	// zero where the result stays small beside the input. The API holds it against the memory
	// budget once for each copy of the result it makes.
	Output int64
}

// DefaultSyncBudget is the contract's synchronous budget: work estimated above the
// equivalent of 5 s of one core runs in the background where the product has a background
// form, and is otherwise refused with WORK_LIMIT_EXCEEDED.
const DefaultSyncBudget = 5 * time.Second

// CodeWorkLimitExceeded is the code of the error for work above the budget.
const CodeWorkLimitExceeded = "WORK_LIMIT_EXCEEDED"

// Within returns nil when the cost's CPU fits budget, else the WORK_LIMIT_EXCEEDED error
// naming the input that drives the cost, the limit (expected) and the estimate (received).
// A budget of zero or less means DefaultSyncBudget.
func (c Cost) Within(budget time.Duration) *InputError {
	if budget <= 0 {
		budget = DefaultSyncBudget
	}
	if c.CPU <= budget {
		return nil
	}
	return Invalid(CodeWorkLimitExceeded, c.Field,
		fmt.Sprintf("work of at most %s of CPU time (one core)", seconds(budget)),
		fmt.Sprintf("work of an estimated %s of CPU time", seconds(c.CPU)),
		"This request would take an estimated %s of CPU time, above the limit of %s for one request; %s drives the cost: send less of it per request and split the work over several requests.",
		seconds(c.CPU), seconds(budget), c.Field)
}

// seconds writes d in seconds with at most three significant decimals: "5s", "21.4s".
func seconds(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return fmt.Sprintf("%.3fs", d.Seconds())
	}
}

// PerUnit turns a count of a loop's iterations into CPU time at a measured cost per
// iteration, saturating instead of overflowing for absurd counts.
func PerUnit(units float64, nanosPerUnit float64) time.Duration {
	ns := units * nanosPerUnit
	if ns >= float64(1<<62) {
		return 1 << 62
	}
	return time.Duration(ns)
}
