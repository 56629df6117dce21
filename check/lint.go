package check

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// Severities. A finding of severity error fails the check (exit 3); warnings
// and infos are shown but do not change the verdict.
const (
	SevError   = "error"
	SevWarning = "warning"
	SevInfo    = "info"
)

// Lint rule codes (shown to users and matched by their CI scripts).
const (
	CodeDeadRetries       = "dead-retries"
	CodeRetryOnPersistent = "retry-on-persistent"
	CodeBelowTail         = "timeout-below-tail"
	CodeFarAboveTail      = "timeout-far-above-tail"
	CodePerTryNotBelow    = "per-try-not-below-budget"
	CodeNotBudgetAware    = "retry-not-budget-aware"
	CodeBackoffExceeds    = "backoff-exceeds-budget"
	CodeUnknownHop        = "unknown-hop"
	CodeUnconfiguredHop   = "unconfigured-hop"
	CodeAmplification     = "retry-amplification"
	CodeCalleeOutlives    = "callee-outlives-caller"
	CodeRetriesOutlast    = "retries-outlast-caller"
	CodeOutOfSample       = analyze.CodeOutOfSample
)

// FarAboveFactor is k of timeout-far-above-tail: a timeout more than k times
// the tail of a hop's time to success (its p99, or its slowest success when
// that is longer: a request-level target may ask a call to cover every
// success). A recommended timeout is that tail plus a margin (10% by
// default), rounded up to a nice value; even a generous 50% margin and
// rounding stay under 2×, so 3× is beyond any deliberate margin: the excess
// only holds a stuck attempt (and its connection) longer.
const FarAboveFactor = 3.0

// FarAboveMinExcess keeps timeout-far-above-tail quiet when the excess over
// p99 is under a second: a 50 ms hop given 200 ms holds a stuck attempt too
// briefly to matter.
const FarAboveMinExcess = time.Second

// UselessYield is the retry yield at or below which retries of a
// ran-to-timeout hop are judged useless: when fewer than 1 in 20 retries
// after a timeout succeed, each rescue costs 20 full timeouts of waiting.
const UselessYield = 0.05

// P99 is the quantile of time to success the tail rules compare timeouts
// against (docs/DESIGN.md §1: per-hop p99).
const P99 = 0.99

// Lint checks a policy against what the logs show. Each rule follows from
// its definition and the numbers measured on the logs given, never from a
// particular sample. Findings come out in a stable order: by severity, then
// hop, then code.
//
// The rules that look at a hop's timeout and retries apply to the hops that
// appear as calls in the logs; a trace's root span is the request itself,
// which the replay bounds by the budget only, so its hop's per-attempt
// policy is never used and not linted.
func Lint(rep *analyze.Report, reqs []*span.Request, p *policy.Policy) []Finding {
	l := &linter{p: p, hops: map[string]*analyze.Hop{}, obs: map[string]*hopObs{}, unbounded: rep.UnboundedHops(),
		nested: recommend.NestedNeeds(reqs, p)}
	for i := range rep.Hops {
		l.hops[rep.Hops[i].Hop] = &rep.Hops[i]
	}
	for _, r := range reqs {
		left, bound := never, ""
		if p.Budget > 0 {
			left, bound = int64(p.Budget), "the "+units.Duration(p.Budget)+" budget"
		}
		l.walk(r.Calls, left, bound, nil)
		l.layers(r.Calls, nil)
	}
	names := make([]string, 0, len(l.obs))
	for n := range l.obs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		l.lintHop(n, l.obs[n])
	}
	l.lintLayers()
	l.lintDefault(names)
	l.lintListed()
	l.lintUnconfigured(names)

	out := l.out
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := sevRank(out[i].Severity), sevRank(out[j].Severity)
		if ri != rj {
			return ri < rj
		}
		if out[i].Hop != out[j].Hop {
			return out[i].Hop < out[j].Hop
		}
		return out[i].Code < out[j].Code
	})
	if out == nil {
		out = []Finding{}
	}
	return out
}

func sevRank(s string) int {
	switch s {
	case SevError:
		return 0
	case SevWarning:
		return 1
	}
	return 2
}

const never = int64(math.MaxInt64 / 4)

