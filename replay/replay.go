// Package replay re-runs logged requests under a timeout/retry policy
// (docs/DESIGN.md §7) to predict what the policy would have done: which requests
// succeed, when each ends, where failures land and how much time retries
// spend.
//
// The rules, each applied to the call tree that package span rebuilt:
//
//   - An attempt whose latency L fits its deadline succeeds at L; otherwise
//     it fails at the deadline. The deadline is the sooner of the hop's
//     timeout and the request's remaining budget (and the parent attempt's
//     own deadline).
//   - A failed attempt is retried while retries remain, after the backoff
//     (or, for a retry the logs show, after the gap they show when it is
//     longer: the time this system takes to send again);
//     with budget_aware only when the remaining budget covers backoff plus
//     one full attempt timeout. A budget that runs out ends the request at
//     exactly the budget.
//   - Observed attempts are used in order. Attempts beyond those observed
//     reuse the last observed one (the "same wall": persistent slowness
//     stays slow), or, with the independent model, an attempt of the same
//     hop drawn deterministically from the whole log.
//   - A hop with a hedge sends another attempt when a try has not
//     answered after the hedge's delay (up to its max, one every delay),
//     drawn as a retry is (the next logged attempt, then the retry
//     model), each under its own timeout; the first success ends the try
//     and cancels the rest, whose attempts count as load (Attempts,
//     Hedges). Every attempt failing fails the try when the last fails.
//     A policy without hedges replays exactly as without this rule.
//   - An attempt cut by a timeout when it was logged is right-censored: its
//     true latency is only known to be ≥ what was logged. When the new
//     deadline lies beyond that point the outcome is unknown. Replay runs
//     each request twice — censored attempts as slow as possible, then as
//     fast as possible — and a request whose outcome differs between the
//     two is undetermined. Success is therefore a range [low, high].
//   - A child call whose duration changes shifts its parent attempt by the
//     change on the critical path: calls that started after a sibling ended
//     move with it; calls that overlapped run in parallel and are not
//     summed. A child call that newly fails (it succeeded as logged) fails
//     its parent attempt at that moment. A child call that failed as logged
//     and still fails changes nothing but time: the parent's logged outcome
//     already includes it. An attempt whose logged error is explained by a
//     child call that failed as logged succeeds when every such child now
//     succeeds (a retry recovered it).
//   - A child call that outlived its parent attempt as logged (asynchronous
//     work, a consumer of a message) was not waited for: it neither
//     stretches nor fails the attempt, and is not replayed.
//   - Only calls whose role is a call (span.RoleCall) take the policy's
//     default; a hop listed in the policy applies to every call of it.
//
// So under a policy whose timeouts never fire (each above every logged
// attempt of its hop, a budget above every request, retries at least as
// many as logged), every request ends when and how it ended as logged.
//
// The package must not read files or render anything; it takes requests
// and a policy and returns numbers.
package replay

import (
	"github.com/tailscope/tailscope/internal/par"
	"hash/fnv"
	"math"
	"sort"
	"time"
	"unsafe"

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
	// Probe replays as if no hop timeout fired, recording in Cuts every
	// attempt that would have run past its hop's timeout, with the time it
	// needed: all the cuts of a request in one pass, where a real replay
	// stops at the first (what the request did after it never runs).
	Probe bool
	// Throttle holds retry budgets by hop, replayed as gRPC's
	// retryThrottling: a bucket per hop starting full at MaxTokens; each
	// failed attempt takes 1, each success adds TokenRatio; retries and
	// hedges are sent only while more than half is left. Requests are
	// replayed in the order they started, and the bucket carries over
	// from one to the next (the pessimistic run counts). Envoy's
	// concurrency-based retry_budget is not modelled.
	Throttle map[string]policy.RetryBudget
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
	// LoggedOK is the request's outcome as logged.
	LoggedOK bool
	// Attempts is how many attempts the request made under the policy
	// (pessimistic run), every hop counted.
	Attempts int
	// Hedges is how many hedged attempts the policy's hedges sent (counted
	// in Attempts too), pessimistic run.
	Hedges int
	// Cuts are the attempts that the policy's own hop timeouts cut in the
	// pessimistic run, with the time each would have needed.
	Cuts []Cut
	// Short are the calls that succeeded as logged on a retry and failed
	// under the policy because it allows fewer retries.
	Short []Short
}

