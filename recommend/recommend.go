package recommend

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// MinTimeout is the floor of a recommended timeout: below it, network and
// scheduler noise alone would cause false timeouts.
const MinTimeout = 50 * time.Millisecond

// MaxExtrapolation caps an extrapolated timeout at this multiple of the
// hop's slowest success: a tail model fitted to n successes is a guess much
// further out than that, and a timeout far above every observed success
// only holds stuck attempts longer.
const MaxExtrapolation = 4.0

// MinTailFit is the fewest successes a tail model is fitted to: with
// fewer, its top tenth is a handful of values and the fit a guess, so the
// timeout is MaxExtrapolation × the slowest success.
const MinTailFit = 100

// certifyingRank returns the largest m such that a timeout at or above the
// (n−m)-th smallest of n successes bounds a new call's chance of exceeding
// it by share at RiskLevel (analyze/risk.go), with m ≤ n × (1 − floorQ) so that the
// timeout is never below the requested percentile; ok is false when even
// the slowest success cannot certify share.
func certifyingRank(n int, share, floorQ float64) (m int, ok bool) {
	if n <= 0 || analyze.BetaUpper(analyze.RiskLevel, 0, n) > share {
		return 0, false
	}
	hi := int(math.Floor(float64(n)*(1-floorQ) + 1e-9))
	lo := 0
	for lo < hi { // BetaUpper grows with m: the last m within share
		mid := (lo + hi + 1) / 2
		if analyze.BetaUpper(analyze.RiskLevel, mid, n) <= share {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, true
}

// ordinal writes 2 as "2nd", 11 as "11th".
func ordinal(n int) string {
	suf := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suf = "st"
		case 2:
			suf = "nd"
		case 3:
			suf = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suf)
}

// maxRaiseRounds bounds the replay-and-raise loop; each round raises at
// least one timeout to a value some logged attempt needed, so it ends well
// before on any real log.
const maxRaiseRounds = 50

// RoundUpNice rounds a duration up to two significant digits, or to a half
// step when the leading digit is 1 (1.25s, not 1.3s, and 12s): numbers a
// human would write in a config, never more than 5% above the input.
func RoundUpNice(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	x := float64(d)
	step := niceStep(x)
	r := math.Ceil(x/step-1e-9) * step
	if r >= float64(math.MaxInt64) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(r)
}

// RoundDownNice rounds a duration down the way RoundUpNice rounds up: the
// nice value at or below d (a cap must stay a cap after rounding).
func RoundDownNice(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	x := float64(d)
	step := niceStep(x)
	return time.Duration(math.Floor(x/step+1e-9) * step)
}

// niceStep is the rounding step of RoundUpNice and RoundDownNice at x ns:
// a tenth of its decade, a twentieth when the leading digit is 1, and
// never under a millisecond.
func niceStep(x float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(x)))
	step := mag / 10
	if x/mag < 2 {
		step = mag / 20
	}
	return max(step, float64(time.Millisecond))
}

