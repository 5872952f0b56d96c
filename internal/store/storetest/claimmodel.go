package storetest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// modelDelivery is what testClaimMatchesModel knows of a delivery.
type modelDelivery struct {
	id, endpointID string
	pending        bool
	next           *time.Time // next automatic attempt
	manual         *time.Time // outstanding manual retry request
	owner          string     // lease owner, "" when released
	until          time.Time  // lease end
	leaseManual    *time.Time // the manual request the lease serves
}

// dueAt is when d fell due: the earlier of its manual retry request and its next attempt.
func (d *modelDelivery) dueAt() time.Time {
	if d.manual != nil && (d.next == nil || d.manual.Before(*d.next)) {
		return *d.manual
	}
	return *d.next
}

// testClaimMatchesModel runs a random sequence of claims, recorded outcomes, manual retries,
// new deliveries and endpoint status changes, with small claim limits and long backlogs so
// that endpoints at their cap, disabled endpoints and leased deliveries crowd the oldest due
// deliveries, and checks every claim against ClaimDeliveries' contract applied to a model of
// the queue: due (pending, due and endpoint enabled, or a manual retry outstanding), lease
// free or expired, oldest due first (then by id), at most PerEndpoint under unexpired lease
// per endpoint, up to Limit.
func testClaimMatchesModel(t *testing.T, s store.Store) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(20250314, 1509))
	now := t0.Add(time.Minute)

	var (
		endpoints  []store.WebhookEndpoint
		enabled    = map[string]bool{}
		deliveries []*modelDelivery
	)
	add := func(e store.WebhookEndpoint, at time.Time) {
		t.Helper()
		d, err := s.CreateEventFor(ctx, newEvent(e.AccountID, e.Mode, kindDrift, at), e.ID, nil)
		if err != nil {
			t.Fatalf("CreateEventFor: %v", err)
		}
		next := at
		deliveries = append(deliveries, &modelDelivery{id: d.ID, endpointID: e.ID, pending: true, next: &next})
	}
	// Five endpoints with backlogs of 40, 25, 12, 6 and 3, due over the same 200 ms so that
	// due times tie, within an endpoint and across endpoints.
	for _, n := range []int{40, 25, 12, 6, 3} {
		e := mustCreateEndpoint(t, s, newEndpoint(ident.New("acct"), store.ModeLive, store.AllEvents))
		endpoints = append(endpoints, e)
		enabled[e.ID] = true
		for range n {
			add(e, t0.Add(time.Duration(rng.IntN(200))*time.Millisecond))
		}
	}
	owners := []string{"d1", "d2", "d3"}

	want := func(p store.ClaimPolicy) []*modelDelivery {
		live := map[string]int{}
		var candidates []*modelDelivery
		for _, d := range deliveries {
			if d.owner != "" && d.until.After(now) {
				live[d.endpointID]++
				continue
			}
			if d.manual != nil || (d.pending && !d.next.After(now) && enabled[d.endpointID]) {
				candidates = append(candidates, d)
			}
		}
		slices.SortFunc(candidates, func(a, b *modelDelivery) int {
			if c := a.dueAt().Compare(b.dueAt()); c != 0 {
				return c
			}
			return cmp.Compare(a.id, b.id)
		})
		var out []*modelDelivery
		for _, d := range candidates {
			if len(out) == p.Limit {
				break
			}
			if p.PerEndpoint > 0 && live[d.endpointID] >= p.PerEndpoint {
				continue
			}
			live[d.endpointID]++
			out = append(out, d)
		}
		return out
	}

	for round := range 200 {
		switch op := rng.IntN(10); {
		case op < 4: // claim
			p := claimPolicy(owners[rng.IntN(len(owners))], 1+rng.IntN(6), rng.IntN(5))
			expected := want(p)
			got := mustClaim(t, s, p, now)
			var gotIDs, wantIDs []string
			for _, c := range got {
				gotIDs = append(gotIDs, c.ID)
			}
			for _, d := range expected {
				wantIDs = append(wantIDs, d.id)
			}
			if !slices.Equal(gotIDs, wantIDs) {
				t.Fatalf("round %d: claim (limit %d, per endpoint %d) at %s got\n\t%v\nwant\n\t%v\nqueue:\n%s",
					round, p.Limit, p.PerEndpoint, now.Format(time.RFC3339Nano), gotIDs, wantIDs, describeModel(deliveries, enabled, now))
			}
			for _, d := range expected {
				d.owner, d.until, d.leaseManual = p.Owner, now.Add(p.Lease), d.manual
			}
		case op < 7: // record the outcome of an attempt in flight (or whose lease expired)
			var held []*modelDelivery
			for _, d := range deliveries {
				if d.owner != "" {
					held = append(held, d)
				}
			}
			if len(held) == 0 {
				continue
			}
			d := held[rng.IntN(len(held))]
			o := store.AttemptOutcome{At: now, StatusCode: 200, Succeeded: true}
			if rng.IntN(2) == 0 {
				next := now.Add(time.Duration(rng.IntN(30_000)) * time.Millisecond)
				o = store.AttemptOutcome{At: now, StatusCode: 500, Error: "HTTP 500", NextAttemptAt: &next}
			}
			mustRecord(t, s, d.owner, d.id, o)
			switch {
			case o.Succeeded:
				d.pending, d.next, d.manual = false, nil, nil
			case d.leaseManual != nil:
				if d.manual != nil && d.manual.Equal(*d.leaseManual) {
					d.manual = nil
				}
			default:
				d.next = o.NextAttemptAt
			}
			d.owner, d.until, d.leaseManual = "", time.Time{}, nil
		case op < 8: // manual retry of any delivery
			d := deliveries[rng.IntN(len(deliveries))]
			e := endpoints[slices.IndexFunc(endpoints, func(e store.WebhookEndpoint) bool { return e.ID == d.endpointID })]
			if _, err := s.RequestManualRetry(ctx, e.AccountID, e.Mode, e.ID, d.id, now); err != nil {
				t.Fatalf("RequestManualRetry: %v", err)
			}
			if d.manual == nil || (d.leaseManual != nil && d.manual.Equal(*d.leaseManual)) {
				at := now
				d.manual = &at
			}
		case op < 9: // disable or enable an endpoint
			e := endpoints[rng.IntN(len(endpoints))]
			enabled[e.ID] = !enabled[e.ID]
			e.Status, e.DisabledReason, e.UpdatedAt = store.EndpointEnabled, "", now
			if !enabled[e.ID] {
				e.Status, e.DisabledReason = store.EndpointDisabled, store.DisabledByUser
			}
			if err := s.UpdateWebhookEndpoint(ctx, e); err != nil {
				t.Fatalf("UpdateWebhookEndpoint: %v", err)
			}
		default: // new deliveries, due already or soon
			e := endpoints[rng.IntN(len(endpoints))]
			for range 1 + rng.IntN(5) {
				add(e, now.Add(time.Duration(rng.IntN(20_000)-10_000)*time.Millisecond))
			}
		}
		// Time moves on, now and then past every lease.
		if rng.IntN(8) == 0 {
			now = now.Add(lease + time.Duration(rng.IntN(1000))*time.Millisecond)
		} else {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
	}
}

