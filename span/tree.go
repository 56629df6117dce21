package span

import (
	"sort"
)

// Attempt is one try of a call: a span, and the calls it made in turn.
type Attempt struct {
	Span  *Span
	Calls []*Call // child calls made while this attempt ran, ordered by start
}

// Call is the attempts one caller made to one hop for one purpose: the
// spans of the same trace, same parent and same hop, ordered by start. A new
// call starts where the log says attempt 1, or where the previous attempt
// succeeded (a retry only ever follows a failure).
type Call struct {
	Hop      string
	Attempts []*Attempt
}

// Failed reports whether the call's last attempt failed.
func (c *Call) Failed() bool { return c.Attempts[len(c.Attempts)-1].Span.Failed() }

// Start is the start of the first attempt.
func (c *Call) Start() int64 { return c.Attempts[0].Span.Start }

// End is the end of the last attempt.
func (c *Call) End() int64 {
	var e int64
	for _, a := range c.Attempts {
		if x := a.Span.End(); x > e {
			e = x
		}
	}
	return e
}

// Request is one trace: an optional root span and the calls under it.
type Request struct {
	TraceID string
	// Root is the trace's entry span when it has exactly one parentless span
	// with children; the request's outcome and latency are then the root's.
	Root *Span
	// Calls are the root's child calls, or the top-level calls when there is
	// no root, ordered by start.
	Calls []*Call
	Start int64
	End   int64
	// Failed is the observed outcome.
	Failed bool
}

// Latency is the request's observed end-to-end time.
func (r *Request) Latency() int64 { return r.End - r.Start }

// Problems found while assembling traces; each is counted, never fatal.
type Problems struct {
	DuplicateSpanIDs int // later copies dropped
	Cycles           int // spans whose parent chain loops; re-attached at the top
	ClockSkew        int // child spans that end after their parent ends
	Orphans          int // spans whose parent is not in the logs; treated as top-level
}