// recommendPolicy fills each hop's Recommendation in rep (whose hops have
// their roles) and returns the recommended policy, what it is known to
// risk (the held-out part is left to the caller), and its last replay of
// reqs (for the predicted effect).
//
// A hop's timeout starts from its own time to success at a percentile
// chosen for the whole request: with a target of F false timeouts per
// request and K calls per request, each call may cut F/K of its
// successes, so the percentile is max(requested, 1 − F/K) (p99 per hop,
// over ~45 calls per request, failed ~9% of the requests of a real
// export). A hop with too few successes to measure that
// percentile gets its slowest success × margin, never less. The policy is
// then replayed on the logged requests; while more than F of the requests
// that succeeded as logged fail, the timeouts that cut them are raised to
// what their cut attempts needed (× margin), and the basis says so.
func recommendPolicy(rep *analyze.Report, reqs []*span.Request, opt analyze.Options) (*policy.Policy, *analyze.Safety, *lastReplay) {
	p := &policy.Policy{Name: "recommended", Hops: map[string]policy.Hop{}, Comments: map[string]string{}, Lines: map[string]int{}}
	target := analyze.FalseTimeoutTarget(opt)
	k := callsPerRequest(reqs)
	var unmeasured []*analyze.Hop
	q := opt.Percentile / 100
	if k > 0 {
		q = max(q, 1-target/k)
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		switch h.Role {
		case analyze.RoleCallee:
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionCallee,
				Basis: "the callee's own record of a call: the caller's timeout bounds it, so set it on the calling hop"}
			continue
		case analyze.RoleInProcess:
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionInProcess,
				Basis: "work inside one service, not a remote call: there is nothing to time out; the calls above it bound it"}
			continue
		case analyze.RoleRoot:
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionRequest,
				Basis: "the trace root is the request itself: the budget bounds it"}
			continue
		}
		hp, rec := recommendHop(h, opt, q, k, target)
		h.Recommendation = rec
		if hp.Timeout == 0 {
			// Nothing measured and nothing in force: it gets the
			// default's timeout, once that is known.
			unmeasured = append(unmeasured, h)
			continue
		}
		p.Hops[h.Hop] = hp
	}
	// The default covers calls of hops that appear later: the most
	// conservative of the hop timeouts, no retries.
	p.Default = policy.Hop{Timeout: maxTimeout(p), Retries: 0, BudgetAware: true}
	if p.Default.Timeout == 0 {
		// No hop could be measured (no successes): the default still
		// bounds each attempt, above every logged one.
		var slowest int64
		for _, r := range reqs {
			analyze.EachCall(r.Calls, func(c *span.Call) {
				if c.Role == span.RoleCall {
					for _, a := range c.Attempts {
						slowest = max(slowest, a.Span.Duration)
					}
				}
			})
		}
		if slowest > 0 {
			p.Default.Timeout = max(MinTimeout, RoundUpNice(time.Duration(float64(slowest)*(1+opt.Margin))))
		}
	}
	for _, h := range unmeasured {
		if p.Default.Timeout == 0 {
			break
		}
		hp := policy.Hop{Timeout: p.Default.Timeout, BudgetAware: true}
		hp.Retries, _ = retriesFor(h)
		p.Hops[h.Hop] = hp
		h.Recommendation.TimeoutMs = ms(int64(hp.Timeout))
		h.Recommendation.Retries = hp.Retries
		h.Recommendation.Basis = strings.Replace(h.Recommendation.Basis, "the policy's default", "the policy's default, "+analyze.FormatDuration(hp.Timeout), 1)
	}
	collapseIDHops(rep, p)
	recommendHedges(rep, reqs, p, opt) // hedge.go: only with Options.HedgeLoad
	last := &lastReplay{}
	chk := raiseUntilSafe(rep, reqs, p, opt, target, last)
	if nested := coverNestedRetries(rep, reqs, p, opt); len(nested) > 0 {
		// Timeouts only grew: replay once more for the final numbers.
		recount(chk, replayAll(last, reqs, p))
		for _, h := range nested {
			if !slices.Contains(chk.RaisedHops, h) {
				chk.RaisedHops = append(chk.RaisedHops, h)
			}
		}
		sort.Strings(chk.RaisedHops)
	}
	chk.CallsPerRequest, chk.Percentile = round4(k), round4(q*100)
	rep.RecommendationCheck = chk
	recommendRetryBudgets(rep, reqs, p, opt) // budget.go: hops that retry or hedge
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if _, ok := p.Hops[h.Hop]; ok {
			p.Comments[h.Hop] = h.Recommendation.Basis
		}
	}
	if opt.MaxBudget > 0 && p.Budget > opt.MaxBudget {
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: "budget-capped",
			Message: fmt.Sprintf("the recommended timeouts need a budget of %s to cover every logged success and the critical path with its retries, but --max-budget is %s: requests on the longest paths will fail at the budget, and budget-aware retries will be skipped there", analyze.FormatDuration(p.Budget), analyze.FormatDuration(opt.MaxBudget))})
		p.Budget = opt.MaxBudget
	}
	capDurations(rep, p)
	pred := analyze.PredictFalseTimeouts(rep, reqs, p, target)
	safety := &analyze.Safety{InSample: analyze.InSample{Requests: chk.LoggedOK, Lost: chk.Failed}, Predicted: pred}
	if why := analyze.Provisional(rep, chk); why != "" {
		safety.Provisional = why
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: "provisional-policy", Message: "the recommended policy is provisional: " + why})
	}
	if !pred.Met && chk.LoggedOK > 0 {
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: analyze.CodeOutOfSample,
			Message: fmt.Sprintf("on new traffic the recommended policy may fail up to %s of requests that succeed (%s confidence, distribution-free), above the %s target: %s",
				analyze.PctText(pred.Upper), analyze.PctText(pred.Level), analyze.PctText(target), pred.Advice)})
	}
	if !chk.Met {
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: "false-timeout-target-missed",
			Message: fmt.Sprintf("replayed on these logs, the recommended policy fails %d of %d requests that succeeded as logged (%s), above the %s target", chk.Failed, chk.LoggedOK, analyze.PctText(chk.Share), analyze.PctText(chk.Target))})
	}
	return p, safety, last
}

