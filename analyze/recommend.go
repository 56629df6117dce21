package analyze

import (
	"fmt"
	"math"
	"time"

	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
)

// Recommendation actions.
const (
	ActionSet          = "set"
	ActionObserveFirst = "observe-first"
	ActionKeep         = "keep"
	// ActionCallee marks a hop whose spans are the callee's own record
	// (server, consumer, internal): the caller's timeout bounds it, so the
	// policy sets nothing for it.
	ActionCallee = "callee-side"
)

// MinTimeout is the floor of a recommended timeout: below it, network and
// scheduler noise alone would cause false timeouts.
const MinTimeout = 50 * time.Millisecond

// MinSamplesRecommend is the number of time-to-success samples below which
// no timeout is derived from the data.
const MinSamplesRecommend = 20

// RoundUpNice rounds a duration up to two significant digits, or to a half
// step when the leading digit is 1 (1.25s, not 1.3s, and 12s): numbers a
// human would write in a config, never more than 5% above the input.
func RoundUpNice(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	x := float64(d)
	mag := math.Pow(10, math.Floor(math.Log10(x)))
	step := mag / 10
	if x/mag < 2 {
		step = mag / 20
	}
	if step < float64(time.Millisecond) {
		step = float64(time.Millisecond)
	}
	r := math.Ceil(x/step-1e-9) * step
	return time.Duration(r)
}

// Recommend fills each hop's Recommendation in rep and returns the
// recommended policy (DESIGN §5).
func Recommend(rep *Report, reqs []*span.Request, opt Options) *policy.Policy {
	p := &policy.Policy{Name: "recommended", Hops: map[string]policy.Hop{}, Comments: map[string]string{}, Lines: map[string]int{}}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if !span.CallerSide(h.Kind) {
			h.Recommendation = Recommendation{Action: ActionCallee,
				Basis: fmt.Sprintf("%s spans are the callee's own record: the caller's timeout bounds them, so set it on the calling hop", h.Kind)}
			continue
		}
		hp, rec := recommendHop(h, opt)
		h.Recommendation = rec
		p.Hops[h.Hop] = hp
		p.Comments[h.Hop] = rec.Basis
	}
	// The default covers hops that appear later: the most conservative of
	// the hop timeouts, no retries.
	var maxT time.Duration
	for _, h := range p.Hops {
		maxT = max(maxT, h.Timeout)
	}
	p.Default = policy.Hop{Timeout: maxT, Retries: 0, BudgetAware: true}
	p.Budget = budgetFor(reqs, p)
	if opt.MaxBudget > 0 && p.Budget > opt.MaxBudget {
		rep.Warnings = append(rep.Warnings, Warning{Code: "budget-capped",
			Message: fmt.Sprintf("the critical path of the recommended timeouts needs %s but --max-budget is %s: requests on the longest paths will fail at the budget, and budget-aware retries will be skipped there", FormatDuration(p.Budget), FormatDuration(opt.MaxBudget))})
		p.Budget = opt.MaxBudget
	}
	return p
}

