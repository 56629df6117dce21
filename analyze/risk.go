package analyze

import (
	"fmt"
	"github.com/tailscope/tailscope/bound"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/span"
)

// This file says what a policy risks on traffic it was not fitted to.
//
// Replaying the logs a policy was fitted on certifies nothing about new
// traffic: every success replayed was used to set the timeouts. What can be
// said without assuming a distribution: with n successes of a hop, m of
// them longer than a timeout t, the chance that a new success is longer
// than t is at most the RiskLevel quantile of Beta(m+1, n−m). For a t set
// from the data at or above the (n−m)-th smallest success this is the
// conformal bound (exchangeability: a new draw lands in each of the n+1
// gaps between the order statistics with equal chance); for a t chosen
// without the data it is the Clopper–Pearson upper bound on a binomial
// proportion. Either way it holds whatever the hop's distribution. A
// request fails when any of its calls is cut, so the per-call bounds are
// combined over the calls each logged request makes: 1 − Π (1 − p_h)^c_h,
// averaged over the requests that succeeded. Retries are not credited (a
// persistent slow draw would meet the same wall), so this is an upper
// bound for calls that retry too.

// RiskLevel is the confidence level of the out-of-sample bounds.
const RiskLevel = 0.95

// Safety is what a recommended policy is known to risk (JSON
// recommended_policy.safety): on the logs it was fitted to, on logs held
// out of the fit, and predicted for new traffic.
type Safety struct {
	InSample InSample `json:"in_sample"`
	// HeldOut is nil when the logs were too few to hold a part out
	// (HeldOutNote says why).
	HeldOut     *HeldOut    `json:"held_out"`
	HeldOutNote string      `json:"held_out_note,omitempty"`
	Predicted   *Prediction `json:"predicted_false_timeouts"`
	// Provisional says why the policy rests on too few logs to be more
	// than a starting point ("" when it does not): fewer than
	// MinProvisional requests succeeded, or a hop it times out has no
	// successful call to measure.
	Provisional string `json:"provisional,omitempty"`
}

// MinProvisional is the fewest requests that succeeded as logged below
// which a recommended policy is marked provisional: each timeout then
// rests on a handful of calls or on none.
const MinProvisional = 10

// Provisional says why a policy fitted on reqs is provisional, or "".
func Provisional(rep *Report, chk *RecommendationCheck) string {
	if chk.LoggedOK < MinProvisional {
		return fmt.Sprintf("only %s succeeded as logged (fewer than %d): each timeout rests on a handful of calls or on none; collect more logs before rolling it out",
			units.Count(chk.LoggedOK, "request", "requests"), MinProvisional)
	}
	var none []string
	for _, h := range rep.Hops {
		if h.Role == RoleCall && h.ttsCount == 0 && h.Recommendation.TimeoutMs > 0 {
			none = append(none, h.Hop)
		}
	}
	if len(none) > 0 {
		return fmt.Sprintf("%s no successful call to measure (%s): %s on the policy's default, not on its own times",
			units.Count(len(none), "hop has", "hops have"), strings.Join(firstN(none, 3), ", "), map[bool]string{true: "its timeout rests", false: "their timeouts rest"}[len(none) == 1])
	}
	return ""
}

// InSample is the policy replayed on the very requests it was fitted to.
type InSample struct {
	// Requests is how many requests succeeded as logged; Lost how many of
	// them fail under the policy.
	Requests int `json:"requests"`
	Lost     int `json:"lost"`
}

