package recommend

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// maxRaiseRounds bounds the replay-and-raise loop; each round raises at
// least one timeout to a value some logged attempt needed, so it ends well
// before on any real log.
const maxRaiseRounds = 50

// raiseUntilSafe replays reqs under p, raising the timeouts that cut
// requests which succeeded as logged until at most target of them fail,
// and sets p's budget. It records in each raised hop's recommendation what
// raised it. last keeps the final replay.
func raiseUntilSafe(rep *analyze.Report, reqs []*span.Request, p *policy.Policy, opt analyze.Options, target float64, last *lastReplay, br *budgetRule) *analyze.RecommendationCheck {
	chk := &analyze.RecommendationCheck{Target: target, RaisedHops: []string{}}
	for _, r := range reqs {
		if !r.Failed {
			chk.LoggedOK++
		}
	}
	allowed := int(math.Floor(target*float64(chk.LoggedOK) + 1e-9))
	rs := &raising{p: p, byHop: hopsByName(rep), raised: map[string]*raise{}, moreRetries: map[string]int{}}
	for round := 1; ; round++ {
		p.Budget = br.budgetFor(p, opt.Margin)
		res := replayAll(last, reqs, p)
		broken := brokenSuccesses(chk, res)
		chk.Failed, chk.Rounds = len(broken), round
		if len(broken) <= allowed || round > maxRaiseRounds {
			break
		}
		probeBroken(reqs, res, broken, p)
		// Fix the requests that are cheapest to fix; the target lets the
		// most expensive `allowed` of them fail.
		want, hits, wantRetries := whatFixes(broken[:len(broken)-allowed], opt.Margin)
		retried := rs.addRetries(wantRetries)
		raisedAny := rs.raiseTimeouts(want, hits)
		if !retried && !raisedAny {
			break // what fails them is not a hop timeout this loop can raise
		}
		if d := maxTimeout(p); d > p.Default.Timeout {
			p.Default.Timeout = d
		}
	}
	chk.Met = chk.Failed <= allowed
	if chk.LoggedOK > 0 {
		chk.Share = units.Round(float64(chk.Failed)/float64(chk.LoggedOK), 4)
	}
	rs.explain(chk, callsPerRequest(reqs))
	return chk
}

// hopsByName indexes the report's hops by name.
func hopsByName(rep *analyze.Report) map[string]*analyze.Hop {
	byHop := make(map[string]*analyze.Hop, len(rep.Hops))
	for i := range rep.Hops {
		byHop[rep.Hops[i].Hop] = &rep.Hops[i]
	}
	return byHop
}

// brokenSuccesses are the outcomes of the requests that succeeded as
// logged and fail under the replayed policy; chk counts the undetermined.
func brokenSuccesses(chk *analyze.RecommendationCheck, res *replay.Result) []replay.Outcome {
	var broken []replay.Outcome
	chk.Undetermined = 0
	for _, o := range res.Outcomes {
		if !o.LoggedOK {
			continue
		}
		switch {
		case o.Undetermined:
			chk.Undetermined++
		case !o.OK:
			broken = append(broken, o)
		}
	}
	return broken
}

// probeBroken completes broken (the failed logged successes of res, in
// its order) with every cut and short retry of their requests, and sorts
// them cheapest to fix first. A replay stops a request at its first cut;
// the probe runs every broken request to its end and lists all its cuts
// and the retries it needed, so that one round raises all of them (rounds
// do not grow with the size of a trace).
func probeBroken(reqs []*span.Request, res *replay.Result, broken []replay.Outcome, p *policy.Policy) {
	var brokenReqs []*span.Request
	for i, o := range res.Outcomes {
		if o.LoggedOK && !o.OK && !o.Undetermined {
			brokenReqs = append(brokenReqs, reqs[i])
		}
	}
	for i, o := range replay.Run(brokenReqs, p, replay.Options{Probe: true}).Outcomes {
		broken[i].Cuts = append(broken[i].Cuts, o.Cuts...)
		broken[i].Short = append(broken[i].Short, o.Short...)
	}
	// A request's cost is how far its worst cut needed past its timeout.
	cost := func(o replay.Outcome) float64 {
		c := 0.0
		for _, x := range o.Cuts {
			if t := p.ForCall(x.Hop, true).Timeout; t > 0 {
				c = max(c, float64(x.Need)/float64(t))
			}
		}
		return c
	}
	sort.SliceStable(broken, func(i, j int) bool { return cost(broken[i]) < cost(broken[j]) })
}

