package report

import (
	"fmt"
	"html"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/internal/units"
)

// The Markdown renderers write GitHub-flavoured Markdown sized for a pull
// request comment: a verdict or summary first, then tables, then the
// caveats. Every string that comes from the logs or a policy goes through
// md, so a hop name can neither break a table nor inject HTML (GitHub
// renders inline HTML in comments).

// md escapes text for a Markdown table cell or paragraph: HTML
// metacharacters become entities, the punctuation that starts emphasis,
// code, links, strikethrough or a cell is backslashed (parentheses only
// matter after a "]", which is escaped), and control, bidi and zero-width
// characters are written as escapes by Visible first (a newline would end
// the table row, an ESC reach the terminal of whoever cats the file).
func md(s string) string {
	var b strings.Builder
	for _, r := range Visible(s) {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '`', '*', '_', '[', ']', '|', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdTable writes a GitHub table; right marks numeric columns.
func mdTable(e *errWriter, head []string, right []bool, rows [][]string) {
	e.printf("|")
	for _, h := range head {
		e.printf(" %s |", h)
	}
	e.printf("\n|")
	for i := range head {
		if right != nil && right[i] {
			e.printf("--:|")
		} else {
			e.printf(":--|")
		}
	}
	e.printf("\n")
	for _, r := range rows {
		e.printf("|")
		for _, c := range r {
			e.printf(" %s |", c)
		}
		e.printf("\n")
	}
}

func mdWarnings(e *errWriter, ws []analyze.Warning) {
	if len(ws) == 0 {
		return
	}
	e.printf("\n#### Warnings\n\n")
	for i, w := range notes(ws) {
		hop := ""
		if w.Hop != "" {
			hop = " " + md(w.Hop) + ":"
		}
		e.printf("%s **%s**%s %s  \n", superscript(i+1), md(w.Code), hop, md(w.Message))
	}
}

func mdSkips(e *errWriter, read, skipped int64, by map[string]int64) {
	if skipped == 0 {
		return
	}
	e.printf("Skipped %d of %s:", skipped, units.Count(read, "record", "records"))
	for i, r := range slices.Sorted(maps.Keys(by)) {
		if i > 0 {
			e.printf(",")
		}
		e.printf(" %s %d", md(r), by[r])
	}
	e.printf(".\n\n")
}

func analysisMarkdown(w io.Writer, rep *analyze.Report) error {
	return analysisMarkdownOpt(w, rep, Options{})
}

// analysisMarkdownOpt is analysisMarkdown with the trace links of opt.
func analysisMarkdownOpt(w io.Writer, rep *analyze.Report, opt Options) error {
	e := &errWriter{w: w, links: newLinker(rep, opt.TraceURL), names: opt.Names}
	rep, hidden := boundedHops(rep)
	rq := rep.Requests
	e.printf("### tailscope analyze\n\n")
	e.printf("**%s, %d succeeded (%s)** · p50 %s · p95 %s · p99 %s  \n", units.Count(rq.Count, "request", "requests"), rq.Succeeded, units.Percent(rq.SuccessRate, 1)+inferredNote(rq),
		optDur(rq.LatencyMs.P50), optDur(rq.LatencyMs.P95), optDur(rq.LatencyMs.P99))
	if rq.MeanTimeToFailureMs != nil {
		e.printf("Failures land at %s; mean time to failure %s.  \n", landing(rq.FailureLanding), units.Millis(*rq.MeanTimeToFailureMs))
	}
	e.printf("%s from %s (%s).\n\n", md(spansText(rep.ReadStats)), units.Count(rep.FilesRead(), "file", "files"), readCounts(rep.Read, rep.Filtered, rep.Skipped))
	mdSkips(e, rep.Read, rep.Skipped, rep.SkippedByReason)
	if lines := summaryLines(rep, e.names); len(lines) > 0 {
		e.printf("#### Summary\n\n")
		for _, l := range lines[1:] {
			e.printf("%s  \n", md(strings.TrimSpace(l)))
		}
		e.printf("\n")
	}
	writeTailMarkdown(e, rep)

	u50, u95, u99, umax := hopColumnUnit(rep.Hops, "p50"), hopColumnUnit(rep.Hops, "p95"), hopColumnUnit(rep.Hops, "p99"), hopColumnUnit(rep.Hops, "max")
	uto, urec := timeoutColumns(rep.Hops)
	fn := newFootnotes(rep.Warnings)
	var rows [][]string
	for _, h := range rep.Hops {
		l := h.LatencyMs
		to := uto.Cell(h.TimeoutMs)
		name := md(h.Hop)
		if m := fn.mark(h.Hop); m != "" {
			name += " " + m
		}
		rows = append(rows, []string{name, fmt.Sprint(h.Attempts), fmt.Sprint(h.Calls), fmt.Sprint(h.FailedAttempts),
			percentile(u50, l.P50, "p50", h.Censored), percentile(u95, l.P95, "p95", h.Censored),
			percentile(u99, l.P99, "p99", h.Censored), percentile(umax, l.Max, "max", h.Censored), to, md(h.FailureClass),
			md(h.Recommendation.Action), recTimeout(urec, h.Recommendation), recRetries(h.Recommendation), peakRate(rep.Timeline, &h)})
	}
	head := []string{"hop", "attempts", "calls", "failed", "p50", "p95", "p99", "max", "timeout", "class", "action", "rec. timeout", "rec. retries", "peak/s"}
	keep := outcomeColumns(head, outcomesKnown(rep))
	for i := range rows {
		rows[i] = pick(rows[i], keep)
	}
	mdTable(e, pick(head, keep), pick([]bool{false, true, true, true, true, true, true, true, true, false, false, true, true, true}, keep), rows)
	if l := peakRateLegend(rep.Timeline, rep.Hops); l != "" {
		e.printf("\n%s.\n", capFirst(l))
	}
	if hidden > 0 {
		e.printf("\n%s.\n", md(notShownLine(len(rep.Hops), hidden)))
	}

	if lines := timelineLines(rep, e.names); len(lines) > 0 {
		// Each line escaped (hop names are the logs' text), kept as its
		// own line by a Markdown line break.
		e.printf("\n#### Over time\n\n")
		for _, l := range lines {
			e.printf("%s  \n", md(strings.TrimSpace(l)))
		}
	}
	if rp := rep.RecommendedPolicy; rp != nil {
		e.printf("\n#### Recommendation (budget %s)\n\n", units.Millis(rp.BudgetMs))
	} else {
		e.printf("\n#### Recommendation\n\n")
	}
	for _, h := range timedHops(rep.Hops) {
		r := h.Recommendation
		e.printf("- **%s**: %s timeout %s, %d %s — %s\n", md(h.Hop), md(r.Action), recTimeoutText(r), r.Retries,
			units.Plural(r.Retries, "retry", "retries"), md(basisShort(h)))
		// The full basis, folded: GitHub shows a details block closed.
		e.printf("  <details><summary>basis</summary>%s</details>\n", html.EscapeString(Visible(r.Basis)))
	}
	e.printf("\n")
	if s := untimedSummary(rep.Hops); s != "" {
		e.printf("Not timed out: %s  \n", md(s))
	}
	if c := rep.RecommendationCheck; c != nil {
		line := md(capFirst(checkLine(c)))
		if !c.Met {
			line = "⚠️ **" + line + "**"
		}
		e.printf("%s  \n", line)
		if s := raisedLine(c); s != "" {
			e.printf("%s  \n", md(capFirst(s)))
		}
	}
	if rp := rep.RecommendedPolicy; rp != nil {
		lines, bad := safetyLines(rp.Safety)
		for _, l := range lines {
			l = md(capFirst(l))
			if bad && strings.HasPrefix(l, "On new traffic") {
				l = "⚠️ " + l
			}
			e.printf("%s  \n", l)
		}
	}
	var evidence []string
	for _, h := range rep.Hops {
		if h.FailedAttempts > 0 {
			s := fmt.Sprintf("- **%s** (%s): %s", md(h.Hop), md(h.FailureClass), md(h.Evidence))
			if h.TimeoutMs != nil {
				s += fmt.Sprintf("; timeout %s from %s", units.Millis(*h.TimeoutMs), md(h.TimeoutSource))
			}
			if x := hopExamplesText(h.Examples); x != "" {
				s += "; " + e.links.md(x)
			}
			evidence = append(evidence, s)
		}
	}
	if len(evidence) > 0 {
		e.printf("\n#### Failures\n\n%s\n", strings.Join(evidence, "\n"))
	}
	if len(rep.PredictedEffect) > 0 {
		e.printf("\n#### Predicted effect (the logged requests replayed)\n\n")
		head, right, rows, note := effectRows(rep.PredictedEffect)
		for i := range head {
			head[i] = strings.ToLower(head[i])
		}
		for _, r := range rows {
			for i := range r {
				r[i] = md(r[i])
			}
		}
		mdTable(e, head, right, rows)
		if note != "" {
			e.printf("\n%s\n", md(note))
		}
	}
	mdWarnings(e, rep.Warnings)
	return e.err
}

// verdictMark is the verdict as a reviewer scans for it.
func verdictMark(v string) string {
	switch v {
	case check.Pass:
		return "✅ pass"
	case check.Fail:
		return "❌ fail"
	}
	return v
}

func checkMarkdown(w io.Writer, rep *check.Report) error {
	e := &errWriter{w: w}
	e.printf("### tailscope check: %s\n\n", verdictMark(rep.Verdict))
	failed := 0
	for _, r := range rep.Results {
		if r.Verdict == check.Fail {
			failed++
		}
	}
	e.printf("%s checked by replaying %s (%s, %d skipped)", units.Count(len(rep.Results), "policy", "policies"),
		units.Count(rep.Requests, "request", "requests"), md(spansText(rep.ReadStats)), rep.Skipped)
	if failed > 0 {
		e.printf("; **%d failed**", failed)
	}
	e.printf(".\n\n")
	mdSkips(e, rep.Read, rep.Skipped, rep.SkippedByReason)

	rows := rep.Results
	if rep.Baseline != nil {
		rows = append([]check.Result{*rep.Baseline}, rows...)
	}
	var lat []*float64
	for _, r := range rows {
		lat = append(lat, r.Replay.LatencyMs.P50, r.Replay.LatencyMs.P95)
	}
	u := units.ColumnFor(lat...)
	var cells [][]string
	for i, r := range rows {
		name := "**" + md(r.Policy.Name) + "**"
		verdict := verdictMark(r.Verdict)
		if rep.Baseline != nil && i == 0 {
			name += " (baseline)"
			verdict = "–"
		}
		ttf := "–"
		if r.Replay.FailureMs.Mean != nil {
			ttf = units.Millis(*r.Replay.FailureMs.Mean)
		}
		cells = append(cells, []string{name, md(r.HopTimeout), md(r.Retries), md(r.Budget), okText(r.Replay), successText(r.Replay),
			latCell(u, r.Replay.LatencyMs.P50, r.Replay), latCell(u, r.Replay.LatencyMs.P95, r.Replay), failText(r.Replay), ttf, units.Millis(r.Replay.RetryMs.Spent), verdict})
	}
	mdTable(e, []string{"config", "hop timeout", "retries", "budget", "ok", "success", "p50", "p95", "failures land", "mean TTF", "retry time", "verdict"},
		[]bool{false, true, true, true, true, true, true, true, false, true, true, false}, cells)
	if note := cutShortNote(replayRows(rows, rep.Baseline != nil)); note != "" {
		e.printf("\n%s\n", md(note))
	}

	wrote := false
	for _, r := range rep.Results {
		if len(r.Lint) == 0 && len(r.Gates) == 0 && r.Replay.Undetermined == 0 {
			continue
		}
		if !wrote {
			e.printf("\n#### Findings\n")
			wrote = true
		}
		e.printf("\n**%s** (%s): %s\n\n", md(r.Policy.Name), md(r.Policy.Path), verdictMark(r.Verdict))
		if r.Replay.Undetermined > 0 {
			e.printf("- %s\n", undeterminedText(r.Replay))
		}
		// Errors and gates decide the verdict and stay in view; warnings
		// and notes fold away so that the comment stays short.
		var minor []check.Finding
		for _, f := range r.Lint {
			if f.Severity != check.SevError {
				minor = append(minor, f)
				continue
			}
			e.printf("- %s\n", mdFinding(f))
		}
		for _, g := range r.Gates {
			mark := "✅"
			if !g.Pass {
				mark = "❌"
			}
			e.printf("- %s gate **%s**: want %s, got %s\n", mark, md(g.Name), md(g.Want), md(g.Got))
		}
		if len(minor) > 0 {
			e.printf("\n<details><summary>%d more %s (warnings, notes)</summary>\n\n", len(minor), units.Plural(len(minor), "finding", "findings"))
			for _, f := range minor {
				e.printf("- %s\n", mdFinding(f))
			}
			e.printf("\n</details>\n")
		}
	}
	mdWarnings(e, rep.Warnings)
	return e.err
}

func mdFinding(f check.Finding) string {
	hop := ""
	if f.Hop != "" {
		hop = " " + md(f.Hop) + ":"
	}
	return fmt.Sprintf("%s lint **%s**%s %s", severityMark(f.Severity), md(f.Code), hop, md(f.Message))
}

func severityMark(s string) string {
	switch s {
	case check.SevError:
		return "❌ error"
	case check.SevWarning:
		return "⚠️ warning"
	}
	return "ℹ️ " + s
}