type linter struct {
	// unbounded says which hops' names differ only in ids (nil: none).
	unbounded *analyze.Unbounded
	p         *policy.Policy
	hops      map[string]*analyze.Hop
	obs       map[string]*hopObs
	out       []Finding
	// amp and outlives collect the layered rules per inner hop.
	amp      map[string]*ampObs
	outlives map[string]*outlivesObs
	outlast  map[string]*outlivesObs // retries that need longer than the caller allows
	timed    map[string]int          // calls with a timeout, by hop
	// nested is what each hop's timeout must allow for the timed calls
	// below it (recommend.NestedNeeds).
	nested map[string]time.Duration
}

// layer is a call on a path that a policy times out or retries, as seen
// from the calls below it.
type layer struct {
	hop string
	hp  policy.Hop
}

// ampObs is a hop whose retries sit below other retried calls.
type ampObs struct {
	paths   int
	product int      // the largest product of attempts on one path
	chain   []string // the retried calls above it on that path, outermost first
	tries   []int
}

// outlivesObs is a hop whose timeout is longer than its caller's.
type outlivesObs struct {
	calls  int
	caller string
	ct     time.Duration // the caller's timeout (the shortest seen)
}

// layers follows each path down the tree, keeping the calls above that
// the policy times out or retries: retries at more than one layer multiply
// (3 × 3 attempts is 9 at the inner hop), and a callee allowed longer than
// its caller works on after the caller gave up. Recursion follows the
// tree's depth, which span caps.
func (l *linter) layers(cs []*span.Call, outer []layer) {
	for _, c := range cs {
		hp := l.forCall(c)
		if hp.Retries > 0 {
			prod := hp.Retries + 1
			var chain []string
			var tries []int
			for _, o := range outer {
				if o.hp.Retries > 0 {
					prod *= o.hp.Retries + 1
					chain = append(chain, o.hop)
					tries = append(tries, o.hp.Retries+1)
				}
			}
			if len(chain) > 0 {
				if l.amp == nil {
					l.amp = map[string]*ampObs{}
				}
				a := l.amp[c.Hop]
				if a == nil {
					a = &ampObs{}
					l.amp[c.Hop] = a
				}
				a.paths++
				if prod > a.product {
					a.product, a.chain, a.tries = prod, chain, tries
				}
			}
		}
		if hp.Timeout > 0 {
			if l.timed == nil {
				l.timed = map[string]int{}
			}
			l.timed[c.Hop]++
			for i := len(outer) - 1; i >= 0; i-- {
				if ct := outer[i].hp.Timeout; ct > 0 {
					if hp.Retries > 0 && hp.Timeout <= ct && attemptsNeed(hp) > ct {
						l.outlast = noteCaller(l.outlast, c.Hop, outer[i].hop, ct)
					}
					if hp.Timeout > ct {
						l.outlives = noteCaller(l.outlives, c.Hop, outer[i].hop, ct)
					}
					break
				}
			}
		}
		next := outer
		if hp.Timeout > 0 || hp.Retries > 0 {
			next = append(outer[:len(outer):len(outer)], layer{c.Hop, hp})
		}
		for _, a := range c.Attempts {
			l.layers(a.Calls, next)
		}
	}
}

// noteCaller counts one call of hop under a caller with timeout ct, in m
// (made when nil), keeping the shortest caller seen.
func noteCaller(m map[string]*outlivesObs, hop, caller string, ct time.Duration) map[string]*outlivesObs {
	if m == nil {
		m = map[string]*outlivesObs{}
	}
	o := m[hop]
	if o == nil {
		o = &outlivesObs{}
		m[hop] = o
	}
	if o.caller == "" || ct < o.ct {
		o.caller, o.ct = caller, ct
	}
	o.calls++
	return m
}

