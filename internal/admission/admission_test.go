package admission

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAccountsAllowLimitRequestsPerAccount(t *testing.T) {
	a := NewAccounts(2)
	l1, ok1 := a.Enter("acct_a")
	_, ok2 := a.Enter("acct_a")
	_, ok3 := a.Enter("acct_a")
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("enters = %v %v %v, want true true false", ok1, ok2, ok3)
	}
	if _, ok := a.Enter("acct_b"); !ok {
		t.Fatal("another account was refused")
	}
	l1()
	l1() // a second call counts nothing
	if _, ok := a.Enter("acct_a"); !ok {
		t.Fatal("a freed slot was not given again")
	}
	if _, ok := a.Enter("acct_a"); ok {
		t.Fatal("a double leave freed two slots")
	}
	if NewAccounts(0).Limit() != DefaultPerAccount {
		t.Fatal("zero limit is not the default")
	}
}

func TestMemoryNeverExceedsTheBudget(t *testing.T) {
	const limit = 100
	m := NewMemory(limit, 5*time.Second)
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.Reserve(context.Background(), int64(10+i%5*10))
			if err != nil {
				t.Error(err)
				return
			}
			now := held.Add(r.Bytes())
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			time.Sleep(time.Millisecond)
			held.Add(-r.Bytes())
			r.Release()
		}()
	}
	wg.Wait()
	if peak.Load() > limit {
		t.Fatalf("peak %d bytes held, budget %d", peak.Load(), limit)
	}
	if peak.Load() == 0 {
		t.Fatal("nothing was ever held")
	}
}

func TestMemoryWaitsThenRefuses(t *testing.T) {
	m := NewMemory(100, 50*time.Millisecond)
	big, err := m.Reserve(context.Background(), 80)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := m.Reserve(context.Background(), 30); !errors.Is(err, ErrMemoryBusy) {
		t.Fatalf("over budget: %v, want ErrMemoryBusy", err)
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("refused after %v, before the wait ran out", waited)
	}
	if _, err := m.Reserve(context.Background(), 101); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("larger than the budget: %v, want ErrTooLarge", err)
	}
	go func() { time.Sleep(10 * time.Millisecond); big.Release() }()
	r, err := m.Reserve(context.Background(), 30)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	if err := r.Grow(context.Background(), 71); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("growing past the budget: %v, want ErrTooLarge", err)
	}
	if err := r.Grow(context.Background(), 70); err != nil || r.Bytes() != 100 {
		t.Fatalf("grow to the budget: %v, %d bytes", err, r.Bytes())
	}
	r.Release()
	r.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Reserve(ctx, 100); !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller already gone: %v, want its context's error", err)
	}
}

func TestDefaultMemoryLimitIsHalfOfWhatTheProcessMayUse(t *testing.T) {
	got := DefaultMemoryLimit()
	total := machineMemory()
	if total == 0 {
		t.Skip("no /proc/meminfo on this system")
	}
	if got <= 0 || got > total/2 {
		t.Fatalf("default %d bytes, machine %d", got, total)
	}
}

// A growth of memory already held is served before new reservations that arrived first:
// otherwise a request waiting to grow would wait behind newcomers that wait for it.
func TestGrowthIsServedBeforeNewReservations(t *testing.T) {
	m := NewMemory(100, 2*time.Second)
	held, err := m.Reserve(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	newcomer := make(chan error, 1)
	go func() {
		r, err := m.Reserve(context.Background(), 60)
		if err == nil {
			defer r.Release()
		}
		newcomer <- err
	}()
	time.Sleep(20 * time.Millisecond) // the newcomer waits: 60 + 60 > 100
	if err := held.Grow(context.Background(), 30); err != nil {
		t.Fatalf("growth behind a waiting newcomer: %v", err)
	}
	held.Release()
	if err := <-newcomer; err != nil {
		t.Fatalf("newcomer after the release: %v", err)
	}
}

// Two requests whose bodies fill the budget and that both need more for their work would
// each wait for the other until both timed out: the newest is refused at once instead, and
// once its request gives its memory back the other is served.
func TestGrowthsThatWaitOnEachOtherDoNotBothTimeOut(t *testing.T) {
	m := NewMemory(100, 5*time.Second)
	a, _ := m.Reserve(context.Background(), 50)
	b, _ := m.Reserve(context.Background(), 50)
	grown := make(chan error, 1)
	go func() { grown <- a.Grow(context.Background(), 30) }()
	time.Sleep(20 * time.Millisecond) // a waits: b holds the rest and is running
	start := time.Now()
	if err := b.Grow(context.Background(), 30); !errors.Is(err, ErrMemoryBusy) {
		t.Fatalf("the newest of two stuck growths: %v, want ErrMemoryBusy at once", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("refused after %v, want at once", waited)
	}
	b.Release()
	if err := <-grown; err != nil {
		t.Fatalf("the older growth after the other gave its memory back: %v", err)
	}
	if a.Bytes() != 80 {
		t.Fatalf("a holds %d bytes, want 80", a.Bytes())
	}
	a.Release()
}

// Background work keeps its place without a deadline: it is served when memory frees,
// however long that takes, and gives up only when its context ends.
func TestReserveWhenFreeKeepsItsPlace(t *testing.T) {
	m := NewMemory(100, 10*time.Millisecond)
	held, _ := m.Reserve(context.Background(), 100)
	got := make(chan error, 1)
	go func() {
		r, err := m.ReserveWhenFree(context.Background(), 60)
		if err == nil {
			r.Release()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // five of the budget's waits
	held.Release()
	if err := <-got; err != nil {
		t.Fatalf("background reservation: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	held, _ = m.Reserve(context.Background(), 100)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := m.ReserveWhenFree(ctx, 60); !errors.Is(err, context.Canceled) {
		t.Fatalf("after its context ended: %v", err)
	}
	held.Release()
}

// Cores grants what is free and never more: a second request while the first holds every
// core runs on its own goroutine alone, and gets the cores once they are given back.
func TestCoresGrantWhatIsFree(t *testing.T) {
	c := NewCores(4)
	a, releaseA := c.Take(3)
	b, releaseB := c.Take(3)
	d, releaseD := c.Take(3)
	if a != 3 || b != 1 || d != 1 {
		t.Fatalf("grants %d, %d, %d; want 3, 1 (the last free core) and 1 (none free: its own goroutine)", a, b, d)
	}
	releaseD()
	releaseA()
	releaseA() // a second release gives nothing back twice
	if e, releaseE := c.Take(8); e != 3 {
		t.Fatalf("after a release, grant %d; want the 3 free", e)
	} else {
		releaseE()
	}
	releaseB()
	if e, _ := c.Take(8); e != 4 {
		t.Fatalf("with every core free, grant %d; want 4", e)
	}
	if got := NewCores(0).Limit(); got != runtime.GOMAXPROCS(0) {
		t.Fatalf("default limit %d; want GOMAXPROCS %d", got, runtime.GOMAXPROCS(0))
	}
}
