package convergence

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// handRing builds tenders in which rotors take turns winning at 15 % above the tender's
// value, every other rotor and every coverer bids 4–6 % above the winner, and each
// undercutter bids 10 % below the ring's winner in the given share of the tenders (else
// 20–30 % above the value, well clear of the ring); firm f's bids carry noise of 0.5 %.
func handRing(seed uint64, tenders int, rotors, coverers, undercutters []string, undercut float64) Input {
	r := rand.New(rand.NewPCG(seed, 3))
	var bids []Bid
	for j := range tenders {
		id := fmt.Sprintf("T-%03d", j+1)
		v := 1e5 * math.Exp(r.NormFloat64())
		w := rotors[j%len(rotors)]
		win := v * 1.15
		add := func(f string, amt float64) {
			bids = append(bids, Bid{Tender: id, Firm: f, Amount: ptr(math.Round(amt*(1+0.005*r.NormFloat64())*100) / 100), Won: ptr(false)})
		}
		add(w, win)
		for _, f := range rotors {
			if f != w {
				add(f, win*(1.04+0.02*r.Float64()))
			}
		}
		for _, f := range coverers {
			add(f, win*(1.04+0.02*r.Float64()))
		}
		for _, f := range undercutters {
			if r.Float64() < undercut {
				add(f, win*0.9)
			} else {
				add(f, v*(1.2+0.1*r.Float64()))
			}
		}
	}
	return Input{MarketID: "hand-ring", Bids: bids}
}

func screenOf(t *testing.T, in Input, firms ...string) (*ringSearch, subsetScreen) {
	t.Helper()
	v, err := in.validated()
	if err != nil {
		t.Fatal(err)
	}
	rs := newRingSearch(v, &stopper{ctx: context.Background()})
	var set []int32
	for _, name := range firms {
		i := slices.Index(v.bidFirms, name)
		if i < 0 {
			t.Fatalf("no firm %s", name)
		}
		set = append(set, int32(i))
	}
	slices.Sort(set)
	return rs, rs.screen(set)
}

// A member that covers tightly in every tender but never wins belongs to a ring whose other
// members take turns (coverOnly); without two rotating members it does not.
func TestCoverOnlyMemberJoinsARotatingRing(t *testing.T) {
	t.Parallel()
	in := handRing(1, 30, []string{"A", "B"}, []string{"C"}, nil, 0)
	_, sc := screenOf(t, in, "A", "B", "C")
	c := sc.members[2]
	if c.won != 0 || sc.members[0].won == 0 || sc.members[1].won == 0 {
		t.Fatalf("wins: %+v", sc.members)
	}
	if c.ok() || !c.coverOnly() || sc.rotating() != 2 || !sc.qualifies() {
		t.Fatalf("C ok %v coverOnly %v, rotating %d, qualifies %v: %+v", c.ok(), c.coverOnly(), sc.rotating(), sc.qualifies(), c)
	}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !a.CollusionDetected || !slices.Equal(a.SuspectedGroups[0].Firms, []string{"A", "B", "C"}) {
		t.Fatalf("groups %+v", a.SuspectedGroups)
	}

	// One firm wins every tender, two only cover: no rotation, so no ring.
	in = handRing(2, 30, []string{"A"}, []string{"B", "C"}, nil, 0)
	_, sc = screenOf(t, in, "A", "B", "C")
	if sc.rotating() >= 2 || sc.qualifies() {
		t.Fatalf("a single winner with two coverers qualifies: rotating %d, %+v", sc.rotating(), sc.members)
	}
}

