package recommend

import (
	"fmt"
	"github.com/tailscope/tailscope/bound"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/tail"
)

// A policy fitted on today must hold tomorrow (docs/DESIGN.md §5, "Drift,
// incidents and the budget"). Three rules here carry what the timeline
// (analyze/timeline.go) measured into the policy:
//
//   - every timeout taken from a hop's tail is multiplied by that hop's
//     drift headroom (its own drift between quiet blocks, never below the
//     median hop's), within MaxExtrapolation × its slowest success;
//   - the budget comes from the requests' own time to success, with the
//     same certification and headroom as a hop, and room for one retry
//     where the policy retries; not from every timeout along the deepest
//     path (which put budgets at minutes over requests of seconds);
//   - the held-out replay (heldout.go) checks the result by time; where
//     it still loses more than the target outside the incidents the logs
//     name, every timeout is scaled up until it does not (scalePolicy).

// MaxBudgetExtrapolation caps the budget at this multiple of the slowest
// request that succeeded: a budget's job is to stop a request that can no
// longer succeed, and one far above every success stops nothing.
const MaxBudgetExtrapolation = 3.0

// applyHeadroom multiplies a hop's timeout taken from its tail by its
// drift headroom, within MaxExtrapolation × its slowest success, and says
// so in its basis.
func applyHeadroom(rep *analyze.Report, h *analyze.Hop, hp *policy.Hop, rec *analyze.Recommendation, margin float64) {
	if rec.Action != analyze.ActionSet || hp.Timeout <= 0 {
		return
	}
	f, why := rep.HeadroomOf(h)
	if why == "" {
		return
	}
	rec.Headroom = units.Round(f, 3)
	// The margin already carries drift up to 1 + margin: the timeout
	// carries only the rest (a drift within the margin changes nothing,
	// which keeps noise between blocks of one distribution out).
	if f <= 1+margin {
		return
	}
	f /= 1 + margin
	why += fmt.Sprintf(", of which the ×%s margin carries %s×", units.Decimal(1+margin, 2), units.Decimal(1+margin, 2))
	slowest := time.Duration(h.TimeToSuccess().Max)
	limit := max(hp.Timeout, RoundDownNice(time.Duration(MaxExtrapolation*float64(slowest))), MinTimeout)
	t := min(RoundUpNice(time.Duration(float64(hp.Timeout)*f)), limit)
	if t <= hp.Timeout {
		rec.Basis += fmt.Sprintf("; drift: %s, but the timeout is already at %.0f× the slowest success", why, MaxExtrapolation)
		return
	}
	rec.Basis += fmt.Sprintf("; drift: %s: %s → %s", why, units.Duration(hp.Timeout), units.Duration(t))
	if t == limit && t < RoundUpNice(time.Duration(float64(hp.Timeout)*f)) {
		rec.Basis += fmt.Sprintf(" (capped at %.0f× the slowest success)", MaxExtrapolation)
	}
	hp.Timeout = t
	rec.TimeoutMs = units.Ms(int64(t))
	// What the hop is taken to need on new traffic now includes the
	// drift: check's rule on timeouts far above the tail measures
	// against it, so that it never calls the headroom waste.
	rec.TailNeed = max(rec.TailNeed, time.Duration(float64(t)/(1+margin)))
}

// applyRecords checks the extrapolated timeouts block by block
// (analyze.Report.MeasureRecords: each hop's quiet blocks held out in
// turn against the timeout its other blocks would have given) and carries
// every extrapolated timeout by the factor the check finds (Records.Factor
// at a call's share of the target), within MaxExtrapolation × the hop's
// slowest success. Hops whose timeout an order statistic certifies have
// data beyond their timeout and are left to it. hps are the hops' policy
// entries in the report's order.
func applyRecords(rep *analyze.Report, hps []policy.Hop, share, margin float64) {
	extrapolated := func(h *analyze.Hop, hp *policy.Hop) bool {
		return h.Role == analyze.RoleCall && h.Recommendation.Action == analyze.ActionSet && h.Recommendation.Extrapolated && hp.Timeout > 0 && h.TimeToSuccess().Max > 0
	}
	rc := rep.MeasureRecords(func(i int) float64 {
		h, hp := &rep.Hops[i], &hps[i]
		if !extrapolated(h, hp) {
			return 0
		}
		return float64(hp.Timeout) / float64(h.TimeToSuccess().Max)
	})
	f, why := rc.Factor(share)
	if f <= 1 {
		return
	}
	for i := range rep.Hops {
		h, hp := &rep.Hops[i], &hps[i]
		if !extrapolated(h, hp) {
			continue
		}
		rec := &h.Recommendation
		slowest := time.Duration(h.TimeToSuccess().Max)
		limit := max(hp.Timeout, RoundDownNice(time.Duration(MaxExtrapolation*float64(slowest))), MinTimeout)
		t := min(RoundUpNice(time.Duration(f*float64(hp.Timeout))), limit)
		if t <= hp.Timeout {
			rec.Basis += fmt.Sprintf("; records: %s, but the timeout is already at %.0f× the slowest success", why, MaxExtrapolation)
			continue
		}
		rec.Basis += fmt.Sprintf("; records: %s: %s → %s", why, units.Duration(hp.Timeout), units.Duration(t))
		if t == limit && t < RoundUpNice(time.Duration(f*float64(hp.Timeout))) {
			rec.Basis += fmt.Sprintf(" (capped at %.0f× the slowest success)", MaxExtrapolation)
		}
		hp.Timeout = t
		rec.TimeoutMs = units.Ms(int64(t))
		rec.Records = units.Round(f, 3)
		rec.TailNeed = max(rec.TailNeed, time.Duration(float64(t)/(1+margin)))
	}
}