// capDurations keeps every duration of p within what a policy file may
// hold (policy.MaxDuration), so that what recommend writes, check reads
// back; logs with spans longer than that get a warning.
func capDurations(rep *analyze.Report, p *policy.Policy) {
	var capped []string
	clamp := func(d *time.Duration, what string) {
		if *d > policy.MaxDuration {
			*d = policy.MaxDuration
			capped = append(capped, what)
		}
	}
	for _, n := range p.HopNames() {
		hp := p.Hops[n]
		clamp(&hp.Timeout, n)
		p.Hops[n] = hp
	}
	clamp(&p.Default.Timeout, "default")
	clamp(&p.Budget, "budget")
	if len(capped) > 0 {
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: "duration-capped",
			Message: fmt.Sprintf("the logs call for durations beyond %s, the longest a policy holds; capped: %s", analyze.FormatDuration(policy.MaxDuration), strings.Join(capped, ", "))})
	}
}

// raiseUntilSafe replays reqs under p, raising the timeouts that cut
// requests which succeeded as logged until at most target of them fail,
// and sets p's budget. It records in each raised hop's recommendation what
// raised it.
func raiseUntilSafe(rep *analyze.Report, reqs []*span.Request, p *policy.Policy, opt analyze.Options, target float64, last *lastReplay) *analyze.RecommendationCheck {
	chk := &analyze.RecommendationCheck{Target: target, RaisedHops: []string{}}
	for _, r := range reqs {
		if !r.Failed {
			chk.LoggedOK++
		}
	}
	allowed := int(math.Floor(target*float64(chk.LoggedOK) + 1e-9))
	byHop := map[string]*analyze.Hop{}
	for i := range rep.Hops {
		byHop[rep.Hops[i].Hop] = &rep.Hops[i]
	}
	type raise struct {
		from     time.Duration
		requests int // logged successes that the lower timeout cut, first round it was raised
		need     time.Duration
	}
	raised := map[string]*raise{}
	moreRetries := map[string]int{} // hop → retries before replay raised them
	var res *replay.Result
	for round := 1; ; round++ {
		p.Budget = budgetFor(reqs, p, opt.Margin)
		res = replayAll(last, reqs, p)
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
		chk.Failed, chk.Rounds = len(broken), round
		if len(broken) <= allowed || round > maxRaiseRounds {
			break
		}
		// Fix the requests that are cheapest to fix; the target lets the
		// most expensive `allowed` of them fail.
		cost := func(o replay.Outcome) float64 {
			c := 0.0
			for _, x := range o.Cuts {
				if t := p.ForCall(x.Hop, true).Timeout; t > 0 {
					c = max(c, float64(x.Need)/float64(t))
				}
			}
			return c
		}
		// A replay stops a request at its first cut; the probe runs every
		// broken request to its end and lists all its cuts and the retries
		// it needed, so that one round raises all of them (rounds do not
		// grow with the size of a trace). broken and brokenReqs are in the
		// same order.
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
		sort.SliceStable(broken, func(i, j int) bool { return cost(broken[i]) < cost(broken[j]) })
		want := map[string]time.Duration{}
		hits := map[string]int{}
		wantRetries := map[string]int{}
		for _, o := range broken[:len(broken)-allowed] {
			for _, x := range o.Short {
				wantRetries[x.Hop] = max(wantRetries[x.Hop], x.Retries)
			}
			seen := map[string]bool{}
			for _, x := range o.Cuts {
				need := time.Duration(x.Need)
				t := RoundUpNice(time.Duration(float64(need)*(1+opt.Margin) + 1))
				if t > want[x.Hop] {
					want[x.Hop] = t
				}
				if !seen[x.Hop] {
					seen[x.Hop], hits[x.Hop] = true, hits[x.Hop]+1
				}
			}
		}
		changed := false
		for hop, n := range wantRetries {
			hp, listed := p.Hops[hop]
			if !listed || n <= hp.Retries {
				continue
			}
			if _, ok := moreRetries[hop]; !ok {
				moreRetries[hop] = hp.Retries
			}
			hp.Retries = n
			if hp.Backoff.Base == 0 {
				if h := byHop[hop]; h != nil {
					hp.Backoff = backoffFor(h)
				}
			}
			p.Hops[hop] = hp
			changed = true
		}
		for hop, t := range want {
			hp, listed := p.Hops[hop]
			if !listed {
				hp = p.Default
			}
			if t <= hp.Timeout {
				continue
			}
			if r := raised[hop]; r == nil {
				raised[hop] = &raise{from: hp.Timeout, requests: hits[hop]}
			}
			raised[hop].need = t
			hp.Timeout = t
			changed = true
			if listed {
				p.Hops[hop] = hp
			} else {
				p.Default = hp
			}
		}
		if !changed {
			break // what fails them is not a hop timeout this loop can raise
		}
		if d := maxTimeout(p); d > p.Default.Timeout {
			p.Default.Timeout = d
		}
	}
	chk.Met = chk.Failed <= allowed
	if chk.LoggedOK > 0 {
		chk.Share = round4(float64(chk.Failed) / float64(chk.LoggedOK))
	}
	for _, n := range slices.Sorted(maps.Keys(moreRetries)) {
		h := byHop[n]
		if h == nil {
			continue
		}
		hp := p.Hops[n]
		h.Recommendation.Retries = hp.Retries
		h.Recommendation.BackoffMs = ms(int64(hp.Backoff.Base))
		h.Recommendation.Basis += fmt.Sprintf("; retries %d → %d: replayed on these logs, requests that succeeded only on a retry of this hop would fail without it",
			moreRetries[n], hp.Retries)
		if _, ok := raised[n]; !ok {
			chk.RaisedHops = append(chk.RaisedHops, n)
		}
	}
	names := make([]string, 0, len(raised))
	for n := range raised {
		names = append(names, n)
	}
	sort.Strings(names)
	k := callsPerRequest(reqs)
	for _, n := range names {
		r := raised[n]
		chk.RaisedHops = append(chk.RaisedHops, n)
		h := byHop[n]
		if h == nil {
			continue
		}
		now := p.Hops[n].Timeout
		h.Recommendation.TimeoutMs = ms(int64(now))
		h.Recommendation.RaisedFromMs = fptr(ms(int64(r.from)))
		h.Recommendation.Basis += fmt.Sprintf("; raised %s → %s: replayed on these logs, %s cut %d of the %d requests that succeeded (~%s calls per request: small cuts per hop compound)",
			analyze.FormatDuration(r.from), analyze.FormatDuration(now), analyze.FormatDuration(r.from), r.requests, chk.LoggedOK, analyze.TrimZeros(fmt.Sprintf("%.1f", k)))
	}
	return chk
}