// An outsider that undercuts the ring in half its tenders wins by a margin far wider than
// the ring's own; trimUndercutters drops it from a subset of the ring and it, and the ring
// is named without it.
func TestUndercuttingOutsiderIsTrimmed(t *testing.T) {
	t.Parallel()
	in := handRing(3, 40, []string{"A", "B", "C", "D"}, nil, []string{"E"}, 0.5)
	rs, sc := screenOf(t, in, "A", "B", "C", "D", "E")
	e := len(sc.firms) - 1 // E bids last in the first tender, so it has the highest index
	ratios := rs.marginRatios(sc.firms)
	if sc.members[e].winN < minMarginWins || !(ratios[e] > maxMarginRatio) {
		t.Fatalf("outsider's margins not judged wide: ratios %v, %+v", ratios, sc.members[e])
	}
	for i, r := range ratios {
		if i != e && r > maxMarginRatio {
			t.Fatalf("a member's margins judged wide: ratios %v", ratios)
		}
	}
	got := rs.trimUndercutters(sc)
	if names := len(got.firms); names != 4 || slices.Contains(got.firms, sc.firms[4]) {
		t.Fatalf("trimmed to %v, want the four ring members", got.firms)
	}
	a, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !a.CollusionDetected || !slices.Equal(a.SuspectedGroups[0].Firms, []string{"A", "B", "C", "D"}) {
		t.Fatalf("groups %+v", a.SuspectedGroups)
	}
}

// Tenders where the members meet among other firms' bids (a competitive tender: an outsider
// bids between them) count towards a member's participation but not towards the z sums that
// judge it: its wins, covers and own tenders are those of the ring's tenders alone.
func TestInterleavedTendersDoNotJudgeMembers(t *testing.T) {
	t.Parallel()
	ring := handRing(4, 24, []string{"A", "B", "C"}, nil, nil, 0)
	mixed := ring
	mixed.Bids = slices.Clone(ring.Bids)
	const interleaved = 12
	for j := range interleaved {
		id := fmt.Sprintf("C-%03d", j+1)
		v := 1e5 * (1 + 0.1*float64(j))
		// A wins clearly, B sits just above it, an outsider between B and C: RD small.
		for _, b := range []struct {
			f string
			x float64
		}{{"A", 1}, {"B", 1.01}, {"X", 1.1}, {"C", 1.2}} {
			mixed.Bids = append(mixed.Bids, Bid{Tender: id, Firm: b.f, Amount: ptr(v * b.x), Won: ptr(b.f == "A")})
		}
	}
	_, alone := screenOf(t, ring, "A", "B", "C")
	_, with := screenOf(t, mixed, "A", "B", "C")
	if with.n != alone.n+interleaved {
		t.Fatalf("subset tenders %d, want %d", with.n, alone.n+interleaved)
	}
	for i := range alone.members {
		a, w := alone.members[i], with.members[i]
		if w.shared != a.shared+interleaved || w.nZ != a.nZ || w.covZ != a.covZ || w.winZ != a.winZ || w.sumZ != a.sumZ {
			t.Fatalf("member %d: alone %+v, with interleaved tenders %+v", i, a, w)
		}
	}
	if !with.qualifies() {
		t.Fatalf("ring does not qualify: %+v", with.members)
	}
}

// The null draws fit the work bound: the draws that allow one exceedance where they fit, the
// fewest that resolve the level (no exceedance) where only those fit, none beyond; every
// count it gives resolves the level.
func TestSimDrawsFitTheWorkBound(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		work  int
		want  int
	}{
		{0.01, 1_000, 199},
		{0.01, maxSimWork / 199, 199},
		{0.01, maxSimWork/199 + 1, 99},
		{0.01, maxSimWork / 99, 99},
		{0.01, maxSimWork/99 + 1, 0},
		{0.005, 1_000, 399},
		{0.005, maxSimWork / 200, 199},
		{0.1, 1_000, 19},
	} {
		got := simDraws(c.alpha, c.work)
		if got != c.want {
			t.Errorf("simDraws(%v, %d) = %d, want %d", c.alpha, c.work, got, c.want)
		}
		if got > 0 && 1/float64(got+1) > c.alpha {
			t.Errorf("simDraws(%v, %d) = %d cannot resolve the level", c.alpha, c.work, got)
		}
	}
}
