// Package replay re-runs logged requests under a timeout/retry policy
// (DESIGN §7) to predict what the policy would have done: which requests
// succeed, when each ends, where failures land and how much time retries
// spend.
//
// The rules, each applied to the call tree that package span rebuilt:
//
//   - An attempt whose latency L fits its deadline succeeds at L; otherwise
//     it fails at the deadline. The deadline is the sooner of the hop's
//     timeout and the request's remaining budget (and the parent attempt's
//     own deadline).
//   - A failed attempt is retried while retries remain, after the backoff;
//     with budget_aware only when the remaining budget covers backoff plus
//     one full attempt timeout. A budget that runs out ends the request at
//     exactly the budget.
//   - Observed attempts are used in order. Attempts beyond those observed
//     reuse the last observed one (the "same wall": persistent slowness
//     stays slow), or, with the independent model, an attempt of the same
//     hop drawn deterministically from the whole log.
//   - An attempt cut by a timeout when it was logged is right-censored: its
//     true latency is only known to be ≥ what was logged. When the new
//     deadline lies beyond that point the outcome is unknown. Replay runs
//     each request twice — censored attempts as slow as possible, then as
//     fast as possible — and a request whose outcome differs between the
//     two is undetermined. Success is therefore a range [low, high].
//   - A child call whose duration changes shifts its parent attempt by the
//     change on the critical path: calls that started after a sibling ended
//     move with it; calls that overlapped run in parallel and are not
//     summed. A child call that fails fails its parent attempt at that
//     moment.
//
// The package must not read files or render anything; it takes requests
// and a policy and returns numbers.
package replay

import (
	"hash/fnv"
	"math"
	"sort"

	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// Retry models for attempts beyond those observed.
const (
	ModelSame        = "same"
	ModelIndependent = "independent"
)

// Options tune a replay.
type Options struct {
	// RetryModel is ModelSame (default) or ModelIndependent.
	RetryModel string
}

// Outcome is one request under the policy.
type Outcome struct {
	TraceID string
	// Undetermined is true when censored attempts make the outcome unknown.
	Undetermined bool
	// OK is the outcome (the pessimistic one when Undetermined).
	OK bool
	// End is the request's latency under the policy, ns: when it
	// succeeded, or when it gave up.
	End int64
	// FailedHop is the hop whose call failed, "" on success.
	FailedHop string
	// RetryNs is time spent after first attempts failed (backoff plus the
	// retries); WastedNs is the part spent in calls that still failed.
	RetryNs, WastedNs int64
}

// Result summarises a replay.
type Result struct {
	Requests     int
	Succeeded    int // determined successes
	Failed       int // determined failures
	Undetermined int
	// SuccessLow counts undetermined requests as failures, SuccessHigh as
	// successes.
	SuccessLow, SuccessHigh float64
	// Latency percentiles (ns) over determined requests, each at its end.
	P50, P95, P99 float64
	// Failure time over determined failures, ns.
	FailMin, FailMax int64
	FailMean         float64
	FailureLanding   []quantile.Bucket
	FailuresByHop    map[string]int
	RetrySpent       int64
	RetryWasted      int64
	Outcomes         []Outcome
}

// Run replays every request under p.
func Run(reqs []*span.Request, p *policy.Policy, opt Options) *Result {
	var pool map[string][]*span.Attempt
	if opt.RetryModel == ModelIndependent {
		pool = attemptPool(reqs)
	}
	out := make([]Outcome, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, One(r, p, pool))
	}
	return summarise(out)
}

// Observed summarises the requests as they were logged, in the same form
// as a replay: the baseline when no policy in force is known.
func Observed(reqs []*span.Request) *Result {
	out := make([]Outcome, 0, len(reqs))
	for _, r := range reqs {
		o := Outcome{TraceID: r.TraceID, OK: !r.Failed, End: r.Latency()}
		if r.Failed {
			o.FailedHop = observedFailedHop(r)
		}
		o.RetryNs, o.WastedNs = observedRetryTime(r.Calls)
		out = append(out, o)
	}
	return summarise(out)
}

// observedFailedHop is the hop of the first failed call, innermost first.
func observedFailedHop(r *span.Request) string {
	var find func(cs []*span.Call) string
	find = func(cs []*span.Call) string {
		for _, c := range cs {
			if !c.Failed() {
				continue
			}
			last := c.Attempts[len(c.Attempts)-1]
			if h := find(last.Calls); h != "" {
				return h
			}
			return c.Hop
		}
		return ""
	}
	if h := find(r.Calls); h != "" {
		return h
	}
	if r.Root != nil {
		return r.Root.Hop
	}
	return ""
}

// observedRetryTime is the time the logged calls spent after their first
// attempt ended, and the part of it in calls that still failed.
func observedRetryTime(cs []*span.Call) (spent, wasted int64) {
	for _, c := range cs {
		if len(c.Attempts) > 1 {
			d := c.End() - c.Attempts[0].Span.End()
			if d > 0 {
				spent += d
				if c.Failed() {
					wasted += d
				}
			}
		}
		for _, a := range c.Attempts {
			s, w := observedRetryTime(a.Calls)
			spent, wasted = spent+s, wasted+w
		}
	}
	return spent, wasted
}