func recommendHop(h *analyze.Hop, opt analyze.Options, q, k, target float64) (policy.Hop, analyze.Recommendation) {
	tts := h.TimeToSuccess()
	var tailNeed float64
	var tail *analyze.TailModel
	margin := opt.Margin
	pname := percentileName(q * 100)
	var current time.Duration
	if h.TimeoutMs != nil {
		current = time.Duration(*h.TimeoutMs * 1e6)
	}
	hp := policy.Hop{BudgetAware: true}
	var rec analyze.Recommendation
	// The share of the request target one call may take, and the order
	// statistic that certifies it (analyze/risk.go), when the hop has enough
	// successes for one.
	share := 1 - q
	if share <= 0 {
		share = 1e-12
	}
	m, certified := certifyingRank(tts.N, share, opt.Percentile/100)
	known := certified && tts.At != nil && tts.N-m <= tts.Known
	slowest := time.Duration(tts.Max)
	switch {
	case h.Censored != nil && tts.N >= analyze.MinSamplesRecommend && !known:
		cut := time.Duration(h.Censored.AtLeastMs * 1e6)
		canary := max(RoundUpNice(cut*4), RoundUpNice(time.Duration(float64(slowest)*(1+margin))))
		need := int(math.Ceil(10 / (1 - opt.Percentile/100)))
		rec = analyze.Recommendation{Action: analyze.ActionObserveFirst, TimeoutMs: ms(int64(canary)),
			Basis: fmt.Sprintf("%s unknown: %.0f%% of attempts were cut at %s; run a canary at %s to observe the tail (about %d attempts give p%s)",
				percentileName(opt.Percentile), h.Censored.Fraction*100, analyze.FormatDuration(cut), analyze.FormatDuration(canary), need, analyze.TrimZeros(fmt.Sprintf("%.1f", opt.Percentile)))}
		hp.Timeout = canary
	case tts.N < analyze.MinSamplesRecommend || slowest <= 0:
		t := current
		basis := fmt.Sprintf("%d successful %s: too few to measure %s", tts.N, analyze.Plural(tts.N, "attempt", "attempts"), pname)
		if floor := max(RoundDownNice(time.Duration(MaxExtrapolation*float64(slowest))), RoundUpNice(time.Duration(float64(slowest)*(1+margin)))); slowest > 0 && t < floor {
			t = floor
			tailNeed = MaxExtrapolation * float64(slowest)
			basis += fmt.Sprintf("; slowest success %s × %.0f → %s: too few to model the tail, so the furthest tailscope extrapolates (a timeout at the slowest success fails about 1 call in n+1 on new traffic)", analyze.FormatDuration(slowest), MaxExtrapolation, analyze.FormatDuration(t))
		} else if t > 0 {
			basis += "; keeping the timeout in force"
		} else {
			basis += "; no timeout known to keep: the policy's default"
		}
		if t > 0 && t < MinTimeout {
			t = MinTimeout
			basis += fmt.Sprintf(", raised to the %s floor", analyze.FormatDuration(MinTimeout))
		}
		rec = analyze.Recommendation{Action: analyze.ActionKeep, TimeoutMs: ms(int64(t)), Basis: basis}
		hp.Timeout = t
	case known:
		n := tts.N
		v := time.Duration(tts.At(float64(n-1-m) / float64(max(n-1, 1))))
		t := RoundUpNice(time.Duration(float64(v) * (1 + margin)))
		rank := "the slowest"
		if m > 0 {
			rank = fmt.Sprintf("the %s slowest", ordinal(m+1))
		}
		basis := fmt.Sprintf("%s of %d successes %s × %.2f → %s: with %d of %d longer, a new call exceeds it with probability ≤ %s (%s confidence), within its share %s of the request target",
			rank, n, analyze.FormatDuration(v), 1+margin, analyze.FormatDuration(t), m, n, analyze.PctText(round6(analyze.BetaUpper(analyze.RiskLevel, m, n))), analyze.PctText(analyze.RiskLevel), analyze.PctText(round6(share)))
		if share < 1-opt.Percentile/100-1e-12 {
			basis += fmt.Sprintf(" (~%s calls per request share the %s target)", analyze.TrimZeros(fmt.Sprintf("%.1f", k)), analyze.PctText(target))
		}
		if t < MinTimeout {
			t = MinTimeout
			basis += fmt.Sprintf(", raised to the %s floor", analyze.FormatDuration(MinTimeout))
		}
		rec = analyze.Recommendation{Action: analyze.ActionSet, TimeoutMs: ms(int64(t)), Basis: basis, Percentile: round4(100 * (1 - float64(m)/float64(n)))}
		hp.Timeout = t
	default:
		// Too few successes to certify the share with an order statistic:
		// the timeout comes from the fitted tail (analyze/tailfit.go), never below
		// the slowest success × margin and never beyond MaxExtrapolation ×
		// the slowest success, where a model of n successes says nothing.
		capT := time.Duration(MaxExtrapolation * float64(slowest))
		var t time.Duration
		var basis string
		if tts.Known < MinTailFit {
			t = max(RoundDownNice(capT), RoundUpNice(time.Duration(float64(slowest)*(1+margin))))
			tailNeed = float64(capT)
			basis = fmt.Sprintf("slowest of %d successes %s × %.0f → %s: too few to fit a tail (%d), so the furthest tailscope extrapolates",
				tts.N, analyze.FormatDuration(slowest), MaxExtrapolation, analyze.FormatDuration(t), MinTailFit)
		} else {
			model := analyze.FitTail(analyze.TailPoints(tts.At, tts.Known))
			tail = &model
			v := time.Duration(model.Quantile(share))
			tailNeed = float64(min(v, capT))
			floor := time.Duration(float64(slowest) * (1 + margin))
			t = RoundUpNice(max(v, floor))
			basis = fmt.Sprintf("extrapolated: %s puts %s at %s", analyze.DescribeModel(model, share), percentileName(100*(1-share)), analyze.FormatDuration(v))
			switch {
			case v < floor:
				basis += fmt.Sprintf(", below the slowest success %s × %.2f → %s", analyze.FormatDuration(slowest), 1+margin, analyze.FormatDuration(t))
			case t > capT:
				t = max(RoundDownNice(capT), RoundUpNice(floor))
				basis += fmt.Sprintf(", capped at %.0f× the slowest success (%s): the model is not trusted further from its data", MaxExtrapolation, analyze.FormatDuration(t))
			default:
				basis += " → " + analyze.FormatDuration(t)
			}
		}
		basis += fmt.Sprintf(" (%d successes cannot certify a per-call share of %s, which needs %d", tts.N, analyze.PctText(round6(share)), analyze.NeedSuccesses(share))
		if share < 1-opt.Percentile/100-1e-12 {
			basis += fmt.Sprintf("; ~%s calls per request share the %s request target", analyze.TrimZeros(fmt.Sprintf("%.1f", k)), analyze.PctText(target))
		}
		basis += ")"
		if t < MinTimeout {
			t = MinTimeout
			basis += fmt.Sprintf(", raised to the %s floor", analyze.FormatDuration(MinTimeout))
		}
		rec = analyze.Recommendation{Action: analyze.ActionSet, TimeoutMs: ms(int64(t)), Basis: basis, Percentile: round4(100 * (1 - share)), Extrapolated: true}
		hp.Timeout = t
	}
	rec.Tail, rec.TailNeed = tail, time.Duration(tailNeed)
	retries, why := retriesFor(h)
	hp.Retries = retries
	rec.Retries = retries
	if retries > 0 {
		hp.Backoff = backoffFor(h)
		rec.BackoffMs = ms(int64(hp.Backoff.Base))
		why += fmt.Sprintf(", full-jitter backoff from %s (half the median success)", analyze.FormatDuration(hp.Backoff.Base))
	}
	rec.Basis += "; " + why
	return hp, rec
}