// Short is a call whose logged success needed Retries retries.
type Short struct {
	Hop     string
	Retries int
}

// Cut is one attempt cut by its hop's timeout under the policy.
type Cut struct {
	Hop string
	// Need is the attempt's latency had nothing cut it, ns; for an attempt
	// cut by a timeout when logged (Censored) only a lower bound.
	Need     int64
	Censored bool
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
	// AttemptsByHop is the attempts each hop made under the policy, over
	// all requests (pessimistic runs).
	AttemptsByHop map[string]int
	// Hedges is the hedged attempts sent, over all requests, and
	// HedgesByHop the same by hop (pessimistic runs).
	Hedges      int
	HedgesByHop map[string]int
}

// Run replays every request under p.
func Run(reqs []*span.Request, p *policy.Policy, opt Options) *Result {
	var pool map[string][]*span.Attempt
	if opt.RetryModel == ModelIndependent {
		pool = attemptPool(reqs)
	}
	var out []Outcome
	// Sized for the hops the policy lists, which a replay mostly touches:
	// grown one rehash at a time, the tallies of 10,000 hops were ~3% of
	// a report's CPU (the recommendation replays many times).
	tally, hedges := make(map[string]int, len(p.Hops)), map[string]int{}
	if len(opt.Throttle) > 0 && !opt.Probe {
		out = throttled(reqs, p, pool, tally, hedges, opt.Throttle)
	} else {
		out = independent(reqs, p, pool, opt.Probe, tally, hedges)
	}
	res := summarise(out)
	res.AttemptsByHop = tally
	res.HedgesByHop = hedges
	for _, o := range out {
		res.Hedges += o.Hedges
	}
	return res
}

// independent replays reqs one by one, as Run does without a throttle:
// then no request's replay reads anything another's writes (the policy
// and the pool are only read), so the requests are split over the cores
// (package par). Outcomes land at their request's index, and each worker
// counts attempts and hedges in its own maps, added into tally and hedges
// afterwards: sums do not depend on the order, so the result is the
// sequential loop's.
func independent(reqs []*span.Request, p *policy.Policy, pool map[string][]*span.Attempt, probing bool, tally, hedges map[string]int) []Outcome {
	out := make([]Outcome, len(reqs))
	type counts struct{ tally, hedges map[string]int }
	parts := make([]counts, par.Workers(len(reqs), minPerWorker))
	par.Ranges(len(reqs), minPerWorker, func(w, lo, hi int) {
		c := counts{make(map[string]int, len(p.Hops)), map[string]int{}}
		// A hopCache pays for its slots when the worker's requests call
		// each hop several times: not with more hops listed than
		// requests (10,000 hops over a sample of 7,000 requests call a
		// hop about 6 times a replay, and the slots cost more than the
		// lookups they save).
		var hc *hopCache
		if !probing && len(p.Hops) <= hi-lo {
			hc = newHopCache(p)
		}
		for i := lo; i < hi; i++ {
			switch {
			case probing:
				out[i] = probe(reqs[i], p, pool)
			case hc != nil:
				out[i] = oneCached(reqs[i], p, pool, c.tally, c.hedges, hc)
			default:
				out[i] = one(reqs[i], p, pool, c.tally, c.hedges)
			}
		}
		if hc != nil {
			hc.addTally(c.tally)
		}
		parts[w] = c
	})
	for _, c := range parts {
		for h, n := range c.tally {
			tally[h] += n
		}
		for h, n := range c.hedges {
			hedges[h] += n
		}
	}
	return out
}

// minPerWorker is the fewest requests worth a goroutine of their own: a
// request replays in microseconds, so small logs stay on one.
const minPerWorker = 256

