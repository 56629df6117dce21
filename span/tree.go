package span

import (
	"cmp"
	"slices"
	"strings"
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
	// Role says whether a timeout policy applies to the call (see Role).
	Role Role
}

// Role is what a call's spans record, which decides whether a per-hop
// timeout applies to it.
type Role uint8

const (
	// RoleCall is the caller's record of a remote call (client or producer
	// kind, or by structure): the one place a timeout and retries live.
	RoleCall Role = iota
	// RoleCallee is the callee's own record of a call (server or consumer
	// kind, or by structure): the caller's timeout bounds it.
	RoleCallee
	// RoleInProcess is work inside one service (internal kind, or by
	// structure): no timeout applies; the calls above it bound it.
	RoleInProcess
)

func (r Role) String() string {
	switch r {
	case RoleCallee:
		return "callee"
	case RoleInProcess:
		return "in-process"
	}
	return "call"
}

// MaxDepth is the deepest level of a call tree that Assemble builds. No
// real trace comes near it; a deeper chain (hostile or broken input) is cut
// there and counted (Problems.TooDeep), so that every walk over the tree has
// a recursion depth bounded by a constant, not by the input.
const MaxDepth = 512

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
	// ClockSkew counts child spans in another service than their parent
	// that start before it or end after it while it still ran: the two
	// hosts' clocks disagree.
	ClockSkew int
	// AsyncChildren counts child spans that outlive their parent where that
	// is work the parent did not wait for, not skew: a child in the same
	// service (one clock), a consumer of a producer, or a child that starts
	// after its parent ended.
	AsyncChildren int
	Orphans       int // spans whose parent is not in the logs; treated as top-level
	// TooDeep counts spans below MaxDepth, left out of the call tree (their
	// per-hop statistics still count them).
	TooDeep int
}

// minTracesPerWorker is the fewest traces worth a goroutine of their own.
const minTracesPerWorker = 64

func sumOf(xs []int32) int {
	n := 0
	for _, x := range xs {
		n += int(x)
	}
	return n
}

// add adds o's counts to p's.
func (p *Problems) add(o Problems) {
	p.DuplicateSpanIDs += o.DuplicateSpanIDs
	p.Cycles += o.Cycles
	p.ClockSkew += o.ClockSkew
	p.AsyncChildren += o.AsyncChildren
	p.Orphans += o.Orphans
	p.TooDeep += o.TooDeep
}

// tree is one trace's spans by index, with each span's children: slices,
// not maps keyed by pointer, because a trace can hold a million spans and
// every step below visits each of them. One tree assembles trace after
// trace (one a worker), reusing its scratch space.
type tree struct {
	spans []*Span
	kids  [][]int32
	// Scratch space, reused from trace to trace.
	byID                         map[string]int32
	parent, nkids, backing, tops []int32
	stack, order                 []int32
	reached                      []bool
	// The slabs groupCalls cuts the attempts, calls and the slices of
	// pointers to them from, sized up front for every span the tree will
	// assemble: a span is one attempt of at most one call, so each holds
	// at most one entry a span, and a worker costs a few allocations
	// rather than several a span. They are never reused: the requests
	// point into them.
	atts     []Attempt
	attPtrs  []*Attempt
	calls    []Call
	callPtrs []*Call
}

// newTree makes a tree to assemble traces of n spans in all.
func newTree(n int) *tree {
	return &tree{byID: map[string]int32{},
		atts: make([]Attempt, 0, n), attPtrs: make([]*Attempt, 0, n), calls: make([]Call, 0, n), callPtrs: make([]*Call, 0, n)}
}

// bigTrace is the size above which a trace's span-id map is not kept for
// the next trace: clearing a map costs its capacity, not its length.
const bigTrace = 4096

