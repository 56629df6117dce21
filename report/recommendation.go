package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
)

// The recommendation as the text, Markdown and HTML reports show it: a
// table of the hops the recommended policy sets a timeout for, one line
// that counts the hops it leaves alone (on a real 237-hop export, 213 of
// them: rows of "0s" would bury the 24 that matter), and the replay check
// of the policy against the logs it came from. The JSON report keeps every
// hop's recommendation as analyze made it.

// untimed are the actions of hops the policy gives no timeout of their
// own, in the order the summary line lists them on equal counts, with the
// reason it gives (one hop, several).
var untimed = []struct {
	action    string
	one, many string
}{
	{analyze.ActionInProcess, "work inside one service", "work inside one service"},
	{analyze.ActionCallee, "its caller's timeout bounds it", "their caller's timeout bounds them"},
	{analyze.ActionRequest, "the trace root: the budget bounds it", "the trace roots: the budget bounds them"},
}

// timed reports whether a recommendation sets a timeout for its hop (set,
// observe-first, keep), as opposed to saying why the hop gets none.
func timed(r analyze.Recommendation) bool {
	for _, u := range untimed {
		if r.Action == u.action {
			return false
		}
	}
	return true
}

// timedHops are the hops whose recommendation sets a timeout, in report
// order.
func timedHops(hops []analyze.Hop) []*analyze.Hop {
	var out []*analyze.Hop
	for i := range hops {
		if timed(hops[i].Recommendation) {
			out = append(out, &hops[i])
		}
	}
	return out
}

// untimedSummary is the one line that stands for the hops without a
// timeout of their own, most common action first: "166 in-process (work
// inside one service), 46 callee-side (their caller's timeout bounds
// them), 1 request (the trace root: the budget bounds it)"; "" when every
// hop gets a timeout.
func untimedSummary(hops []analyze.Hop) string {
	n := map[string]int{}
	for _, h := range hops {
		if !timed(h.Recommendation) {
			n[h.Recommendation.Action]++
		}
	}
	type part struct {
		i, n int
		s    string
	}
	var parts []part
	for i, u := range untimed {
		if c := n[u.action]; c > 0 {
			parts = append(parts, part{i, c, fmt.Sprintf("%d %s (%s)", c, u.action, units.Plural(c, u.one, u.many))})
		}
	}
	sort.SliceStable(parts, func(a, b int) bool { return parts[a].n > parts[b].n })
	if len(parts) == 0 {
		return ""
	}
	ss := make([]string, len(parts))
	for i, p := range parts {
		ss[i] = p.s
	}
	return strings.Join(ss, ", ")
}

// recTimeout is a hop's recommended timeout as a table shows it, in the
// column's unit u (timeoutColumns): "–" for a hop the policy gives no
// timeout of its own or a timeout action with no value (keep, with no
// timeout known: the basis says why), never "0s"; and the value before
// replay raised it: "1.20s ↑ from 0.800s".
func recTimeout(u units.Column, r analyze.Recommendation) string {
	switch {
	case !timed(r) || r.TimeoutMs <= 0:
		return "–"
	case r.RaisedFromMs != nil:
		return u.Text(r.TimeoutMs) + " ↑ from " + u.Text(*r.RaisedFromMs)
	}
	return u.Text(r.TimeoutMs)
}

// recTimeoutText is recTimeout in a sentence: each value in its own unit,
// as the summary and the basis print it ("1.2s ↑ from 800ms").
func recTimeoutText(r analyze.Recommendation) string {
	switch {
	case !timed(r) || r.TimeoutMs <= 0:
		return "–"
	case r.RaisedFromMs != nil:
		return units.Millis(r.TimeoutMs) + " ↑ from " + units.Millis(*r.RaisedFromMs)
	}
	return units.Millis(r.TimeoutMs)
}

// timeoutColumns are the units of a hop table's two timeout columns, the
// timeout in force and the recommended one (with the values replay raised
// from): one unit a column, as the latency columns have.
func timeoutColumns(hops []analyze.Hop) (inForce, rec units.Column) {
	var a, b []*float64
	for i := range hops {
		h := &hops[i]
		if h.TimeoutMs != nil {
			a = append(a, h.TimeoutMs)
		}
		if r := h.Recommendation; timed(r) && r.TimeoutMs > 0 {
			v := r.TimeoutMs
			b = append(b, &v)
			if r.RaisedFromMs != nil {
				b = append(b, r.RaisedFromMs)
			}
		}
	}
	return units.ColumnFor(a...), units.ColumnFor(b...)
}