// lintLayers reports what layers found.
func (l *linter) lintLayers() {
	for _, hop := range slices.Sorted(maps.Keys(l.amp)) {
		a := l.amp[hop]
		parts := make([]string, 0, len(a.chain)+1)
		for i, h := range a.chain {
			parts = append(parts, fmt.Sprintf("%s (%d attempts)", h, a.tries[i]))
		}
		parts = append(parts, fmt.Sprintf("%s (%d attempts)", hop, l.forHop(hop).Retries+1))
		l.add(CodeAmplification, SevWarning, hop,
			"retries at %d layers of one path: %s: up to %d attempts of %s for one call of %s, on %s; when the hop is down, every layer retries it, and the load multiplies; retry at one layer",
			len(a.chain)+1, strings.Join(parts, " → "), a.product, hop, a.chain[0], units.Count(a.paths, "path", "paths"))
	}
	for _, hop := range slices.Sorted(maps.Keys(l.outlives)) {
		o := l.outlives[hop]
		if o.calls == l.timed[hop] {
			l.add(CodeCalleeOutlives, SevWarning, hop,
				"%s timeout %s is longer than its caller %s's %s (on all %s): the caller always gives up first, and the time this hop is allowed beyond it, retries included, is wasted; keep it below the caller's",
				l.source(hop), units.Duration(l.forHop(hop).Timeout), o.caller, units.Duration(o.ct), units.Count(o.calls, "call", "calls"))
			continue
		}
		// Called elsewhere with room for its timeout: one policy per hop
		// cannot fit every caller, so this is a note, not a mistake.
		l.add(CodeCalleeOutlives, SevInfo, hop,
			"%s timeout %s is longer than its caller %s's %s on %d of its %s: there the caller gives up first",
			l.source(hop), units.Duration(l.forHop(hop).Timeout), o.caller, units.Duration(o.ct), o.calls, units.Count(l.timed[hop], "call", "calls"))
	}
	for _, hop := range slices.Sorted(maps.Keys(l.outlast)) {
		o := l.outlast[hop]
		hp := l.forHop(hop)
		l.add(CodeRetriesOutlast, SevWarning, hop,
			"%s: %d attempts of %s with their backoffs need up to %s, more than its caller %s's %s timeout (%s): the caller gives up before the last retries run; fewer retries, a shorter per-try timeout, or a longer caller timeout",
			l.source(hop), hp.Retries+1, units.Duration(hp.Timeout), units.Duration(attemptsNeed(hp)), o.caller, units.Duration(o.ct), units.Count(o.calls, "call", "calls"))
	}
}

// attemptsNeed is how long a call may take when every attempt runs to its
// timeout, with the longest backoffs between them.
func attemptsNeed(hp policy.Hop) time.Duration {
	d := hp.Timeout * time.Duration(hp.Retries+1)
	for k := 1; k <= hp.Retries; k++ {
		d += hp.Backoff.MaxDelay(k)
	}
	return d
}

// forHop is the policy of a hop's calls.
func (l *linter) forHop(hop string) policy.Hop { return l.p.ForCall(hop, true) }

// part is one thing a path spends before a retry can run: another hop's
// first attempt at its timeout, or an enclosing call's earlier attempts.
type part struct {
	what string
	ns   int64
}

// hopObs is what the logs show of one hop's calls.
type hopObs struct {
	calls int
	// succ are the durations of successful attempts; cut those of attempts
	// cut by a timeout (right-censored: the true time is longer), by the
	// analysis's rule, so the counts agree with its report.
	succ, cut []int64
	// Path coverage of retries (dead-retries): bounded is the number of
	// calls with a finite deadline, dead those where no retry fits, short
	// those where fewer than the configured retries fit.
	bounded, dead, short int
	minCovered           int
	worst                *pathObs
	// callee is true while no call seen has the role of a call (a callee's
	// own span, or in-process work): the policy's default does not govern it.
	callee bool
}

// pathObs is the deadline one call of a hop ran under.
type pathObs struct {
	left  int64  // ns left for this call's attempts
	bound string // what bounds it ("the 9s budget")
	parts *parts // what was taken from the bound before left
}

// stage is sibling calls that overlapped in time: they ran in parallel,
// and the path spends the slowest one's reserve on them.
type stage struct {
	calls   []*span.Call
	end     int64
	reserve int64
	who     string
}

// parts is what a path spent before a call, as a chain shared by every
// call below it: the enclosing path's parts (outer), then either the other
// stages of one level (all of stages but the call's own, skip) or one
// part. Only the worst path's message lists them, so they are never
// copied per call: a level of n stages costs O(n), not O(n²).
type parts struct {
	outer  *parts
	stages []*stage
	skip   int
	one    *part
	n      int   // parts in the chain, this node's included
	sum    int64 // their total ns
}

func (p *parts) count() int {
	if p == nil {
		return 0
	}
	return p.n
}

func (p *parts) total() int64 {
	if p == nil {
		return 0
	}
	return p.sum
}

// withStages is p followed by every stage but skip.
func (p *parts) withStages(stages []*stage, skip int, sum int64) *parts {
	if len(stages) <= 1 {
		return p
	}
	return &parts{outer: p, stages: stages, skip: skip, n: p.count() + len(stages) - 1, sum: p.total() + sum}
}