// describeModel lists the deliveries that are not ended, for a failure message.
func describeModel(deliveries []*modelDelivery, enabled map[string]bool, now time.Time) string {
	var b strings.Builder
	ms := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return fmt.Sprint(t.Sub(t0).Milliseconds())
	}
	for _, d := range deliveries {
		if !d.pending && d.manual == nil {
			continue
		}
		lease := "-"
		if d.owner != "" {
			lease = fmt.Sprintf("%s until %+dms", d.owner, d.until.Sub(now).Milliseconds())
		}
		fmt.Fprintf(&b, "\t%s endpoint %s (enabled %v) pending %v next %s manual %s lease %s\n",
			d.id, d.endpointID, enabled[d.endpointID], d.pending, ms(d.next), ms(d.manual), lease)
	}
	return b.String()
}

// testClaimTies: deliveries due at the same instant go in id order, also when a claim reads
// only part of them (a claim of 1 reads a few at the head of the queue).
func testClaimTies(t *testing.T, s store.Store) {
	ctx := context.Background()
	var want []string
	for range 3 {
		e := mustCreateEndpoint(t, s, newEndpoint(ident.New("acct"), store.ModeLive, store.AllEvents))
		for range 6 {
			d, err := s.CreateEventFor(ctx, newEvent(e.AccountID, e.Mode, kindDrift, t0), e.ID, nil)
			if err != nil {
				t.Fatalf("CreateEventFor: %v", err)
			}
			want = append(want, d.ID)
		}
	}
	slices.Sort(want)
	var got []string
	for i := range want {
		cs := mustClaim(t, s, claimPolicy("d1", 1, 0), t0)
		if len(cs) != 1 {
			t.Fatalf("claim %d got %d deliveries, want 1", i, len(cs))
		}
		got = append(got, cs[0].ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("claims of 1 took deliveries due at the same time in the order\n\t%v\nwant id order\n\t%v", got, want)
	}
}
