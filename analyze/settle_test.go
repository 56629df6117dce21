package analyze

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// TestSettleAsAdded holds the deferred successes (hopAcc.settled) to what
// adding each to the digest as it came leaves: the same digest state,
// value for value and in order, across the times' thinning, the exact
// range's end, Part merges and a negative duration, and the sorted fill.
func TestSettleAsAdded(t *testing.T) {
	cases := []struct {
		name  string
		n     int // attempts
		parts int // Parts merged
		fail  float64
		neg   bool // one success with a negative duration
		early bool // the digests sketched early, times at level 0 (as publish does)
	}{
		{"few", 10, 1, 0.1, false, false},
		{"one success", 1, 1, 0, false, false},
		{"thins", maxHopTimes + 500, 1, 0.05, false, false},
		{"parts", 3000, 3, 0.2, false, false},
		{"parts thin on merge", maxHopTimes - 10, 2, 0.01, false, false},
		{"negative", 200, 1, 0.1, true, false},
		{"sketch", quantile.ExactLimit + 50, 2, 0.02, false, false},
		{"sketched early", 3000, 2, 0.1, false, true},
		{"thins on a failure", maxHopTimes + 100, 1, 0, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(c.n)))
			spans := make([]span.Span, c.n)
			for i := range spans {
				s := &spans[i]
				s.Hop = "h"
				s.Start = int64(i) * 1e6
				s.Duration = int64(r.ExpFloat64()*5e6) + 1
				if r.Float64() < c.fail {
					s.Status = span.Error
				}
			}
			if c.fail == 0 && c.n > maxHopTimes {
				spans[maxHopTimes].Status = span.Error // the attempt that thins
			}
			if c.neg {
				spans[c.n/2].Status, spans[c.n/2].Duration = span.OK, -5
			}
			sketch := func(h *hopAcc) {
				h.settle()
				h.succ.Sketch()
				h.flagged.Sketch()
				h.other.Sketch()
			}
			// eager: every success into the digest as it comes.
			eager := func() *hopAcc {
				hs := make([]*hopAcc, c.parts)
				for p := range hs {
					hs[p] = &hopAcc{name: "h"}
				}
				for i := range spans {
					h := hs[i%c.parts]
					f := h.addDurations(&spans[i], false)
					h.ex.add(&spans[i], f)
					h.times.add(&spans[i])
					h.settled = len(h.times.d)
					if c.early && i == c.n/3 {
						sketch(h)
					}
				}
				all := &hopAcc{name: "h"}
				for _, h := range hs {
					all.merge(h)
				}
				return all
			}
			lazy := func() *hopAcc {
				hs := make([]*hopAcc, c.parts)
				for p := range hs {
					hs[p] = &hopAcc{name: "h"}
				}
				for i := range spans {
					hs[i%c.parts].add(&spans[i])
					if c.early && i == c.n/3 {
						sketch(hs[i%c.parts])
					}
				}
				all := &hopAcc{name: "h"}
				for _, h := range hs {
					all.merge(h)
				}
				return all
			}
			e, l := eager(), lazy()
			if !reflect.DeepEqual(e.succ.State(), l.succ.State()) || e.succ.N() != l.succ.N() {
				t.Fatalf("digests differ: %d against %d values", e.succ.N(), l.succ.N())
			}
			// The sorted fill (Measure) gives the same again.
			e2, l2 := eager(), lazy()
			a, b := &Accum{hops: map[string]*hopAcc{"h": e2}}, &Accum{hops: map[string]*hopAcc{"h": l2}}
			a.sortSuccesses()
			b.sortSuccesses()
			if !reflect.DeepEqual(e2.succ.Sorted(), l2.succ.Sorted()) || e2.succ.N() != l2.succ.N() || e2.succ.Min() != l2.succ.Min() || e2.succ.Max() != l2.succ.Max() {
				t.Fatal("sorted digests differ")
			}
			if l2.settled != len(l2.times.d) && l2.times.level == 0 {
				t.Fatalf("settled %d of %d", l2.settled, len(l2.times.d))
			}
		})
	}
}