// budgetRule is the budget's part that does not depend on the hop
// timeouts: the requests' time to success with headroom, its cap, and the
// words for it.
type budgetRule struct {
	tail    time.Duration // the budget the requests' own tail needs
	slowest time.Duration // slowest successful request
	cap     time.Duration // MaxBudgetExtrapolation × slowest
	reqTail time.Duration // the requests' tail before headroom and margin
	basis   string
	scale   float64 // set by scalePolicy: the held-out replay's extra headroom
	reqs    []*span.Request
}

// requestBudget takes the budget from the successful requests' latency as
// a hop's timeout is taken from its calls: the order statistic that
// certifies the request-level target when there are enough requests
// (about 3/target), else the fitted tail (within the slowest success and
// MaxBudgetExtrapolation × it), × the requests' drift headroom ×
// (1 + margin); never below the slowest success × (1 + margin).
func requestBudget(rep *analyze.Report, reqs []*span.Request, opt analyze.Options, target float64) *budgetRule {
	var ok []int64
	for _, r := range reqs {
		if !r.Failed {
			ok = append(ok, r.Latency())
		}
	}
	br := &budgetRule{scale: 1, reqs: reqs}
	if len(ok) == 0 {
		return br
	}
	slices.Sort(ok)
	n := len(ok)
	br.slowest = time.Duration(ok[n-1])
	br.cap = max(RoundDownNice(time.Duration(MaxBudgetExtrapolation*float64(br.slowest))), RoundUpNice(time.Duration(float64(br.slowest)*(1+opt.Margin))))
	share := max(target, 1e-12)
	var v time.Duration
	if m, certified := bound.CertifyingRank(n, share, opt.Percentile/100, analyze.RiskLevel); certified {
		v = time.Duration(ok[n-1-m])
		br.basis = fmt.Sprintf("the %s slowest of %d successful requests, %s, certifies the %s target", units.Ordinal(m+1), n, units.Duration(v), units.Percent(target, 3))
	} else if n >= MinTailFit {
		at := func(q float64) float64 { return quantileOf(ok, q) }
		model := tail.Fit(tail.Points(at, n))
		v = min(max(model.Duration(share), br.slowest), br.cap)
		br.basis = fmt.Sprintf("the requests' tail (%d successes, slowest %s) extrapolated to the %s target: %s", n, units.Duration(br.slowest), units.Percent(target, 3), units.Duration(v))
	} else {
		v = br.cap
		br.basis = fmt.Sprintf("%d successful requests are too few to fit their tail: %.0f× the slowest, %s", n, MaxBudgetExtrapolation, units.Duration(br.slowest))
	}
	br.reqTail = v
	f := 1.0
	if tl := rep.Timeline; tl != nil {
		f = tl.Headroom.Pooled
		why := fmt.Sprintf("×%s headroom for drift (the hops' median)", units.Decimal(f, 2))
		if d := tl.RequestDrift(rep.Incidents); d != nil && d.Blocks >= 3 && d.Ratio > f {
			f = min(analyze.MaxHeadroom, d.Ratio)
			why = fmt.Sprintf("×%s headroom: between %s blocks the requests' p%s moved up to %s×", units.Decimal(f, 2), tl.Block, units.Decimal(d.Level, 1), units.Decimal(d.Ratio, 2))
		}
		f = max(f, 1)
		br.basis += ", " + why
	}
	br.tail = time.Duration(float64(v) * f * (1 + opt.Margin))
	return br
}

