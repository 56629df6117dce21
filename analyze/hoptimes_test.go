package analyze

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tailscope/tailscope/span"
)

// each visits every kept attempt once, the successes by ascending
// duration, however the attempts came and after more came in; with a
// success too long to pack with its index it keeps index order.
func TestHopTimesEachByDuration(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	type att struct {
		at, d  int64
		failed bool
	}
	check := func(t *testing.T, ht *hopTimes, want []att) {
		t.Helper()
		var got []att
		ht.each(func(at, d int64, failed bool) { got = append(got, att{at, d, failed}) })
		var last int64 = -1
		for _, a := range got {
			if !a.failed {
				if a.d < last {
					t.Fatalf("successes out of duration order: %d after %d", a.d, last)
				}
				last = a.d
			}
		}
		key := func(a, b att) int {
			switch {
			case a.at != b.at:
				return int(min(max(a.at-b.at, -1), 1))
			case a.d != b.d:
				return int(min(max(a.d-b.d, -1), 1))
			case a.failed != b.failed:
				if a.failed {
					return 1
				}
				return -1
			}
			return 0
		}
		slices.SortFunc(got, key)
		w := slices.Clone(want)
		slices.SortFunc(w, key)
		if !slices.Equal(got, w) {
			t.Fatalf("visited %d attempts, not the %d kept", len(got), len(w))
		}
	}
	for round := range 50 {
		ht := &hopTimes{}
		var want []att
		add := func(n int) {
			for range n {
				sp := &span.Span{Start: int64(r.IntN(1e6)), Duration: int64(r.IntN(30)) * 1000}
				if r.IntN(5) == 0 {
					sp.Status = span.Error
				}
				ht.add(sp)
				want = append(want, att{sp.Start, sp.Duration, sp.Failed()})
			}
		}
		add(r.IntN(500) + 1)
		check(t, ht, want)
		add(r.IntN(300) + 1) // the order is made again for the new attempts
		check(t, ht, want)
		if round == 0 {
			ht.add(&span.Span{Start: 1, Duration: 1 << 50})
			want = append(want, att{1, 1 << 50, false})
			if ht.byDuration() != nil {
				t.Fatal("a duration over 2^47 ns packed with its index")
			}
			var got int
			ht.each(func(int64, int64, bool) { got++ })
			if got != len(want) {
				t.Fatalf("index order visited %d of %d", got, len(want))
			}
		}
	}
}

// The successes' digest, left unsorted by the Parts' merge, is given its
// values sorted from the attempt times' order — the hop's successes, to
// the value — and keeps its own when the times hold other values.
func TestSortSuccessesFromTimes(t *testing.T) {
	ss := chainSpans(9, 300)
	want := map[string][]int64{}
	for _, s := range ss {
		if !s.Failed() {
			want[s.Hop] = append(want[s.Hop], s.Duration)
		}
	}
	for _, tamper := range []bool{false, true} {
		a := forked(ss, 1<<20, 2, 1, 4)
		if tamper {
			for _, h := range a.hops {
				for i, d := range h.times.d {
					if d > 0 {
						h.times.d[i] = d + 1 // not the digest's value any more
						break
					}
				}
			}
		}
		a.sortSuccesses()
		for name, h := range a.hops {
			w := slices.Sorted(slices.Values(want[name]))
			if got := h.succ.Sorted(); !slices.Equal(got, w) {
				t.Fatalf("tampered %v, hop %s: %d successes sorted, not the %d logged", tamper, name, len(got), len(w))
			}
		}
	}
}

// durationOrder is the order of sorting (duration, index) over the
// successes, then the failures by index, by radix or by comparison,
// whatever the durations' spread and ties.
func TestDurationOrderSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	gens := map[string]func() int64{
		"µs lognormal": func() int64 { return int64(math.Exp(r.NormFloat64()*0.6+17)) / 1000 * 1000 },
		"whole ms":     func() int64 { return int64(r.IntN(40)) * 1e6 },
		"wide":         func() int64 { return r.Int64N(1 << 46) },
		"one value":    func() int64 { return 7e6 },
	}
	for name, gen := range gens {
		for _, n := range []int{2, 100, radixOrderFrom - 1, radixOrderFrom, 900, 5000, 1 << 16} {
			d := make([]int64, n)
			for i := range d {
				d[i] = gen()
				if r.IntN(20) == 0 {
					d[i] = -1 - d[i]
				}
			}
			var want []uint16
			for i := range d {
				if d[i] >= 0 {
					want = append(want, uint16(i))
				}
			}
			slices.SortFunc(want, func(a, b uint16) int {
				if d[a] != d[b] {
					return cmp.Compare(d[a], d[b])
				}
				return cmp.Compare(a, b)
			})
			for i := range d {
				if d[i] < 0 {
					want = append(want, uint16(i))
				}
			}
			if got := durationOrder(d); !slices.Equal(got, want) {
				t.Fatalf("%s, %d attempts: not the (duration, index) order", name, n)
			}
		}
	}
}
