package drift

import (
	"math"
	"math/bits"
	"slices"
	"time"
	"unsafe"

	"riskapi/engine"
)

// Cost model of Analyze (platform contract §11; docs/methods/drift.md, "Cost model"). The
// CPU constants are nanoseconds per iteration of the loops they name: the medians of
// `go test -run XXX -bench CostModel -benchtime 3x -count 3 ./drift` (BenchmarkCostModel
// reports each as the extra CPU per unit between two inputs of 100,000 events that differ
// in that term), measured on the 2-core build machine while other packages' tests ran,
// which makes the figures 10–30 % higher than on an idle machine. TestCostEstimateHolds
// checks the model against measured CPU within 3×.
const (
	// nsPerEvent covers everything done once an event: validation, the workload count,
	// preparation (per-event sums, winsorized losses and their quantiles, action strata),
	// the dimensions, the behaviour scan and one change-point fit over all events.
	// Measured 274–344 ns (median 296) on the generated shadow agent; 270 idle.
	nsPerEvent = 300
	// nsPerBenefit covers each listed beneficiary: its validation, the party-index lookup
	// of preparation and the per-party event lists the tests read. Measured 98–106 ns
	// between 1 and 10 beneficiaries an event among 100 parties (33 ns with 20 among 5,
	// where an event's repeats of a party become one entry).
	nsPerBenefit = 100
	// nsPerNameByte covers the bytes of the listed party names, counted in validation and
	// hashed by the party index and the workload count. Measured 0.49–0.50 ns a byte
	// between names of 10 and 500 bytes.
	nsPerNameByte = 0.5
	// nsPerParty is the work of the tests for each tested party that every party costs:
	// the share scan over scanWindows windows (Welch t-tests with skewness corrections on
	// all events with benefit, Owen-T scan tails) and the instruction test. Measured
	// 18.8–19.5 µs between 100 parties and 14,000 parties of one event each, 23.7 µs
	// with 70,000 of one event each.
	nsPerParty = 21_000
	// nsPerRepeatParty is the further work for a tested party with many monitoring events:
	// the harm scans (stratified t-tests on the windows holding two or more of its events,
	// their scan tails) and the search for the window where share and harm rise together.
	// It grows from nothing at one event to all of it at repeatRamp + 1 events; measured
	// per party in all: 22.9 µs at 2 events, 33.5 at 3, 46 at 5, 60 at 10, 66 at 20 and
	// 58 at 50; 44.6–45.5 µs more at 20 events than at 1. See repeatWeight.
	nsPerRepeatParty = 44_000
	repeatRamp       = 9
	// nsPerAction covers each distinct action: its entry in the strata's index and the
	// sort of the action names by frequency. Measured 353–437 ns (median 413) at 100,000.
	nsPerAction = 400
	// nsPerSortStep is the cost of each of the n·log₂ n steps of sorting events that do not
	// arrive in time order, with the copy into that order. Measured 20.4–24.2 ns at
	// 100,000 shuffled events.
	nsPerSortStep = 23
	// nsPerDescribedEvent is, for each detected party, the cost per event of locating its
	// change point and first alarm on its series over all events (exact Welford moments,
	// prefix sums and fit) and of its recent totals. The estimate includes one such fit in
	// nsPerEvent; Analyze adds the others once the tests have found them (describeCost).
	// Measured 15.8–17.6 ns at 100,000 events with 150 detected parties.
	nsPerDescribedEvent = 17
)

// Memory model: bytes allocated by Analyze beyond the decoded request, which is also about
// what it holds at its peak (little of it is garbage before the end). Sizes read off the
// code and checked against the measured peak of the heap by TestMemoryEstimateHolds.
const (
	// bytesPerEvent: the per-event arrays of preparation (offsets, totals, counts, losses
	// and their winsorized copies, strata: 9 words), the principal-loss series of the
	// behaviour scan and its prefix sums (6 words) and one description's series, prefix
	// sums and event index (4 words), with room for the collector's lag. Measured peaks
	// 174–221 bytes an event on generated agents.
	bytesPerEvent = 200
	// bytesPerSortedEvent: the stably sorted copy of the events and its sort keys, when the
	// events do not arrive in time order.
	bytesPerSortedEvent = int64(unsafe.Sizeof(Event{})) + 16
	// bytesPerBenefit: the aggregated benefit (16 bytes) and the per-party event-list
	// entry (32 bytes) of a listed beneficiary.
	bytesPerBenefit = 48
	// bytesPerParty: a party's entries in the party index (map entry, name, bookkeeping,
	// grown by appending) and its event-list header; bytesPerTestedParty: a tested
	// party's test results, Holm adjustments and behaviour-scan candidate.
	bytesPerParty       = 170
	bytesPerTestedParty = 430
	// bytesPerAction: a distinct action's entries in the strata's index.
	bytesPerAction = 220
)