// budgetFor is the policy's budget: the requests' tail (requestBudget)
// within its cap; but never below what the hop timeouts need for the
// policy to mean what it says: above every hop timeout × (1 + margin), so
// that each per-attempt timeout can fire before the budget does, and, for
// a hop that retries, room for a first attempt to its timeout, its backoff
// and the retry (else a budget-aware retry could never run).
func (br *budgetRule) budgetFor(p *policy.Policy, margin float64) time.Duration {
	if br.slowest == 0 {
		return 0
	}
	b := min(time.Duration(float64(br.tail)*br.scale), br.cap)
	b = max(b, time.Duration(float64(br.slowest)*(1+margin)))
	need := max(p.Default.Timeout, maxTimeout(p))
	retrying := map[string]bool{}
	for n, hp := range p.Hops {
		if hp.Retries > 0 && hp.Timeout > 0 {
			retrying[n] = true
			need = max(need, 2*hp.Timeout+hp.Backoff.MaxDelay(1))
		}
	}
	if p.Default.Retries > 0 {
		need = max(need, 2*p.Default.Timeout+p.Default.Backoff.MaxDelay(1))
	}
	if len(retrying) > 0 || p.Default.Retries > 0 {
		// A request through a hop that retries: its whole path with every
		// configured attempt at its timeout, so that every retry the
		// policy allows can run within the budget (budget-aware retries
		// skip those that cannot, and check calls them dead).
		for _, r := range br.reqs {
			if p.Default.Retries > 0 || touches(r, retrying) {
				need = max(need, time.Duration(worstRequest(r, p)))
			}
		}
	}
	// Rounded up, but not past the cap when nothing above needs more.
	return min(RoundUpNice(max(b, time.Duration(float64(need)*(1+margin)))), max(br.cap, RoundUpNice(time.Duration(float64(need)*(1+margin)))))
}

// quantileOf is the type-7 q-quantile of ascending ns values.
func quantileOf(xs []int64, q float64) float64 {
	n := len(xs)
	h := float64(n-1) * q
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= n {
		return float64(xs[n-1])
	}
	return float64(xs[i]) + (h-lo)*float64(xs[i+1]-xs[i])
}

// scaleTimeouts multiplies every hop timeout of p by g (rounded up nice),
// within MaxExtrapolation × the hop's slowest success except for callers
// raised so that their callees fit, and the default with them. It returns
// the hops it changed.
func scaleTimeouts(rep *analyze.Report, p *policy.Policy, g float64) []string {
	byHop := hopsByName(rep)
	var changed []string
	for _, name := range p.HopNames() {
		hp := p.Hops[name]
		if hp.Timeout <= 0 {
			continue
		}
		t := RoundUpNice(time.Duration(float64(hp.Timeout) * g))
		if h := byHop[name]; h != nil && h.Recommendation.RaisedFromMs == nil {
			if slowest := time.Duration(h.TimeToSuccess().Max); slowest > 0 {
				t = min(t, max(hp.Timeout, RoundDownNice(time.Duration(MaxExtrapolation*float64(slowest)))))
			}
		}
		if t > hp.Timeout {
			hp.Timeout = t
			p.Hops[name] = hp
			changed = append(changed, name)
		}
	}
	if d := maxTimeout(p); d > p.Default.Timeout {
		p.Default.Timeout = d
	}
	return changed
}

// carryScale multiplies the recommended policy's timeouts and budget by
// the scale the held-out replay needed for drift to stay within the
// target, says so in each hop's basis, and measures the policy again (the
// in-sample replay and the out-of-sample bound).
func carryScale(rep *analyze.Report, reqs []*span.Request, p *policy.Policy, br *budgetRule, g float64, opt analyze.Options, last *lastReplay, was *analyze.Safety) *analyze.Safety {
	before := map[string]time.Duration{}
	for n, hp := range p.Hops {
		before[n] = hp.Timeout
	}
	changed := scaleTimeouts(rep, p, g)
	clampToBudget(rep, p, br, opt.Margin)
	br.scale = g
	p.Budget = br.budgetFor(p, opt.Margin)
	if opt.MaxBudget > 0 && p.Budget > opt.MaxBudget {
		p.Budget = opt.MaxBudget
	}
	byHop := hopsByName(rep)
	for _, n := range changed {
		h := byHop[n]
		if h == nil {
			continue
		}
		now := p.Hops[n].Timeout
		h.Recommendation.TimeoutMs = units.Ms(int64(now))
		h.Recommendation.TailNeed = max(h.Recommendation.TailNeed, time.Duration(float64(now)/(1+opt.Margin)))
		h.Recommendation.Basis += fmt.Sprintf("; held out by time, drift still cut more than the target: every timeout ×%s, %s → %s",
			units.Decimal(g, 2), units.Duration(before[n]), units.Duration(now))
		p.Comments[n] = h.Recommendation.Basis
	}
	target := analyze.FalseTimeoutTarget(opt)
	chk := rep.RecommendationCheck
	recount(chk, replayAll(last, reqs, p))
	capDurations(rep, p)
	rep.RecommendedPolicy = DocOf(p)
	pred := analyze.PredictFalseTimeouts(rep, reqs, p, target)
	ws := rep.Warnings[:0]
	for _, w := range rep.Warnings {
		if w.Code != analyze.CodeOutOfSample {
			ws = append(ws, w)
		}
	}
	rep.Warnings = ws
	if !pred.Met && chk.LoggedOK > 0 {
		rep.Warnings = append(rep.Warnings, outOfSampleWarning(pred, target))
	}
	return &analyze.Safety{InSample: analyze.InSample{Requests: chk.LoggedOK, Lost: chk.Failed}, Predicted: pred, Provisional: was.Provisional}
}