// whatFixes is what the requests to fix need: per hop, the timeout its
// longest cut needed (× (1 + margin), rounded up) and how many of the
// requests it cut, and the retries their short calls needed.
func whatFixes(fix []replay.Outcome, margin float64) (want map[string]time.Duration, hits, wantRetries map[string]int) {
	want, hits, wantRetries = map[string]time.Duration{}, map[string]int{}, map[string]int{}
	for _, o := range fix {
		for _, x := range o.Short {
			wantRetries[x.Hop] = max(wantRetries[x.Hop], x.Retries)
		}
		seen := map[string]bool{}
		for _, x := range o.Cuts {
			need := time.Duration(x.Need)
			t := RoundUpNice(time.Duration(float64(need)*(1+margin) + 1))
			if t > want[x.Hop] {
				want[x.Hop] = t
			}
			if !seen[x.Hop] {
				seen[x.Hop], hits[x.Hop] = true, hits[x.Hop]+1
			}
		}
	}
	return want, hits, wantRetries
}

// raise is a hop timeout the replay raised.
type raise struct {
	from     time.Duration
	requests int // logged successes that the lower timeout cut, first round it was raised
	need     time.Duration
}

// raising is what the replay-and-raise loop changed in p: the timeouts it
// raised, and the retries it added (hop → retries before replay raised
// them).
type raising struct {
	p           *policy.Policy
	byHop       map[string]*analyze.Hop
	raised      map[string]*raise
	moreRetries map[string]int
}

// addRetries gives the listed hops the retries their short calls needed;
// it reports whether any changed.
func (rs *raising) addRetries(wantRetries map[string]int) bool {
	p, changed := rs.p, false
	for hop, n := range wantRetries {
		hp, listed := p.Hops[hop]
		if !listed || n <= hp.Retries {
			continue
		}
		if _, ok := rs.moreRetries[hop]; !ok {
			rs.moreRetries[hop] = hp.Retries
		}
		hp.Retries = n
		if hp.Backoff.Base == 0 {
			if h := rs.byHop[hop]; h != nil {
				hp.Backoff = backoffFor(h)
			}
		}
		p.Hops[hop] = hp
		changed = true
	}
	return changed
}

// raiseTimeouts raises each hop's timeout (the default's, for a hop the
// policy does not list) to what its cuts needed; it reports whether any
// changed.
func (rs *raising) raiseTimeouts(want map[string]time.Duration, hits map[string]int) bool {
	p, changed := rs.p, false
	for hop, t := range want {
		hp, listed := p.Hops[hop]
		if !listed {
			hp = p.Default
		}
		if t <= hp.Timeout {
			continue
		}
		if r := rs.raised[hop]; r == nil {
			rs.raised[hop] = &raise{from: hp.Timeout, requests: hits[hop]}
		}
		rs.raised[hop].need = t
		hp.Timeout = t
		changed = true
		if listed {
			p.Hops[hop] = hp
		} else {
			p.Default = hp
		}
	}
	return changed
}

