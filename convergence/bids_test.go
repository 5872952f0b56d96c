package convergence

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestScreensSmallSampleFormulas(t *testing.T) {
	t.Parallel()
	// Bids 115, 100, 112, 110 (shuffled): reference values computed with the adjusted
	// Fisher–Pearson skewness √(n(n−1))/(n−2)·g₁ and excess kurtosis
	// ((n+1)g₂ + 6)(n−1)/((n−2)(n−3)) of Joanes & Gill (1998), the forms SAS, SPSS and
	// Excel report.
	tn := tender{bids: []bidRow{{firm: 0, amount: 115}, {firm: 1, amount: 100, won: true}, {firm: 2, amount: 112}, {firm: 3, amount: 110}}}
	s := screens(&tn)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"cv", s.cv, 0.059496567505720827},
		{"rd", s.rd, 3.973597071195131},
		{"diffp", s.diffp, 0.1},
		{"skewness", s.skew, -1.408284023668639},
		{"kurtosis", s.kurt, 2.3193865761002765},
	} {
		if math.Abs(c.got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %.15g, want %.15g", c.name, c.got, c.want)
		}
	}
	if s.winner != 1 || s.second != 3 {
		t.Errorf("winner %d second %d", s.winner, s.second)
	}
	// Three bids: no kurtosis; equal losing bids: RD is infinite and the p-value minimal.
	s3 := screens(&tender{bids: []bidRow{{amount: 90}, {firm: 1, amount: 100}, {firm: 2, amount: 100}}})
	if !math.IsNaN(s3.kurt) || !math.IsInf(s3.rd, 1) || s3.p != 0.001 || s3.winner != 0 {
		t.Errorf("three bids: %+v", s3)
	}
}

func TestRDPValueIsMonotoneAndMatchesTheTable(t *testing.T) {
	t.Parallel()
	for n := 3; n <= 35; n++ {
		prev := 1.0
		for rd := 0.0; rd < 50; rd += 0.01 {
			p := rdPValue(rd, n)
			if p > prev || p < 0.001 || p > 1 {
				t.Fatalf("n %d rd %v: p %v after %v", n, rd, p, prev)
			}
			prev = p
		}
		row := rdQuantiles[min(n, 30)-3]
		for l, q := range row {
			if p := rdPValue(q, n); math.Abs(p-rdLevels[l]) > 1e-9 {
				t.Errorf("n %d: p(q_%v) = %v", n, rdLevels[l], p)
			}
		}
	}
}

// TestRDQuantileTable re-derives rows of the RD null table by Monte Carlo (fewer tenders
// than the table's 10⁶, so with a tolerance).
func TestRDQuantileTable(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(77, 78))
	const sims = 20000
	for _, n := range []int{3, 4, 6, 10, 20, 30} {
		rd := make([]float64, sims)
		b := make([]float64, n)
		for s := range rd {
			for i := range b {
				b[i] = 5 + 2*r.NormFloat64()
			}
			tn := tender{}
			for i, v := range b {
				tn.bids = append(tn.bids, bidRow{firm: int32(i), amount: v + 100})
			}
			rd[s] = screens(&tn).rd
		}
		slices.Sort(rd)
		for l, level := range rdLevels[:4] { // 0.5 … 0.05: enough simulated tail
			got := rd[int((1-level)*sims)]
			want := rdQuantiles[n-3][l]
			if math.Abs(got/want-1) > 0.08 {
				t.Errorf("n %d level %v: simulated quantile %v, table %v", n, level, got, want)
			}
		}
	}
}

func TestCompetitiveTendersProduceNoRing(t *testing.T) {
	t.Parallel()
	// 60 tenders of independent bids among 8 firms, two of them 10 % cheaper than the rest
	// (efficient firms win often and by a margin, but they do not rotate with covers).
	r := rand.New(rand.NewPCG(4, 4))
	var bids []Bid
	for j := 0; j < 60; j++ {
		v := 1e5 * math.Exp(r.NormFloat64())
		var bs []Bid
		for _, f := range r.Perm(8)[:3+r.IntN(4)] {
			eff := 1.0
			if f < 2 {
				eff = 0.9
			}
			bs = append(bs, Bid{Tender: string(rune('A'+j/26)) + string(rune('a'+j%26)), Firm: string(rune('p' + f)), Amount: f64(v * eff * math.Exp(0.05*r.NormFloat64()))})
		}
		low := 0
		for k := range bs {
			if *bs[k].Amount < *bs[low].Amount {
				low = k
			}
		}
		for k := range bs {
			bs[k].Won = bptr(k == low)
		}
		bids = append(bids, bs...)
	}
	a, err := Analyze(context.Background(), Input{MarketID: "m", Bids: bids})
	if err != nil {
		t.Fatal(err)
	}
	bp := a.Dimensions.BidPatterns
	if a.CollusionDetected || bp.FlaggedTenders != 0 || len(bp.FlaggedTenderIDs) != 0 || bp.RotationIndex != nil || bp.Score < 0.5 {
		t.Errorf("competitive tenders: detected %v, %+v", a.CollusionDetected, bp)
	}
}

// A ring of three whose members do not all cover every tender, with outsiders that bid from
// their own costs (and undercut the ring now and then), is named exactly, with each
// member's own evidence: it wins among the members, covers, and its wins carry the pattern.
func TestRingWithOutsidersIsNamedWithEachMembersEvidence(t *testing.T) {
	t.Parallel()
	in, tr := Generate(ScenarioBidRigging, 11, GenParams{Firms: 7, Tenders: 40, RingSize: 3, CoverShare: 0.8,
		OutsiderRate: 0.45, RandomRotation: true, RiggedShare: 0.8})
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !a.CollusionDetected || !slices.Equal(a.SuspectedGroups[0].Firms, tr.Members) {
		t.Fatalf("groups %+v, want the ring %v", a.SuspectedGroups, tr.Members)
	}
	ev := a.SuspectedGroups[0].Evidence
	if len(ev.Members) != len(tr.Members) {
		t.Fatalf("member evidence %+v", ev.Members)
	}
	for i, m := range ev.Members {
		if m.Firm != tr.Members[i] || m.Won == 0 || m.Covered == 0 || m.Tenders < m.Won+m.Covered || m.CoverZ == nil || *m.CoverZ <= 0 {
			t.Errorf("member %d: %+v", i, m)
		}
	}
	bp := a.Dimensions.BidPatterns
	hits := 0
	for _, id := range bp.FlaggedTenderIDs {
		if slices.Contains(tr.RiggedTenders, id) {
			hits++
		}
	}
	if bp.FlaggedTenders == 0 || float64(hits) < 0.8*float64(bp.FlaggedTenders) {
		t.Errorf("%d of %d flagged tenders rigged", hits, bp.FlaggedTenders)
	}
}

// Capacity-constrained firms take turns winning (a recent winner bids high) without cover
// bids: no ring, and the other groups' evidence carries no members.
func TestCapacityConstrainedFirmsAreNotARing(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 10; seed++ {
		in, _ := Generate(ScenarioCapacityTenders, seed, GenParams{Firms: 6, Tenders: 60, CapacityPenalty: 0.2, CapacityDecay: 0.5})
		a, err := Analyze(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if a.CollusionDetected || a.Dimensions.BidPatterns.FlaggedTenders != 0 {
			t.Errorf("seed %d: detected %v, groups %+v", seed, a.CollusionDetected, a.SuspectedGroups)
		}
	}
}
