package analyze

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/tailscope/tailscope/span"
)

// wideTrace is one trace of n spans: a root and n−1 sibling calls under
// it (sequential and overlapping, some failed), each with a server child
// in another service every other call; or, deep, a chain of client/server
// pairs.
func wideTrace(n int, deep bool) []span.Span {
	rng := rand.New(rand.NewPCG(1, 3))
	t0 := int64(1_760_000_000) * 1e9
	out := []span.Span{{TraceID: "w", SpanID: "0", Service: "gw", Name: "op", Kind: "server", Hop: "root", Start: t0, Duration: int64(n) * 2_000_000, Weight: 1}}
	at := t0 + 1000
	for i := 1; len(out) < n; i++ {
		d := int64(500_000 + rng.IntN(1_000_000))
		parent := "0"
		if deep {
			parent = out[len(out)-1].SpanID
			at = out[len(out)-1].Start + 1
			d = out[len(out)-1].Duration - 2
		}
		c := span.Span{TraceID: "w", SpanID: fmt.Sprintf("c%d", i), ParentID: parent, Service: "gw", Name: "call", Kind: "client",
			Hop: fmt.Sprintf("hop%d", i), Start: at, Duration: d, Weight: 1}
		if rng.IntN(20) == 0 {
			c.Status = span.Error
		}
		out = append(out, c)
		if i%2 == 0 {
			out = append(out, span.Span{TraceID: "w", SpanID: fmt.Sprintf("s%d", i), ParentID: c.SpanID, Service: fmt.Sprintf("svc%d", i%7), Name: "handle",
				Kind: "server", Hop: fmt.Sprintf("srv%d", i%13), Start: at + 100, Duration: d - 200, Weight: 1})
		}
		if !deep && rng.IntN(3) != 0 {
			at += d + 1000
		}
	}
	return out
}

// The tail parts (gaps, critical paths, ranking, hop order, compare) grow
// linearly with one trace's size, wide or deep, with as many hops as
// spans: 16× the spans take at most 40× the CPU time (best of three; CPU
// time, not wall time, so that a loaded machine does not fail it: 50–118×
// wall-clock was seen on two cores shared by five builds, ×17 CPU).
func TestTailLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	for _, deep := range []bool{false, true} {
		run := func(n int) time.Duration {
			spans := wideTrace(n, deep)
			reqs, _ := span.Assemble(spans)
			best := time.Duration(1<<63 - 1)
			for range 3 {
				rep := &Report{}
				names := map[string]bool{}
				for _, s := range spans {
					if !names[s.Hop] {
						names[s.Hop] = true
						rep.Hops = append(rep.Hops, Hop{Hop: s.Hop})
					}
				}
				runtime.GC() // the garbage of building rep is not the tail parts' cost
				start := cpuTime()
				WhereTailComesFrom(rep, reqs)
				Compare(rep, rep, "a", "b")
				best = min(best, cpuTime()-start)
			}
			return best
		}
		// Measured up to three times: a busy machine (go test runs
		// packages in parallel) slows one size more than the other; a
		// quadratic part fails every time.
		var ratio float64
		for try := 0; try < 3; try++ {
			t1, t16 := run(10000), run(160000)
			ratio = float64(t16) / float64(max(t1, time.Millisecond))
			t.Logf("deep=%v: 10k spans %s, 160k %s (×%.1f)", deep, t1, t16, ratio)
			if ratio <= 40 {
				break
			}
		}
		if ratio > 40 {
			t.Errorf("deep=%v: ×%.1f for 16× the spans", deep, ratio)
		}
	}
}
