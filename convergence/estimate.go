package convergence

import (
	"math"
	"slices"

	"riskapi/engine"
)

// CPU constants of the cost model (docs/methods/convergence.md, "Cost model"): nanoseconds
// of process CPU time (validation and analysis, garbage collection included) per iteration
// of each dominant loop. They are a non-negative least-squares fit of the relative error
// over calibrationMarkets of cost_test.go (every scenario of the generator, and prices-only,
// costs-without-quantities, segments-without-quantities, many-firm, many-period,
// one-segment and many-pair shapes), on the median of three runs of
// `go test -count=3 -run TestCostEstimateHolds -v ./convergence` (2-core development
// machine, Go 1.26), rounded; the test logs each market's drivers for a refit.
const (
	// nsPerObservation: validating and indexing a row (firm, segment and period
	// look-ups, two copies). Fitted 92 ns.
	nsPerObservation = 92
	// nsPerCostObservation: the pass-through fit, cost adjustment and markup of a row
	// with a cost. Fitted 53 ns.
	nsPerCostObservation = 53
	// nsPerFirmPeriod: a panel cell through aggregation, the variance screen, the
	// synchronisation rate, the regime search, the window tests and welfare. Fitted 208 ns.
	nsPerFirmPeriod = 208
	// nsPerFirm: a firm's series, fits and per-firm tests. Fitted 611 ns.
	nsPerFirm = 611
	// nsPerPeriod: a distinct period's index entries and per-period arrays. Fitted 67 ns.
	nsPerPeriod = 67
	// nsPerDatePeriod: parsing a distinct period given as an RFC 3339 date or date-time,
	// on top of nsPerPeriod. Fitted 422 ns.
	nsPerDatePeriod = 422
	// nsPerRegimeStep: one of the n·log₂ n steps of a firm's rank and median tests (n its
	// periods, when at least minRegimeObs). Fitted 10.5 ns.
	nsPerRegimeStep = 10.5
	// nsPerPairProduct: one period of one pair of the pairwise correlations (lags −3 to
	// +3 and the common-period counts). Fitted 2.19 ns.
	nsPerPairProduct = 2.19
	// nsPerDivisionRow: a row with a segment and a quantity through the market-division
	// analysis (counting sorts, shares, stability, owners, foreign shares). Fitted 87 ns.
	nsPerDivisionRow = 87
	// nsPerDivisionCell: a (segment, period) cell of the division. Fitted 31 ns.
	nsPerDivisionCell = 31
	// nsPerMessage: validating a communication (its timestamp is parsed), indexing it by
	// pair, and its visits by the rotation test (0.2 to 13 per message in generated
	// cartels; at most maxCommWork, 5 million, in all). Fitted 369 ns.
	nsPerMessage = 369
	// nsPerBid: validating a bid and the tender screens. Fitted 582 ns.
	nsPerBid = 582
	// nsPerTriple: one triple screen of the ring search (a tender's triples among its
	// lowest maxTripleBids bids: an RD p-value and a map entry). Set from the 20,000-tender
	// markets' profile, 60 ns.
	nsPerTriple = 60
	// nsPerTripleKey: a distinct triple of the search (a new map entry, and its place in the
	// sort of the triples by Z), on top of nsPerTriple. Set from the 25,000-tender, 200-firm
	// market (213,000 distinct triples), 300 ns.
	nsPerTripleKey = 300
	// nsPerRingVisit: one bid visited by a subset screen of the greedy ring search (at most
	// maxRingVisits per analysis; ringVisitsPerBid per bid below that). 30 ns.
	nsPerRingVisit = 30
	// ringVisitsPerBid: subset-screen visits per bid in markets below the bound (measured
	// 100–300 on the evaluation's 20–100-tender markets).
	ringVisitsPerBid = 200
	// nsPerSimUnit: one unit (a bid visited or a triple screened) of the ring search's null
	// draws, allocations of the draw included; measured 50–75 ns on markets of 285–1,251
	// bids.
	nsPerSimUnit = 60
)