// HeldOut is a policy fitted on the earlier part of the logs (by request
// start) and replayed on the later part.
type HeldOut struct {
	// Requests is how many held-out requests succeeded as logged; Lost how
	// many of them the policy fitted without them fails.
	Requests int `json:"requests"`
	Lost     int `json:"lost"`
	// FittedUntil is the start of the first held-out request (RFC 3339):
	// the fit saw only requests that started before it.
	FittedUntil string `json:"fitted_until"`
	// FittedRequests is how many requests the fit saw.
	FittedRequests int `json:"fitted_requests"`
	// Share is Lost / Requests.
	Share float64 `json:"share"`
	// IncidentLost is how many of Lost the hop that cut them had an
	// incident named in the logs at the time (a fit cannot carry an
	// incident it never saw); DriftLost the rest. Met says whether
	// DriftLost is within the false-timeout target.
	IncidentLost int  `json:"incident_lost"`
	DriftLost    int  `json:"drift_lost"`
	Met          bool `json:"met"`
	// Scale is what the fitted policy's timeouts had to be multiplied by
	// for drift to stay within the target on the held-out part (1 when
	// they did not); Lost, IncidentLost and DriftLost are under the scaled
	// policy, UnscaledLost what the fit lost as it came. The recommended
	// policy carries the same scale.
	Scale        float64 `json:"scale"`
	UnscaledLost int     `json:"unscaled_lost"`
}

// Prediction is a distribution-free upper bound on the share of requests
// that succeed on new traffic which the policy would fail by a timeout.
type Prediction struct {
	// Upper is the bound, a fraction of successful requests, at Level:
	// the exchangeable bound (ExchangeableUpper) combined with what
	// today's incidents would cost on hops the policy was not fitted for
	// (Incidents.Upper), as independent risks.
	Upper float64 `json:"upper"`
	// ExchangeableUpper is the bound for traffic exchangeable with the
	// logs' (the per-call order statistics alone).
	ExchangeableUpper float64 `json:"exchangeable_upper"`
	// Incidents is the incident part (nil when the logs name none).
	Incidents *IncidentRisk `json:"incidents,omitempty"`
	Level     float64       `json:"level"`
	// Expected is the same combination of the per-call conformal means
	// (m+1)/(n+1): what to expect rather than what to allow.
	Expected float64 `json:"expected"`
	Basis    string  `json:"basis"`
	// Target is the request-level false-timeout target; Met says whether
	// Upper is within it.
	Target float64 `json:"target"`
	Met    bool    `json:"met"`
	// Hops are the per-call bounds of the hops with a timeout, worst
	// first.
	Hops []HopRisk `json:"hops"`
	// NeedSuccesses is how many successes a hop needs before a timeout
	// above all of them certifies its share of the target (the same for
	// every hop: the share is the target over the calls per request).
	NeedSuccesses int `json:"need_successes"`
	// Advice says in words what the data can support when the bound is
	// above the target ("" when met).
	Advice string `json:"advice,omitempty"`
}

// HopRisk is one hop's per-call bound.
type HopRisk struct {
	Hop       string  `json:"hop"`
	TimeoutMs float64 `json:"timeout_ms"`
	// Successes is n, the hop's times to success: its successes, and its
	// attempts cut by a timeout (Cut of them), whose time is known to be
	// at least their cut; Above m: those longer than the timeout (cut
	// attempts whose cut is below it count as longer: unknown).
	Successes int `json:"successes"`
	Cut       int `json:"cut,omitempty"`
	Above     int `json:"above"`
	// Upper is the per-call bound at Level; CallsPerRequest the mean
	// number of its successful calls in a successful request.
	Upper           float64 `json:"upper"`
	CallsPerRequest float64 `json:"calls_per_request"`
	// Extrapolated is set when the timeout came from the tail model (the
	// model's own estimate of the per-call risk is ModelRisk).
	Extrapolated bool    `json:"extrapolated,omitempty"`
	ModelRisk    float64 `json:"model_risk,omitempty"`
}

// successesAbove counts a hop's successes longer than t, and its cut
// attempts whose cut lies below t (their time to success is unknown past
// the cut: counted as longer, so the bound stays an upper bound).
func (h *Hop) successesAbove(t time.Duration) int {
	if h.ttsAbove == nil {
		return 0
	}
	m := h.ttsAbove(int64(t))
	if h.Censored != nil && units.FromMs(h.Censored.AtLeastMs) < t {
		m += h.Censored.Attempts
	}
	return min(m, h.ttsCount)
}