// backoffFor is a hop's retry backoff: full jitter from half its median
// success (within 10 ms and 1 s), up to four times that.
func backoffFor(h *analyze.Hop) policy.Backoff {
	base := RoundUpNice(time.Duration(h.TimeToSuccess().P50 / 2))
	base = min(max(base, 10*time.Millisecond), time.Second)
	return policy.Backoff{Base: base, Max: base * 4, Jitter: policy.JitterFull}
}

// percentileName writes a percentile as "p99", "p99.98".
func percentileName(p float64) string {
	s := analyze.TrimZeros(fmt.Sprintf("%.3f", p))
	return "p" + s
}

// retriesFor decides retries from the class and the measured yield.
func retriesFor(h *analyze.Hop) (int, string) {
	y := h.RetryYield
	switch h.FailureClass {
	case analyze.ClassNone:
		return 0, "no failures: no retries"
	case analyze.ClassRanToTimeout:
		if y != nil {
			return 0, fmt.Sprintf("ran-to-timeout, retries recovered %d of %d: retries would hit the same wall", y.Recovered, y.RetriedCalls)
		}
		return 0, "ran-to-timeout: retries would hit the same wall"
	case analyze.ClassTooFew:
		return 0, "too few failures to justify retries"
	}
	if y == nil {
		if h.FailureClass == analyze.ClassTransient {
			return 1, "transient failures, retry yield not measured (no retries in the logs): 1 retry"
		}
		return 0, "mixed failures and no retries in the logs to measure their yield: no retries"
	}
	switch {
	case y.Rate >= 0.5:
		return 2, fmt.Sprintf("%s, retries recovered %d of %d: 2 retries", h.FailureClass, y.Recovered, y.RetriedCalls)
	case y.Rate > 0.1:
		return 1, fmt.Sprintf("%s, retries recovered %d of %d: 1 retry", h.FailureClass, y.Recovered, y.RetriedCalls)
	}
	return 0, fmt.Sprintf("%s, but retries recovered only %d of %d: no retries", h.FailureClass, y.Recovered, y.RetriedCalls)
}