// Memory constants of the cost model: bytes held at the peak of validation and analysis per
// unit of each driver, a non-negative least-squares fit of the largest of three measured
// peak heap growths (enginetest.MeasurePeakHeap) over the same markets and runs; Estimate
// adds memoryMargin on top.
const (
	// bytesPerObservation: the validated rows, in document order and by firm (48 bytes
	// each). Fitted 100.
	bytesPerObservation = 100
	// bytesPerFirmPeriod: the panel's series, changes and gains. Fitted 124.
	bytesPerFirmPeriod = 124
	// bytesPerFirm: a firm's name entries, series headers and fits. Fitted 11.
	bytesPerFirm = 11
	// bytesPerPeriod: period keys, labels, their look-up tables and per-period arrays.
	// Fitted 109.
	bytesPerPeriod = 109
	// bytesPerPair: a pair's correlations (160 bytes) and its two index entries. Fitted
	// 432.
	bytesPerPair = 432
	// bytesPerDivisionRow: the division's three row orders and cell shares. Fitted 64.
	bytesPerDivisionRow = 64
	// bytesPerDivisionCell: a cell of the division. Fitted 32.
	bytesPerDivisionCell = 32
	// bytesPerMessage: a validated message and its pair's window entry. Fitted 70.
	bytesPerMessage = 70
	// bytesPerBid and bytesPerTender: a validated bid and its duplicate-check entry; a
	// tender's index entries and screens. Fitted together as 768 bytes per tender of the
	// calibration's 4.5 to 5 bids, split by the sizes of their structures.
	bytesPerBid    = 100
	bytesPerTender = 300
	// bytesPerTripleKey: a distinct triple of the ring search's map (its key, score and
	// the map's overhead), counted as min(triple screens, C(bid firms, 3)). Set from the
	// 25,000-tender, 200-firm market's peak.
	bytesPerTripleKey = 80
	// bytesPerMessageLookup: a message's pair key and window index (12 bytes), held while
	// the messages are gathered by pair (analyseCommunication's first step, on the workers).
	bytesPerMessageLookup = 12
	// memoryMargin puts the estimate at 1.4 to 1.8 times the largest measured peak of the
	// calibration markets: the estimate must cover the peak, and the peak moves with the
	// collector's timing.
	memoryMargin = 1.5
)

// Estimate returns the cost of analysing in (validation included) on in.Run's workers: the
// CPU time (of all the workers together, not the wall time) and the peak memory beyond the
// decoded input, from the counts of the input's dominant loops alone, without analysing it:
// observations, firm-periods, firms, periods, the firms' regime tests,
// the pairwise correlations (at most maxPairFirms firms), rows with segments and quantities,
// messages and bids. Field names the member that drives the cost: "observations", "bids"
// or "communications". It validates in first and returns the same *engine.InputError as
// Analyze; on an input that Validate has checked, it reuses what Validate built. Its own
// time is linear in the input (a binary search per firm-period).
func Estimate(in Input) (engine.Cost, error) {
	v, err := in.validated()
	if err != nil {
		return engine.Cost{}, err
	}
	d := drivers(v)
	obsNanos := float64(d.obs)*nsPerObservation + float64(d.costObs)*nsPerCostObservation +
		float64(d.firmPeriods)*nsPerFirmPeriod + float64(d.firms)*nsPerFirm +
		float64(d.periods)*nsPerPeriod + float64(d.datePeriods)*nsPerDatePeriod +
		d.regime*nsPerRegimeStep + d.pairCells*nsPerPairProduct +
		float64(d.divRows)*nsPerDivisionRow + float64(d.divCells)*nsPerDivisionCell
	msgNanos := float64(d.messages) * nsPerMessage
	bidNanos := float64(d.bids)*nsPerBid + d.triples*nsPerTriple + d.ringVisits*nsPerRingVisit + d.simUnits*nsPerSimUnit +
		d.tripleKeys*nsPerTripleKey
	field := "observations"
	switch {
	case bidNanos > obsNanos && bidNanos >= msgNanos:
		field = "bids"
	case msgNanos > obsNanos:
		field = "communications"
	}
	pairs := 0.0
	if d.pairFirms >= 2 {
		pairs = float64(d.pairFirms) * float64(d.pairFirms-1) / 2
	}
	bytes := float64(d.obs)*bytesPerObservation + float64(d.firmPeriods)*bytesPerFirmPeriod +
		float64(d.firms)*bytesPerFirm + float64(d.periods)*bytesPerPeriod + pairs*bytesPerPair +
		float64(d.divRows)*bytesPerDivisionRow + float64(d.divCells)*bytesPerDivisionCell +
		float64(d.messages)*bytesPerMessage + float64(d.bids)*bytesPerBid + float64(d.tenders)*bytesPerTender +
		d.tripleKeys*bytesPerTripleKey
	if d.messages > 0 && d.periods > 0 {
		// The rotation test's counts: one array of periods per block of coordinated changes,
		// four blocks per worker, at most commBlockBytes (analyseCommunication); the look-ups
		// of the messages' pairs, and the pairs' index when it is an array.
		blocks := min(4*in.Run.workers(), max(1, commBlockBytes/(8*d.periods)))
		bytes += float64(d.messages)*bytesPerMessageLookup + float64(blocks)*8*float64(d.periods)
		if F := float64(d.firms); F*F <= maxDensePairs {
			bytes += 4 * F * F // the pairs' dense index (pairIndex)
		}
	}
	return engine.Cost{
		CPU:    engine.PerUnit(1, obsNanos+msgNanos+bidNanos),
		Memory: int64(math.Min(memoryMargin*bytes, math.MaxInt64/2)),
		Field:  field,
	}, nil
}

