package analyze

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
)

// The whole analysis — two Parts and their publishes, the sample, the
// per-hop tables, the trees' critical paths and ranking, the
// recommendation with its replay loop, the cardinality rule — costs work
// linear (up to the log of its sorts) in the spans and the hops together:
// 16× the spans over 16× the distinct hops take at most 40× the
// allocations and the CPU time, with every trace kept whole and with a
// sample (a part quadratic in hops, or in spans × hops, takes 256×).
// Publishing, which once walked every hop every 8192 spans, visits at most
// one hop per span added.
func TestAnalysisLinearInHops(t *testing.T) {
	if testing.Short() {
		t.Skip("scaling test")
	}
	work := func(traces, hops, sample int) (allocs uint64, cpu time.Duration) {
		spans := spantest.IDSpans(3, traces, hops, []int{0, 1, 2, 3, 4})
		cpu = time.Duration(1<<63 - 1)
		for range 3 {
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			c0 := cpuTime()
			a := NewAccum(sample)
			parts := []*Part{a.Part(), a.Part()}
			for i := range spans {
				if parts[i%2].Add(&spans[i]) {
					a.Ordered(&spans[i])
				}
			}
			for _, p := range parts {
				if p.published > p.n {
					t.Fatalf("publishing visited %d hops for %d spans", p.published, p.n)
				}
				a.Merge(p)
			}
			rep := measured(a, Options{})
			cpu = min(cpu, cpuTime()-c0)
			runtime.ReadMemStats(&m1)
			allocs = m1.Mallocs - m0.Mallocs
			if rep.UnboundedHops() == nil {
				t.Fatalf("%d hops: no %s", hops, WarnUnboundedHops)
			}
		}
		return allocs, cpu
	}
	for _, c := range []struct {
		name   string
		sample int
	}{{"whole", 1 << 20}, {"sampled", 20000}} {
		t.Run(c.name, func(t *testing.T) {
			var a1, a16 uint64
			var t1, t16 time.Duration
			for try := 0; try < 3; try++ {
				a1, t1 = work(1500, 250, c.sample)
				a16, t16 = work(24000, 4000, c.sample)
				t.Logf("9k spans, 250 hops: %d allocs, %s CPU; 144k spans, 4000 hops: %d allocs, %s CPU (×%.1f, ×%.1f)",
					a1, t1, a16, t16, float64(a16)/float64(a1), float64(t16)/float64(max(t1, time.Millisecond)))
				if float64(t16) <= 40*float64(max(t1, time.Millisecond)) {
					break
				}
			}
			if r := float64(a16) / float64(a1); r > 40 {
				t.Errorf("16× the spans and hops made %.1f× the allocations", r)
			}
			if r := float64(t16) / float64(max(t1, time.Millisecond)); r > 40 {
				t.Errorf("16× the spans and hops took %.1f× the CPU time", r)
			}
		})
	}
}

// A publish visits the hops that gained attempts since the last one, not
// every hop the Part holds: with hops that appear once and never again,
// walking them all every publishEvery spans cost spans × hops.
func TestPublishVisitsTouchedHops(t *testing.T) {
	const hops = 5000
	a := NewAccum(0)
	p := a.Part()
	mk := func(hop string) span.Span {
		return span.Span{TraceID: "t", SpanID: "s", Hop: hop, Duration: 1e6, Weight: 1}
	}
	for i := range hops {
		sp := mk(fmt.Sprintf("GET /users/%d", i))
		p.Add(&sp)
	}
	hot := mk("login")
	rounds := 4
	for range rounds * publishEvery {
		p.Add(&hot)
	}
	if max := int64(hops + 1 + rounds + 1); p.published > max {
		t.Errorf("publishing visited %d hop entries for %d hops and %d publishes, want at most %d", p.published, hops+1, rounds+1, max)
	}
	a.Merge(p)
	if got := len(a.hops); got != hops+1 {
		t.Errorf("%d hops after merge", got)
	}
}
