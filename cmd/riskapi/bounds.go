package main

import (
	"flag"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/dustin/go-humanize"

	"riskapi/internal/admission"
	"riskapi/internal/httpapi"
)

// boundsFlags are serve's settings of platform contract §11 (bounded work), read as text and
// parsed by parse, so that every error names the setting.
type boundsFlags struct {
	syncBudget, backgroundBudget, perAccount, memoryLimit string
}

func registerBounds(fs *flag.FlagSet, getenv func(string) string) *boundsFlags {
	b := &boundsFlags{
		syncBudget:       envOr(getenv, "RISKAPI_SYNC_BUDGET", "5s"),
		backgroundBudget: envOr(getenv, "RISKAPI_BACKGROUND_BUDGET", httpapi.DefaultBackgroundBudget.String()),
		perAccount:       envOr(getenv, "RISKAPI_ACCOUNT_CONCURRENCY", strconv.Itoa(admission.DefaultPerAccount)),
		memoryLimit:      getenv("RISKAPI_MEMORY_LIMIT"),
	}
	fs.StringVar(&b.syncBudget, "sync-budget", b.syncBudget,
		"most estimated CPU time (one core) a request may take while its client waits (env RISKAPI_SYNC_BUDGET)")
	fs.StringVar(&b.backgroundBudget, "background-budget", b.backgroundBudget,
		"most estimated CPU time (one core) of one background simulation (env RISKAPI_BACKGROUND_BUDGET)")
	fs.StringVar(&b.perAccount, "account-concurrency", b.perAccount,
		"product requests one account may run at once in this process (env RISKAPI_ACCOUNT_CONCURRENCY)")
	fs.StringVar(&b.memoryLimit, "memory-limit", b.memoryLimit,
		"memory budget of the requests in flight, e.g. 4GiB (env RISKAPI_MEMORY_LIMIT; default half of the machine's or cgroup's memory)")
	return b
}

func (b *boundsFlags) parse() (httpapi.Bounds, error) {
	var out httpapi.Bounds
	var err error
	if out.SyncBudget, err = time.ParseDuration(b.syncBudget); err != nil || out.SyncBudget <= 0 {
		return out, usagef("sync budget %q: want a positive duration such as 5s", b.syncBudget)
	}
	if out.BackgroundBudget, err = time.ParseDuration(b.backgroundBudget); err != nil || out.BackgroundBudget < out.SyncBudget {
		return out, usagef("background budget %q: want a duration of at least the sync budget, such as 1h", b.backgroundBudget)
	}
	if out.PerAccount, err = strconv.Atoi(b.perAccount); err != nil || out.PerAccount < 1 {
		return out, usagef("account concurrency %q: want a positive integer", b.perAccount)
	}
	if b.memoryLimit != "" {
		n, err := humanize.ParseBytes(b.memoryLimit)
		if err != nil || n < 64<<20 || n > 1<<62 {
			return out, usagef("memory limit %q: want a size of at least 64MiB, such as 4GiB", b.memoryLimit)
		}
		out.MemoryLimit = int64(n)
	}
	return out, nil
}

// applyMemoryLimit makes the Go runtime's soft memory limit the budget plus what the process
// holds besides requests, unless GOMEMLIMIT set one: the collector then works harder as the
// admitted requests near the budget, instead of letting garbage double the heap.
func applyMemoryLimit(bounds httpapi.Bounds, getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := bounds.MemoryLimit
	if limit <= 0 {
		limit = admission.DefaultMemoryLimit()
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit + limit/4)
	}
}