// explain says in each changed hop's recommendation what the replay raised
// and why, and lists the hops in chk (retries first, then timeouts, each
// by name); k is the mean calls per request.
func (rs *raising) explain(chk *analyze.RecommendationCheck, k float64) {
	p := rs.p
	for _, n := range slices.Sorted(maps.Keys(rs.moreRetries)) {
		h := rs.byHop[n]
		if h == nil {
			continue
		}
		hp := p.Hops[n]
		h.Recommendation.Retries = hp.Retries
		h.Recommendation.BackoffMs = units.Ms(int64(hp.Backoff.Base))
		h.Recommendation.Basis += fmt.Sprintf("; retries %d → %d: replayed on these logs, requests that succeeded only on a retry of this hop would fail without it",
			rs.moreRetries[n], hp.Retries)
		if _, ok := rs.raised[n]; !ok {
			chk.RaisedHops = append(chk.RaisedHops, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(rs.raised)) {
		r := rs.raised[n]
		chk.RaisedHops = append(chk.RaisedHops, n)
		h := rs.byHop[n]
		if h == nil {
			continue
		}
		now := p.Hops[n].Timeout
		h.Recommendation.TimeoutMs = units.Ms(int64(now))
		h.Recommendation.RaisedFromMs = units.RoundPtr(units.Ms(int64(r.from)), 3)
		h.Recommendation.Basis += fmt.Sprintf("; raised %s → %s: replayed on these logs, %s cut %d of the %d requests that succeeded (~%s calls per request: small cuts per hop compound)",
			units.Duration(r.from), units.Duration(now), units.Duration(r.from), r.requests, chk.LoggedOK, units.Decimal(k, 1))
	}
}

// recount sets chk's outcome numbers from a replay of the logs.
func recount(chk *analyze.RecommendationCheck, res *replay.Result) {
	chk.Failed, chk.Undetermined = 0, 0
	for _, o := range res.Outcomes {
		switch {
		case !o.LoggedOK:
		case o.Undetermined:
			chk.Undetermined++
		case !o.OK:
			chk.Failed++
		}
	}
	allowed := int(math.Floor(chk.Target*float64(chk.LoggedOK) + 1e-9))
	chk.Met = chk.Failed <= allowed
	chk.Share = 0
	if chk.LoggedOK > 0 {
		chk.Share = units.Round(float64(chk.Failed)/float64(chk.LoggedOK), 4)
	}
}

// coverNestedRetries raises the timeout of every call that has, somewhere
// below it, a call with retries, until its attempts' worst case (every
// call inside at its timeout, with every retry and the longest backoffs)
// fits: a caller that gives up first makes its callee's retries dead.
// Raising a caller can make its own callers short, so it repeats until
// nothing changes (at most the tree's depth, which span caps). It returns
// the hops it raised.
func coverNestedRetries(rep *analyze.Report, reqs []*span.Request, p *policy.Policy, opt analyze.Options, br *budgetRule) []string {
	calls, nested := timedCalls(reqs, p)
	from := map[string]time.Duration{}
	because := map[string]string{}
	for round := 0; round <= span.MaxDepth; round++ {
		need, inner := callerNeeds(reqs, p, calls, nested)
		changed := false
		for hop, n := range need {
			hp, listed := p.Hops[hop]
			if !listed || time.Duration(n) <= hp.Timeout {
				continue
			}
			t := RoundUpNice(time.Duration(float64(n) * (1 + opt.Margin)))
			if _, ok := from[hop]; !ok {
				from[hop] = hp.Timeout
			}
			because[hop] = inner[hop]
			hp.Timeout = t
			p.Hops[hop] = hp
			changed = true
		}
		if !changed {
			break
		}
	}
	byHop := hopsByName(rep)
	for hop, was := range from {
		h := byHop[hop]
		if h == nil {
			continue
		}
		now := p.Hops[hop].Timeout
		h.Recommendation.TimeoutMs = units.Ms(int64(now))
		if h.Recommendation.RaisedFromMs == nil {
			h.Recommendation.RaisedFromMs = units.RoundPtr(units.Ms(int64(was)), 3)
		}
		h.Recommendation.Basis += fmt.Sprintf("; raised %s → %s %s × %.2f)",
			units.Duration(was), units.Duration(now), because[hop], 1+opt.Margin)
	}
	if d := maxTimeout(p); d > p.Default.Timeout {
		p.Default.Timeout = d
	}
	p.Budget = br.budgetFor(p, opt.Margin)
	raised := make([]string, 0, len(from))
	for hop := range from {
		raised = append(raised, hop)
	}
	return raised
}

// timedCalls counts, per hop, the calls p times out (calls) and those of
// them under a timed caller (nested). A hop all of whose timed calls run
// under a timed caller can only ever time out inside its callers', so
// they must allow its timeout.
func timedCalls(reqs []*span.Request, p *policy.Policy) (calls, nested map[string]int) {
	calls, nested = map[string]int{}, map[string]int{}
	var count func(cs []*span.Call, under bool)
	count = func(cs []*span.Call, under bool) {
		for _, c := range cs {
			t := p.ForCall(c.Hop, c.Role == span.RoleCall).Timeout > 0
			if t {
				calls[c.Hop]++
				if under {
					nested[c.Hop]++
				}
			}
			for _, a := range c.Attempts {
				count(a.Calls, under || t)
			}
		}
	}
	for _, r := range reqs {
		count(r.Calls, false)
	}
	return calls, nested
}

// callerNeeds is, per timed hop, the longest one of its attempts needs for
// what runs below it to fire first under p, and the reason in words (the
// start of the basis's sentence). Each request's visit reads only its
// tree and p (changed between rounds, not during one), so the requests
// are split over the cores (package par). Each worker keeps, per hop, the
// largest need it met first and its reason; merging the workers in order
// with the same strict "larger" test keeps the first request's reason
// among those with the largest need, as one pass in order does.
func callerNeeds(reqs []*span.Request, p *policy.Policy, calls, nested map[string]int) (map[string]int64, map[string]string) {
	parts := make([]*nestedWalk, par.Workers(len(reqs), minReqsPerWorker))
	par.Ranges(len(reqs), minReqsPerWorker, func(w, lo, hi int) {
		walk := &nestedWalk{p: p, calls: calls, nested: nested, need: map[string]int64{}, inner: map[string]string{}}
		for _, r := range reqs[lo:hi] {
			walk.visit(r.Calls)
		}
		parts[w] = walk
	})
	need := map[string]int64{}
	inner := map[string]string{}
	for _, pt := range parts {
		if pt == nil {
			continue // no requests: Ranges called no worker
		}
		for hop, n := range pt.need {
			if n > need[hop] {
				need[hop], inner[hop] = n, pt.inner[hop]
			}
		}
	}
	return need, inner
}

// nestedWalk is one worker's walk for callerNeeds: the needs it met and
// their reasons.
type nestedWalk struct {
	p             *policy.Policy
	calls, nested map[string]int
	need          map[string]int64
	inner         map[string]string
}

// visit returns a hop with retries at or below cs ("" if none), and the
// longest timeout among the nearest timed calls below that are always
// nested, with its hop; it records the needs of the timed calls in cs.
func (w *nestedWalk) visit(cs []*span.Call) (string, time.Duration, string) {
	found := ""
	var longest time.Duration
	longestHop := ""
	for _, c := range cs {
		below := ""
		var belowT time.Duration
		belowHop := ""
		for _, a := range c.Attempts {
			h, t, th := w.visit(a.Calls)
			if h != "" {
				below = h
			}
			if t > belowT {
				belowT, belowHop = t, th
			}
		}
		hp := w.p.ForCall(c.Hop, c.Role == span.RoleCall)
		if below != "" && hp.Timeout > 0 {
			for _, a := range c.Attempts {
				if lat, _ := worstAttempt(a.Span, a.Calls, w.p); lat > w.need[c.Hop] {
					w.need[c.Hop], w.inner[c.Hop] = lat, "so that the retries of "+below+" below it can run (its calls at their timeouts, with every retry, need up to that"
				}
			}
		}
		if hp.Timeout > 0 && belowT > hp.Timeout && int64(belowT) > w.need[c.Hop] {
			w.need[c.Hop], w.inner[c.Hop] = int64(belowT), "so that "+belowHop+", always called under it, can use its own "+units.Duration(belowT)+" (that"
		}
		switch {
		case hp.Retries > 0:
			found = c.Hop
		case below != "" && found == "":
			found = below
		}
		switch {
		case hp.Timeout > 0:
			if w.calls[c.Hop] > 0 && w.nested[c.Hop] == w.calls[c.Hop] && hp.Timeout > longest {
				longest, longestHop = hp.Timeout, c.Hop
			}
		case belowT > longest:
			longest, longestHop = belowT, belowHop
		}
	}
	return found, longest, longestHop
}
