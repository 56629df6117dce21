package recommend

import (
	"fmt"
	"math"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// Hedging (docs/DESIGN.md §5): a hedge sends a second attempt when the
// first has not answered after a delay, and takes the first answer. It
// only cuts a tail made of independent slow draws: when a call's attempts
// are slow together (a cold index, an overloaded server), the hedge waits
// on the same wall and only adds load. So a hedge is proposed only on a
// hop whose logs show that a call's next attempt does not share the slowness
// of the one before, never on a ran-to-timeout hop, and only when asked
// for (Options.HedgeLoad > 0).
//
// The delay is the hop's time-to-success percentile 1 − HedgeLoad: with
// independent draws, about HedgeLoad of the attempts have not answered by
// then, which is the extra load. The hop's calls are replayed with the
// hedge under the independent retry model (what the evidence says of this
// hop), and the hedge is kept only when it cuts their p99 within about the
// allowed load; the basis says what it cut and what it
// cost. The recommendation's replay loop then checks the whole policy.

const (
	// minHedgePairs is how many logged (slow attempt, next attempt) pairs
	// or retried calls it takes to judge a hop's attempts independent.
	minHedgePairs = 5
	// hedgeLoadSlack is how far over --hedge-load the replayed load may
	// be (a delay rounded to a nice value is usually below it).
	hedgeLoadSlack = 1.5
)

// recommendHedges adds hedges to the hops of p that qualify, and says in
// each timed hop's basis why it has a hedge or not.
func recommendHedges(rep *analyze.Report, reqs []*span.Request, p *policy.Policy, opt analyze.Options) {
	load := opt.HedgeLoad
	if load <= 0 || load >= 1 {
		return
	}
	q := 1 - load
	calls := map[string][]*span.Call{}
	for _, r := range reqs {
		analyze.EachCall(r.Calls, func(c *span.Call) { calls[c.Hop] = append(calls[c.Hop], c) })
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		hp, ok := p.Hops[h.Hop]
		if !ok || hp.Timeout == 0 {
			continue
		}
		note := func(s string) { h.Recommendation.Basis += "; " + s }
		if h.FailureClass == analyze.ClassRanToTimeout {
			note("no hedge: ran-to-timeout, a second attempt would wait on the same wall")
			continue
		}
		tts := h.TimeToSuccess()
		if tts.At == nil || tts.N < analyze.MinSamplesRecommend || float64(tts.N)*load < 1 || !analyze.PercentileKnown(tts.N, tts.Known, q) {
			note(fmt.Sprintf("no hedge: too few successes to measure %s", units.PercentileRounded(q*100)))
			continue
		}
		delay := max(RoundUpNice(time.Duration(tts.At(q))), time.Millisecond)
		if delay >= hp.Timeout {
			note(fmt.Sprintf("no hedge: %s of time to success (%s) is not below the timeout", units.PercentileRounded(q*100), units.Duration(delay)))
			continue
		}
		why, indep := independence(h, calls[h.Hop], int64(delay))
		if !indep {
			note("no hedge: " + why)
			continue
		}
		// The hop's own calls, each replayed alone (no budget: the hop's
		// tail, not the request's), with and without the hedge; both draw
		// beyond the logged attempts from the hop's pool, as the evidence
		// says its attempts may be drawn.
		sub := make([]*span.Request, len(calls[h.Hop]))
		for j, c := range calls[h.Hop] {
			sub[j] = &span.Request{TraceID: fmt.Sprintf("%s/%d", h.Hop, j), Calls: []*span.Call{c}, Start: c.Start(), End: c.End(), Failed: c.Failed()}
		}
		plain := &policy.Policy{Default: p.Default, Hops: p.Hops}
		hedged := &policy.Policy{Default: p.Default, Hops: map[string]policy.Hop{}}
		for n, x := range p.Hops {
			hedged.Hops[n] = x
		}
		hh := hp
		hh.Hedge = policy.Hedge{Delay: delay, Max: 1}
		hedged.Hops[h.Hop] = hh
		ind := replay.Options{RetryModel: replay.ModelIndependent}
		base := replay.Run(sub, plain, ind)
		with := replay.Run(sub, hedged, ind)
		attempts := base.AttemptsByHop[h.Hop]
		if attempts == 0 {
			continue
		}
		extra := float64(with.HedgesByHop[h.Hop]) / float64(attempts)
		cut := with.P99 < base.P99 && with.Succeeded >= base.Succeeded
		switch {
		case !cut:
			note(fmt.Sprintf("no hedge: replayed on these logs, a hedge after %s (%s) does not cut the p99 of its calls (%s → %s)",
				units.Duration(delay), units.PercentileRounded(q*100), fmtNs(base.P99), fmtNs(with.P99)))
			continue
		case extra > load*hedgeLoadSlack:
			note(fmt.Sprintf("no hedge: replayed on these logs, a hedge after %s would add %s attempts, above %s %s",
				units.Duration(delay), units.Percent(extra, 3), opt.Names.Of(option.HedgeLoad), units.Percent(load, 3)))
			continue
		}
		p.Hops[h.Hop] = hh
		note(fmt.Sprintf("hedge after %s (%s of time to success, %s %s): %s; replayed on these logs (independent draws), p99 of its calls %s → %s for %s more attempts of this hop",
			units.Duration(delay), units.PercentileRounded(q*100), opt.Names.Of(option.HedgeLoad), units.Percent(load, 3), why, fmtNs(base.P99), fmtNs(with.P99), units.Percent(units.Round(extra, 4), 3)))
	}
}

// independence says whether a hop's attempts are drawn independently
// enough for a hedge to help: after an attempt that was slow (took delay
// or more, or was cut by a timeout) the next attempt of the same call
// answered within the delay, or, when the logs show no slow attempt
// retried, the measured retry yield is high.
func independence(h *analyze.Hop, calls []*span.Call, delay int64) (string, bool) {
	slow, fast := 0, 0
	for _, c := range calls {
		for i := 0; i+1 < len(c.Attempts); i++ {
			a, b := c.Attempts[i].Span, c.Attempts[i+1].Span
			if !(a.Timeout || a.Duration >= delay) {
				continue
			}
			slow++
			if !b.Failed() && b.Duration < delay {
				fast++
			}
		}
	}
	if slow >= minHedgePairs {
		if 2*fast >= slow {
			return fmt.Sprintf("after %d slow attempts the next attempt of the call answered within the delay %d times", slow, fast), true
		}
		return fmt.Sprintf("after %d slow attempts the next attempt of the call answered within the delay only %d times: its slowness persists across attempts", slow, fast), false
	}
	y := h.RetryYield
	if y == nil || y.RetriedCalls < minHedgePairs {
		return "no retries in the logs to tell a transient tail from a persistent one", false
	}
	if y.AfterTimeout.Retried >= minHedgePairs && 2*y.AfterTimeout.Succeeded < y.AfterTimeout.Retried {
		return fmt.Sprintf("retries after a timeout recovered only %d of %d: slowness persists across attempts", y.AfterTimeout.Succeeded, y.AfterTimeout.Retried), false
	}
	if y.Rate < 0.5 {
		return fmt.Sprintf("retries recovered only %d of %d calls: the tail is not transient", y.Recovered, y.RetriedCalls), false
	}
	return fmt.Sprintf("retries recovered %d of %d calls: attempts of a call are independent draws", y.Recovered, y.RetriedCalls), true
}

// fmtNs writes a replayed latency (ns) for a basis.
func fmtNs(ns float64) string {
	if math.IsNaN(ns) {
		return "–"
	}
	return units.Duration(time.Duration(ns))
}