// Observed summarises the requests as they were logged, in the same form
// as a replay: the baseline when no policy in force is known.
func Observed(reqs []*span.Request) *Result {
	out := make([]Outcome, 0, len(reqs))
	tally := map[string]int{}
	for _, r := range reqs {
		o := Outcome{TraceID: r.TraceID, OK: !r.Failed, End: r.Latency(), LoggedOK: !r.Failed}
		if r.Failed {
			o.FailedHop = observedFailedHop(r)
		}
		o.RetryNs, o.WastedNs = observedRetryTime(r.Calls)
		o.Attempts = observedAttempts(r.Calls, tally)
		out = append(out, o)
	}
	res := summarise(out)
	res.AttemptsByHop = tally
	return res
}

// observedAttempts counts the logged attempts under cs, by hop into tally.
func observedAttempts(cs []*span.Call, tally map[string]int) int {
	n := 0
	for _, c := range cs {
		n += len(c.Attempts)
		tally[c.Hop] += len(c.Attempts)
		for _, a := range c.Attempts {
			n += observedAttempts(a.Calls, tally)
		}
	}
	return n
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

// throttled replays reqs in the order they started, with one retry
// bucket per throttled hop carried from request to request (see
// Options.Throttle); the outcomes are in the order of reqs.
func throttled(reqs []*span.Request, p *policy.Policy, pool map[string][]*span.Attempt, tally, hedges map[string]int, th map[string]policy.RetryBudget) []Outcome {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Start < reqs[order[b]].Start })
	out := make([]Outcome, len(reqs))
	b := policy.NewThrottle(th)
	for _, i := range order {
		out[i] = oneWith(reqs[i], p, pool, tally, hedges, b)
	}
	return out
}

// One replays a single request. pool is nil for the same-wall model.
func One(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt) Outcome {
	return one(r, p, pool, nil, nil)
}

// one replays r, adding the attempts of its pessimistic run to tally by
// hop when tally is not nil.
func one(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt, tally, hedges map[string]int) Outcome {
	return oneWith(r, p, pool, tally, hedges, nil)
}

// oneWith is one with a retry bucket (nil: none). The optimistic run
// reads the bucket as the pessimistic one left it and does not change it.
func oneWith(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt, tally, hedges map[string]int, b *policy.Throttle) Outcome {
	return oneIn(r, p, pool, tally, hedges, b, nil)
}

// oneCached is one with the worker's hopCache of p (which then counts
// the attempts that would go to tally: its addTally adds them there).
func oneCached(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt, tally, hedges map[string]int, hc *hopCache) Outcome {
	return oneIn(r, p, pool, tally, hedges, nil, hc)
}

// oneIn is oneWith with a hopCache (nil: none).
func oneIn(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt, tally, hedges map[string]int, b *policy.Throttle, hc *hopCache) Outcome {
	before := b.Clone()
	lo := simulate(r, p, pool, false, tally, hedges, b)
	lo.hc = hc
	lo.start(r)
	hi := lo
	if lo.touched {
		hi = simulate(r, p, pool, true, nil, nil, before)
		hi.hc = hc
		hi.start(r)
	}
	o := Outcome{TraceID: r.TraceID, OK: lo.ok, End: lo.end, FailedHop: lo.failedHop, RetryNs: lo.retry, WastedNs: lo.wasted,
		LoggedOK: !r.Failed, Cuts: lo.cuts, Short: lo.short, Attempts: lo.attempts, Hedges: lo.hedges}
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
	cuts       []Cut
	short      []Short
	attempts   int
	tally      map[string]int   // attempts by hop, when counted
	hedges     int              // hedged attempts sent
	hedgeTally map[string]int   // hedged attempts by hop, when counted
	bucket     *policy.Throttle // retry throttling, nil without
	probe      bool             // see Options.Probe
	hc         *hopCache        // p's hops by name, and the tally, when not nil
}

// probe replays r as Options.Probe says. Attempts cut by a timeout when
// logged count at their logged latency, a lower bound of what they need.
func probe(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt) Outcome {
	pr := &run{p: p, pool: pool, trace: r.TraceID, probe: true, optimistic: true}
	pr.start(r)
	return Outcome{TraceID: r.TraceID, OK: pr.ok, End: pr.end, FailedHop: pr.failedHop, LoggedOK: !r.Failed, Cuts: pr.cuts, Short: pr.short, Attempts: pr.attempts, Hedges: pr.hedges}
}