// zeroed returns s resized to n zero values, reusing its array when large
// enough.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// assemble builds the request of one trace's spans ss: the copies of a
// span id after the first left out, each span under its parent (a span
// whose parent is missing, or that sits in a parent cycle, at the top),
// the tree cut at MaxDepth, and the calls grouped from the top down.
func (t *tree) assemble(id string, ss []*Span, pr *Problems) *Request {
	t.dedupe(ss, pr)
	tops := t.link(pr)
	if len(ss) > bigTrace {
		t.byID = map[string]int32{}
	}
	t.children()
	tops = t.breakCycles(tops, pr)
	t.cutDeep(tops, pr)
	t.countOutside(pr)
	return t.request(id, tops)
}

// dedupe keeps in t.spans the first copy of each span id of ss (and every
// span without one), and in t.byID the index of each id's copy kept; the
// later copies are marked Duplicate and counted.
func (t *tree) dedupe(ss []*Span, pr *Problems) {
	clear(t.byID)
	if len(ss) > bigTrace {
		t.byID = make(map[string]int32, len(ss))
	}
	byID := t.byID
	kept := t.spans[:0]
	for _, s := range ss {
		if s.SpanID != "" {
			if _, dup := byID[s.SpanID]; dup {
				pr.DuplicateSpanIDs++
				s.Duplicate = true
				continue
			}
			byID[s.SpanID] = int32(len(kept))
		}
		kept = append(kept, s)
	}
	t.spans = kept
}

// link sets each kept span's parent index (−1 at the top) and its
// parent's count of children, and returns the top spans: those without a
// parent id or naming themselves, and the orphans, whose parent is not in
// the trace (counted).
func (t *tree) link(pr *Problems) []int32 {
	n := len(t.spans)
	parent := zeroed(t.parent, n)
	nkids := zeroed(t.nkids, n)
	t.parent, t.nkids = parent, nkids
	tops := t.tops[:0]
	for i, s := range t.spans {
		p, ok := t.byID[s.ParentID]
		switch {
		case s.ParentID == "" || s.ParentID == s.SpanID:
			parent[i] = -1
			tops = append(tops, int32(i))
		case !ok:
			pr.Orphans++
			parent[i] = -1
			tops = append(tops, int32(i))
		default:
			parent[i] = p
			nkids[p]++
		}
	}
	return tops
}

// children lists each span's children in t.kids, in input order, all in
// one backing array.
func (t *tree) children() {
	n := len(t.spans)
	backing := zeroed(t.backing, n)
	t.backing = backing
	t.kids = zeroed(t.kids, n)
	t.order = t.order[:0]
	off := int32(0)
	for i := range n {
		t.kids[i] = backing[off : off : off+t.nkids[i]]
		off += t.nkids[i]
	}
	for i := range n {
		if p := t.parent[i]; p >= 0 {
			t.kids[p] = append(t.kids[p], int32(i))
		}
	}
}

// breakCycles re-attaches at the top the spans unreachable from a top
// span, which sit in a parent cycle (counted), so that nothing is
// silently lost: it cuts each cycle at its first span in input order and
// returns tops with those spans added. The walk keeps its own stack: a
// parent chain can be as deep as the input.
func (t *tree) breakCycles(tops []int32, pr *Problems) []int32 {
	n := len(t.spans)
	parent := t.parent
	reached := zeroed(t.reached, n)
	t.reached = reached
	stack := t.stack[:0]
	walk := func(top int32) {
		stack = append(stack[:0], top)
		reached[top] = true
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, c := range t.kids[s] {
				if !reached[c] {
					reached[c] = true
					stack = append(stack, c)
				}
			}
		}
	}
	for _, top := range tops {
		walk(top)
	}
	for i := range n {
		if !reached[i] {
			pr.Cycles++
			// Break the cycle at this span.
			p := parent[i]
			cs := t.kids[p]
			for j, c := range cs {
				if c == int32(i) {
					t.kids[p] = append(cs[:j:j], cs[j+1:]...)
					break
				}
			}
			parent[i] = -1
			tops = append(tops, int32(i))
			walk(int32(i))
		}
	}
	t.stack, t.tops = stack, tops
	return tops
}