func maxTimeout(p *policy.Policy) time.Duration {
	var t time.Duration
	for _, h := range p.Hops {
		t = max(t, h.Timeout)
	}
	return t
}

// callsPerRequest is the mean number of calls whose role is a call (the
// ones a policy times out) per request.
func callsPerRequest(reqs []*span.Request) float64 {
	if len(reqs) == 0 {
		return 0
	}
	n := 0
	for _, r := range reqs {
		analyze.EachCall(r.Calls, func(c *span.Call) {
			if c.Role == span.RoleCall {
				n++
			}
		})
	}
	return float64(n) / float64(len(reqs))
}

// coverNestedRetries raises the timeout of every call that has, somewhere
// below it, a call with retries, until its attempts' worst case (every
// call inside at its timeout, with every retry and the longest backoffs)
// fits: a caller that gives up first makes its callee's retries dead.
// Raising a caller can make its own callers short, so it repeats until
// nothing changes (at most the tree's depth, which span caps).
func coverNestedRetries(rep *analyze.Report, reqs []*span.Request, p *policy.Policy, opt analyze.Options) []string {
	byHop := map[string]*analyze.Hop{}
	for i := range rep.Hops {
		byHop[rep.Hops[i].Hop] = &rep.Hops[i]
	}
	timed := func(c *span.Call) bool { return p.ForCall(c.Hop, c.Role == span.RoleCall).Timeout > 0 }
	// A hop all of whose timed calls run under a timed caller: its timeout
	// can only ever fire inside its callers', so they must allow it.
	calls, nested := map[string]int{}, map[string]int{}
	var count func(cs []*span.Call, under bool)
	count = func(cs []*span.Call, under bool) {
		for _, c := range cs {
			t := timed(c)
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
	from := map[string]time.Duration{}
	because := map[string]string{}
	for round := 0; round <= span.MaxDepth; round++ {
		// Each request's visit reads only its tree and p (changed between
		// rounds, not during one), so the requests are split over the
		// cores (package par). Each worker keeps, per hop, the largest need
		// it met first and its reason; merging the workers in order with
		// the same strict "larger" test keeps the first request's reason
		// among those with the largest need, as one pass in order does.
		type needs struct {
			need  map[string]int64
			inner map[string]string
		}
		parts := make([]needs, par.Workers(len(reqs), minReqsPerWorker))
		par.Ranges(len(reqs), minReqsPerWorker, func(w, lo, hi int) {
			need := map[string]int64{}
			inner := map[string]string{}
			// visit returns a hop with retries at or below cs ("" if none), and
			// the longest timeout among the nearest timed calls below that are
			// always nested, with its hop.
			var visit func(cs []*span.Call) (string, time.Duration, string)
			visit = func(cs []*span.Call) (string, time.Duration, string) {
				found := ""
				var longest time.Duration
				longestHop := ""
				for _, c := range cs {
					below := ""
					var belowT time.Duration
					belowHop := ""
					for _, a := range c.Attempts {
						h, t, th := visit(a.Calls)
						if h != "" {
							below = h
						}
						if t > belowT {
							belowT, belowHop = t, th
						}
					}
					hp := p.ForCall(c.Hop, c.Role == span.RoleCall)
					if below != "" && hp.Timeout > 0 {
						for _, a := range c.Attempts {
							if lat, _ := worstAttempt(a.Span, a.Calls, p); lat > need[c.Hop] {
								need[c.Hop], inner[c.Hop] = lat, "so that the retries of "+below+" below it can run (its calls at their timeouts, with every retry, need up to that"
							}
						}
					}
					if hp.Timeout > 0 && belowT > hp.Timeout && int64(belowT) > need[c.Hop] {
						need[c.Hop], inner[c.Hop] = int64(belowT), "so that "+belowHop+", always called under it, can use its own "+analyze.FormatDuration(belowT)+" (that"
					}
					switch {
					case hp.Retries > 0:
						found = c.Hop
					case below != "" && found == "":
						found = below
					}
					switch {
					case hp.Timeout > 0:
						if calls[c.Hop] > 0 && nested[c.Hop] == calls[c.Hop] && hp.Timeout > longest {
							longest, longestHop = hp.Timeout, c.Hop
						}
					case belowT > longest:
						longest, longestHop = belowT, belowHop
					}
				}
				return found, longest, longestHop
			}
			for _, r := range reqs[lo:hi] {
				visit(r.Calls)
			}
			parts[w] = needs{need, inner}
		})
		need := map[string]int64{}
		inner := map[string]string{}
		for _, pt := range parts {
			for hop, n := range pt.need {
				if n > need[hop] {
					need[hop], inner[hop] = n, pt.inner[hop]
				}
			}
		}
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
	for hop, was := range from {
		h := byHop[hop]
		if h == nil {
			continue
		}
		now := p.Hops[hop].Timeout
		h.Recommendation.TimeoutMs = ms(int64(now))
		if h.Recommendation.RaisedFromMs == nil {
			h.Recommendation.RaisedFromMs = fptr(ms(int64(was)))
		}
		h.Recommendation.Basis += fmt.Sprintf("; raised %s → %s %s × %.2f)",
			analyze.FormatDuration(was), analyze.FormatDuration(now), because[hop], 1+opt.Margin)
	}
	if d := maxTimeout(p); d > p.Default.Timeout {
		p.Default.Timeout = d
	}
	p.Budget = budgetFor(reqs, p, opt.Margin)
	raised := make([]string, 0, len(from))
	for hop := range from {
		raised = append(raised, hop)
	}
	return raised
}

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
		chk.Share = round4(float64(chk.Failed) / float64(chk.LoggedOK))
	}
}

// budgetFor is a budget under which no logged request is cut: the longest
// request as logged (root span included) or along its critical path with
// every attempt running to its timeout and every configured retry taken
// (so no retry is dead: the article's config D), whichever is longer, ×
// (1 + margin), and always above the longest hop timeout so that every
// per-attempt timeout can fire before the budget.
func budgetFor(reqs []*span.Request, p *policy.Policy, margin float64) time.Duration {
	// Each request's worst case reads only its tree and p: the requests
	// are split over the cores (package par), and the largest of the
	// workers' maxima is the same whatever the split.
	most := make([]int64, par.Workers(len(reqs), minReqsPerWorker))
	par.Ranges(len(reqs), minReqsPerWorker, func(w, lo, hi int) {
		for _, r := range reqs[lo:hi] {
			most[w] = max(most[w], r.Latency(), worstRequest(r, p))
		}
	})
	worst := slices.Max(most)
	if worst == 0 {
		return 0
	}
	b := RoundUpNice(time.Duration(float64(worst) * (1 + margin)))
	if t := max(maxTimeout(p), p.Default.Timeout); b <= t {
		b = RoundUpNice(time.Duration(float64(t) * (1 + margin)))
	}
	return b
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