func summarise(outcomes []Outcome) *Result {
	res := &Result{Requests: len(outcomes), FailuresByHop: map[string]int{}, Outcomes: outcomes}
	var ends, fails []int64
	for _, o := range outcomes {
		res.RetrySpent += o.RetryNs
		res.RetryWasted += o.WastedNs
		switch {
		case o.Undetermined:
			res.Undetermined++
			continue
		case o.OK:
			res.Succeeded++
		default:
			res.Failed++
			res.FailuresByHop[o.FailedHop]++
			fails = append(fails, o.End)
		}
		ends = append(ends, o.End)
	}
	if n := float64(res.Requests); n > 0 {
		res.SuccessLow = float64(res.Succeeded) / n
		res.SuccessHigh = float64(res.Succeeded+res.Undetermined) / n
	}
	quantile.SortInt64(ends)
	res.P50, res.P95, res.P99 = quantile.Int64(ends, 0.50), quantile.Int64(ends, 0.95), quantile.Int64(ends, 0.99)
	quantile.SortInt64(fails)
	if len(fails) > 0 {
		res.FailMin, res.FailMax = fails[0], fails[len(fails)-1]
		var sum float64
		for _, f := range fails {
			sum += float64(f)
		}
		res.FailMean = sum / float64(len(fails))
		res.FailureLanding = quantile.Histogram(fails, quantile.NiceWidth(res.FailMax, 20))
	} else {
		res.FailMean = math.NaN()
		res.FailureLanding = []quantile.Bucket{}
	}
	return res
}

// One replays a single request. pool is nil for the same-wall model.
func One(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt) Outcome {
	lo := simulate(r, p, pool, false)
	hi := lo
	if lo.touched {
		hi = simulate(r, p, pool, true)
	}
	o := Outcome{TraceID: r.TraceID, OK: lo.ok, End: lo.end, FailedHop: lo.failedHop, RetryNs: lo.retry, WastedNs: lo.wasted}
	if lo.ok != hi.ok {
		o.Undetermined = true
	}
	if o.OK {
		o.FailedHop = ""
	}
	return o
}

// run is the state of one simulation of one request.
type run struct {
	p          *policy.Policy
	pool       map[string][]*span.Attempt
	optimistic bool
	trace      string
	touched    bool // a censored attempt's fate depended on the optimism
	retry      int64
	wasted     int64
	failedHop  string
	ok         bool
	end        int64
}

const never = int64(math.MaxInt64 / 4)

func simulate(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt, optimistic bool) *run {
	s := &run{p: p, pool: pool, optimistic: optimistic, trace: r.TraceID}
	deadline := never
	if p.Budget > 0 {
		deadline = int64(p.Budget)
	}
	if r.Root != nil {
		// The root is the request itself: bounded by the budget, not by a
		// hop timeout.
		root := &span.Attempt{Span: r.Root, Calls: r.Calls}
		end, ok, hop := s.attempt(root, r.Root.Hop, 0, deadline, true)
		s.ok, s.end, s.failedHop = ok, end, hop
		return s
	}
	end, failAt, failed, hop := s.calls(r.Calls, r.Start, 0, deadline)
	if failed {
		s.ok, s.end, s.failedHop = false, failAt, hop
	} else {
		s.ok, s.end = true, end
	}
	return s
}

// calls replays sibling calls whose logged origin is the absolute time
// origin, now placed at t0 (relative to the request's start). It returns
// the new end of the last call, and the earliest failure if any call
// failed. The end is relative, like t0.
func (s *run) calls(cs []*span.Call, origin, t0, deadline int64) (end, failAt int64, failed bool, blame string) {
	type done struct{ origEnd, delta int64 }
	var finished []done // calls replayed so far, by original end
	end = t0
	failAt = never
	failedOrigEnd := never // calls that started after a failed call waited for it: they never run
	for _, c := range cs {
		start := c.Start()
		if start >= failedOrigEnd {
			continue
		}
		var shift int64
		first := true
		for _, d := range finished {
			if d.origEnd <= start && (first || d.delta > shift) {
				shift, first = d.delta, false
			}
		}
		if start < origin {
			start = origin // clock skew: a child that starts before its parent
		}
		t := t0 + (start - origin) + shift
		if failed && t >= failAt {
			continue // the parent already gave up
		}
		cEnd, ok, hop := s.call(c, t, deadline)
		origEnd := c.End()
		if !ok {
			if cEnd < failAt {
				failAt, blame = cEnd, hop
			}
			failed = true
			failedOrigEnd = min(failedOrigEnd, origEnd)
			continue
		}
		finished = append(finished, done{origEnd: origEnd, delta: cEnd - (t0 + origEnd - origin)})
		if cEnd > end {
			end = cEnd
		}
	}
	return end, failAt, failed, blame
}