// basisShort is a timed hop's basis in a few words, for the BASIS column
// of a table whose ACTION column already names the action: what set the
// value and what moved it. The full sentence (Recommendation.Basis, ~400
// characters on real hops) is in JSON, in the Markdown and HTML details
// and, with --verbose, under the text table.
func basisShort(h *analyze.Hop) string {
	r := h.Recommendation
	var why string
	switch {
	case r.Action == analyze.ActionObserveFirst:
		why = "the tail is cut by the timeout in force"
		if c := h.Censored; c != nil && c.AtLeastMs > 0 {
			why = "the tail is cut at " + units.Millis(c.AtLeastMs) + " by the timeout in force: a canary"
		}
	case r.Action == analyze.ActionKeep:
		why = "too few successful attempts to measure"
	case r.Extrapolated:
		why = "the fitted tail"
		if r.Percentile > 0 {
			why += " at " + units.PercentileRounded(r.Percentile)
		}
	case r.Percentile > 0:
		why = units.PercentileRounded(r.Percentile) + " of its successes"
	default:
		why = r.Action
	}
	if r.RaisedFromMs != nil {
		why += "; raised so that calls fit"
	}
	if r.Headroom > 1.1 {
		why += "; drift ×" + units.Decimal(r.Headroom, 2)
	}
	if r.Records > 1 {
		why += "; held-out blocks ×" + units.Decimal(r.Records, 2)
	}
	if ej := r.Eject; ej != nil {
		why += "; eject " + ej.Key + "=" + ej.Value + " (outlier detection)"
	}
	switch {
	case r.Retries > 0:
		why += "; retries help"
	case h.FailureClass == analyze.ClassRanToTimeout:
		why += "; ran to timeout: no retries"
	}
	return why
}

// recRetries is the retries column: "–" where the policy sets nothing.
func recRetries(r analyze.Recommendation) string {
	if !timed(r) {
		return "–"
	}
	return strconv.Itoa(r.Retries)
}

// safetyLines say what the recommended policy risks beyond the logs it was
// fitted to: the held-out replay (or why none ran) and the predicted
// out-of-sample bound. bad is true when the bound is above the target or
// the held-out part lost more than the target allows.
func safetyLines(s *analyze.Safety) (lines []string, bad bool) {
	return safetyLinesAdvice(s, false)
}

// safetyLinesAdvice is safetyLines, with what would certify the target
// spelled out (where no warning section follows to say it) when advice.
func safetyLinesAdvice(s *analyze.Safety, advice bool) (lines []string, bad bool) {
	if s == nil {
		return nil, false
	}
	if s.Provisional != "" {
		lines = append(lines, "provisional: "+s.Provisional)
		bad = true
	}
	switch h := s.HeldOut; {
	case h != nil && h.Requests > 0:
		line := fmt.Sprintf("held out: fitted on the %s before %s, replayed on the %d later that succeeded: %d %s (%s)",
			units.Count(h.FittedRequests, "request", "requests"), h.FittedUntil, h.Requests, h.Lost, units.Plural(h.Lost, "fails", "fail"), units.Percent(h.Share, 3))
		if h.Scale > 1 {
			line = fmt.Sprintf("held out: fitted on the %s before %s, replayed on the %d later that succeeded: %d %s as fitted; with every timeout ×%s (which this policy carries too), %d (%s)",
				units.Count(h.FittedRequests, "request", "requests"), h.FittedUntil, h.Requests, h.UnscaledLost, units.Plural(h.UnscaledLost, "fails", "fail"), units.Decimal(h.Scale, 2), h.Lost, units.Percent(h.Share, 3))
		}
		if h.IncidentLost > 0 {
			line += fmt.Sprintf(": %d in incidents the logs name, %d to drift", h.IncidentLost, h.DriftLost)
		}
		if p := s.Predicted; p != nil {
			if h.Met {
				line += "; drift within the " + units.Percent(p.Target, 3) + " target"
			} else {
				line += "; drift above the " + units.Percent(p.Target, 3) + " target: NOT met"
			}
		}
		lines = append(lines, line)
		if !h.Met && h.DriftLost > 1 {
			bad = true
		}
	case h != nil:
		lines = append(lines, fmt.Sprintf("held out: fitted on the %s before %s; none of the later ones succeeded as logged", units.Count(h.FittedRequests, "request", "requests"), h.FittedUntil))
	case s.HeldOutNote != "":
		lines = append(lines, "held out: none; "+s.HeldOutNote)
	}
	if p := s.Predicted; p != nil && len(p.Hops) > 0 {
		verdict := "within the target " + units.Percent(p.Target, 3)
		if !p.Met {
			verdict = "the " + units.Percent(p.Target, 3) + " target is not certified by these logs (see the warning for what would certify it)"
			bad = true
		}
		if advice && !p.Met {
			verdict = "the " + units.Percent(p.Target, 3) + " target is not certified by these logs"
		}
		if ir := p.Incidents; ir != nil {
			lines = append(lines, fmt.Sprintf("on new traffic: up to %s of requests that succeed may fail by a timeout (%s confidence): traffic like today's up to %s (distribution-free; expected %s); if tomorrow brings incidents like today's (%s on %s, %d of %d blocks, %s× slower at the median) on hops the policy was not fitted for, up to %s more: %s",
				units.Percent(p.Upper, 3), units.Percent(p.Level, 3), units.Percent(p.ExchangeableUpper, 3), units.Percent(p.Expected, 3),
				units.Count(ir.Incidents, "incident", "incidents"), units.Count(ir.Hops, "hop", "hops"), ir.Blocks, ir.OfBlocks, units.Decimal(ir.Slowdown, 1), units.Percent(ir.Upper, 3), verdict))
		} else {
			lines = append(lines, fmt.Sprintf("on new traffic: up to %s of requests that succeed may fail by a timeout (%s confidence, distribution-free; expected %s): %s",
				units.Percent(p.Upper, 3), units.Percent(p.Level, 3), units.Percent(p.Expected, 3), verdict))
		}
		if advice && !p.Met && p.Advice != "" {
			lines = append(lines, p.Advice)
		}
	}
	return lines, bad
}