// Estimate returns what Analyze will take for in, from the request alone and before any
// of the analysis: CPU time and peak memory of its dominant loops, with Field "events".
// It validates in first, as Analyze does, and returns the same *engine.InputError for an
// input Analyze would refuse; the events are checked only unless Validate already passed
// them, so a caller that runs Validate, then Estimate, then Analyze on the same value checks
// them once. It reads every event once (time order, beneficiaries, party names and actions
// hashed into fixed-size counters of distinct values): 3–6 ms at 100,000 events, under a
// tenth of the analysis, and 12 KiB of memory whatever the request's size.
//
// The estimate includes the description of one detected party; each further one adds
// nsPerDescribedEvent per event, which Analyze charges once its tests have found them
// (the number of detections is the analysis's result, not the request's).
func Estimate(in Input) (engine.Cost, error) {
	if err := in.validateForAnalysis(nil); err != nil {
		return engine.Cost{}, err
	}
	return measureWorkload(&in, func() bool { return false }).cost(), nil
}

// workload is what drives an analysis's cost, read off the request.
type workload struct {
	events int
	sorted bool
	// benefits: listed beneficiaries; nameBytes: the bytes of their party names.
	benefits, nameBytes int
	// parties: distinct non-principal parties with value > 0; tested: those of them on a
	// monitoring event; actions: distinct actions. All three estimated (distinctCounter).
	parties, tested, actions float64
	// monitored: the benefits of tested parties on monitoring events.
	monitored int
}

// repeatWeight is how many tested parties' worth of nsPerRepeatParty the tests cost:
// tested × min(1, (ā − 1)/repeatRamp), with ā the monitoring benefits a tested party. How
// the benefits fall among the parties is not known without counting each party; the cost
// of a party is concave in its events (nothing more at one, all of it from repeatRamp + 1
// on), so charging every party at the average never understates the sum over parties.
func (w workload) repeatWeight() float64 {
	if w.tested < 1 {
		return 0
	}
	extra := float64(w.monitored)/w.tested - 1
	return w.tested * math.Max(0, math.Min(1, extra/repeatRamp))
}

// measureWorkload reads the workload off in's events, or as much of it as it read before
// stopped reported true. It reads ranges of the events on up to in.workers() goroutines:
// the counts add up and the distinct counters' registers merge by their maximum, so the
// workload is the same for any number of them.
func measureWorkload(in *Input, stopped func() bool) workload {
	ev := in.Events
	n := len(ev)
	// The monitoring part: events from baseline.until on; else, for events in time order,
	// from position ⌊fraction·n⌋ on; else every event (an upper bound, short of sorting).
	sorted := slices.IsSortedFunc(ev, func(a, b Event) int { return a.Timestamp.Compare(b.Timestamp) })
	var until *time.Time
	from := 0
	switch b := in.Baseline; {
	case b != nil && b.Until != nil:
		until = b.Until
	case !sorted:
	case b != nil && b.Fraction != nil:
		from = int(math.Floor(*b.Fraction * float64(n)))
	default:
		from = n * 3 / 10
	}
	principal := ""
	if in.PrincipalID != nil {
		principal = *in.PrincipalID
	}
	workers := max(1, min(in.workers(), n/minEventsPerValidator))
	parts := make([]workloadPart, workers)
	parallel(workers, func(k int) {
		parts[k].read(ev, k*n/workers, (k+1)*n/workers, from, until, principal, stopped)
	})
	for k := 1; k < workers; k++ {
		parts[0].merge(&parts[k])
	}
	w := parts[0].workload
	w.events, w.sorted = n, sorted
	w.parties, w.tested, w.actions = parts[0].parties.count(), parts[0].tested.count(), parts[0].actions.count()
	return w
}