// call replays one call starting at t. It returns when it ended, whether
// it succeeded, and on failure the hop to blame (its own, or a descendant's
// whose failure it passed on).
func (s *run) call(c *span.Call, t, deadline int64) (int64, bool, string) {
	hp := s.p.ForCall(c.Hop, span.CallerSide(c.Attempts[0].Span.Kind))
	var retryStart int64 = -1
	blame := c.Hop
	for k := 0; ; k++ {
		if k > 0 {
			if k > hp.Retries {
				break
			}
			if retryStart < 0 {
				retryStart = t
			}
			b := int64(hp.Backoff.Delay(k, s.draw(c.Hop, k, 0)))
			if hp.BudgetAware && deadline < never && deadline-t < b+int64(hp.Timeout) {
				break
			}
			t += b
			if t >= deadline {
				t = deadline
				break
			}
		}
		a := s.pick(c, k)
		attDeadline := deadline
		own := hp.Timeout > 0 && t+int64(hp.Timeout) < attDeadline
		if own {
			attDeadline = t + int64(hp.Timeout)
		}
		end, ok, hop := s.attempt(a, c.Hop, t, attDeadline, false)
		if !ok && own && end >= attDeadline {
			hop = c.Hop // this call's own timeout expired, whatever ran inside it
		}
		t = end
		if ok {
			if retryStart >= 0 {
				s.retry += t - retryStart
			}
			return t, true, ""
		}
		blame = hop
		if t >= deadline {
			break // the budget (or the parent) ran out: no more retries
		}
	}
	if retryStart >= 0 {
		s.retry += t - retryStart
		s.wasted += t - retryStart
	}
	return t, false, blame
}

// attempt replays one attempt starting at t with the given deadline. It
// returns its end, whether it succeeded, and the hop to blame on failure.
func (s *run) attempt(a *span.Attempt, hop string, t, deadline int64, isRoot bool) (int64, bool, string) {
	sp := a.Span
	lat := sp.Duration
	var childFailAt int64 = never
	childFailed := false
	var childBlame string
	if len(a.Calls) > 0 {
		origEnd := int64(0)
		for _, c := range a.Calls {
			if e := c.End() - sp.Start; e > origEnd {
				origEnd = e
			}
		}
		newEnd, failAt, failed, hop := s.calls(a.Calls, sp.Start, t, deadline)
		if failed {
			childFailed, childFailAt, childBlame = true, failAt, hop
		} else {
			lat += (newEnd - t) - origEnd
			if lat < 0 {
				lat = 0
			}
		}
	}
	if childFailed {
		if childFailAt > deadline {
			childFailAt = deadline
		}
		return childFailAt, false, childBlame
	}
	if sp.Timeout {
		// Censored: the true latency is ≥ lat.
		if t+lat >= deadline {
			return deadline, false, hop
		}
		s.touched = true
		if s.optimistic {
			return t + lat, true, ""
		}
		return deadline, false, hop
	}
	if t+lat > deadline {
		return deadline, false, hop
	}
	if sp.Status == span.Error && !(isRoot && descendantFailed(a)) {
		return t + lat, false, hop
	}
	return t + lat, true, ""
}

// descendantFailed reports whether the log shows a failed call under a:
// a root's error status is then explained by it and replayed through it.
func descendantFailed(a *span.Attempt) bool {
	for _, c := range a.Calls {
		if c.Failed() {
			return true
		}
		for _, x := range c.Attempts {
			if descendantFailed(x) {
				return true
			}
		}
	}
	return false
}

// pick returns the attempt to replay as try k of call c.
func (s *run) pick(c *span.Call, k int) *span.Attempt {
	if k < len(c.Attempts) {
		return c.Attempts[k]
	}
	if s.pool != nil {
		if p := s.pool[c.Hop]; len(p) > 0 {
			i := int(s.draw(c.Hop, k, 1) * float64(len(p)))
			return p[min(i, len(p)-1)]
		}
	}
	return c.Attempts[len(c.Attempts)-1]
}

// draw is a deterministic uniform number in [0,1) for (trace, hop, k):
// replays are repeatable, and two policies see the same luck.
func (s *run) draw(hop string, k int, salt byte) float64 {
	h := fnv.New64a()
	h.Write([]byte(s.trace))
	h.Write([]byte{0, salt})
	h.Write([]byte(hop))
	h.Write([]byte{byte(k), byte(k >> 8)})
	return float64(h.Sum64()>>11) / (1 << 53)
}

func attemptPool(reqs []*span.Request) map[string][]*span.Attempt {
	pool := map[string][]*span.Attempt{}
	var walk func(cs []*span.Call)
	walk = func(cs []*span.Call) {
		for _, c := range cs {
			for _, a := range c.Attempts {
				pool[c.Hop] = append(pool[c.Hop], a)
				walk(a.Calls)
			}
		}
	}
	for _, r := range reqs {
		walk(r.Calls)
	}
	for _, p := range pool {
		sort.SliceStable(p, func(i, j int) bool { return p[i].Span.Duration < p[j].Span.Duration })
	}
	return pool
}
