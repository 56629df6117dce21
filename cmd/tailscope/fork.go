package main

import (
	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// accumFork lets a reader that decodes on several goroutines (flat JSON
// lines) accumulate there: each goroutine counts its spans into its own
// analyze.Part, and only the spans that may belong to the trace sample
// come back, in input order, to the Accum. This keeps the one ordered
// goroutine from being the bottleneck on large logs; the report is the
// same as with Accum.Add on every span (see analyze.Part).
type accumFork struct {
	acc *analyze.Accum
	m   *meter
}

func (f accumFork) Branch() ingest.Branch { return &accumBranch{acc: f.acc, p: f.acc.Part(), m: f.m} }

func (f accumFork) Ordered(sp *span.Span) { f.acc.Ordered(sp) }

type accumBranch struct {
	acc *analyze.Accum
	p   *analyze.Part
	m   *meter
	n   int64 // spans not yet counted on the meter
}

func (b *accumBranch) Take(sp *span.Span) bool {
	if b.m != nil {
		if b.n++; b.n == 4096 {
			b.m.addSpans(b.n)
			b.n = 0
		}
	}
	return b.p.Add(sp)
}

func (b *accumBranch) Close() {
	b.acc.Merge(b.p)
	b.m.addSpans(b.n)
	b.n = 0
}

// addSpans counts n spans at once (a reader's goroutine counts in
// batches, so that the meter's counter is not a point of contention) and
// gives the meter a chance to redraw.
func (m *meter) addSpans(n int64) {
	if m == nil || n == 0 {
		return
	}
	m.spans.Add(n)
	m.mu.Lock()
	m.tick()
	m.mu.Unlock()
}