// PredictFalseTimeouts bounds the share of successful requests on new
// traffic that p would fail by a timeout, from the hops' successes in rep
// and the calls the logged requests make. On a held-out fit's report
// (MeasureFit) it predicts nothing: the fit's policy is replayed on the
// requests held out instead.
func PredictFalseTimeouts(rep *Report, reqs []*span.Request, p InForce, target float64) *Prediction {
	if rep.fit {
		// A held-out fit's policy is replayed on the requests held out,
		// which is what its validation reads; its own prediction is read
		// by no one.
		return &Prediction{Level: RiskLevel, Target: target, Hops: []HopRisk{}, Met: true}
	}
	byHop := map[string]*Hop{}
	for i := range rep.Hops {
		byHop[rep.Hops[i].Hop] = &rep.Hops[i]
	}
	// A hop's risk is taken at the timeout of its first call that has one
	// (riskOf keeps it); each call then adds the hop's own logarithms,
	// computed once (the same values, added in the same order).
	type hr struct {
		upper, mean float64
		risk        *HopRisk
		lu, le      float64 // log1p(−upper), log1p(−mean), as each call adds them
		calls       int
	}
	risks := map[string]*hr{}
	riskOf := func(hop string, t time.Duration) *hr {
		if r, ok := risks[hop]; ok {
			return r
		}
		h := byHop[hop]
		if h == nil || h.ttsCount == 0 {
			risks[hop] = nil // no success to learn from, and none to lose
			return nil
		}
		m := h.successesAbove(t)
		r := &hr{upper: bound.BetaUpper(RiskLevel, m, h.ttsCount), mean: float64(m+1) / float64(h.ttsCount+1),
			risk: &HopRisk{Hop: hop, TimeoutMs: units.Ms(int64(t)), Successes: h.ttsCount, Cut: min(h.TimeoutAttempts, h.ttsCount), Above: m}}
		r.lu, r.le = math.Log1p(-min(r.upper, 1-1e-15)), math.Log1p(-min(r.mean, 1-1e-15))
		r.risk.Upper = units.Round(r.upper, 6)
		if tm := h.Recommendation.Tail; tm != nil {
			r.risk.Extrapolated = true
			r.risk.ModelRisk = units.Round(tm.Exceed(float64(t)), 6)
		}
		risks[hop] = r
		return r
	}
	// Per hop, the timeout p gives its calls on either side (ForCall) and
	// its risk once known: one lookup a call.
	type hopCalls struct {
		timeout [2]time.Duration
		known   [2]bool
		risk    *hr
		done    bool // risk was asked for (it may be nil)
	}
	hops := map[string]*hopCalls{}
	var sumU, sumE float64
	ok := 0
	for _, r := range reqs {
		if r.Failed {
			continue
		}
		ok++
		logU, logE := 0.0, 0.0
		EachCall(r.Calls, func(c *span.Call) {
			last := c.Attempts[len(c.Attempts)-1].Span
			if last.Failed() {
				return // a call that failed as logged cannot be falsely cut
			}
			hc := hops[c.Hop]
			if hc == nil {
				hc = &hopCalls{}
				hops[c.Hop] = hc
			}
			side := 0
			if c.Role == span.RoleCall {
				side = 1
			}
			if !hc.known[side] {
				t, _, _ := p.CallTimeouts(c.Hop, side == 1)
				hc.timeout[side], hc.known[side] = t, true
			}
			t := hc.timeout[side]
			if t <= 0 {
				return
			}
			if !hc.done {
				hc.risk, hc.done = riskOf(c.Hop, t), true
			}
			x := hc.risk
			if x == nil {
				return
			}
			x.calls++
			logU += x.lu
			logE += x.le
		})
		sumU += -math.Expm1(logU)
		sumE += -math.Expm1(logE)
	}
	pr := &Prediction{Level: RiskLevel, Target: target, Hops: []HopRisk{}}
	if ok > 0 {
		pr.Upper, pr.Expected = units.Round(sumU/float64(ok), 6), units.Round(sumE/float64(ok), 6)
	}
	// The calls a request makes are counted as integers and divided once:
	// a float sum in the map's order would differ in its last bits from
	// run to run, and so would the rounded figure printed from it.
	calls := 0
	for _, r := range risks {
		if r == nil || r.calls == 0 {
			continue
		}
		r.risk.CallsPerRequest = units.Round(float64(r.calls)/float64(max(ok, 1)), 4)
		calls += r.calls
		pr.Hops = append(pr.Hops, *r.risk)
	}
	k := float64(calls) / float64(max(ok, 1))
	sort.Slice(pr.Hops, func(i, j int) bool {
		a, b := pr.Hops[i], pr.Hops[j]
		if a.Upper*a.CallsPerRequest != b.Upper*b.CallsPerRequest {
			return a.Upper*a.CallsPerRequest > b.Upper*b.CallsPerRequest
		}
		return a.Hop < b.Hop
	})
	pr.ExchangeableUpper = pr.Upper
	share := target
	if k > 0 {
		share = target / k
	}
	if ir := incidentRisk(rep, reqs, share); ir != nil {
		pr.Incidents = ir
		pr.Upper = units.Round(1-(1-pr.Upper)*(1-ir.Upper), 6)
	}
	pr.Met = pr.Upper <= target
	if k > 0 {
		pr.NeedSuccesses = bound.NeedSuccesses(target/k, RiskLevel)
	}
	pr.Basis = fmt.Sprintf("distribution-free: per call, the %s quantile of Beta(m+1, n−m) for a hop with n successes, m of them longer than its timeout; combined over the calls each of the %d successful requests makes (~%s per request, retries not credited)",
		units.Percent(RiskLevel, 3), ok, units.Decimal(k, 1))
	if !pr.Met && ok > 0 {
		pr.Advice = adviceFor(pr, reqs, ok)
	}
	return pr
}

