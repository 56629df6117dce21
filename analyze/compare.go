package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// What changed: two windows of logs (a baseline and the logs analysed, or
// one input split by time), hop by hop, ranked by how much each hop's
// change moves the request tail.
//
// Each window's tail is its slowest requests: those at or above its own
// CompareTailQuantile (p90) of request latency, so that the two tails are
// the same share of their windows (a p99 of a few hundred requests is one
// or two of them). A hop's tail time in a window is its mean time on the
// critical path of that window's tail requests (see critpath.go); the tail
// times of all hops add up to the tail requests' mean latency. A hop's
// score is
//
//	score(h) = tail time after − tail time before
//	         + (failed in h after − failed in h before) × p99 before / (1 − CompareTailQuantile)
//
// in ms per tail request: how much of the change of the tail requests'
// mean latency the hop accounts for, plus its change in failures (the
// share of a window's requests whose failure came from the hop, counted
// per tail request, each as a request at the baseline's p99). A hop that
// is slow in both windows holds the same share of both tails and scores
// about 0; the hop that changed scores what it added.
//
// The tail score misses a hop whose whole distribution moved when the tail
// requests were slow for another reason in both windows: on a real Online
// Boutique pair of minutes, a frontend call whose p50 went from 8.4 ms to
// 598 ms ranked 54th of 55. So each hop also gets a shift: how much its
// change adds to a typical request,
//
//	shift(h) = (p50 after − p50 before) × calls of h per request (after)
//
// in ms per request (a hop new in the after window adds its whole p50, a
// hop gone takes its before p50 away; a censored p50, or a hop the
// analysis calls the root — the request itself — has none). The ranking
// lists the hops of either window by the larger of the two, highest first,
// up to CompareRankMax, and shows both.

// CompareTailQuantile is where a window's tail starts, for Compare.
const CompareTailQuantile = 0.90

// CompareRankMax is the most hops a comparison's ranking lists.
const CompareRankMax = 100

// Comparison is what changed between two windows.
type Comparison struct {
	Before WindowSummary `json:"before"`
	After  WindowSummary `json:"after"`
	// TailQuantile is CompareTailQuantile: each window's tail is its
	// requests at or above this quantile of latency.
	TailQuantile float64 `json:"tail_quantile"`
	// Ranking lists the hops of either window, highest score first (at
	// most CompareRankMax of them).
	Ranking []HopChange `json:"ranking"`
}

// WindowSummary describes one window of a comparison.
type WindowSummary struct {
	// Label says where the window comes from: files, or a time range.
	Label string `json:"label"`
	// From and To are the first request's start and the last request's
	// end (RFC 3339; empty when the logs carry no times).
	From        string   `json:"from,omitempty"`
	To          string   `json:"to,omitempty"`
	Requests    int      `json:"requests"`
	Succeeded   int      `json:"succeeded"`
	SuccessRate float64  `json:"success_rate"`
	P50Ms       *float64 `json:"p50_ms"`
	P95Ms       *float64 `json:"p95_ms"`
	P99Ms       *float64 `json:"p99_ms"`
	// TailRequests and TailMeanMs are the window's tail: its requests at
	// or above TailFromMs, and their mean latency.
	TailRequests int      `json:"tail_requests"`
	TailFromMs   *float64 `json:"tail_from_ms"`
	TailMeanMs   *float64 `json:"tail_mean_ms"`
}

// HopChange is one hop of a comparison.
type HopChange struct {
	Hop string `json:"hop"`
	// Score is how much the hop's change moves the tail, ms per tail
	// request (see above).
	Score float64 `json:"score"`
	// ShiftMs is how much its change moves a typical request: the change
	// of its p50 times its calls per request, ms per request (see above).
	ShiftMs float64 `json:"shift_ms"`
	// Before and After are the hop in each window, null where it is
	// absent.
	Before *HopWindow `json:"before"`
	After  *HopWindow `json:"after"`
	Reason string     `json:"reason"`
	// Examples are trace ids of the after window's tail requests where
	// the hop held the most critical-path time (or failed requests that
	// failed in it), most first.
	Examples []string `json:"examples"`
}

