package convergence

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

// workerCounts are the numbers of workers whose analyses must have the same bytes.
var workerCounts = []int{1, 2, 3, 8}

// workersMarkets are the markets the worker tests analyse: every scenario of the golden
// file (testdata/analyses.golden, seeds 1 and 2), and larger markets whose loops split into
// many units (pairs, firms, messages, blocks of coordinated changes, tenders).
func workersMarkets() []struct {
	name string
	in   Input
} {
	var out []struct {
		name string
		in   Input
	}
	for _, sc := range Scenarios() {
		for seed := int64(1); seed <= 2; seed++ {
			in, _ := Generate(sc, seed, GenParams{})
			out = append(out, struct {
				name string
				in   Input
			}{sc + "/" + string(rune('0'+seed)), in})
		}
	}
	cartel, _ := Generate(ScenarioCartel, 3, GenParams{Firms: 40, Periods: 300, Messages: 1, PeriodForm: FormDate})
	division, _ := Generate(ScenarioMarketDivision, 3, GenParams{Firms: 20, Periods: 200})
	tenders, _ := Generate(ScenarioBidRigging, 3, GenParams{Tenders: 300, Firms: 30})
	return append(out, []struct {
		name string
		in   Input
	}{{"cartel 40×300 with messages", cartel}, {"market_division 20×200", division}, {"bid_rigging 300 tenders", tenders}}...)
}

// An analysis has the same bytes on 1, 2, 3 and 8 workers, on every fixture.
func TestWorkersKeepTheBytes(t *testing.T) {
	t.Parallel()
	for _, m := range workersMarkets() {
		var want []byte
		for _, w := range workerCounts {
			in := m.in
			in.Run = Options{Workers: w}
			a, err := Analyze(context.Background(), in)
			if err != nil {
				t.Fatalf("%s on %d workers: %v", m.name, w, err)
			}
			got, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = got
				continue
			}
			if string(got) != string(want) {
				t.Errorf("%s: the analysis on %d workers differs from the one on 1 worker:\n%s\nwant\n%s", m.name, w, got, want)
			}
		}
	}
}

// A crew runs at most Workers goroutines at once, loops nested in loops included, and every
// unit of every loop once.
func TestWorkersNeverExceedTheirNumber(t *testing.T) {
	for _, w := range workerCounts {
		stop := &stopper{ctx: context.Background(), crew: newCrew(Options{Workers: w})}
		var running, most, units atomic.Int64
		enter := func() {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		}
		stop.each(6, 1, func(i int, st *stopper) {
			st.each(50, 0, func(j int, _ *stopper) {
				enter()
				time.Sleep(50 * time.Microsecond) // long enough for the others to start
				units.Add(1)
				running.Add(-1)
			})
		})
		if units.Load() != 300 {
			t.Errorf("%d workers ran %d units, want 300", w, units.Load())
		}
		if most.Load() > int64(w) {
			t.Errorf("%d workers: %d units ran at once", w, most.Load())
		}
		if w > 1 && most.Load() < 2 {
			t.Errorf("%d workers: never more than one unit at once", w)
		}
	}
}

// A cancelled analysis on many workers returns ctx's error, and its goroutines have ended
// when Analyze returns.
func TestWorkersStopOnCancelWithoutLeaks(t *testing.T) {
	in, _ := Generate(ScenarioCartel, 1, GenParams{Firms: 40, Periods: 300, Messages: 1, PeriodForm: FormDate})
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	in.Run = Options{Workers: 8}
	before := runtime.NumGoroutine()
	for _, after := range []time.Duration{0, 200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(after, cancel)
		_, err := Analyze(ctx, in)
		timer.Stop()
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled after %v: %v, want context.Canceled or a result", after, err)
		}
		if n := goroutinesEnd(before); n > before {
			t.Fatalf("cancelled after %v: %d goroutines a second after Analyze returned, %d before", after, n, before)
		}
	}
}

// A panic in a helper goroutine is raised again in the caller, once every helper has ended.
func TestWorkersRaiseAPanicInTheCaller(t *testing.T) {
	stop := &stopper{ctx: context.Background(), crew: newCrew(Options{Workers: 4})}
	before := runtime.NumGoroutine()
	defer func() {
		if p := recover(); p != "unit 37" {
			t.Errorf("recovered %v, want the panic of unit 37", p)
		}
		if n := goroutinesEnd(before); n > before {
			t.Errorf("%d goroutines a second after the panic, %d before", n, before)
		}
	}()
	stop.each(100, 1, func(i int, _ *stopper) {
		time.Sleep(10 * time.Microsecond)
		if i == 37 {
			panic("unit 37")
		}
	})
	t.Error("each returned without raising the panic")
}

// goroutinesEnd waits up to a second for the number of goroutines to fall to want (a
// goroutine that has signalled its end still has to exit) and returns the last count.
func goroutinesEnd(want int) int {
	deadline := time.Now().Add(time.Second)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// Validation reports the same first failure on 1, 2, 3 and 8 workers, wherever it is in a
// market large enough to be checked in many chunks (errors before, in and after other
// failures, repeated rows included).
func TestWorkersValidateAlike(t *testing.T) {
	t.Parallel()
	base, _ := Generate(ScenarioCartel, 4, GenParams{Firms: 40, Periods: 300, Messages: 1, PeriodForm: FormDate})
	n := len(base.Observations)
	edits := map[string]func(in *Input){
		"valid": func(*Input) {},
		"missing firm late": func(in *Input) {
			in.Observations[n-5].Firm = ""
		},
		"bad price and earlier repeat": func(in *Input) {
			in.Observations[n/2] = in.Observations[n/3]
			in.Observations[n-100].Price = nil
		},
		"repeat only": func(in *Input) {
			in.Observations[n-1] = in.Observations[7]
		},
		"integer period among dates": func(in *Input) {
			in.Observations[3*n/4].Period = IntPeriod(5)
		},
		"long segment then negative cost": func(in *Input) {
			in.Observations[n/5].Segment = string(make([]byte, 200))
			neg := -1.0
			in.Observations[n/6].Cost = &neg
		},
		"message timestamps": func(in *Input) {
			in.Communications[len(in.Communications)-3].Timestamp = IntPeriod(4)
			in.Communications[len(in.Communications)/2].From = ""
		},
	}
	for name, edit := range edits {
		var want string
		for _, w := range workerCounts {
			in := base
			in.Observations = slices.Clone(base.Observations)
			in.Communications = slices.Clone(base.Communications)
			edit(&in)
			in.Run = Options{Workers: w}
			got := fmt.Sprint(in.Validate())
			if w == 1 {
				want = got
				t.Logf("%s: %s", name, got)
				continue
			}
			if got != want {
				t.Errorf("%s on %d workers: %s, want %s (1 worker)", name, w, got, want)
			}
		}
		if name != "valid" && want == "<nil>" {
			t.Errorf("%s: no failure reported", name)
		}
	}
}
