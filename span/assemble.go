package span

import (
	"sort"

	"github.com/tailscope/tailscope/internal/par"
)

// Assemble groups spans into requests (one per trace id; a span without a
// trace id is a request of its own) and rebuilds calls and attempts from
// the parent links. Spans are not copied; the returned tree points into
// spans, which must not be modified afterwards. Requests come out sorted by
// start, then trace id, so every result built on them is deterministic.
// Later copies of a span id within a trace are marked Duplicate and left
// out of the tree.
func Assemble(spans []Span) ([]*Request, Problems) {
	return assemble(len(spans), func(i int) *Span { return &spans[i] })
}

// AssemblePointers is Assemble of the spans spans point at, in that
// order: the same requests, pointing at the same spans. The spans need
// not be one array: a trace sample built in pieces (analyze.Accum.Kept)
// is assembled where it lies.
func AssemblePointers(spans []*Span) ([]*Request, Problems) {
	return assemble(len(spans), func(i int) *Span { return spans[i] })
}

// assemble is Assemble of the n spans at(0), …, at(n-1).
func assemble(n int, at func(i int) *Span) ([]*Request, Problems) {
	// Number the traces in order of first appearance and lay each trace's
	// spans out contiguously in one array (a counting sort), rather than
	// growing a slice per trace in a map: one map lookup a span, three
	// allocations in all.
	traceOf := make([]int32, n)
	num := make(map[string]int32)
	var ids []string
	var sizes []int32
	for i := range n {
		id := at(i).TraceID
		if id == "" {
			traceOf[i] = -1 // a request of its own, after the traces
			continue
		}
		t, ok := num[id]
		if !ok {
			t = int32(len(ids))
			num[id] = t
			ids = append(ids, id)
			sizes = append(sizes, 0)
		}
		traceOf[i] = t
		sizes[t]++
	}
	loose := n - sumOf(sizes)
	nreq := len(ids) + loose
	from := make([]int32, nreq+1) // trace t's spans are byTrace[from[t]:from[t+1]]
	for t, c := range sizes {
		from[t+1] = from[t] + c
	}
	for t := len(ids); t < nreq; t++ {
		from[t+1] = from[t] + 1
	}
	byTrace := make([]*Span, n)
	next := append([]int32(nil), from[:nreq]...)
	l := int32(len(ids))
	for i, t := range traceOf {
		if t < 0 {
			t, l = l, l+1
		}
		byTrace[next[t]] = at(i)
		next[t]++
	}
	// Each trace is assembled on its own: the traces are split over the
	// cores (package par), each request lands at its trace's index and each
	// worker counts its own Problems, added up after in worker order.
	reqs := make([]*Request, nreq)
	probs := make([]Problems, par.Workers(nreq, minTracesPerWorker))
	par.Ranges(nreq, minTracesPerWorker, func(w, lo, hi int) {
		pr := &probs[w]
		tr := newTree(int(from[hi] - from[lo]))
		for t := lo; t < hi; t++ {
			id := ""
			if t < len(ids) {
				id = ids[t]
			}
			reqs[t] = tr.assemble(id, byTrace[from[t]:from[t+1]:from[t+1]], pr)
		}
	})
	var pr Problems
	for _, p := range probs {
		pr.add(p)
	}
	sort.SliceStable(reqs, func(i, j int) bool {
		if reqs[i].Start != reqs[j].Start {
			return reqs[i].Start < reqs[j].Start
		}
		return reqs[i].TraceID < reqs[j].TraceID
	})
	return reqs, pr
}
