package recommend

import (
	"github.com/tailscope/tailscope/internal/units"

	"math"
	"slices"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
)

// Retry budgets: every hop the policy retries or hedges gets a
// budget that leaves its ordinary retries alone and caps them in a storm
// (every attempt failing), derived from what the logs show of the hop:
//
//   - Envoy retry_budget: budget_percent is twice the logged retries per
//     call (and twice the hedge load on a hedged hop), at least 5% and at
//     most 100%; min_retry_concurrency is that share of the attempts the
//     hop has in flight on average (span overlap in time), at least 1.
//   - Linkerd retryBudget: retryRatio is Envoy's share, minRetriesPerSecond
//     twice the logged retries per second (at least 1), ttl 10s.
//   - gRPC retryThrottling: tokenRatio is three times the logged
//     failure-to-success ratio of its attempts (within 0.05 and 1), so
//     that ordinary failures never drain the bucket; maxTokens is twice
//     the peak of attempts in flight times the attempts a call may make
//     (within 10 and 1000), so that a storm stops retries after about one
//     peak's worth of failed attempts.
//
// The recommendation's replay does not apply budgets: they change nothing
// in ordinary operation by construction (replay.Options.Throttle replays
// the gRPC form, for storms). They go to the report's
// recommended_policy.hops[h].retry_budget, with what they rest on, and to
// the emitted configs; the hop's basis is left as it was.
func recommendRetryBudgets(rep *analyze.Report, reqs []*span.Request, p *policy.Policy, opt analyze.Options) {
	type obs struct {
		calls, attempts, failed int
		iv                      [][2]int64
	}
	per := map[string]*obs{}
	for _, r := range reqs {
		analyze.EachCall(r.Calls, func(c *span.Call) {
			hp, ok := p.Hops[c.Hop]
			if !ok || hp.Retries == 0 && hp.Hedge.Delay == 0 {
				return
			}
			o := per[c.Hop]
			if o == nil {
				o = &obs{}
				per[c.Hop] = o
			}
			o.calls++
			for _, a := range c.Attempts {
				o.attempts++
				if a.Span.Failed() {
					o.failed++
				}
				o.iv = append(o.iv, [2]int64{a.Span.Start, a.Span.End()})
			}
		})
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		o := per[h.Hop]
		if o == nil || o.calls == 0 {
			continue
		}
		hp := p.Hops[h.Hop]
		rb := policy.RetryBudget{
			RetryRate:   units.Round(float64(o.attempts-o.calls)/float64(o.calls), 4),
			FailureRate: units.Round(float64(o.failed)/float64(o.attempts), 4),
		}
		rb.InFlightMean, rb.InFlightPeak = inFlight(o.iv)
		share := 2 * rb.RetryRate
		if hp.Hedge.Delay > 0 {
			share = max(share, 2*opt.HedgeLoad)
		}
		rb.Percent = min(100, max(5, math.Ceil(100*share)))
		rb.MinConcurrency = max(1, int(math.Ceil(rb.InFlightMean*rb.Percent/100)))
		f := rb.FailureRate
		ratio := 1.0
		if f < 1 {
			ratio = 3 * f / (1 - f)
		}
		rb.TokenRatio = math.Ceil(min(1, max(0.05, ratio))*1000) / 1000
		rb.MaxTokens = min(1000, max(10, 2*rb.InFlightPeak*(1+hp.Retries+hp.Hedge.Max)))
		// Linkerd: the same share as Envoy's, and a floor of twice the
		// logged retries per second (at least 1) so that the rate seen in
		// ordinary operation always passes.
		rb.RetryRatio = rb.Percent / 100
		var first, last int64
		for i, x := range o.iv {
			if i == 0 || x[0] < first {
				first = x[0]
			}
			last = max(last, x[1])
		}
		if secs := float64(last-first) / 1e9; secs > 0 {
			rb.RetriesPerSecond = units.Round(float64(o.attempts-o.calls)/secs, 4)
		}
		rb.MinRetriesPerSecond = max(1, int(math.Ceil(2*rb.RetriesPerSecond)))
		if p.RetryBudgets == nil {
			p.RetryBudgets = map[string]policy.RetryBudget{}
		}
		p.RetryBudgets[h.Hop] = rb
	}
}

// inFlight is how many of the intervals overlap on average over the time
// they span, and at most at once (an interval ending when another starts
// does not overlap it).
func inFlight(iv [][2]int64) (mean float64, peak int) {
	if len(iv) == 0 {
		return 0, 0
	}
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(iv))
	lo, hi := iv[0][0], iv[0][1]
	var busy float64
	for _, x := range iv {
		evs = append(evs, ev{x[0], 1}, ev{x[1], -1})
		lo, hi = min(lo, x[0]), max(hi, x[1])
		busy += float64(x[1] - x[0])
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.d - b.d // ends first
	})
	n := 0
	for _, e := range evs {
		n += e.d
		peak = max(peak, n)
	}
	if hi > lo {
		mean = units.Round(busy/float64(hi-lo), 4)
	} else {
		mean = float64(peak)
	}
	return mean, peak
}

// budgetDoc is a retry budget in the report's JSON form.
func budgetDoc(rb policy.RetryBudget) *analyze.RetryBudgetDoc {
	d := &analyze.RetryBudgetDoc{}
	d.Envoy.BudgetPercent, d.Envoy.MinRetryConcurrency = rb.Percent, rb.MinConcurrency
	d.GRPC.MaxTokens, d.GRPC.TokenRatio = rb.MaxTokens, rb.TokenRatio
	d.Observed.RetriesPerCall, d.Observed.FailureRate = rb.RetryRate, rb.FailureRate
	d.Observed.InFlightMean, d.Observed.InFlightPeak = rb.InFlightMean, rb.InFlightPeak
	d.Observed.RetriesPerSecond = rb.RetriesPerSecond
	d.Linkerd.RetryRatio, d.Linkerd.MinRetriesPerSecond, d.Linkerd.TTL = rb.RetryRatio, rb.MinRetriesPerSecond, "10s"
	return d
}