// with is p followed by one part.
func (p *parts) with(x part) *parts {
	return &parts{outer: p, one: &x, skip: -1, n: p.count() + 1, sum: p.total() + x.ns}
}

// first lists the chain's first k parts, in path order.
func (p *parts) first(k int) []part {
	var chain []*parts
	for q := p; q != nil; q = q.outer {
		chain = append(chain, q)
	}
	var out []part
	for i := len(chain) - 1; i >= 0 && len(out) < k; i-- {
		q := chain[i]
		if q.one != nil {
			out = append(out, *q.one)
			continue
		}
		for j, s := range q.stages {
			if j != q.skip && len(out) < k {
				out = append(out, part{s.who, s.reserve})
			}
		}
	}
	return out
}

// walk visits sibling calls with left ns of deadline (bounded by bound)
// after parts were spent. Siblings that overlap in time ran in parallel
// and form one stage; the stages ran one after the other. A call's path
// spends every other stage at its slowest call's reserve: the hop's
// timeout (the time the policy lets a first attempt take) or, for a hop
// with no timeout, the first attempt's logged duration. The order does not
// matter: time the others may take is time this hop's retries cannot
// have, before or after.
func (l *linter) walk(cs []*span.Call, left int64, bound string, pp *parts) {
	if len(cs) == 0 {
		return
	}
	var stages []*stage
	for _, c := range cs {
		if n := len(stages); n > 0 && c.Start() < stages[n-1].end {
			s := stages[n-1]
			s.calls = append(s.calls, c)
			s.end = max(s.end, c.End())
			continue
		}
		stages = append(stages, &stage{calls: []*span.Call{c}, end: c.End()})
	}
	var total int64
	for _, s := range stages {
		for _, c := range s.calls {
			if r := l.reserve(c); r > s.reserve || s.who == "" {
				s.reserve, s.who = r, c.Hop
			}
		}
		total += s.reserve
	}
	for i, s := range stages {
		cp := pp.withStages(stages, i, total-s.reserve)
		for _, c := range s.calls {
			cl := left
			if left < never {
				cl = left - (total - s.reserve)
			}
			l.observe(c, cl, bound, cp)
			l.descend(c, cl, bound, cp)
		}
	}
}

// reserve is the time a call's first attempt may take under the policy.
func (l *linter) reserve(c *span.Call) int64 {
	if t := l.forCall(c).Timeout; t > 0 {
		return int64(t)
	}
	return c.Attempts[0].Span.Duration
}

// descend walks the calls made inside each attempt of c. Attempt k starts
// after k earlier attempts at their timeout and the shortest backoffs; the
// attempt's own timeout bounds its children when it is the tighter limit.
func (l *linter) descend(c *span.Call, left int64, bound string, pp *parts) {
	hp := l.forCall(c)
	T := int64(hp.Timeout)
	for k, a := range c.Attempts {
		if len(a.Calls) == 0 {
			continue
		}
		inner, ib, ip := left, bound, pp
		if left < never && k > 0 && T > 0 {
			spent := int64(k) * T
			for j := 1; j <= k; j++ {
				spent += int64(hp.Backoff.Delay(j, 0))
			}
			inner -= spent
			ip = pp.with(part{fmt.Sprintf("%s's %d earlier attempts", c.Hop, k), spent})
		}
		if T > 0 && T < inner {
			inner, ib, ip = T, fmt.Sprintf("%s's %s timeout", c.Hop, units.Duration(hp.Timeout)), nil
		}
		l.walk(a.Calls, inner, ib, ip)
	}
}

// observe records one call of a hop: its attempts' times and the deadline
// it ran under.
func (l *linter) observe(c *span.Call, left int64, bound string, pp *parts) {
	o := l.obs[c.Hop]
	if o == nil {
		o = &hopObs{minCovered: -1, callee: true}
		l.obs[c.Hop] = o
	}
	o.callee = o.callee && c.Role != span.RoleCall
	o.calls++
	var inForce *float64
	if h := l.hops[c.Hop]; h != nil {
		inForce = h.TimeoutMs
	}
	for _, a := range c.Attempts {
		switch s := a.Span; {
		case analyze.CutBy(s, inForce):
			o.cut = append(o.cut, s.Duration)
		case !s.Failed():
			o.succ = append(o.succ, s.Duration)
		}
	}
	hp := l.forCall(c)
	if left >= never || hp.Retries == 0 || hp.Timeout <= 0 {
		return
	}
	o.bounded++
	k := covered(hp, left)
	if k == 0 {
		o.dead++
	}
	if k < hp.Retries {
		o.short++
	}
	if o.minCovered < 0 || k < o.minCovered {
		o.minCovered = k
		o.worst = &pathObs{left: left, bound: bound, parts: pp}
	}
}

