package recommend

import (
	"math"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
)

// NestedNeeds is, per hop with a timeout under p, the longest one of its
// logged attempts can take with the calls below it at their worst (each at
// its timeout, with every retry and the longest backoffs; see
// worstAttempt): what the hop's timeout must allow for the timeouts and
// retries below it to fire first. Hops without timed calls below them are
// absent.
func NestedNeeds(reqs []*span.Request, p *policy.Policy) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, r := range reqs {
		analyze.EachCall(r.Calls, func(c *span.Call) {
			if p.ForCall(c.Hop, c.Role == span.RoleCall).Timeout <= 0 {
				return
			}
			for _, a := range c.Attempts {
				if len(a.Calls) == 0 {
					continue
				}
				if lat, _ := worstAttempt(a.Span, a.Calls, p); time.Duration(lat) > out[c.Hop] && lat > a.Span.Duration {
					out[c.Hop] = time.Duration(lat)
				}
			}
		})
	}
	return out
}

// worstRequest is how long the request can run when every call with a
// timeout runs every configured attempt to it: the root's own time (or the
// gaps between top-level calls) plus the critical path of its calls so
// slowed, or, when later, the end of the last synchronous call under it
// (a callee whose clock runs ahead can end after its caller, and replay
// still bounds it by the budget).
func worstRequest(r *span.Request, p *policy.Policy) int64 {
	if r.Root != nil {
		lat, reach := worstAttempt(r.Root, r.Calls, p)
		return max(lat, reach)
	}
	end, _, reach := worstPath(r.Calls, nil, r.Start, p)
	return max(end, reach)
}

// worstAttempt is an attempt's latency with its synchronous children at
// their worst (asynchronous children were not waited for), and the latest
// end of anything under it, both relative to its start.
func worstAttempt(sp *span.Span, cs []*span.Call, p *policy.Policy) (lat, reach int64) {
	if len(cs) == 0 {
		return sp.Duration, sp.Duration
	}
	end, origEnd, reach := worstPath(cs, sp, sp.Start, p)
	lat = max(0, sp.Duration+end-origEnd)
	return lat, max(lat, reach)
}

// worstPath lays sibling calls out as replay does — a call that started
// after siblings ended moves by the largest change among them — with each
// call at its worst. It returns the new and the logged end of the last
// call the parent waited for, and the latest end of anything under them,
// relative to origin. Sweeping calls by start with a heap of finished ones
// by logged end keeps it O(n log n) in the number of siblings. Recursion
// follows the tree's depth, which package span caps at span.MaxDepth.
func worstPath(cs []*span.Call, parent *span.Span, origin int64, p *policy.Policy) (end, origEnd, reach int64) {
	var pending endHeap
	var shift int64
	waited := false
	for _, c := range cs {
		ce := c.End()
		if parent != nil && ce > parent.End() && span.AsyncChild(parent, c.Attempts[0].Span) {
			continue // not waited for
		}
		start := c.Start()
		for pending.Len() > 0 && pending.items[0].origEnd <= start {
			d := pending.pop()
			if !waited || d.delta > shift {
				shift, waited = d.delta, true
			}
		}
		w, wr := worstCall(c, p)
		at := (start - origin) + shift
		newEnd := at + w
		end = max(end, newEnd)
		reach = max(reach, newEnd, at+wr)
		origEnd = max(origEnd, ce-origin)
		pending.push(ended{origEnd: ce, delta: newEnd - (ce - origin)})
	}
	return end, origEnd, reach
}

// worstCall is a call's duration with every configured attempt running to
// its timeout and the longest backoffs (a call with no timeout lasts what
// its logged attempts last, each at its worst), and the latest end of
// anything under it, both relative to its start.
func worstCall(c *span.Call, p *policy.Policy) (w, reach int64) {
	h := p.ForCall(c.Hop, c.Role == span.RoleCall)
	if h.Timeout > 0 {
		w = satMul(int64(h.Timeout), int64(h.Retries+1))
		for k := 1; k <= h.Retries; k++ {
			w = satAdd(w, int64(h.Backoff.MaxDelay(k)))
		}
		return w, w // nothing under it outlasts its timeouts
	}
	w = c.End() - c.Start()
	for _, a := range c.Attempts {
		lat, r := worstAttempt(a.Span, a.Calls, p)
		w += lat - a.Span.Duration
		reach = max(reach, a.Span.Start-c.Start()+r)
	}
	w = max(w, 0)
	return w, max(w, reach)
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// ended is a call already laid out, by its logged end.
type ended struct{ origEnd, delta int64 }

// endHeap is a min-heap of ended by origEnd.
type endHeap struct{ items []ended }

func (h *endHeap) Len() int { return len(h.items) }

func (h *endHeap) push(e ended) {
	h.items = append(h.items, e)
	i := len(h.items) - 1
	for i > 0 {
		j := (i - 1) / 2
		if h.items[j].origEnd <= h.items[i].origEnd {
			break
		}
		h.items[i], h.items[j] = h.items[j], h.items[i]
		i = j
	}
}

func (h *endHeap) pop() ended {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.items[l].origEnd < h.items[m].origEnd {
			m = l
		}
		if r < last && h.items[r].origEnd < h.items[m].origEnd {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}