// HopWindow is a hop's numbers in one window.
type HopWindow struct {
	Attempts       int     `json:"attempts"`
	Calls          int     `json:"calls"`
	FailedAttempts int     `json:"failed_attempts"`
	FailureRate    float64 `json:"failure_rate"`
	// P50Ms, P95Ms and P99Ms are over all attempts; null when unknown
	// (censored by a timeout, see Censored).
	P50Ms    *float64  `json:"p50_ms"`
	P95Ms    *float64  `json:"p95_ms"`
	P99Ms    *float64  `json:"p99_ms"`
	Censored *Censored `json:"censored,omitempty"`
	Class    string    `json:"class"`
	// TailPathMs is the hop's mean time on the critical path of the
	// window's tail requests.
	TailPathMs float64 `json:"tail_path_ms"`
	// FailedRequests counts the window's failed requests whose failure
	// came from the hop.
	FailedRequests int `json:"failed_requests"`
}

// windowView is one window's critical paths summed for Compare.
type windowView struct {
	rep      *Report
	n        int
	tail     int
	from     float64 // tail threshold, ns
	tailPath map[string]float64
	failedIn map[string]int
	ex       map[string][]example
	first    int64
	last     int64
}

func viewOf(rep *Report) *windowView {
	v := &windowView{rep: rep, tailPath: map[string]float64{}, failedIn: map[string]int{}, ex: map[string][]example{}}
	p := rep.paths
	if p == nil || len(p.reqs) == 0 {
		return v
	}
	v.n = len(p.reqs)
	lats := make([]int64, v.n)
	for i, r := range p.reqs {
		lats[i] = r.lat
	}
	quantile.SortInt64(lats)
	v.from = quantile.Int64(lats, CompareTailQuantile)
	sums := make([]float64, len(p.hops))
	exs := make([][]example, len(p.hops))
	v.first, v.last = math.MaxInt64, math.MinInt64
	for i := range p.reqs {
		r := &p.reqs[i]
		v.first, v.last = min(v.first, r.start), max(v.last, r.start+r.lat)
		if r.failed && r.origin >= 0 {
			v.failedIn[p.hops[r.origin]]++
			if len(exs[r.origin]) < TailExamples {
				exs[r.origin] = topExamples(exs[r.origin], example{r.trace, -1}, TailExamples)
			}
		}
		if float64(r.lat) < v.from {
			continue
		}
		v.tail++
		for _, ph := range r.path {
			sums[ph.hop] += float64(ph.ns)
			exs[ph.hop] = topExamples(exs[ph.hop], example{r.trace, float64(ph.ns)}, TailExamples)
		}
	}
	for h, s := range sums {
		if s > 0 {
			v.tailPath[p.hops[h]] = s / float64(v.tail)
		}
		if len(exs[h]) > 0 {
			v.ex[p.hops[h]] = exs[h]
		}
	}
	return v
}

func (v *windowView) summary(label string) WindowSummary {
	rq := v.rep.Requests
	s := WindowSummary{Label: label, Requests: rq.Count, Succeeded: rq.Succeeded, SuccessRate: rq.SuccessRate,
		P50Ms: rq.LatencyMs.P50, P95Ms: rq.LatencyMs.P95, P99Ms: rq.LatencyMs.P99, TailRequests: v.tail}
	if v.n == 0 {
		return s
	}
	s.TailFromMs = units.RoundPtr(units.MsOf(v.from), 3)
	var sum float64
	for _, r := range v.rep.paths.reqs {
		if float64(r.lat) >= v.from {
			sum += float64(r.lat)
		}
	}
	s.TailMeanMs = units.RoundPtr(units.MsOf(sum/float64(v.tail)), 3)
	if v.first > 0 {
		s.From = time.Unix(0, v.first).UTC().Format(time.RFC3339Nano)
		s.To = time.Unix(0, v.last).UTC().Format(time.RFC3339Nano)
	}
	return s
}