// Assemble groups spans into requests (one per trace id; a span without a
// trace id is a request of its own) and rebuilds calls and attempts from
// the parent links. Spans are not copied; the returned tree points into
// spans, which must not be modified afterwards. Requests come out sorted by
// start, then trace id, so every result built on them is deterministic.
// Later copies of a span id within a trace are marked Duplicate and left
// out of the tree.
func Assemble(spans []Span) ([]*Request, Problems) {
	var pr Problems
	byTrace := make(map[string][]*Span)
	var order []string
	var loose []*Span
	for i := range spans {
		s := &spans[i]
		if s.TraceID == "" {
			loose = append(loose, s)
			continue
		}
		if _, ok := byTrace[s.TraceID]; !ok {
			order = append(order, s.TraceID)
		}
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	reqs := make([]*Request, 0, len(order)+len(loose))
	for _, id := range order {
		reqs = append(reqs, assembleTrace(id, byTrace[id], &pr))
	}
	for _, s := range loose {
		reqs = append(reqs, assembleTrace("", []*Span{s}, &pr))
	}
	sort.SliceStable(reqs, func(i, j int) bool {
		if reqs[i].Start != reqs[j].Start {
			return reqs[i].Start < reqs[j].Start
		}
		return reqs[i].TraceID < reqs[j].TraceID
	})
	return reqs, pr
}

func assembleTrace(id string, ss []*Span, pr *Problems) *Request {
	// De-duplicate span ids: the first copy wins.
	byID := make(map[string]*Span, len(ss))
	kept := ss[:0:0]
	for _, s := range ss {
		if s.SpanID != "" {
			if _, dup := byID[s.SpanID]; dup {
				pr.DuplicateSpanIDs++
				s.Duplicate = true
				continue
			}
			byID[s.SpanID] = s
		}
		kept = append(kept, s)
	}
	children := make(map[*Span][]*Span)
	var tops []*Span
	for _, s := range kept {
		p, ok := byID[s.ParentID]
		switch {
		case s.ParentID == "" || s.ParentID == s.SpanID:
			tops = append(tops, s)
		case !ok:
			pr.Orphans++
			tops = append(tops, s)
		default:
			children[p] = append(children[p], s)
		}
	}
	// Spans unreachable from a top span sit in a parent cycle: re-attach
	// them at the top so that nothing is silently lost.
	reached := make(map[*Span]bool, len(kept))
	var walk func(s *Span)
	walk = func(s *Span) {
		reached[s] = true
		for _, c := range children[s] {
			if !reached[c] {
				walk(c)
			}
		}
	}
	for _, t := range tops {
		walk(t)
	}
	for _, s := range kept {
		if !reached[s] {
			pr.Cycles++
			// Break the cycle at this span.
			p := byID[s.ParentID]
			cs := children[p]
			for i, c := range cs {
				if c == s {
					children[p] = append(cs[:i:i], cs[i+1:]...)
					break
				}
			}
			tops = append(tops, s)
			walk(s)
		}
	}
	for p, cs := range children {
		for _, c := range cs {
			if c.Start < p.Start || c.End() > p.End() {
				pr.ClockSkew++
			}
		}
	}

	r := &Request{TraceID: id}
	var topCalls []*Call
	if len(tops) == 1 && len(children[tops[0]]) > 0 {
		r.Root = tops[0]
		topCalls = groupCalls(children[r.Root], children)
	} else {
		topCalls = groupCalls(tops, children)
	}
	r.Calls = topCalls
	if r.Root != nil {
		r.Start, r.End = r.Root.Start, r.Root.End()
		r.Failed = r.Root.Failed()
	} else {
		first := true
		for _, c := range topCalls {
			s, e := c.Start(), c.End()
			if first || s < r.Start {
				r.Start = s
			}
			if first || e > r.End {
				r.End = e
			}
			first = false
			if c.Failed() {
				r.Failed = true
			}
		}
	}
	return r
}

// groupCalls turns sibling spans into calls, recursing into their children.
func groupCalls(sibs []*Span, children map[*Span][]*Span) []*Call {
	sorted := append([]*Span(nil), sibs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Hop != b.Hop {
			return a.Hop < b.Hop
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.Attempt != b.Attempt {
			return a.Attempt < b.Attempt
		}
		return a.SpanID < b.SpanID
	})
	// Whether a hop's attempt numbers count from 0 or 1 is decided from the
	// siblings: an explicit 0 among them means 0-based (gRPC's and OTel's
	// counts of earlier tries, many home-grown "attempt" fields); otherwise
	// 1-based (Envoy's x-envoy-attempt-count).
	zeroBased := map[string]bool{}
	for _, s := range sorted {
		if s.AttemptSet && s.Attempt == 0 {
			zeroBased[s.Hop] = true
		}
	}
	var calls []*Call
	var cur *Call
	for _, s := range sorted {
		a := &Attempt{Span: s}
		if kids := children[s]; len(kids) > 0 {
			a.Calls = groupCalls(kids, children)
		}
		if cur != nil && cur.Hop == s.Hop {
			zb := zeroBased[s.Hop]
			if continuesCall(AttemptIndex(cur.Attempts[len(cur.Attempts)-1].Span, zb), AttemptIndex(s, zb), cur.Attempts[len(cur.Attempts)-1].Span, s) {
				cur.Attempts = append(cur.Attempts, a)
				continue
			}
		}
		cur = &Call{Hop: s.Hop, Attempts: []*Attempt{a}}
		calls = append(calls, cur)
	}
	sort.SliceStable(calls, func(i, j int) bool {
		if calls[i].Start() != calls[j].Start() {
			return calls[i].Start() < calls[j].Start()
		}
		return calls[i].Hop < calls[j].Hop
	})
	return calls
}

// AttemptIndex is s's 1-based attempt index when the log numbers attempts,
// 0 when it does not; zeroBased says the hop's numbers count from 0.
func AttemptIndex(s *Span, zeroBased bool) int {
	if !s.AttemptSet && s.Attempt <= 0 {
		return 0
	}
	if zeroBased {
		return s.Attempt + 1
	}
	return s.Attempt
}

// continuesCall reports whether next (attempt index ni) is a retry of prev
// (index pi) of the same hop under the same parent.
func continuesCall(pi, ni int, prev, next *Span) bool {
	if ni > 0 {
		// The log numbers attempts: a retry has a higher index.
		return ni > 1 && (pi == 0 || ni > pi)
	}
	// No attempt numbers: a retry follows a failure, and starts after it.
	return prev.Failed() && next.Start >= prev.Start
}