const never = int64(math.MaxInt64 / 4)

// add is a+b saturated at never: a timeout or budget of any size cannot
// wrap the clock.
func add(a, b int64) int64 {
	if b >= never-a {
		return never
	}
	return a + b
}

// simulate is a run of r, not started (start replays it).
func simulate(r *span.Request, p *policy.Policy, pool map[string][]*span.Attempt, optimistic bool, tally, hedges map[string]int, b *policy.Throttle) *run {
	return &run{p: p, pool: pool, optimistic: optimistic, trace: r.TraceID, tally: tally, hedgeTally: hedges, bucket: b}
}

// start replays r on s.
func (s *run) start(r *span.Request) {
	p := s.p
	deadline := never
	if p.Budget > 0 {
		deadline = min(int64(p.Budget), never)
	}
	if r.Root != nil {
		// The root is the request itself: bounded by the budget, not by a
		// hop timeout. Times are relative to the request's start.
		root := &span.Attempt{Span: r.Root, Calls: r.Calls}
		end, ok, hop, _, _ := s.attempt(root, r.Root.Hop, 0, deadline)
		s.ok, s.end, s.failedHop = ok, end, hop
		return
	}
	k := s.calls(r.Calls, nil, r.Start, 0, deadline)
	switch {
	case k.failed:
		s.ok, s.end, s.failedHop = false, k.failAt, k.blame
	case k.still:
		// Failed as logged, and the failure stands: it ends when its last
		// call ends, as logged.
		s.ok, s.end, s.failedHop = false, k.end, k.stillBlame
	default:
		s.ok, s.end = true, k.end
	}
}

// kids is the replay of the sibling calls under one attempt.
type kids struct {
	// end is when the last call the parent waited for ended (relative);
	// origEnd the same as logged, relative to the parent's start.
	end, origEnd int64
	// failed: a call that succeeded as logged failed, first at failAt,
	// blaming blame.
	failed bool
	failAt int64
	blame  string
	// loggedFailed: a call failed as logged; still: one of those still
	// fails (blaming stillBlame).
	loggedFailed, still bool
	stillBlame          string
}

// finished is a replayed call that later siblings may have waited for.
type finished struct{ origEnd, delta int64 }

// byOrigEnd is a min-heap of finished calls by their logged end. It is
// typed rather than a container/heap.Interface: that one boxes every
// pushed call into an interface (an allocation per call replayed, and
// replays run thousands of requests per policy tried). Which calls are
// popped, and so the shift (their largest delta), does not depend on how
// the heap orders calls with equal ends.
type byOrigEnd []finished