// Compare ranks the hops by how much their change from before to after
// moves the request tail (see above). Both reports must have their tail
// ranked (WhereTailComesFrom: recommend.Run and recommend.RunAccum do);
// the labels say where each window comes from.
func Compare(before, after *Report, beforeLabel, afterLabel string) *Comparison {
	vb, va := viewOf(before), viewOf(after)
	c := &Comparison{Before: vb.summary(beforeLabel), After: va.summary(afterLabel), TailQuantile: CompareTailQuantile, Ranking: []HopChange{}}
	p99 := c.Before.P99Ms
	if p99 == nil {
		p99 = c.After.P99Ms
	}
	failCost := 0.0
	if p99 != nil {
		failCost = *p99 / (1 - CompareTailQuantile)
	}
	share := func(v *windowView, hop string) float64 {
		if v.n == 0 {
			return 0
		}
		return float64(v.failedIn[hop]) / float64(v.n)
	}
	// Hops of both reports, each once, scored; then the best
	// CompareRankMax of them get their numbers and reasons.
	type cand struct {
		name  string
		score float64
	}
	hb, ha := hopIndex(before), hopIndex(after)
	cands := make([]cand, 0, len(ha)+len(hb))
	score := func(name string) float64 {
		return units.MsOf(va.tailPath[name]-vb.tailPath[name]) + (share(va, name)-share(vb, name))*failCost
	}
	shift := func(name string) float64 {
		return typicalShift(hb[name], ha[name], before.Requests.Count, after.Requests.Count)
	}
	// A hop ranks by the larger of what its change does to the tail and to
	// a typical request.
	rankOf := func(name string) float64 { return max(score(name), shift(name)) }
	for name := range ha {
		cands = append(cands, cand{name, rankOf(name)})
	}
	for name := range hb {
		if ha[name] == nil {
			cands = append(cands, cand{name, rankOf(name)})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if x := cmp.Compare(b.score, a.score); x != 0 {
			return x
		}
		return strings.Compare(a.name, b.name)
	})
	for _, cd := range cands[:min(len(cands), CompareRankMax)] {
		hc := HopChange{Hop: cd.name, Score: round3(score(cd.name)), ShiftMs: round3(shift(cd.name)),
			Before: vb.window(hb[cd.name]), After: va.window(ha[cd.name]), Examples: []string{}}
		for _, e := range va.ex[cd.name] {
			hc.Examples = append(hc.Examples, e.trace)
		}
		hc.Reason = changeReason(&hc)
		c.Ranking = append(c.Ranking, hc)
	}
	return c
}

// typicalShift is a hop's shift (see above): the change of its p50 times
// its calls per request in the after window (the before window's for a
// hop that is gone), ms per request; 0 when a p50 is censored, the hop is
// the root, or a window has no requests.
func typicalShift(b, a *Hop, nb, na int) float64 {
	p50 := func(h *Hop) (float64, bool) {
		if h == nil {
			return 0, true
		}
		if h.Role == RoleRoot || h.LatencyMs.P50 == nil {
			return 0, false
		}
		return *h.LatencyMs.P50, true
	}
	pb, okb := p50(b)
	pa, oka := p50(a)
	if !okb || !oka || (b == nil && a == nil) {
		return 0
	}
	h, n := a, na
	if a == nil {
		h, n = b, nb
	}
	if n == 0 {
		return 0
	}
	return (pa - pb) * float64(h.Calls) / float64(n)
}

// hopIndex maps a report's hops by name.
func hopIndex(r *Report) map[string]*Hop {
	m := make(map[string]*Hop, len(r.Hops))
	for i := range r.Hops {
		m[r.Hops[i].Hop] = &r.Hops[i]
	}
	return m
}

