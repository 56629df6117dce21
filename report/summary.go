package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
)

// The answer first: the text and Markdown reports of an analysis open with
// a summary that fits one screen — what the policy in force does on these
// logs (or that none is known), the hops to change, whether the
// recommendation holds beyond these logs and what would certify it, the
// incidents, and where the tail comes from. The sections after it give the
// details; the summary repeats none of their long sentences.

const (
	// SummaryMaxLines and SummaryMaxWidth bound the summary: one screen
	// of a terminal, lines that do not wrap in one.
	SummaryMaxLines = 40
	SummaryMaxWidth = 120
	// summaryName is the widest hop name the summary prints whole.
	summaryName = 40
)

// summaryLines is the summary, at most SummaryMaxLines lines of at most
// SummaryMaxWidth characters (runes), or nil when there is nothing to
// summarise (no hop with a recommendation).
func summaryLines(rep *analyze.Report, names option.Names) []string {
	if rep.RecommendedPolicy == nil {
		return nil
	}
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	add("summary")
	// The verdict on the policy in force.
	inForce, rec := effectOf(rep, "in force"), effectOf(rep, "recommended")
	if inForce != nil {
		add("  in force: %s of %s succeed replayed (%s); %s", units.Count(inForce.Succeeded, "request", "requests"),
			units.Count(inForce.Requests, "request", "requests"), units.Percent(inForce.SuccessRate.Low, 1), failedBy(inForce.FailuresByHop))
	} else {
		known := 0
		for _, h := range rep.Hops {
			if h.TimeoutMs != nil {
				known++
			}
		}
		rq := rep.Requests
		what := "no timeout in force known (" + names.Of(option.PolicyInForce) + " replays one)"
		if known > 0 {
			what = fmt.Sprintf("timeouts in force known on %s from the spans", units.Count(known, "hop", "hops"))
		}
		add("  as logged: %d of %s succeeded (%s); %s", rq.Succeeded, units.Count(rq.Count, "request", "requests"), pct3(rq.SuccessRate), what)
	}
	if c := rep.RecommendationCheck; c != nil {
		verdict := "within"
		if !c.Met {
			verdict = "above"
		}
		line := fmt.Sprintf("  recommended: budget %s; replayed on these logs %d of %d successes fail, %s the %s target",
			units.Millis(rep.RecommendedPolicy.BudgetMs), c.Failed, c.LoggedOK, verdict, units.Percent(c.Target, 3))
		if rec != nil && inForce != nil {
			line += fmt.Sprintf("; %s succeed", units.Percent(rec.SuccessRate.Low, 1))
		}
		out = append(out, line)
	}
	changeAt := len(out)
	if s := rep.RecommendedPolicy.Safety; s != nil {
		if h := s.HeldOut; h != nil && h.Requests > 0 {
			what := "drift within the target"
			if !h.Met {
				what = "drift above the target: NOT met"
			}
			line := fmt.Sprintf("  held out by time: %d of %d later requests fail", h.Lost, h.Requests)
			if h.IncidentLost > 0 {
				line += fmt.Sprintf(" (%d in incidents)", h.IncidentLost)
			}
			if h.Scale > 1 {
				line += fmt.Sprintf(", with timeouts ×%s", units.Decimal(h.Scale, 2))
			}
			out = append(out, line+"; "+what)
		}
		if p := s.Predicted; p != nil && len(p.Hops) > 0 {
			line := fmt.Sprintf("  new traffic: up to %s of successes may fail", pct3(p.Upper))
			if ir := p.Incidents; ir != nil {
				line += fmt.Sprintf(" (%s from incidents like today's)", pct3(ir.Upper))
			}
			if p.Met {
				line += ", within the target"
			} else if p.NeedSuccesses > 0 {
				line += fmt.Sprintf("; %s needs ~%s successful calls a hop", units.Percent(p.Target, 3), units.CountShort(float64(p.NeedSuccesses)))
			}
			out = append(out, line)
		}
	}
	if n := len(rep.Incidents); n > 0 {
		out = append(out, incidentSummary(rep.Incidents))
	}
	if rows, _ := tailRows(rep); len(rows) > 0 {
		var parts []string
		for _, x := range rows {
			parts = append(parts, fmt.Sprintf("%s %s", shortName(x.Hop), units.Percent(x.Share, 1))) // as the tail's section prints it
		}
		add("  tail: %s", strings.Join(parts, ", "))
	}
	// The hops to change take the lines the rest leaves (at least the
	// header, one hop and the count of the others).
	room := max(3, SummaryMaxLines-len(out))
	out = append(out[:changeAt], append(changeLines(rep, room), out[changeAt:]...)...)
	for i, l := range out {
		out[i] = fitWidth(Visible(l), SummaryMaxWidth)
	}
	if len(out) > SummaryMaxLines {
		out = append(out[:SummaryMaxLines-1], "  …")
	}
	return out
}

// effectOf is the predicted effect of the policy named, or nil.
func effectOf(rep *analyze.Report, name string) *analyze.Effect {
	for i := range rep.PredictedEffect {
		if rep.PredictedEffect[i].Policy == name {
			return &rep.PredictedEffect[i]
		}
	}
	return nil
}