// push adds f.
func (h *byOrigEnd) push(f finished) {
	*h = append(*h, f)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if s[i].origEnd <= s[j].origEnd {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

// pop removes and returns the call with the least logged end.
func (h *byOrigEnd) pop() finished {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && s[r].origEnd < s[l].origEnd {
			j = r
		}
		if s[i].origEnd <= s[j].origEnd {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	*h = s
	return top
}

// calls replays sibling calls whose logged origin (the parent's start) is
// now placed at t0 (relative to the request's start). parent is the span
// they ran under (nil for a request without a root): calls that outlived
// it as asynchronous work (span.AsyncChild) were not waited for and are
// left out; a call in another service that ends after it is clock skew and
// is replayed.
//
// A call that started after siblings ended waited for them: it moves by
// the largest change among them. Calls come sorted by start, so the
// siblings it waited for are collected once, from a heap ordered by their
// logged end: linear in the number of siblings up to the heap's log.
func (s *run) calls(cs []*span.Call, parent *span.Span, origin, t0, deadline int64) kids {
	k := kids{end: t0, failAt: never}
	var pending byOrigEnd
	var shift int64
	waited := false
	failedOrigEnd := never // calls that started after a new failure waited for it: they never run
	for _, c := range cs {
		origEnd := c.End()
		if parent != nil && origEnd > parent.End() && span.AsyncChild(parent, c.Attempts[0].Span) {
			continue // asynchronous: the parent did not wait for it
		}
		start := c.Start()
		if start >= failedOrigEnd {
			continue
		}
		for len(pending) > 0 && pending[0].origEnd <= start {
			d := pending.pop()
			if !waited || d.delta > shift {
				shift, waited = d.delta, true
			}
		}
		if o := origEnd - origin; o > k.origEnd {
			k.origEnd = o
		}
		t := t0 + (start - origin) + shift
		if k.failed && t >= k.failAt {
			continue // the parent already gave up
		}
		cEnd, ok, hop := s.call(c, t, deadline)
		logged := c.Failed()
		if logged {
			k.loggedFailed = true
		}
		if !ok && !logged {
			if cEnd < k.failAt {
				k.failAt, k.blame = cEnd, hop
			}
			k.failed = true
			failedOrigEnd = min(failedOrigEnd, origEnd)
			continue
		}
		if !ok && !k.still {
			k.still, k.stillBlame = true, hop
		}
		pending.push(finished{origEnd: origEnd, delta: cEnd - (t0 + origEnd - origin)})
		if cEnd > k.end {
			k.end = cEnd
		}
	}
	return k
}

// call replays one call starting at t. It returns when it ended, whether
// it succeeded, and on failure the hop to blame (its own, or a descendant's
// whose failure it passed on).
//
// Try k of the call is the call's first attempt or its k-th retry; with a
// hedge, one try is a group of attempts (see hedged), each drawn from the
// next logged attempt, so next counts the logged attempts used. Without
// hedges next is k, and the call replays as it always did.
func (s *run) call(c *span.Call, t, deadline int64) (int64, bool, string) {
	var hp policy.Hop
	if s.hc != nil {
		hp = s.hc.slot(c.Hop).forCall(s.p, c.Role == span.RoleCall)
	} else {
		hp = s.p.ForCall(c.Hop, c.Role == span.RoleCall)
	}
	var retryStart int64 = -1
	blame := c.Hop
	next := 0
	for k := 0; ; k++ {
		if k > 0 {
			if k > hp.Retries {
				// The logs show this call succeeding on a later retry.
				needed := next < len(c.Attempts) && !c.Failed()
				if needed && k == hp.Retries+1 && (s.probe || !s.optimistic) {
					s.short = append(s.short, Short{Hop: c.Hop, Retries: len(c.Attempts) - 1})
				}
				if !needed || !s.probe {
					break
				}
				// A probe runs the logged retries out, to find what comes
				// after them.
			}
			if !s.bucket.Allows(c.Hop) {
				break // the retry budget is spent
			}
			if retryStart < 0 {
				retryStart = t
			}
			b := int64(hp.Backoff.Delay(k, s.draw(c.Hop, k, 0)))
			if next > 0 && next < len(c.Attempts) {
				// A logged retry started this long after the attempt
				// before it ended: the time this system takes to notice a
				// failure and send again. A policy's backoff adds to the
				// wait only where it is longer.
				b = max(b, c.Attempts[next].Span.Start-c.Attempts[next-1].Span.End())
			}
			if deadline < never && !hp.RetryFits(time.Duration(deadline-t), time.Duration(b)) {
				break
			}
			t = add(t, b)
			if t >= deadline {
				t = deadline
				break
			}
		}
		end, ok, hop := s.hedged(c, hp, &next, t, deadline)
		t = end
		if ok {
			if retryStart >= 0 && !s.probe {
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

// hedged replays one try of c starting at t: an attempt, and with the
// hop's hedge, up to Max more, one every Delay while no attempt of the
// try has succeeded and one is still in flight. Each is drawn from the
// next logged attempt (as a retry would be: beyond the logged ones, the
// retry model decides) and has its own per-attempt timeout. The first
// success ends the try and cancels the others: what they would have done
// after it (cuts, retries inside them) is undone, but their attempts stay
// counted, as load. When every attempt fails, the try fails when the
// last of them does.
func (s *run) hedged(c *span.Call, hp policy.Hop, next *int, t, deadline int64) (int64, bool, string) {
	first := s.snap()
	end, ok, hop := s.single(c, hp, s.pick(c, *next), t, deadline)
	*next++
	h := hp.Hedge
	if h.Delay <= 0 || h.Max < 1 {
		return end, ok, hop
	}
	type member struct {
		from, to mark
		end      int64
	}
	members := []member{{first, s.snap(), end}}
	win := never // when the first success answered
	if ok {
		win = end
	}
	last, lastHop := end, hop // the latest failure, when all fail
	for j := 1; j <= h.Max; j++ {
		hs := add(t, int64(h.Delay)*int64(j))
		if hs >= deadline || win <= hs || win == never && last <= hs || !s.bucket.Allows(c.Hop) {
			// Past the deadline, answered, or every attempt failed
			// before the hedge was due: none is sent.
			break
		}
		from := s.snap()
		e, o, bl := s.single(c, hp, s.pick(c, *next), hs, deadline)
		*next++
		s.hedges++
		if s.hedgeTally != nil {
			s.hedgeTally[c.Hop]++
		}
		members = append(members, member{from, s.snap(), e})
		if o && e < win {
			win = e
		}
		if !o && e >= last {
			last, lastHop = e, bl
		}
	}
	if win == never {
		return last, false, lastHop
	}
	// Undo, latest first, what the cancelled attempts did after the
	// winner answered.
	for i := len(members) - 1; i >= 0; i-- {
		if m := members[i]; m.end > win {
			s.undo(m.from, m.to)
		}
	}
	return win, true, ""
}

// mark is where the records of a run stood at a moment, so that what a
// cancelled hedge recorded can be taken out.
type mark struct {
	cuts, short   int
	retry, wasted int64
}

func (s *run) snap() mark {
	return mark{len(s.cuts), len(s.short), s.retry, s.wasted}
}

// undo takes out what was recorded between from and to.
func (s *run) undo(from, to mark) {
	s.cuts = append(s.cuts[:from.cuts], s.cuts[to.cuts:]...)
	s.short = append(s.short[:from.short], s.short[to.short:]...)
	s.retry -= to.retry - from.retry
	s.wasted -= to.wasted - from.wasted
}

// single replays one attempt a of call c starting at t, under the hop's
// per-attempt timeout and the deadline, counting it and noting a cut by
// the hop's own timeout.
func (s *run) single(c *span.Call, hp policy.Hop, a *span.Attempt, t, deadline int64) (int64, bool, string) {
	s.attempts++
	if s.tally != nil {
		if s.hc != nil {
			s.hc.slot(c.Hop).tally++ // added to s.tally by the worker (addTally)
		} else {
			s.tally[c.Hop]++
		}
	}
	attDeadline := deadline
	own := hp.Timeout > 0 && add(t, int64(hp.Timeout)) < attDeadline
	if own && s.probe {
		// Run it out, and note if the timeout would have cut it.
		end, ok, hop, _, _ := s.attempt(a, c.Hop, t, attDeadline)
		if lat := end - t; lat > int64(hp.Timeout) || (a.Span.Timeout && lat >= int64(hp.Timeout)) {
			s.cuts = append(s.cuts, Cut{Hop: c.Hop, Need: lat, Censored: a.Span.Timeout})
		}
		return end, ok, hop
	}
	if own {
		attDeadline = t + int64(hp.Timeout)
	}
	end, ok, hop, need, censored := s.attempt(a, c.Hop, t, attDeadline)
	s.bucket.Count(c.Hop, ok)
	if !ok && own && end >= attDeadline {
		hop = c.Hop // this call's own timeout expired, whatever ran inside it
		if need >= 0 && !s.optimistic {
			s.cuts = append(s.cuts, Cut{Hop: c.Hop, Need: need, Censored: censored})
		}
	}
	return end, ok, hop
}

// attempt replays one attempt starting at t with the given deadline. It
// returns its end, whether it succeeded, and the hop to blame on failure;
// when the deadline cut the attempt itself, need is the latency it needed
// (a lower bound when censored), else −1.
func (s *run) attempt(a *span.Attempt, hop string, t, deadline int64) (end int64, ok bool, blame string, need int64, censored bool) {
	sp := a.Span
	lat := sp.Duration
	var k kids
	if len(a.Calls) > 0 {
		k = s.calls(a.Calls, sp, sp.Start, t, deadline)
		if k.failed {
			if k.failAt >= deadline {
				// The deadline this attempt runs under cut a call inside
				// it: as logged, the attempt needed until its last
				// synchronous call ended.
				return deadline, false, k.blame, max(sp.Duration, k.origEnd), false
			}
			return k.failAt, false, k.blame, -1, false
		}
		lat += (k.end - t) - k.origEnd
		if lat < 0 {
			lat = 0
		}
	}
	if sp.Timeout {
		// Censored: the true latency is ≥ lat.
		if t+lat >= deadline {
			return deadline, false, hop, lat, true
		}
		s.touched = true
		if s.optimistic {
			return t + lat, true, "", -1, false
		}
		return deadline, false, hop, lat, true
	}
	if t+lat > deadline {
		return deadline, false, hop, lat, false
	}
	if sp.Status == span.Error {
		if k.loggedFailed && !k.still {
			return t + lat, true, "", -1, false // the children that failed it now succeed
		}
		if k.still {
			return t + lat, false, k.stillBlame, -1, false
		}
		return t + lat, false, hop, -1, false
	}
	return t + lat, true, "", -1, false
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
	return draw(s.trace, hop, k, salt)
}

// Jitter is the draw in [0,1) that the replay gives the backoff's jitter
// before retry k of a call to hop in the request trace. A runtime that
// applies the same policy (package enforce) can be handed the same luck,
// so that its outcome on the same latencies can be compared with the
// replay's exactly.
func Jitter(trace, hop string, k int) float64 { return draw(trace, hop, k, 0) }

func draw(trace, hop string, k int, salt byte) float64 {
	h := fnv.New64a()
	h.Write([]byte(trace))
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

// hopCache is one replay worker's view of a policy's hops: each hop name's
// entry, looked up in the policy's map once, and the attempts counted for
// it. A replay looks a call's hop up in the policy and counts its attempts
// by hop (Result.AttemptsByHop); over a few thousand requests replayed
// under each policy tried, the map lookups by name (hashing and comparing
// the name) were a few percent of a report. A call's hop name is the same
// string for every call of the hop (the readers intern names), so a slot
// is found by the address of the name's bytes in a small direct-mapped
// front, and only a miss looks the name up; a name at another address
// still finds its one slot by name.
type hopCache struct {
	p      *policy.Policy
	byName map[string]*hopSlot
	front  [hopFront]struct {
		ptr  *byte
		n    int
		slot *hopSlot
	}
}

// hopFront is the number of front entries.
const (
	hopFrontBits = 10
	hopFront     = 1 << hopFrontBits
)

// hopSlot is one hop of a hopCache.
type hopSlot struct {
	name   string
	hop    policy.Hop // the policy's entry, when listed
	listed bool
	tally  int // attempts counted
}

func newHopCache(p *policy.Policy) *hopCache {
	return &hopCache{p: p, byName: map[string]*hopSlot{}}
}

// slot is hop's slot.
func (hc *hopCache) slot(hop string) *hopSlot {
	ptr := unsafe.StringData(hop)
	f := &hc.front[uint64(uintptr(unsafe.Pointer(ptr)))*0x9E3779B97F4A7C15>>(64-hopFrontBits)]
	if f.ptr == ptr && f.n == len(hop) && f.slot != nil {
		return f.slot
	}
	sl := hc.byName[hop]
	if sl == nil {
		sl = &hopSlot{name: hop}
		sl.hop, sl.listed = hc.p.Hops[hop]
		hc.byName[hop] = sl
	}
	f.ptr, f.n, f.slot = ptr, len(hop), sl
	return sl
}

// forCall is policy.ForCall of the slot's hop.
func (sl *hopSlot) forCall(p *policy.Policy, callerSide bool) policy.Hop {
	switch {
	case sl.listed:
		return sl.hop
	case !callerSide:
		return policy.Hop{}
	}
	return p.Default
}

// addTally adds the attempts counted to tally, by hop name.
func (hc *hopCache) addTally(tally map[string]int) {
	for name, sl := range hc.byName {
		if sl.tally > 0 {
			tally[name] += sl.tally
		}
	}
}