// countOutside counts the children that start before their parent or end
// after it: async children (work the parent did not wait for, see
// AsyncChild) apart from clock skew between hosts.
func (t *tree) countOutside(pr *Problems) {
	for p, cs := range t.kids {
		ps := t.spans[p]
		for _, c := range cs {
			cs := t.spans[c]
			if cs.Start < ps.Start || cs.End() > ps.End() {
				if AsyncChild(ps, cs) {
					pr.AsyncChildren++
				} else {
					pr.ClockSkew++
				}
			}
		}
	}
}

// request is the request of the trace id: rooted at its top span when
// there is one top span with children (its calls are the root's
// children's), else a request of the top spans' calls, spanning them all
// and failed when any of them failed.
func (t *tree) request(id string, tops []int32) *Request {
	r := &Request{TraceID: id}
	var topCalls []*Call
	if len(tops) == 1 && len(t.kids[tops[0]]) > 0 {
		r.Root = t.spans[tops[0]]
		topCalls = t.groupCalls(t.kids[tops[0]], tops[0], -1)
	} else {
		topCalls = t.groupCalls(tops, -1, -1)
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

// groupCalls turns the sibling spans sibs under parent (−1 for top-level
// spans) and grand (the parent's parent, −1 when the parent is a top span)
// into calls, recursing into their children (at most MaxDepth levels:
// cutDeep has cut the rest).
func (t *tree) groupCalls(sibs []int32, parent, grand int32) []*Call {
	o := len(t.order)
	t.order = append(t.order, sibs...)
	sorted := t.order[o:len(t.order):len(t.order)]
	slices.SortFunc(sorted, func(a, b int32) int { return cmpSibling(t.spans[a], t.spans[b]) })
	// Whether a hop's attempt numbers count from 0 or 1 is decided from the
	// siblings: an explicit 0 among them means 0-based (gRPC's and OTel's
	// counts of earlier tries, many home-grown "attempt" fields); otherwise
	// 1-based (Envoy's x-envoy-attempt-count).
	var zeroBased map[string]bool
	for _, i := range sorted {
		if s := t.spans[i]; s.AttemptSet && s.Attempt == 0 {
			if zeroBased == nil {
				zeroBased = map[string]bool{}
			}
			zeroBased[s.Hop] = true
		}
	}
	// First the siblings' attempts and calls, so that each call's attempts
	// and the group's calls are contiguous in the slabs; then the calls
	// below each attempt.
	firstAtt, firstCall := len(t.attPtrs), len(t.callPtrs)
	var cur *Call
	callFrom := 0
	for _, i := range sorted {
		s := t.spans[i]
		t.atts = append(t.atts, Attempt{Span: s})
		t.attPtrs = append(t.attPtrs, &t.atts[len(t.atts)-1])
		end := len(t.attPtrs)
		if cur != nil && cur.Hop == s.Hop {
			zb := zeroBased[s.Hop]
			last := cur.Attempts[len(cur.Attempts)-1].Span
			if continuesCall(AttemptIndex(last, zb), AttemptIndex(s, zb), last, s) {
				cur.Attempts = t.attPtrs[callFrom:end:end]
				continue
			}
		}
		callFrom = end - 1
		t.calls = append(t.calls, Call{Hop: s.Hop, Attempts: t.attPtrs[callFrom:end:end], Role: t.roleOf(i, parent, grand)})
		cur = &t.calls[len(t.calls)-1]
		t.callPtrs = append(t.callPtrs, cur)
	}
	calls := t.callPtrs[firstCall:len(t.callPtrs):len(t.callPtrs)]
	if len(calls) == 0 {
		return nil
	}
	for k, i := range sorted {
		if kids := t.kids[i]; len(kids) > 0 {
			t.attPtrs[firstAtt+k].Calls = t.groupCalls(kids, i, parent)
		}
	}
	// Calls by start; ties in the order of their first attempts (a total
	// order on distinct spans, so an unstable sort is deterministic).
	slices.SortFunc(calls, func(a, b *Call) int {
		if c := cmp.Compare(a.Start(), b.Start()); c != 0 {
			return c
		}
		return cmpSibling(a.Attempts[0].Span, b.Attempts[0].Span)
	})
	return calls
}

// cmpSibling orders sibling spans by hop, start, attempt number and span
// id: each hop's attempts in the order they ran.
func cmpSibling(a, b *Span) int {
	if c := strings.Compare(a.Hop, b.Hop); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Attempt, b.Attempt); c != 0 {
		return c
	}
	return strings.Compare(a.SpanID, b.SpanID)
}

// cutDeep removes from the tree every span deeper than MaxDepth below a
// top span, counting them in pr.TooDeep. It walks breadth-first, level by
// level.
func (t *tree) cutDeep(tops []int32, pr *Problems) {
	level := tops
	var next []int32
	for depth := 0; len(level) > 0; depth++ {
		next = next[:0]
		for _, s := range level {
			kids := t.kids[s]
			if len(kids) == 0 {
				continue
			}
			if depth+1 >= MaxDepth {
				pr.TooDeep += t.countBelow(kids)
				t.kids[s] = nil
				continue
			}
			next = append(next, kids...)
		}
		level, next = next, level[:0:0]
	}
}

// countBelow counts the spans in the subtrees rooted at ss, iteratively.
func (t *tree) countBelow(ss []int32) int {
	n := 0
	stack := append([]int32(nil), ss...)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		stack = append(stack, t.kids[s]...)
		t.kids[s] = nil
	}
	return n
}