// covered is how many of the hop's retries fit in left ns: after a first
// attempt that ran to its timeout, retry k needs the backoff before it (at
// its shortest, jitter at the bottom, so "none fits" holds for every draw)
// and one full attempt timeout (docs/DESIGN.md §7: retry only if the
// remaining budget covers backoff + timeout).
func covered(hp policy.Hop, left int64) int {
	T := int64(hp.Timeout)
	used := T
	for k := 1; k <= hp.Retries; k++ {
		used += int64(hp.Backoff.Delay(k, 0)) + T
		if used > left {
			return k - 1
		}
	}
	return hp.Retries
}

// source names where a hop's settings come from, for messages.
func (l *linter) source(hop string) string {
	if l.p.Listed(hop) {
		return "hops." + hop
	}
	return "default"
}

func (l *linter) add(code, sev, hop, format string, a ...any) {
	l.out = append(l.out, Finding{Code: code, Severity: sev, Hop: hop, Message: fmt.Sprintf(format, a...)})
}

// forCall is the policy of one call (see policy.ForCall).
func (l *linter) forCall(c *span.Call) policy.Hop {
	return l.p.ForCall(c.Hop, c.Role == span.RoleCall)
}

// governed reports whether the policy decides the hop's timeout: it lists
// the hop, or the hop's calls are caller-side and fall back to default.
func (l *linter) governed(name string) bool {
	if l.p.Listed(name) {
		return true
	}
	// A hop the analysis calls the root is the request, bounded by the
	// budget, even where a trace of that root alone (no child span) makes
	// it a top-level call: a minute of Online Boutique has 30 such
	// one-span requests among 372, and check warned that the root was
	// unconfigured while analyze called it the root.
	if h := l.hops[name]; h != nil && h.Role == analyze.RoleRoot {
		return false
	}
	o := l.obs[name]
	return o == nil || !o.callee
}

func (l *linter) lintHop(name string, o *hopObs) {
	if !l.governed(name) {
		return // a callee's own spans: bounded by the caller's timeout
	}
	hp := l.p.For(name)
	src := l.source(name)
	if l.p.Listed(name) {
		l.configRules(name, hp, src)
	}
	l.deadRetries(name, hp, src, o)
	l.hedgeRules(name, hp, src, l.hops[name]) // hedge.go
	if h := l.hops[name]; h != nil {
		l.persistent(name, hp, src, h)
		l.tail(name, hp, src, h, o)
	}
}

// configRules are the rules that need only the policy: they hold whatever
// the logs show.
func (l *linter) configRules(name string, hp policy.Hop, src string) {
	B := l.p.Budget
	T := hp.Timeout
	switch {
	case B > 0 && T == 0:
		after := ""
		if hp.Retries > 0 {
			after = fmt.Sprintf(", and none of its %s can follow it", units.Count(hp.Retries, "retry", "retries"))
		}
		l.add(CodePerTryNotBelow, SevWarning, name,
			"%s has no per-attempt timeout: one stuck attempt holds the request until the %s budget runs out%s",
			src, units.Duration(B), after)
	case B > 0 && T >= B && hp.Retries > 0:
		l.add(CodePerTryNotBelow, SevError, name,
			"%s timeout %s is not below the %s budget: a first attempt that runs to its timeout uses the whole budget, so its %s can never run",
			src, units.Duration(T), units.Duration(B), units.Count(hp.Retries, "retry", "retries"))
	case B > 0 && T >= B:
		l.add(CodePerTryNotBelow, SevWarning, name,
			"%s timeout %s is not below the %s budget: the budget always cuts first, so the per-attempt timeout never fires",
			src, units.Duration(T), units.Duration(B))
	}
	if hp.Retries > 0 && !hp.BudgetAware && B > 0 {
		l.add(CodeNotBudgetAware, SevWarning, name,
			"%s has %s with budget_aware false: a retry starts even when less than backoff %s + timeout %s is left of the %s budget, and the request then fails at exactly the budget; set budget_aware: true",
			src, units.Count(hp.Retries, "retry", "retries"), units.Duration(hp.Backoff.MaxDelay(1)), fdNone(T), units.Duration(B))
	}
	if hp.Retries > 0 && B > 0 && hp.Backoff.Base > 0 {
		var wait time.Duration
		at := 1
		for k := 1; k <= hp.Retries; k++ {
			if d := hp.Backoff.MaxDelay(k); d > wait {
				wait, at = d, k
			}
		}
		remaining := B - T
		if T >= B {
			remaining = 0
		}
		if wait >= remaining {
			l.add(CodeBackoffExceeds, SevError, name,
				"%s backoff before retry %d is up to %s, not below the %s left of the %s budget after a first attempt that runs to its %s timeout: that retry waits past the deadline",
				src, at, units.Duration(wait), units.Duration(remaining), units.Duration(B), fdNone(T))
		}
	}
}