// adviceFor says what the data can support: which hops are short of the
// successes the target needs, how many more requests and minutes of logs
// that is at the observed rate, and the risk accepted meanwhile.
func adviceFor(pr *Prediction, reqs []*span.Request, ok int) string {
	var short []string
	worst := 0.0 // more requests needed, from the hop furthest short
	for _, h := range pr.Hops {
		if h.Upper <= pr.Target/math.Max(1, float64(len(pr.Hops))) && h.Above == 0 {
			continue
		}
		if h.Successes >= pr.NeedSuccesses {
			short = append(short, fmt.Sprintf("%s (%d of its %d successes are longer than its %s timeout)", h.Hop, h.Above, h.Successes, units.Duration(units.FromMs(h.TimeoutMs))))
			continue
		}
		if h.Cut > 0 {
			// n counts the cut attempts too (each at least its cut):
			// say so, as the count is of successful calls.
			short = append(short, fmt.Sprintf("%s (%d successes and %d cut attempts)", h.Hop, h.Successes-h.Cut, h.Cut))
		} else {
			short = append(short, fmt.Sprintf("%s (%d)", h.Hop, h.Successes))
		}
		if h.CallsPerRequest > 0 {
			worst = max(worst, float64(pr.NeedSuccesses-h.Successes)/h.CallsPerRequest)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s cannot certify the %s target on new traffic: a timeout above every success of a hop still leaves a chance of about 1 in n+1 that the next call is slower",
		units.Count(ok, "successful request", "successful requests"), units.Percent(pr.Target, 3))
	if len(short) > 0 {
		fmt.Fprintf(&b, "; each hop needs about %d successful calls, and these have fewer: %s", pr.NeedSuccesses, strings.Join(firstN(short, 3), ", "))
	}
	if worst > 0 {
		more := int(math.Ceil(worst * float64(len(reqs)) / float64(ok)))
		fmt.Fprintf(&b, "; that is about %s", units.Count(more, "more request", "more requests"))
		if first, last := reqs[0].Start, lastEnd(reqs); last > first {
			minutes := float64(last-first) / 6e10
			rate := float64(len(reqs)) / minutes
			if rate > 0 {
				fmt.Fprintf(&b, ", ~%s more of logs at the observed %s requests a minute", units.Minutes(float64(more)/rate), units.Decimal(rate, 1))
			}
		}
	}
	return b.String()
}

func lastEnd(reqs []*span.Request) int64 {
	var e int64
	for _, r := range reqs {
		e = max(e, r.End)
	}
	return e
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
}
