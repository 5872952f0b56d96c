// Package usage meters billable requests: one unit per live-mode, non-replayed, successful
// product request. Units are counted in memory and written to the store in batches, so
// metering adds no store write to the request path.
package usage

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"riskapi/internal/store"
)

// Store is where a Meter writes what it counted: AddUsage adds a batch of units to the
// stored daily totals in one transaction. store.Store is one.
type Store interface {
	AddUsage(ctx context.Context, units []store.UsageUnits) error
}

// Meter collects units and flushes them to the store. A crash loses at most the units of
// one flush interval (2 s by default), always in the customer's favour; a graceful
// shutdown flushes everything.
type Meter struct {
	store Store
	log   *slog.Logger

	mu      sync.Mutex
	pending map[unitKey]int64
}

type unitKey struct {
	accountID, product, endpoint string
	day                          time.Time
}

// NewMeter returns a Meter writing to s.
func NewMeter(s Store, log *slog.Logger) *Meter {
	return &Meter{store: s, log: log, pending: map[unitKey]int64{}}
}

// Record counts one unit for the account, product and endpoint at time at.
func (m *Meter) Record(accountID, product, endpoint string, at time.Time) {
	at = at.UTC()
	k := unitKey{accountID, product, endpoint, time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)}
	m.mu.Lock()
	m.pending[k]++
	m.mu.Unlock()
}

// Flush writes the pending units in one transaction. On failure they are kept and added to
// the next flush, so a store outage delays units but does not lose them.
func (m *Meter) Flush(ctx context.Context) error {
	m.mu.Lock()
	batch := m.pending
	m.pending = map[unitKey]int64{}
	m.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	units := make([]store.UsageUnits, 0, len(batch))
	for k, n := range batch {
		units = append(units, store.UsageUnits{AccountID: k.accountID, Day: k.day, Product: k.product, Endpoint: k.endpoint, Units: n})
	}
	// One order for every flush, so concurrent flushes of several processes lock rows in
	// the same order and cannot deadlock.
	slices.SortFunc(units, func(a, b store.UsageUnits) int {
		return cmp.Or(cmp.Compare(a.AccountID, b.AccountID), a.Day.Compare(b.Day),
			cmp.Compare(a.Product, b.Product), cmp.Compare(a.Endpoint, b.Endpoint))
	})
	if err := m.store.AddUsage(ctx, units); err != nil {
		m.mu.Lock()
		for k, n := range batch {
			m.pending[k] += n
		}
		m.mu.Unlock()
		return fmt.Errorf("flush usage: %w", err)
	}
	return nil
}

// Run flushes every interval until ctx ends, then flushes once more (bounded by 5 s).
func (m *Meter) Run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			if err := m.Flush(ctx); err != nil {
				m.log.Warn("usage flush failed; units kept for the next flush", "err", err)
			}
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := m.Flush(final); err != nil {
				m.log.Error("final usage flush failed; units lost", "err", err)
			}
			cancel()
			return
		}
	}
}