// window is a hop's numbers in this window (nil when it is absent).
func (v *windowView) window(h *Hop) *HopWindow {
	if h == nil {
		return nil
	}
	w := &HopWindow{Attempts: h.Attempts, Calls: h.Calls, FailedAttempts: h.FailedAttempts,
		P50Ms: h.LatencyMs.P50, P95Ms: h.LatencyMs.P95, P99Ms: h.LatencyMs.P99, Censored: h.Censored,
		Class: h.FailureClass, TailPathMs: round3(units.MsOf(v.tailPath[h.Hop])), FailedRequests: v.failedIn[h.Hop]}
	if h.Attempts > 0 {
		w.FailureRate = units.Round(float64(h.FailedAttempts)/float64(h.Attempts), 4)
	}
	return w
}

// changeReason says what moved, with numbers.
func changeReason(hc *HopChange) string {
	b, a := hc.Before, hc.After
	switch {
	case b == nil && a == nil:
		return ""
	case b == nil:
		return fmt.Sprintf("new: not in the baseline; now p50 %s, p99 %s over %s, %s of a tail request's critical path",
			latText(a.P50Ms, a.Censored), latText(a.P99Ms, a.Censored), units.Count(a.Attempts, "attempt", "attempts"), units.Millis(a.TailPathMs))
	case a == nil:
		return fmt.Sprintf("gone: not in the logs compared; it held %s of a tail request's critical path before", units.Millis(b.TailPathMs))
	}
	var parts []string
	if hc.ShiftMs > hc.Score && hc.ShiftMs > 0 {
		parts = append(parts, fmt.Sprintf("its whole distribution moved: %s more per typical request", units.Millis(hc.ShiftMs)))
	}
	parts = append(parts, fmt.Sprintf("it holds %s of a tail request's critical path against %s before", units.Millis(a.TailPathMs), units.Millis(b.TailPathMs)))
	parts = append(parts, fmt.Sprintf("p50 %s → %s, p99 %s → %s", latText(b.P50Ms, b.Censored), latText(a.P50Ms, a.Censored),
		latText(b.P99Ms, b.Censored), latText(a.P99Ms, a.Censored)))
	if a.FailureRate > 0 || b.FailureRate > 0 {
		parts = append(parts, fmt.Sprintf("failed attempts %s → %s", units.Percent(b.FailureRate, 2), units.Percent(a.FailureRate, 2)))
	}
	if a.FailedRequests > 0 || b.FailedRequests > 0 {
		parts = append(parts, fmt.Sprintf("requests failed in it %d → %d", b.FailedRequests, a.FailedRequests))
	}
	if a.Class != b.Class {
		parts = append(parts, fmt.Sprintf("class %s → %s", b.Class, a.Class))
	}
	return strings.Join(parts, "; ")
}

func latText(v *float64, c *Censored) string {
	if v != nil {
		return units.Millis(*v)
	}
	if c != nil {
		return "≥ " + units.Millis(c.AtLeastMs)
	}
	return "–"
}

// SplitByTime splits spans into two windows of length window: after holds
// the traces that start in the last window before the end of the logs
// (the latest span end), before those that start in the window before
// that; earlier traces are in neither. A trace goes by its first span's
// start; a span without a trace id is a trace of its own. from, mid and to
// are the windows' bounds (unix ns): before is [from, mid), after [mid, to].
func SplitByTime(spans []*span.Span, window time.Duration) (before, after []span.Span, from, mid, to int64) {
	first := make(map[string]int64)
	for _, s := range spans {
		to = max(to, s.End())
		if s.TraceID == "" {
			continue
		}
		if t, ok := first[s.TraceID]; !ok || s.Start < t {
			first[s.TraceID] = s.Start
		}
	}
	mid = to - int64(window)
	from = mid - int64(window)
	for _, s := range spans {
		t := s.Start
		if s.TraceID != "" {
			t = first[s.TraceID]
		}
		switch {
		case t >= mid:
			after = append(after, *s)
		case t >= from:
			before = append(before, *s)
		}
	}
	return before, after, from, mid, to
}
