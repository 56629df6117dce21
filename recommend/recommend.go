package recommend

import (
	"fmt"
	"github.com/tailscope/tailscope/bound"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/tail"
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
func recommendPolicy(rep *analyze.Report, reqs []*span.Request, opt analyze.Options) (*policy.Policy, *analyze.Safety, *lastReplay, *budgetRule) {
	p := &policy.Policy{Name: "recommended", Hops: map[string]policy.Hop{}, Comments: map[string]string{}, Lines: map[string]int{}}
	target := analyze.FalseTimeoutTarget(opt)
	k := callsPerRequest(reqs)
	var unmeasured []*analyze.Hop
	q := opt.Percentile / 100
	if k > 0 {
		q = max(q, 1-target/k)
	}
	// Each hop's recommendation reads only that hop, and a hop whose tail
	// is extrapolated fits a model (tens of milliseconds): all of them
	// run at once, then are taken in the report's order.
	hps := make([]policy.Hop, len(rep.Hops))
	par.Each(len(rep.Hops), func(i int) {
		h := &rep.Hops[i]
		switch h.Role {
		case analyze.RoleCallee:
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionCallee,
				Basis: "the callee's own record of a call: the caller's timeout bounds it, so set it on the calling hop"}
		case analyze.RoleInProcess:
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionInProcess,
				Basis: "work inside one service, not a remote call: there is nothing to time out; the calls above it bound it"}
		case analyze.RoleRoot:
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionRequest,
				Basis: "the trace root is the request itself: the budget bounds it"}
		default:
			hps[i], h.Recommendation = recommendHop(h, opt, q, k, target)
			applyHeadroom(rep, h, &hps[i], &h.Recommendation, opt.Margin) // drift.go
		}
	})
	applyRecords(rep, hps, 1-q, opt.Margin) // drift.go
	for i := range rep.Hops {
		h, hp := &rep.Hops[i], hps[i]
		switch h.Role {
		case analyze.RoleCallee, analyze.RoleInProcess, analyze.RoleRoot:
			continue
		}
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
		h.Recommendation.TimeoutMs = units.Ms(int64(hp.Timeout))
		h.Recommendation.Retries = hp.Retries
		h.Recommendation.Basis = strings.Replace(h.Recommendation.Basis, "the policy's default", "the policy's default, "+units.Duration(hp.Timeout), 1)
	}
	collapseIDHops(rep, p)
	recommendHedges(rep, reqs, p, opt) // hedge.go: only with Options.HedgeLoad
	last := &lastReplay{}
	br := requestBudget(rep, reqs, opt, target)
	chk := raiseUntilSafe(rep, reqs, p, opt, target, last, br)
	if nested := coverNestedRetries(rep, reqs, p, opt, br); len(nested) > 0 {
		// Timeouts only grew: replay once more for the final numbers.
		recount(chk, replayAll(last, reqs, p))
		for _, h := range nested {
			if !slices.Contains(chk.RaisedHops, h) {
				chk.RaisedHops = append(chk.RaisedHops, h)
			}
		}
		sort.Strings(chk.RaisedHops)
	}
	if lowered := clampToBudget(rep, p, br, opt.Margin); len(lowered) > 0 { // drift.go
		p.Budget = br.budgetFor(p, opt.Margin)
		recount(chk, replayAll(last, reqs, p))
	}
	chk.CallsPerRequest, chk.Percentile = units.Round(k, 4), units.Round(q*100, 4)
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
			Message: fmt.Sprintf("the requests' tail and the recommended timeouts need a budget of %s (above every logged success and every hop timeout, with room for the retries), but %s is %s: the slowest requests will fail at the budget, and budget-aware retries will be skipped there", units.Duration(p.Budget), opt.Names.Of(option.MaxBudget), units.Duration(opt.MaxBudget))})
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
		rep.Warnings = append(rep.Warnings, outOfSampleWarning(pred, target))
	}
	if !chk.Met {
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: "false-timeout-target-missed",
			Message: fmt.Sprintf("replayed on these logs, the recommended policy fails %d of %d requests that succeeded as logged (%s), above the %s target", chk.Failed, chk.LoggedOK, units.Percent(chk.Share, 3), units.Percent(chk.Target, 3))})
	}
	return p, safety, last, br
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
			Message: fmt.Sprintf("the logs call for durations beyond %s, the longest a policy holds; capped: %s", units.Duration(policy.MaxDuration), strings.Join(capped, ", "))})
	}
}