// touches says whether a request calls any of the hops.
func touches(r *span.Request, hops map[string]bool) bool {
	hit := false
	analyze.EachCall(r.Calls, func(c *span.Call) { hit = hit || hops[c.Hop] })
	return hit
}

// clampToBudget keeps every hop timeout (and the default) within what the
// budget can ever allow, its cap (MaxBudgetExtrapolation × the slowest
// successful request) less the margin: above that the budget always cuts
// first, and a caller raised so that its callees fit, or a tail
// extrapolated past every request, would only drag the budget with it.
// Never below a hop's slowest success × (1 + margin), so no logged
// success is cut. It returns the hops it lowered.
//
// A caller raised so that the retries of the calls below it can run keeps
// its timeout (lowering it would make those retries dead): where the
// policy retries, the budget goes above its cap instead.
func clampToBudget(rep *analyze.Report, p *policy.Policy, br *budgetRule, margin float64) []string {
	if br == nil || br.cap == 0 {
		return nil
	}
	retries := p.Default.Retries > 0
	for _, hp := range p.Hops {
		retries = retries || hp.Retries > 0
	}
	byHop := hopsByName(rep)
	limit := RoundDownNice(time.Duration(float64(br.cap) / (1 + margin)))
	var lowered []string
	for _, name := range p.HopNames() {
		hp := p.Hops[name]
		if hp.Timeout <= limit {
			continue
		}
		if h := byHop[name]; retries && h != nil && h.Recommendation.RaisedFromMs != nil {
			continue
		}
		floor := time.Duration(0)
		if h := byHop[name]; h != nil {
			floor = RoundUpNice(time.Duration(float64(h.TimeToSuccess().Max) * (1 + margin)))
		}
		t := max(limit, floor)
		if t >= hp.Timeout {
			continue
		}
		if h := byHop[name]; h != nil {
			h.Recommendation.Basis += fmt.Sprintf("; lowered %s → %s: the budget, at most %.0f× the slowest successful request (%s), cuts first above that",
				units.Duration(hp.Timeout), units.Duration(t), MaxBudgetExtrapolation, units.Duration(br.slowest))
			h.Recommendation.TimeoutMs = units.Ms(int64(t))
		}
		hp.Timeout = t
		p.Hops[name] = hp
		lowered = append(lowered, name)
	}
	p.Default.Timeout = min(p.Default.Timeout, max(limit, maxTimeout(p)))
	if p.Default.Timeout < maxTimeout(p) {
		p.Default.Timeout = maxTimeout(p)
	}
	return lowered
}

// incidentBasis says, in a timed hop's basis, whether its timeout covers
// the incidents named on it or leaves them out (a call as slow as an
// incident's p99 is then cut), and how to fit without them.
func incidentBasis(rep *analyze.Report, p *policy.Policy) {
	byHop := map[string][]*analyze.Incident{}
	for i := range rep.Incidents {
		byHop[rep.Incidents[i].Hop] = append(byHop[rep.Incidents[i].Hop], &rep.Incidents[i])
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		hp, ok := p.Hops[h.Hop]
		if !ok || len(byHop[h.Hop]) == 0 || hp.Timeout <= 0 {
			continue
		}
		var covered, left []string
		for _, in := range byHop[h.Hop] {
			w := fmt.Sprintf("%s–%s (p99 %s)", clockOf(in.From), clockOf(in.Until), units.Millis(in.P99Ms))
			if float64(hp.Timeout) >= units.NsOfMs(in.P99Ms) {
				covered = append(covered, w)
			} else {
				left = append(left, w)
			}
		}
		if len(covered) > 0 {
			h.Recommendation.Basis += fmt.Sprintf("; covers its %s %s", units.Plural(len(covered), "incident", "incidents"), strings.Join(covered, ", "))
		}
		if len(left) > 0 {
			h.Recommendation.Basis += fmt.Sprintf("; leaves its %s %s out: calls as slow as then are cut", units.Plural(len(left), "incident", "incidents"), strings.Join(left, ", "))
		}
		p.Comments[h.Hop] = h.Recommendation.Basis
	}
}

// clockOf is an RFC 3339 time's hh:mm.
func clockOf(rfc string) string {
	if len(rfc) >= 16 {
		return rfc[11:16]
	}
	return rfc
}