// checkLine says how the recommended policy fared replayed on its own
// logs: "replayed on these logs: 0 of 59 requests that succeeded fail
// under it (target 0.1%); timeouts at p99.991 per call (~10.8 calls per
// request)".
func checkLine(c *analyze.RecommendationCheck) string {
	var b strings.Builder
	b.WriteString("replayed on these logs: ")
	if c.LoggedOK == 0 {
		b.WriteString("no request succeeded as logged, so none could fail under it")
	} else {
		fmt.Fprintf(&b, "%d of %s that succeeded %s under it (", c.Failed, units.Count(c.LoggedOK, "request", "requests"), units.Plural(c.Failed, "fails", "fail"))
		if c.Failed > 0 {
			b.WriteString(units.Percent(c.Share, 3) + ", ")
		}
		b.WriteString("target " + units.Percent(c.Target, 3))
		if !c.Met {
			b.WriteString(": missed")
		}
		b.WriteString(")")
		if c.Undetermined > 0 {
			fmt.Fprintf(&b, ", %d undetermined (the logs do not show how they would end)", c.Undetermined)
		}
	}
	if c.Percentile > 0 {
		fmt.Fprintf(&b, "; timeouts at %s per call", units.Percentile(c.Percentile))
		if c.CallsPerRequest > 0 {
			k, calls := units.Decimal(c.CallsPerRequest, 1), "calls"
			if k == "1" {
				calls = "call"
			}
			fmt.Fprintf(&b, " (~%s %s per request)", k, calls)
		}
	}
	return b.String()
}

// raisedLine names the hops whose timeouts replay raised: "raised after
// replay: a, b (↑ in the table; the basis says why)"; "" when it raised
// none.
func raisedLine(c *analyze.RecommendationCheck) string {
	if c == nil || len(c.RaisedHops) == 0 {
		return ""
	}
	return "raised after replay: " + nameList(c.RaisedHops, groupListMax) + " (↑ in the table; the basis says why)"
}

// capFirst capitalises a line that starts with an ASCII letter.
func capFirst(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// peakRate is a hop's attempts per second in its busiest block of the
// timeline ("–" when the logs were not cut into blocks, or the hop has
// too few attempts for blocks of its own): what the hop carries at its
// busiest, measured over a block, not over the whole logs' span, whose
// ends the report does not carry. "~" marks a count estimated from the
// hop's sample of attempt times (BlockSample).
func peakRate(tl *analyze.Timeline, h *analyze.Hop) string {
	if tl == nil || tl.BlockMs <= 0 || len(h.Blocks) == 0 {
		return "–"
	}
	most := 0
	for _, b := range h.Blocks {
		most = max(most, b.Attempts)
	}
	s := sig3(float64(most) / (tl.BlockMs / 1000))
	if h.BlockSample > 0 {
		s = "~" + s
	}
	return s
}

// peakRateLegend says what the PEAK/S column counts, or "" when no hop
// has a value.
func peakRateLegend(tl *analyze.Timeline, hops []analyze.Hop) string {
	for i := range hops {
		if peakRate(tl, &hops[i]) != "–" {
			return fmt.Sprintf("peak/s: a hop's attempts per second in its busiest %s block of the timeline", tl.Block)
		}
	}
	return ""
}

// outcomeColumns says which columns of a hop table to keep: all of them
// when the logs say how calls ended; without outcomes, not the failed
// count and the failure class (a column of 0 and "none" says nothing the
// logs know; the report's unknown-outcomes warning says why).
func outcomeColumns(head []string, outcomes bool) []bool {
	keep := make([]bool, len(head))
	for i, h := range head {
		switch strings.ToLower(h) {
		case "failed", "class", "failures":
			keep[i] = outcomes
		default:
			keep[i] = true
		}
	}
	return keep
}

// pick is the elements of xs whose keep is true.
func pick[T any](xs []T, keep []bool) []T {
	out := make([]T, 0, len(xs))
	for i, x := range xs {
		if keep[i] {
			out = append(out, x)
		}
	}
	return out
}
