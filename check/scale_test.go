package check

import (
	"fmt"
	"github.com/tailscope/tailscope/internal/cputime"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// hostileTrace builds one trace of n spans in a shape that once made a
// walk quadratic or recursive without bound: a parent chain n deep, n
// sibling calls under one root (sequential and overlapping, some failed
// and retried), or a random tree mixing both.
func hostileTrace(shape string, n int, seed uint64) []span.Span {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]span.Span, 0, n)
	t0 := int64(1_760_000_000) * 1e9
	add := func(id, parent int, start, dur int64, failed bool) {
		s := span.Span{TraceID: "deep", SpanID: fmt.Sprintf("%x", id+1), Service: fmt.Sprintf("svc%d", id%7),
			Name: "op", Kind: "client", Hop: fmt.Sprintf("hop%d", id%13), Start: start, Duration: dur, Weight: 1}
		if parent >= 0 {
			s.ParentID = fmt.Sprintf("%x", parent+1)
		}
		if failed {
			s.Status = span.Error
		}
		out = append(out, s)
	}
	switch shape {
	case "deep":
		for i := range n {
			add(i, i-1, t0+int64(i)*1000, int64(n-i)*1000+500, false)
		}
	case "wide":
		add(0, -1, t0, int64(n)*2_000_000, false)
		at := t0 + 1000
		for i := 1; i < n; i++ {
			d := int64(500_000 + rng.IntN(1_000_000))
			add(i, 0, at, d, rng.IntN(20) == 0)
			if rng.IntN(3) != 0 {
				at += d + 1000 // sequential; else the next overlaps
			}
		}
	default: // a random tree: each span under a recent one
		add(0, -1, t0, int64(n)*1_000_000, false)
		for i := 1; i < n; i++ {
			p := max(0, i-1-rng.IntN(8))
			ps := out[p]
			add(i, p, ps.Start+1, max(1, ps.Duration/2), rng.IntN(30) == 0)
		}
	}
	return out
}

// The whole pipeline — tree, analysis, recommendation (with its replay
// loop), lint and replay of the check — grows linearly (up to the log of
// its sorts) with the size of one trace, whatever its shape: 16× the spans
// take at most 40× the time. Measured 11–31× on a busy 2-core machine (the
// sibling sort's log factor and a heap that outgrows the caches); the
// quadratic walks this guards against took 256× and more. Times are the
// best of three runs.
func TestPipelineLinearInTraceSize(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	run := func(spans []span.Span) time.Duration {
		best := time.Duration(1<<63 - 1)
		cp := make([]span.Span, len(spans))
		for range 3 {
			copy(cp, spans)
			start := cputime.Now()
			reqs, probs := span.Assemble(cp)
			rep, rec := recommend.Run(cp, reqs, probs, analyze.Options{})
			Run(rep, reqs, []*policy.Policy{rec}, Options{})
			best = min(best, cputime.Since(start))
		}
		return best
	}
	for _, shape := range []string{"deep", "wide", "tree"} {
		t.Run(shape, func(t *testing.T) {
			base := 10000
			var t1, t16 time.Duration
			var ratio float64
			// Measured three times at most: a busy machine slows one size more
			// than the other; a quadratic walk fails both times.
			for try := 0; try < 3; try++ {
				t1 = run(hostileTrace(shape, base, 1))
				t16 = run(hostileTrace(shape, 16*base, 1))
				ratio = float64(t16) / float64(max(t1, time.Millisecond))
				t.Logf("%s: %d spans %s, %d spans %s (×%.1f)", shape, base, t1, 16*base, t16, ratio)
				if ratio <= 40 {
					return
				}
			}
			t4 := run(hostileTrace(shape, 4*base, 1))
			t.Errorf("%s: 1×, 4×, 16× the spans took %s, %s, %s: ×%.1f for 16× the input", shape, t1, t4, t16, ratio)
		})
	}
}