// deadRetries reports retries that no path seen in the logs can cover.
func (l *linter) deadRetries(name string, hp policy.Hop, src string, o *hopObs) {
	if hp.Retries == 0 || o.bounded == 0 || o.short == 0 || o.worst == nil {
		return
	}
	w := o.worst
	T := hp.Timeout
	need := fmt.Sprintf("backoff %s + %s", units.Duration(hp.Backoff.Delay(1, 0)), units.Duration(T))
	afterFirst := w.left - int64(T)
	var why string
	if n := w.parts.count(); n > 0 {
		sum := w.parts.total()
		items := make([]string, 0, 5)
		for _, pt := range w.parts.first(4) {
			items = append(items, pt.what+" "+units.Duration(time.Duration(pt.ns)))
		}
		if n > 4 {
			items = append(items, fmt.Sprintf("%d more", n-4))
		}
		why = fmt.Sprintf("%s minus the rest of the path at its timeouts (%s = %s) leaves %s", w.bound,
			strings.Join(items, " + "), units.Duration(time.Duration(sum)), units.MinusDuration(time.Duration(w.left)))
	} else {
		why = fmt.Sprintf("%s leaves %s", w.bound, units.MinusDuration(time.Duration(w.left)))
	}
	switch {
	case o.dead == o.bounded:
		l.add(CodeDeadRetries, SevError, name,
			"%s retries: %d can never run: on all %d paths seen, %s; a first attempt that runs to its %s timeout leaves %s, and a retry needs %s",
			src, hp.Retries, o.bounded, why, units.Duration(T), units.MinusDuration(time.Duration(afterFirst)), need)
	case o.dead > 0:
		l.add(CodeDeadRetries, SevWarning, name,
			"%s retries: %d can never run on %d of %d paths seen: on the tightest, %s; a first attempt that runs to its %s timeout leaves %s, and a retry needs %s",
			src, hp.Retries, o.dead, o.bounded, why, units.Duration(T), units.MinusDuration(time.Duration(afterFirst)), need)
	default:
		l.add(CodeDeadRetries, SevWarning, name,
			"%s retries: only %d of %d fit on %d of %d paths seen: on the tightest, %s, enough for the first attempt (%s) and %d retries of %s each",
			src, o.minCovered, hp.Retries, o.short, o.bounded, why, units.Duration(T), o.minCovered, need)
	}
}

// persistent reports retries on a hop whose failures ran to the timeout
// and whose retries after a timeout (when the logs show any) did not help:
// each retry waits out another full timeout at the same wall.
func (l *linter) persistent(name string, hp policy.Hop, src string, h *analyze.Hop) {
	if hp.Retries == 0 || h.FailureClass != analyze.ClassRanToTimeout {
		return
	}
	var evidence string
	y := h.RetryYield
	if y != nil && y.AfterTimeout.Retried > 0 {
		rate := float64(y.AfterTimeout.Succeeded) / float64(y.AfterTimeout.Retried)
		if rate > UselessYield {
			return
		}
		evidence = fmt.Sprintf("retries after a timeout recovered %d of %d (%s, at most %s counts as none)",
			y.AfterTimeout.Succeeded, y.AfterTimeout.Retried, units.Percent(rate, 1), units.Percent(UselessYield, 1))
	} else {
		evidence = "the logs show no retry after a timeout, so nothing suggests one would help"
	}
	at := "the timeout"
	if h.TimeoutMs != nil {
		at = units.Millis(*h.TimeoutMs)
	}
	l.add(CodeRetryOnPersistent, SevError, name,
		"%s retries: %d on a ran-to-timeout hop (%d of %d attempts failed, %d of them cut at %s); %s: each retry hits the same wall and adds a full %s to the time to fail; set retries: 0",
		src, hp.Retries, h.FailedAttempts, h.Attempts, h.TimeoutAttempts, at, evidence, fdNone(hp.Timeout))
}