// costDrivers are the counts Estimate reads off the validated input: the iterations of the
// analysis's dominant loops.
type costDrivers struct {
	obs         int     // observations
	costObs     int     // observations with a cost
	firmPeriods int     // distinct (firm, period) pairs: the panel's cells
	firms       int     // observation firms
	periods     int     // distinct periods
	datePeriods int     // distinct periods given as dates or date-times (parsed, not read)
	regime      float64 // Σ n·log₂ n over the firms with at least minRegimeObs periods
	pairFirms   int     // firms of the pairwise correlations (at most maxPairFirms)
	pairCells   float64 // pairFirms·(pairFirms − 1)/2 × periods: the pairwise products
	divRows     int     // observations with a segment and a quantity
	divCells    int     // (segment, period) cells of the division: at most divRows and segments × periods
	messages    int     // communications
	bids        int     // bids
	tenders     int     // usable tenders
	triples     float64 // Σ C(min(n, maxTripleBids), 3) over usable tenders: the ring search's triple screens
	ringVisits  float64 // bids visited by the greedy ring search: min(maxRingVisits, ringVisitsPerBid × bids)
	// simUnits bounds the ring's null draws (nullPValue), which run only when a ring's
	// Bonferroni bound is inconclusive in a market of at most maxSimBids bids: the most they
	// may do, min(maxSimWork, maxSimDraws × (triples + ringVisits)); 0 in larger markets.
	simUnits float64
	// tripleKeys is the most distinct triples the ring search can hold:
	// min(triples, C(bid firms, 3)).
	tripleKeys float64
}

// drivers counts v's cost drivers in time linear in the input (a binary search per firm
// period for its index).
func drivers(v *input) costDrivers {
	d := costDrivers{obs: len(v.rows), firms: len(v.firms), periods: len(v.keys), messages: len(v.msgs), tenders: len(v.tenders)}
	for _, t := range v.tenders {
		d.bids += len(t.bids)
		n := float64(min(len(t.bids), maxTripleBids))
		d.triples += n * (n - 1) * (n - 2) / 6
	}
	if len(v.tenders) >= minTenders {
		d.ringVisits = math.Min(maxRingVisits, ringVisitsPerBid*float64(d.bids))
		bf := float64(len(v.bidFirms))
		d.tripleKeys = math.Min(d.triples, bf*(bf-1)*(bf-2)/6)
		if d.bids <= maxSimBids {
			d.simUnits = math.Min(maxSimWork, maxSimDraws*(d.triples+d.ringVisits))
		}
	}
	for _, r := range v.rows {
		if r.seg >= 0 && !math.IsNaN(r.qty) {
			d.divRows++
		}
		if !math.IsNaN(r.cost) {
			d.costObs++
		}
	}
	if v.form != formInt {
		d.datePeriods = d.periods
	}
	if !v.obsUsable {
		// Without a usable panel only validation touches the observations.
		d.costObs, d.divRows = 0, 0
		return d
	}
	paired := 0 // firms with enough consecutive periods for the pairwise correlations
	for _, rows := range v.byFirm {
		n, changes := 0, 0
		prev := -2
		for k, r := range rows {
			if k > 0 && r.key == rows[k-1].key {
				continue
			}
			n++
			t, _ := slices.BinarySearch(v.keys, r.key)
			if t == prev+1 {
				changes++
			}
			prev = t
		}
		d.firmPeriods += n
		if n >= minRegimeObs {
			d.regime += float64(n) * math.Log2(float64(n))
		}
		if changes >= minPairChanges {
			paired++
		}
	}
	d.divCells = int(min(float64(d.divRows), float64(len(v.segments))*float64(d.periods)))
	d.pairFirms = min(paired, maxPairFirms, maxPairCells/max(d.periods, 1))
	if d.pairFirms >= 2 {
		d.pairCells = float64(d.pairFirms) * float64(d.pairFirms-1) / 2 * float64(d.periods)
	}
	return d
}