func recommendHop(h *analyze.Hop, opt analyze.Options, q, k, target float64) (policy.Hop, analyze.Recommendation) {
	tts := h.TimeToSuccess()
	var tailNeed float64
	var fit *tail.Model
	margin := opt.Margin
	pname := units.PercentileRounded(q * 100)
	var current time.Duration
	if h.TimeoutMs != nil {
		current = units.FromMs(*h.TimeoutMs)
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
	m, certified := bound.CertifyingRank(tts.N, share, opt.Percentile/100, analyze.RiskLevel)
	known := certified && tts.At != nil && tts.N-m <= tts.Known
	slowest := time.Duration(tts.Max)
	switch {
	case h.Censored != nil && tts.N >= analyze.MinSamplesRecommend && !known:
		cut := units.FromMs(h.Censored.AtLeastMs)
		canary := max(RoundUpNice(cut*4), RoundUpNice(time.Duration(float64(slowest)*(1+margin))))
		need := int(math.Ceil(10 / (1 - opt.Percentile/100)))
		rec = analyze.Recommendation{Action: analyze.ActionObserveFirst, TimeoutMs: units.Ms(int64(canary)),
			Basis: fmt.Sprintf("%s unknown: %s of attempts were cut at %s; run a canary at %s to observe the tail (about %d attempts give p%s)",
				units.PercentileRounded(opt.Percentile), units.PercentWholeEven(h.Censored.Fraction), units.Duration(cut), units.Duration(canary), need, units.Decimal(opt.Percentile, 1))}
		hp.Timeout = canary
	case tts.N < analyze.MinSamplesRecommend || slowest <= 0:
		t := current
		basis := fmt.Sprintf("%d successful %s: too few to measure %s", tts.N, units.Plural(tts.N, "attempt", "attempts"), pname)
		if floor := max(RoundDownNice(time.Duration(MaxExtrapolation*float64(slowest))), RoundUpNice(time.Duration(float64(slowest)*(1+margin)))); slowest > 0 && t < floor {
			t = floor
			tailNeed = MaxExtrapolation * float64(slowest)
			basis += fmt.Sprintf("; slowest success %s × %.0f → %s: too few to model the tail, so the furthest tailscope extrapolates (a timeout at the slowest success fails about 1 call in n+1 on new traffic)", units.Duration(slowest), MaxExtrapolation, units.Duration(t))
		} else if t > 0 {
			basis += "; keeping the timeout in force"
		} else {
			basis += "; no timeout known to keep: the policy's default"
		}
		if t > 0 && t < MinTimeout {
			t = MinTimeout
			basis += fmt.Sprintf(", raised to the %s floor", units.Duration(MinTimeout))
		}
		rec = analyze.Recommendation{Action: analyze.ActionKeep, TimeoutMs: units.Ms(int64(t)), Basis: basis}
		hp.Timeout = t
	case known:
		n := tts.N
		v := time.Duration(tts.At(float64(n-1-m) / float64(max(n-1, 1))))
		t := RoundUpNice(time.Duration(float64(v) * (1 + margin)))
		rank := "the slowest"
		if m > 0 {
			rank = fmt.Sprintf("the %s slowest", units.Ordinal(m+1))
		}
		basis := fmt.Sprintf("%s of %d successes %s × %.2f → %s: with %d of %d longer, a new call exceeds it with probability ≤ %s (%s confidence), within its share %s of the request target",
			rank, n, units.Duration(v), 1+margin, units.Duration(t), m, n, units.Percent(units.Round(bound.BetaUpper(analyze.RiskLevel, m, n), 6), 3), units.Percent(analyze.RiskLevel, 3), units.Percent(units.Round(share, 6), 3))
		if share < 1-opt.Percentile/100-1e-12 {
			basis += fmt.Sprintf(" (~%s calls per request share the %s target)", units.Decimal(k, 1), units.Percent(target, 3))
		}
		if t < MinTimeout {
			t = MinTimeout
			basis += fmt.Sprintf(", raised to the %s floor", units.Duration(MinTimeout))
		}
		rec = analyze.Recommendation{Action: analyze.ActionSet, TimeoutMs: units.Ms(int64(t)), Basis: basis, Percentile: units.Round(100*(1-float64(m)/float64(n)), 4)}
		hp.Timeout = t
	default:
		// Too few successes to certify the share with an order statistic:
		// the timeout comes from the fitted tail (package tail), never below
		// the slowest success × margin and never beyond MaxExtrapolation ×
		// the slowest success, where a model of n successes says nothing.
		t, basis, need, model := extrapolate(tts, share, margin)
		tailNeed, fit = need, model
		basis += fmt.Sprintf(" (%d successes cannot certify a per-call share of %s, which needs %d", tts.N, units.Percent(units.Round(share, 6), 3), bound.NeedSuccesses(share, analyze.RiskLevel))
		if share < 1-opt.Percentile/100-1e-12 {
			basis += fmt.Sprintf("; ~%s calls per request share the %s request target", units.Decimal(k, 1), units.Percent(target, 3))
		}
		basis += ")"
		if t < MinTimeout {
			t = MinTimeout
			basis += fmt.Sprintf(", raised to the %s floor", units.Duration(MinTimeout))
		}
		rec = analyze.Recommendation{Action: analyze.ActionSet, TimeoutMs: units.Ms(int64(t)), Basis: basis, Percentile: units.Round(100*(1-share), 4), Extrapolated: true}
		hp.Timeout = t
	}
	rec.Tail, rec.TailNeed = fit, time.Duration(tailNeed)
	retries, why := retriesFor(h)
	hp.Retries = retries
	rec.Retries = retries
	if retries > 0 {
		hp.Backoff = backoffFor(h)
		rec.BackoffMs = units.Ms(int64(hp.Backoff.Base))
		why += fmt.Sprintf(", full-jitter backoff from %s (half the median success)", units.Duration(hp.Backoff.Base))
	}
	rec.Basis += "; " + why
	return hp, rec
}

// extrapolate is the timeout of a hop whose successes are too few for an
// order statistic to certify share: from its fitted tail at share, never
// below the slowest success × (1 + margin) and never beyond
// MaxExtrapolation × the slowest success; with fewer than MinTailFit
// successes, that cap. It returns the timeout, the basis's opening, what
// the tail was taken to need (ns, before rounding) and the model (nil
// when none was fitted).
func extrapolate(tts analyze.TimeToSuccess, share, margin float64) (t time.Duration, basis string, need float64, fitted *tail.Model) {
	slowest := time.Duration(tts.Max)
	capT := time.Duration(MaxExtrapolation * float64(slowest))
	if tts.Known < MinTailFit {
		t = max(RoundDownNice(capT), RoundUpNice(time.Duration(float64(slowest)*(1+margin))))
		basis = fmt.Sprintf("slowest of %d successes %s × %.0f → %s: too few to fit a tail (%d), so the furthest tailscope extrapolates",
			tts.N, units.Duration(slowest), MaxExtrapolation, units.Duration(t), MinTailFit)
		return t, basis, float64(capT), nil
	}
	model := tail.Fit(tail.Points(tts.At, tts.Known))
	v := model.Duration(share)
	floor := time.Duration(float64(slowest) * (1 + margin))
	t = RoundUpNice(max(v, floor))
	basis = fmt.Sprintf("extrapolated: %s puts %s at %s", tail.Describe(model, share, tts.Known), units.PercentileRounded(100*(1-share)), units.Duration(v))
	switch {
	case v < floor:
		basis += fmt.Sprintf(", below the slowest success %s × %.2f → %s", units.Duration(slowest), 1+margin, units.Duration(t))
	case t > capT:
		// A model value past the cap is beyond anything the data can
		// support: said as such, never as if it were a measurement.
		t = max(RoundDownNice(capT), RoundUpNice(floor))
		desc, pct := tail.Describe(model, share, tts.Known), units.PercentileRounded(100*(1-share))
		if v > 100*slowest {
			// The model's value that far out (4643285s was printed for a
			// 1.22s hop) is a property of its formula, not of the hop.
			basis = fmt.Sprintf("extrapolated: %s; beyond the data, the model puts %s over 100× the slowest success %s; the timeout stops at %.0f× it: %s",
				desc, pct, units.Duration(slowest), MaxExtrapolation, units.Duration(t))
		} else {
			basis = fmt.Sprintf("extrapolated: %s; beyond the data, the model puts %s at %s, past %.0f× the slowest success %s, so the timeout stops there: %s",
				desc, pct, units.Duration(v), MaxExtrapolation, units.Duration(slowest), units.Duration(t))
		}
	case units.Duration(t) != units.Duration(v):
		basis += " → " + units.Duration(t)
	}
	return t, basis, float64(min(v, capT)), &model
}

// backoffFor is a hop's retry backoff: full jitter from half its median
// success (within 10 ms and 1 s), up to four times that.
func backoffFor(h *analyze.Hop) policy.Backoff {
	base := RoundUpNice(time.Duration(h.TimeToSuccess().P50 / 2))
	base = min(max(base, 10*time.Millisecond), time.Second)
	return policy.Backoff{Base: base, Max: base * 4, Jitter: policy.JitterFull}
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

// outOfSampleWarning says that the recommended policy's out-of-sample
// bound is above the target, and why: the exchangeable part's advice, and
// the incidents' part when the logs name incidents.
func outOfSampleWarning(pred *analyze.Prediction, target float64) analyze.Warning {
	ir := pred.Incidents
	if ir == nil {
		return analyze.Warning{Code: analyze.CodeOutOfSample,
			Message: fmt.Sprintf("on new traffic the recommended policy may fail up to %s of requests that succeed (%s confidence, distribution-free), above the %s target: %s",
				units.Percent(pred.Upper, 3), units.Percent(pred.Level, 3), units.Percent(target, 3), pred.Advice)}
	}
	msg := fmt.Sprintf("on new traffic the recommended policy may fail up to %s of requests that succeed (%s confidence), above the %s target",
		units.Percent(pred.Upper, 3), units.Percent(pred.Level, 3), units.Percent(target, 3))
	{
		msg += fmt.Sprintf(": if tomorrow brings incidents like today's (%s on %s, in %d of %d blocks, %s× slower at the median) on hops the policy was not fitted for, up to %s of requests fail; traffic like today's, up to %s (distribution-free)",
			units.Count(ir.Incidents, "incident", "incidents"), units.Count(ir.Hops, "hop", "hops"), ir.Blocks, ir.OfBlocks, units.Decimal(ir.Slowdown, 1), units.Percent(ir.Upper, 3), units.Percent(pred.ExchangeableUpper, 3))
		if pred.Advice != "" {
			msg += "; " + pred.Advice
		}
	}
	return analyze.Warning{Code: analyze.CodeOutOfSample, Message: msg}
}