// AsyncChild reports whether child c, which starts before its parent p or
// ends after it, is work p did not wait for rather than a clock that
// disagrees: a child that starts after its parent ended was not awaited;
// messaging parents (a producer's send, a consumer's receive) hand work on
// without waiting for it, and a consumer runs when the message arrives;
// the same service has one clock, so its children that outlive it are
// asynchronous. A child in another service that merely ends after its
// parent is taken for clock skew: the parent waited for it.
func AsyncChild(p, c *Span) bool {
	switch {
	case c.Start >= p.End():
		return true
	case p.Kind == "producer" || p.Kind == "consumer" || c.Kind == "consumer":
		return true
	}
	return c.Service != "" && c.Service == p.Service
}

// roleOf decides what span s records, from its kind when the log gives one
// and from the shape of the trace when it does not (flat logs, CSV):
//
//   - client/producer: a call; server/consumer: the callee's record;
//     internal: in-process.
//   - without a kind, a top-level span (flat logs: every span is a call)
//     or one whose service is unknown is a call;
//   - a span in another service than its parent is the callee's record
//     when the parent is a client stub — an exit span inside its own
//     caller's service (same service as the grandparent) with s its only
//     child, as SkyWalking-style agents write — otherwise the call itself
//     (logs with one span per call);
//   - a span in its parent's service is a call when one of its children is
//     in another service (an exit span), else in-process work.
func (t *tree) roleOf(i, pi, gi int32) Role {
	s := t.spans[i]
	switch s.Kind {
	case "client", "producer":
		return RoleCall
	case "server", "consumer":
		return RoleCallee
	case "internal":
		return RoleInProcess
	}
	if pi < 0 || s.Service == "" || t.spans[pi].Service == "" {
		return RoleCall
	}
	parent := t.spans[pi]
	if parent.Service != s.Service {
		if gi >= 0 && t.spans[gi].Service == parent.Service && parent.Kind == "" && len(t.kids[pi]) == 1 {
			return RoleCallee
		}
		return RoleCall
	}
	for _, c := range t.kids[i] {
		if cs := t.spans[c]; cs.Service != "" && cs.Service != s.Service {
			return RoleCall
		}
	}
	return RoleInProcess
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
	// No attempt numbers: a retry follows a failure, and starts once it
	// has ended (give or take the timestamps' rounding); a span that starts
	// while a failed one still runs is a parallel call, not its retry.
	return prev.Failed() && next.Start >= prev.End()-retryOverlap
}

// retryOverlap is how far an unnumbered retry may appear to start before
// the failed attempt it follows ended: timestamps rounded to 0.1 ms.
const retryOverlap = 100_000