func recommendHop(h *Hop, opt Options) (policy.Hop, Recommendation) {
	margin := opt.Margin
	pname := fmt.Sprintf("p%s", trimZeros(fmt.Sprintf("%.1f", opt.Percentile)))
	var current time.Duration
	if h.TimeoutMs != nil {
		current = time.Duration(*h.TimeoutMs * 1e6)
	}
	hp := policy.Hop{BudgetAware: true}
	var rec Recommendation
	switch {
	case h.Censored != nil && !h.targetKnown && h.ttsCount >= MinSamplesRecommend:
		cut := time.Duration(h.Censored.AtLeastMs * 1e6)
		canary := RoundUpNice(cut * 4)
		need := int(math.Ceil(10 / (1 - opt.Percentile/100)))
		rec = Recommendation{Action: ActionObserveFirst, TimeoutMs: ms(int64(canary)),
			Basis: fmt.Sprintf("%s unknown: %.0f%% of attempts were cut at %s; run a canary at %s to observe the tail (about %d attempts give %s)",
				pname, h.Censored.Fraction*100, FormatDuration(cut), FormatDuration(canary), need, pname)}
		hp.Timeout = canary
	case h.ttsCount < MinSamplesRecommend || !h.targetKnown:
		t := current
		basis := fmt.Sprintf("%d successful attempts: too few to measure %s", h.ttsCount, pname)
		if t == 0 && h.maxTTS > 0 {
			t = RoundUpNice(time.Duration(float64(h.maxTTS) * (1 + margin)))
			basis += fmt.Sprintf("; max %s × %.2f → %s", FormatDuration(time.Duration(h.maxTTS)), 1+margin, FormatDuration(t))
		} else if t > 0 {
			basis += "; keeping the timeout in force"
		}
		if t < MinTimeout {
			t = MinTimeout
			basis += fmt.Sprintf(", raised to the %s floor", FormatDuration(MinTimeout))
		}
		rec = Recommendation{Action: ActionKeep, TimeoutMs: ms(int64(t)), Basis: basis}
		hp.Timeout = t
	default:
		raw := time.Duration(h.target * (1 + margin))
		t := RoundUpNice(raw)
		basis := fmt.Sprintf("%s %s × %.2f → %s", pname, FormatDuration(time.Duration(h.target)), 1+margin, FormatDuration(t))
		if t < MinTimeout {
			t = MinTimeout
			basis += fmt.Sprintf(", raised to the %s floor", FormatDuration(MinTimeout))
		}
		rec = Recommendation{Action: ActionSet, TimeoutMs: ms(int64(t)), Basis: basis}
		hp.Timeout = t
	}
	retries, why := retriesFor(h)
	hp.Retries = retries
	rec.Retries = retries
	if retries > 0 {
		base := RoundUpNice(time.Duration(h.p50TTS / 2))
		base = min(max(base, 10*time.Millisecond), time.Second)
		hp.Backoff = policy.Backoff{Base: base, Max: base * 4, Jitter: policy.JitterFull}
		rec.BackoffMs = ms(int64(base))
		why += fmt.Sprintf(", full-jitter backoff from %s (half the median success)", FormatDuration(base))
	}
	rec.Basis += "; " + why
	return hp, rec
}

// retriesFor decides retries from the class and the measured yield.
func retriesFor(h *Hop) (int, string) {
	y := h.RetryYield
	switch h.FailureClass {
	case ClassNone:
		return 0, "no failures: no retries"
	case ClassRanToTimeout:
		if y != nil {
			return 0, fmt.Sprintf("ran-to-timeout, retries recovered %d of %d: retries would hit the same wall", y.Recovered, y.RetriedCalls)
		}
		return 0, "ran-to-timeout: retries would hit the same wall"
	case ClassTooFew:
		return 0, "too few failures to justify retries"
	}
	if y == nil {
		if h.FailureClass == ClassTransient {
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

// budgetFor is the longest critical path of any logged request under p
// when every attempt runs to its timeout and every retry runs: the budget
// that leaves no configured retry dead (the article's config D).
func budgetFor(reqs []*span.Request, p *policy.Policy) time.Duration {
	var worst int64
	for _, r := range reqs {
		if w := worstPath(r.Calls, p); w > worst {
			worst = w
		}
	}
	if worst == 0 {
		return 0
	}
	return RoundUpNice(time.Duration(worst))
}

// worstPath is the critical path through sibling calls: a call waits for
// the calls that ended before it started; overlapping calls run in
// parallel.
func worstPath(cs []*span.Call, p *policy.Policy) int64 {
	ends := make([]int64, len(cs))
	var out int64
	for i, c := range cs {
		var start int64
		for j := 0; j < i; j++ {
			if cs[j].End() <= c.Start() && ends[j] > start {
				start = ends[j]
			}
		}
		h := p.ForCall(c.Hop, span.CallerSide(c.Attempts[0].Span.Kind))
		w := int64(h.Timeout) * int64(h.Retries+1)
		for k := 1; k <= h.Retries; k++ {
			w += int64(h.Backoff.MaxDelay(k))
		}
		if h.Timeout == 0 {
			w = c.End() - c.Start()
		}
		ends[i] = start + w
		out = max(out, ends[i])
	}
	return out
}