// tail compares the timeout with the hop's time to success: the durations
// of its successful attempts, with attempts cut by a timeout counted as
// longer than their cut (docs/DESIGN.md §5). Fast failures say nothing about how
// long a success takes and are left out.
func (l *linter) tail(name string, hp policy.Hop, src string, h *analyze.Hop, o *hopObs) {
	T := int64(hp.Timeout)
	n := len(o.succ) + len(o.cut)
	if T <= 0 || n == 0 {
		return
	}
	// Lower bounds of each time to success: a cut attempt took more than
	// its cut, so it sits 1 ns above it.
	lb := make([]int64, 0, n)
	lb = append(lb, o.succ...)
	for _, c := range o.cut {
		lb = append(lb, c+1)
	}
	quantile.SortInt64(lb)
	lbP99 := quantile.Int64(lb, P99)
	longer, unknown := 0, 0
	for _, d := range o.succ {
		if d > T {
			longer++
		}
	}
	succLonger := longer
	for _, c := range o.cut {
		if c >= T {
			longer++ // took more than its cut, so more than T
		} else {
			unknown++
		}
	}
	p99 := "≥ " + units.Duration(time.Duration(lbP99))
	if v := h.SuccessLatencyMs.P99; v != nil {
		p99 = units.Millis(*v)
	} else if h.Censored != nil {
		p99 += fmt.Sprintf(" (attempts were cut at %s)", units.Millis(h.Censored.AtLeastMs))
	}
	if lbP99 > float64(T) {
		rate := units.Percent(float64(longer)/float64(n), 1)
		if unknown > 0 {
			rate = fmt.Sprintf("%s to %s", rate, units.Percent(float64(longer+unknown)/float64(n), 1))
		}
		if len(o.cut) == 0 {
			l.add(CodeBelowTail, SevError, name,
				"%s timeout %s is below the p99 of successful attempts, %s: %d of %d successful attempts took longer, a predicted false-timeout rate of %s",
				src, units.Duration(hp.Timeout), p99, longer, n, rate)
		} else {
			l.add(CodeBelowTail, SevError, name,
				"%s timeout %s is below the p99 of successful attempts, %s: %d of %d attempts needed longer to succeed (%d successes took longer, %d were cut at a timeout no shorter%s), a predicted false-timeout rate of %s",
				src, units.Duration(hp.Timeout), p99, longer, n, succLonger, longer-succLonger, unknownNote(unknown), rate)
		}
		return
	}
	if h.SuccessLatencyMs.P99 == nil {
		return // the tail is censored: how far above it T is cannot be said
	}
	// The tail a timeout must cover is the p99, or the slowest success
	// when that is longer: a request-level false-timeout target asks each
	// of many calls for more than p99, up to every logged success.
	p := units.NsOfMs(*h.SuccessLatencyMs.P99)
	ref := fmt.Sprintf("the p99 of successful attempts, %s (over %d)", p99, n)
	if len(o.succ) > 0 {
		if slowest := float64(slices.Max(o.succ)); slowest > p {
			p = slowest
			ref = fmt.Sprintf("the slowest of %d successful attempts, %s (p99 %s)", len(o.succ), units.Duration(time.Duration(slowest)), p99)
		}
	}
	if need := float64(h.Recommendation.TailNeed); need > p {
		// The recommendation extrapolated this hop's tail past its
		// slowest success (too few successes to certify the request
		// target): that is the tail a timeout must cover.
		p = need
		ref = fmt.Sprintf("the tail extrapolated for the request target, %s (%d successful attempts, slowest %s)", units.Duration(time.Duration(need)), n, p99)
		if len(o.succ) > 0 {
			ref = fmt.Sprintf("the tail extrapolated for the request target, %s (%d successful attempts, slowest %s)", units.Duration(time.Duration(need)), n, units.Duration(time.Duration(slices.Max(o.succ))))
		}
	}
	if need := float64(l.nested[name]); need > p {
		// The calls below it, at their own timeouts, need this long: a
		// caller must allow them, however fast its own successes were.
		p = need
		ref = fmt.Sprintf("what the calls below it need at their timeouts, %s", units.Duration(time.Duration(need)))
	}
	if float64(T) > FarAboveFactor*p && time.Duration(float64(T)-p) >= FarAboveMinExcess {
		l.add(CodeFarAboveTail, SevWarning, name,
			"%s timeout %s is %.1f× %s: a stuck attempt is held %s longer than any success needed; above %.0f× the excess buys nothing",
			src, units.Duration(hp.Timeout), float64(T)/p, ref, units.Duration(time.Duration(float64(T)-p)), FarAboveFactor)
	}
}

