package analyze

import (
	"cmp"
	"slices"

	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/span"
)

// The critical path of a request is the chain of work it waited for: from
// the request's end backwards, the child that finished last before the
// point reached, then, before that child started, the one that finished
// last before that, and so on; the time in between, when no child was
// running, is the parent's own. Every nanosecond of the request's time
// goes to exactly one span, so the per-hop times of one request add up to
// its latency (less the gaps of a request without a root span), and a slow
// leaf does not make each of its callers slow too: a caller is charged
// only its own time (for a client span: the time outside its callee's
// server span, the gap between them).
//
// Rules, for spans whose timing does not nest cleanly:
//   - a child is clipped to its parent: the part of an asynchronous child
//     that outlives its parent, or of a skewed child that starts before it,
//     is not on the parent's path;
//   - a child that still runs when a later sibling starts (overlapping
//     siblings, parallel fan-out) is on the path up to that start: the
//     parent waited for both;
//   - a call's attempts are children of the call, so the time between a
//     failed attempt and its retry (backoff) is the call's hop's own.
//
// The walk is iterative (an explicit stack) and sorts each span's children
// once by end: O(n log n) in the spans of a trace, whatever its shape.

// pathHop is one hop's time on one request's critical path.
type pathHop struct {
	hop int32
	ns  int64
}

// reqPath is what the analysis keeps of one request: its outcome, where a
// failure came from, and its critical path by hop.
type reqPath struct {
	trace  string
	start  int64
	lat    int64
	failed bool
	// origin is the hop a failure came from (-1: none or unknown): the
	// deepest failed call down the chain of failed calls, or the root.
	origin int32
	path   []pathHop
}

// paths is the critical-path view of a report's requests (see tail.go):
// kept in the report so that two reports can be compared.
type paths struct {
	hops  []string // index → hop name
	index map[string]int32
	reqs  []reqPath
}

// pathItem is a node of the walk: an attempt (a span and the calls it
// made) or a call (its attempts), with the window it is clipped to.
type pathItem struct {
	att    *span.Attempt // nil for a call or the request pseudo-node
	call   *span.Call    // nil for an attempt
	calls  []*span.Call  // the request pseudo-node's calls
	hop    int32
	lo, hi int64
}

// window is a child's logged start and end, i its index among its
// siblings.
type window struct {
	start, end int64
	i          int
}

// pathWalker holds the scratch space of critical-path walks.
type pathWalker struct {
	p       *paths
	dense   []int64
	touched []int32
	stack   []pathItem
	order   []window
	lastHop string
	lastIdx int32
}

func newPaths(hops []string) *paths {
	p := &paths{hops: hops, index: make(map[string]int32, len(hops))}
	for i, h := range hops {
		p.index[h] = int32(i)
	}
	return p
}

func (w *pathWalker) idx(hop string) int32 {
	if hop == w.lastHop && w.lastIdx >= 0 {
		return w.lastIdx
	}
	i, ok := w.p.index[hop]
	if !ok {
		i = int32(len(w.p.hops))
		w.p.hops = append(w.p.hops, hop)
		w.p.index[hop] = i
	}
	w.lastHop, w.lastIdx = hop, i
	return i
}

func (w *pathWalker) add(hop int32, ns int64) {
	if hop < 0 || ns <= 0 {
		return
	}
	for int(hop) >= len(w.dense) {
		w.dense = append(w.dense, 0)
	}
	if w.dense[hop] == 0 {
		w.touched = append(w.touched, hop)
	}
	w.dense[hop] += ns
}

// walk computes one request's critical path by hop.
func (w *pathWalker) walk(r *span.Request) reqPath {
	rp := reqPath{trace: r.TraceID, start: r.Start, lat: r.Latency(), failed: r.Failed, origin: -1}
	w.lastIdx = -1
	w.stack = w.stack[:0]
	if r.Root != nil {
		h := w.idx(r.Root.Hop)
		w.stack = append(w.stack, pathItem{att: &span.Attempt{Span: r.Root, Calls: r.Calls}, hop: h, lo: r.Root.Start, hi: r.Root.End()})
	} else {
		w.stack = append(w.stack, pathItem{calls: r.Calls, hop: -1, lo: r.Start, hi: r.End})
	}
	for len(w.stack) > 0 {
		it := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		w.item(it)
	}
	rp.path = make([]pathHop, 0, len(w.touched))
	for _, h := range w.touched {
		rp.path = append(rp.path, pathHop{hop: h, ns: w.dense[h]})
		w.dense[h] = 0
	}
	w.touched = w.touched[:0]
	if r.Failed {
		rp.origin = w.failureOrigin(r)
	}
	return rp
}