// failedBy says which hops a replay's failures land on, worst first (at
// most three), or that none fail.
func failedBy(by map[string]int) string {
	if len(by) == 0 {
		return "none fails"
	}
	hops := make([]string, 0, len(by))
	for h := range by {
		hops = append(hops, h)
	}
	sort.Slice(hops, func(i, j int) bool {
		if by[hops[i]] != by[hops[j]] {
			return by[hops[i]] > by[hops[j]]
		}
		return hops[i] < hops[j]
	})
	var parts []string
	for _, h := range hops[:min(3, len(hops))] {
		parts = append(parts, fmt.Sprintf("%s %d", shortName(h), by[h]))
	}
	return "failures at " + strings.Join(parts, ", ")
}

// changeLines are the hops whose timeout the recommendation changes: the
// timeout in force (or none) → the recommended one, retries, and a short
// reason; the raised, observe-first and most called first; at most room
// lines, the last saying how many more there are.
func changeLines(rep *analyze.Report, room int) []string {
	var hs []*analyze.Hop
	for i := range rep.Hops {
		h := &rep.Hops[i]
		r := h.Recommendation
		if !timed(r) || r.TimeoutMs <= 0 {
			continue
		}
		if h.TimeoutMs != nil && *h.TimeoutMs == r.TimeoutMs && h.Recommendation.Retries == 0 {
			continue // no change
		}
		hs = append(hs, h)
	}
	if len(hs) == 0 {
		for i := range rep.Hops {
			if timed(rep.Hops[i].Recommendation) {
				return []string{"  change: nothing (every timed hop's timeout in force is the one recommended)"}
			}
		}
		return []string{"  change: nothing (no hop is a remote call that takes a timeout of its own)"}
	}
	rank := func(h *analyze.Hop) int {
		switch {
		case h.Recommendation.RaisedFromMs != nil:
			return 0
		case h.Recommendation.Action == analyze.ActionObserveFirst:
			return 1
		}
		return 2
	}
	sort.SliceStable(hs, func(i, j int) bool {
		if a, b := rank(hs[i]), rank(hs[j]); a != b {
			return a < b
		}
		return hs[i].Calls > hs[j].Calls
	})
	shown := len(hs)
	if shown > room-1 {
		shown = room - 2 // the header, the hops, the line that counts the rest
	}
	w := 0
	for _, h := range hs[:shown] {
		w = max(w, len([]rune(shortName(h.Hop))))
	}
	out := []string{fmt.Sprintf("  change %s:", units.Count(len(hs), "hop", "hops"))}
	for _, h := range hs[:shown] {
		from := "none"
		if h.TimeoutMs != nil {
			from = units.Millis(*h.TimeoutMs)
		}
		out = append(out, fmt.Sprintf("    %-*s  %7s → %-7s retries %d  %s", w, shortName(h.Hop), from, units.Millis(h.Recommendation.TimeoutMs),
			h.Recommendation.Retries, shortWhy(h)))
	}
	if n := len(hs) - shown; n > 0 {
		out = append(out, fmt.Sprintf("    … %s (the recommendation below lists every one)", units.Count(n, "more hop", "more hops")))
	}
	return out
}

// shortWhy is a hop's recommendation in a few words: what its timeout was
// taken from, and what moved it.
func shortWhy(h *analyze.Hop) string {
	r := h.Recommendation
	var why string
	switch {
	case r.Action == analyze.ActionObserveFirst:
		why = "observe-first: the tail is cut by the timeout in force"
	case r.Action == analyze.ActionKeep:
		why = "keep: too few successes to measure"
	case r.Extrapolated:
		why = "the fitted tail"
	case r.Percentile > 0:
		why = units.PercentileRounded(r.Percentile) + " of its successes"
	default:
		why = r.Action
	}
	if r.RaisedFromMs != nil {
		why += ", raised so that calls fit"
	}
	if r.Headroom > 1.1 {
		why += ", drift ×" + units.Decimal(r.Headroom, 2)
	}
	if r.Records > 1 {
		why += ", held-out blocks ×" + units.Decimal(r.Records, 2)
	}
	return why
}

// incidentSummary is the summary's line on incidents: how many, and the
// worst by slowdown.
func incidentSummary(ins []analyze.Incident) string {
	hops := map[string]bool{}
	worst := 0
	for i, in := range ins {
		hops[in.Hop] = true
		if in.Slowdown > ins[worst].Slowdown {
			worst = i
		}
	}
	w := ins[worst]
	return fmt.Sprintf("  incidents: %s on %s; worst %s–%s %s, p99 %s× (see over time)",
		units.Count(len(ins), "incident", "incidents"), units.Count(len(hops), "hop", "hops"), clockOf(w.From), clockOf(w.Until), shortName(w.Hop), sig3(w.Slowdown))
}

// shortName is a hop name cut to summaryName characters.
func shortName(s string) string {
	r := []rune(s)
	if len(r) <= summaryName {
		return s
	}
	return string(r[:summaryName-1]) + "…"
}

// fitWidth cuts a line to n runes, ending it with "…" when cut.
func fitWidth(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// pct3 is a share as a percentage with three significant digits (at most
// three decimals): 18.7%, 5.47%, 0.417% — units.Percent's rule.
func pct3(x float64) string { return units.Percent(x, 3) }

// sig3 is a number with three significant digits.
func sig3(x float64) string {
	if x <= 0 {
		return units.Decimal(x, 2)
	}
	d := max(0, 2-int(math.Floor(math.Log10(x))))
	return units.Decimal(x, d)
}