// lintDefault runs the policy-only rules on the default once, naming the
// hops of the logs that use it, rather than repeating them for each hop.
func (l *linter) lintDefault(seen []string) {
	var users []string
	for _, n := range seen {
		if !l.p.Listed(n) && l.governed(n) {
			users = append(users, n)
		}
	}
	if len(users) == 0 {
		return
	}
	src := "default (used by " + strings.Join(users, ", ") + ")"
	if len(users) > 3 {
		src = fmt.Sprintf("default (used by %s and %d more hops)", strings.Join(users[:3], ", "), len(users)-3)
	}
	l.configRules("", l.p.Default, src)
}

// lintListed checks the hops the policy lists but the logs do not show.
func (l *linter) lintListed() {
	for _, name := range l.p.HopNames() {
		if _, ok := l.obs[name]; ok {
			continue
		}
		where := l.p.Path
		if line := l.p.Lines[name]; line > 0 {
			where = fmt.Sprintf("%s:%d", l.p.Path, line)
		}
		hint := ""
		if s := nearest(name, l.callHops()); s != "" {
			hint = fmt.Sprintf("; did you mean %q?", s)
		}
		what := "not in the logs"
		if _, ok := l.hops[name]; ok {
			what = "only a trace root in the logs (a root is bounded by the budget, not by a hop timeout)"
		}
		l.add(CodeUnknownHop, SevWarning, name, "%s: hop %q is in the policy but %s (%d hops seen)%s",
			where, name, what, len(l.obs), hint)
		l.configRules(name, l.p.Hops[name], "hops."+name)
	}
}

func (l *linter) callHops() []string {
	out := make([]string, 0, len(l.obs))
	for n := range l.obs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// lintUnconfigured reports hops of the logs that fall back to default. In
// a policy that lists no hops that is the intent, said once as info; in a
// policy that lists some, a missing one is likely new or misspelt.
func (l *linter) lintUnconfigured(seen []string) {
	var missing []string
	for _, n := range seen {
		if !l.p.Listed(n) && l.governed(n) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return
	}
	d := l.p.Default
	def := fmt.Sprintf("timeout %s, %s", fdNone(d.Timeout), units.Count(d.Retries, "retry", "retries"))
	if len(l.p.Hops) == 0 {
		l.add(CodeUnconfiguredHop, SevInfo, "", "the policy lists no hops: all %d hops seen use default (%s)", len(missing), def)
		return
	}
	// Hops whose names differ only in ids (analyze's unbounded-hops) are
	// not new or misspelt: a policy cannot list every id, and the default
	// is meant for them. They are one finding, not one per id.
	ids := 0
	for _, n := range missing {
		if l.unbounded.IDLaden(n) {
			ids++
			continue
		}
		l.add(CodeUnconfiguredHop, SevWarning, n, "hop %q is in the logs (%d calls) but not in the policy: it falls back to default (%s)",
			n, l.obs[n].calls, def)
	}
	if ids > 0 {
		l.add(CodeUnconfiguredHop, SevInfo, "", "%d hops whose names differ only in ids (%s) are not in the policy: they use default (%s)",
			ids, analyze.WarnUnboundedHops, def)
	}
}

// nearest returns the candidate within a small edit distance of s (a
// likely typo), or "".
func nearest(s string, cands []string) string {
	best, bd := "", len(s)/3+1
	if bd < 2 {
		bd = 2
	}
	for _, c := range cands {
		if d := editDistance(s, c); d <= bd && (best == "" || d < editDistance(s, best)) {
			best = c
		}
	}
	return best
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// fdNone prints a timeout, with 0 as "none".
func fdNone(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return units.Duration(d)
}

func unknownNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d more were cut sooner, so unknown", n)
}