// item charges a node its own time on the path and pushes the children
// that are on it, each clipped to the part of the path it covers.
func (w *pathWalker) item(it pathItem) {
	if it.hi < it.lo {
		it.hi = it.lo
	}
	var n int
	var iv func(i int) (int64, int64)
	switch {
	case it.call != nil:
		as := it.call.Attempts
		n = len(as)
		iv = func(i int) (int64, int64) { return as[i].Span.Start, as[i].Span.End() }
	default:
		cs := it.calls
		if it.att != nil {
			cs = it.att.Calls
		}
		n = len(cs)
		iv = func(i int) (int64, int64) { return cs[i].Start(), cs[i].End() }
	}
	// Each child's window is taken once, not in every comparison: a
	// call's end is a loop over its attempts.
	w.order = w.order[:0]
	for i := range n {
		s, e := iv(i)
		w.order = append(w.order, window{s, e, i})
	}
	// Latest end first (ties: latest start first, then input order): a
	// total order.
	slices.SortFunc(w.order, func(a, b window) int {
		if c := cmp.Compare(b.end, a.end); c != 0 {
			return c
		}
		if c := cmp.Compare(b.start, a.start); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	cursor, own := it.hi, int64(0)
	for _, o := range w.order {
		if cursor <= it.lo {
			break
		}
		i := o.i
		s, e := max(o.start, it.lo), min(o.end, cursor)
		if e <= s {
			continue
		}
		own += cursor - e
		child := pathItem{lo: s, hi: e}
		if it.call != nil {
			child.att, child.hop = it.call.Attempts[i], it.hop
		} else {
			cs := it.calls
			if it.att != nil {
				cs = it.att.Calls
			}
			child.call = cs[i]
			child.hop = w.idx(cs[i].Hop)
		}
		w.stack = append(w.stack, child)
		cursor = s
	}
	own += cursor - it.lo
	w.add(it.hop, own)
}

// failureOrigin follows a failed request down its chain of failed calls:
// at each level the failed call that ended last, into its last attempt.
// The hop where the chain stops is where the failure came from.
func (w *pathWalker) failureOrigin(r *span.Request) int32 {
	origin := int32(-1)
	if r.Root != nil {
		origin = w.idx(r.Root.Hop)
	}
	cs := r.Calls
	for depth := 0; depth <= 2*span.MaxDepth && len(cs) > 0; depth++ {
		var pick *span.Call
		for _, c := range cs {
			if c.Failed() && (pick == nil || c.End() >= pick.End()) {
				pick = c
			}
		}
		if pick == nil {
			break
		}
		origin = w.idx(pick.Hop)
		cs = pick.Attempts[len(pick.Attempts)-1].Calls
	}
	return origin
}

// criticalPaths walks every request; hops seeds the hop index (hops met
// in the trees and not listed are added).
//
// Each request's walk reads only its own tree, so the requests are split
// over the cores (package par), each path landing at its request's index.
// The one thing walks share is the hop index: each worker indexes into its
// own copy of the seeded one, which gives the same numbers as one walker as
// long as every hop met is listed (in a report it is: the hops are those of
// the same spans). A hop that is not listed takes the next number in the
// order the requests meet it, which only one walker in request order gets
// right: then the walk is done again on one.
func criticalPaths(hops []string, reqs []*span.Request) *paths {
	hops = slices.Clip(hops) // a worker's appends must not share a backing array
	p := newPaths(hops)
	p.reqs = make([]reqPath, len(reqs))
	grew := make([]bool, par.Workers(len(reqs), minReqsPerWorker))
	par.Ranges(len(reqs), minReqsPerWorker, func(wi, lo, hi int) {
		w := &pathWalker{p: newPaths(hops)}
		for i := lo; i < hi; i++ {
			p.reqs[i] = w.walk(reqs[i])
		}
		grew[wi] = len(w.p.hops) > len(hops)
	})
	if slices.Contains(grew, true) {
		w := &pathWalker{p: p}
		for i, r := range reqs {
			p.reqs[i] = w.walk(r)
		}
	}
	return p
}

// minReqsPerWorker is the fewest requests worth a goroutine of their own
// in a walk over the requests' trees.
const minReqsPerWorker = 128