// workloadPart is the workload of a range of the events, its distinct values still as
// counters.
type workloadPart struct {
	workload
	parties, tested, actions distinctCounter
}

// read measures events[lo:hi] of ev, whose monitoring part starts at from (and at until
// when set).
func (p *workloadPart) read(ev []Event, lo, hi, from int, until *time.Time, principal string, stopped func() bool) {
	for i := lo; i < hi; i++ {
		if stopped() {
			break
		}
		e := &ev[i]
		if i == 0 || e.Action != ev[i-1].Action {
			p.actions.add(hashString(e.Action))
		}
		p.benefits += len(e.Beneficiaries)
		monitoring := i >= from && (until == nil || !e.Timestamp.Before(*until))
		for j := range e.Beneficiaries {
			b := &e.Beneficiaries[j]
			p.nameBytes += len(b.Party)
			if b.Value <= 0 || b.Party == "principal" || b.Party == principal {
				continue
			}
			h := hashString(b.Party)
			p.parties.add(h)
			if monitoring {
				p.tested.add(h)
				p.monitored++
			}
		}
	}
}

// merge adds q's range to p's.
func (p *workloadPart) merge(q *workloadPart) {
	p.benefits += q.benefits
	p.nameBytes += q.nameBytes
	p.monitored += q.monitored
	for j := range p.parties {
		p.parties[j] = max(p.parties[j], q.parties[j])
		p.tested[j] = max(p.tested[j], q.tested[j])
		p.actions[j] = max(p.actions[j], q.actions[j])
	}
}

func (w workload) cost() engine.Cost {
	n := float64(w.events)
	cpu := n*nsPerEvent + float64(w.benefits)*nsPerBenefit + float64(w.nameBytes)*nsPerNameByte +
		w.tested*nsPerParty + w.repeatWeight()*nsPerRepeatParty + w.actions*nsPerAction
	mem := n*bytesPerEvent + float64(w.benefits)*bytesPerBenefit + w.parties*bytesPerParty +
		w.tested*bytesPerTestedParty + w.actions*bytesPerAction
	if !w.sorted {
		cpu += n * math.Log2(n) * nsPerSortStep
		mem += n * float64(bytesPerSortedEvent)
	}
	return engine.Cost{CPU: engine.PerUnit(cpu, 1), Memory: int64(mem), Field: "events"}
}

// describeCost is the CPU of describing detected parties beyond the first (which the
// estimate includes) in an analysis of n events: each locates its change point on a
// series over all events.
func describeCost(n, detected int) time.Duration {
	return engine.PerUnit(float64(max(detected-1, 0))*float64(n), nsPerDescribedEvent)
}

// distinctCounter estimates how many distinct strings were added, in 4 KiB whatever their
// number: HyperLogLog (Flajolet, Fusy, Gandouet and Meunier 2007) with 4096 registers
// (standard error 1.6 %), and linear counting below 10,240, where it is nearly exact.
// Estimate counts parties with it rather than with a set of their names, which for a
// request of millions of parties would take hundreds of megabytes before the request is
// admitted against the memory budget.
type distinctCounter [1 << distinctBits]uint8

const distinctBits = 12

// add records a string by its hashString.
func (c *distinctCounter) add(h uint64) {
	rank := uint8(min(bits.LeadingZeros64(h<<distinctBits), 64-distinctBits) + 1)
	j := h >> (64 - distinctBits)
	c[j] = max(c[j], rank)
}

func (c *distinctCounter) count() float64 {
	m := float64(len(c))
	sum, zeros := 0.0, 0
	for _, r := range c {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return e
}

// hashString is a 64-bit hash of s: eight bytes at a time multiplied in, then the
// MurmurHash3 finaliser, so that every output bit depends on every input bit (the
// counter reads the top 12 bits and the run of zeros below them). It is deterministic,
// unlike hash/maphash, so that an estimate is a function of the request alone.
func hashString(s string) uint64 {
	h := uint64(len(s)) * 0x9e3779b97f4a7c15
	for ; len(s) >= 8; s = s[8:] {
		k := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = bits.RotateLeft64(h^(k*0x87c37b91114253d5), 31) * 0x4cf5ad432745937f
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 0x100000001b3
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
