package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
)

// Where the tail comes from, and what changed: the sections that open an
// analysis (see analyze/ranking.go, gap.go and compare.go for what the
// numbers mean). Every renderer shows the same rows: the first TailShown
// hops of the worst-first ranking, the hops whose client/server gap makes
// their tail, and, when the report compares two windows, the first
// CompareShown hops of the comparison's ranking with a positive score.

const (
	// TailShown is how many ranked hops the reports show (JSON holds
	// them all).
	TailShown = 3
	// CompareShown is how many hops of a comparison the reports show.
	CompareShown = 5
	// reasonsShown is how many of the compared hops get their reason
	// written out under the table.
	reasonsShown = 3
)

// tailRows are the ranked hops the reports show, and a note on the rest.
func tailRows(rep *analyze.Report) (rows []analyze.TailEntry, more string) {
	rows = rep.TailRanking[:min(len(rep.TailRanking), TailShown)]
	if n := len(rep.TailRanking) - len(rows); n > 0 {
		rest := 1.0
		for _, e := range rows {
			rest -= e.Share
		}
		more = fmt.Sprintf("%s share the rest (%s)", units.Count(n, "more hop", "more hops"), units.Percent(math.Max(0, rest), 1))
	}
	return rows, more
}

// dominantLine says that one hop dominates the plain ranking, and how to
// see what changed instead, or "" (see analyze.DominantShare; a report that
// compares already ranks what changed).
func dominantLine(rep *analyze.Report, names option.Names) string {
	if rep.Compare != nil || len(rep.TailRanking) == 0 || rep.TailRanking[0].Share < analyze.DominantShare {
		return ""
	}
	return fmt.Sprintf("%s holds %s of the tail on its own: a hop that is always slow ranks first whether or not anything broke; "+
		"to see what changed, compare with logs from before (%s BASELINE, or %s 10m on one file)",
		rep.TailRanking[0].Hop, units.Percent(rep.TailRanking[0].Share, 1), names.Of(option.Compare), names.Of(option.CompareWindow))
}

// tailWhich says which requests the ranking explains: "the 7 slowest
// requests (≥ p99 859ms) and the 19 failed requests".
func tailWhich(tr *analyze.TailRequests) string {
	if tr == nil {
		return ""
	}
	above := ""
	if tr.AboveMs != nil {
		above = " (≥ p99 " + units.Millis(*tr.AboveMs) + ")"
	}
	the := func(n int, one, many string) string {
		if n == 1 {
			return "the " + one
		}
		return fmt.Sprintf("the %d %s", n, many)
	}
	var parts []string
	if tr.Slow > 0 {
		parts = append(parts, the(tr.Slow, "slowest request", "slowest requests")+above)
	}
	if tr.Failed > 0 {
		parts = append(parts, the(tr.Failed, "failed request", "failed requests"))
	}
	return strings.Join(parts, " and ")
}

// gapHops are the hops whose client/server gap makes their tail.
func gapHops(rep *analyze.Report) []*analyze.Hop {
	var out []*analyze.Hop
	for i := range rep.Hops {
		if g := rep.Hops[i].Gap; g != nil && g.MakesTail {
			out = append(out, &rep.Hops[i])
		}
	}
	return out
}

// gapRule heads the gaps of the tail's section: what they mean, and the
// thresholds a gap passed to be listed (analyze.GapMinMs and the halves),
// stated once.
func gapRule() string {
	return fmt.Sprintf("between caller and callee (the gap's p99 at least %s and half the caller's p99, the callee's p99 at most half of it, over %d calls or more): "+
		"the time goes to the network, a queue or a connection pool, so a longer callee timeout or more callee capacity will not help",
		units.Millis(analyze.GapMinMs), analyze.GapMinPairs)
}

// gapLine is one gap in a few words, under gapRule.
func gapLine(h *analyze.Hop) string {
	g := h.Gap
	s := fmt.Sprintf("%s → %s: gap p99 %s (p50 %s) of the caller's p99 %s, callee p99 %s, over %d calls",
		h.Hop, g.ServerHop, optDur(g.GapP99Ms), optDur(g.GapP50Ms), optDur(g.ClientP99Ms), optDur(g.ServerP99Ms), g.Pairs)
	if len(g.Examples) > 0 {
		s += "; " + examplesText(g.Examples)
	}
	return s
}

func examplesText(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return "e.g. trace " + strings.Join(ids, ", ")
}

// compareRows are the compared hops the reports show: those with a
// positive score, up to CompareShown.
func compareRows(c *analyze.Comparison) []analyze.HopChange {
	var out []analyze.HopChange
	for _, h := range c.Ranking {
		if max(h.Score, h.ShiftMs) <= 0 || len(out) == CompareShown {
			break
		}
		out = append(out, h)
	}
	return out
}

// windowLine summarises one window of a comparison.
func windowLine(w analyze.WindowSummary, outcomes bool) string {
	ok := units.Percent(w.SuccessRate, 1) + " ok"
	if !outcomes {
		ok = "outcomes unknown"
	}
	s := fmt.Sprintf("%s, %s, p50 %s, p99 %s", units.Count(w.Requests, "request", "requests"), ok, optDur(w.P50Ms), optDur(w.P99Ms))
	if w.TailMeanMs != nil {
		s += fmt.Sprintf("; its slowest 10%% (%d from %s) %s on average", w.TailRequests, optDur(w.TailFromMs), optDur(w.TailMeanMs))
	}
	return s
}

// shift is "before → after" of one number of a compared hop.
func shift(b, a *analyze.HopWindow, get func(*analyze.HopWindow) string) string {
	x, y := "–", "–"
	if b != nil {
		x = get(b)
	}
	if a != nil {
		y = get(a)
	}
	return x + " → " + y
}

func latOf(v func(*analyze.HopWindow) *float64) func(*analyze.HopWindow) string {
	return func(w *analyze.HopWindow) string {
		if p := v(w); p != nil {
			return units.Millis(*p)
		}
		if w.Censored != nil {
			return "≥" + units.Millis(w.Censored.AtLeastMs)
		}
		return "–"
	}
}

// compareCells are one compared hop's cells: hop, tail score, typical
// shift, p50, p95, p99, failed attempts, class.
func compareCells(h analyze.HopChange, outcomes bool) []string {
	cells := []string{h.Hop, units.PlusMillis(h.Score), units.PlusMillis(h.ShiftMs),
		shift(h.Before, h.After, latOf(func(w *analyze.HopWindow) *float64 { return w.P50Ms })),
		shift(h.Before, h.After, latOf(func(w *analyze.HopWindow) *float64 { return w.P95Ms })),
		shift(h.Before, h.After, latOf(func(w *analyze.HopWindow) *float64 { return w.P99Ms }))}
	if !outcomes {
		return cells
	}
	return append(cells,
		shift(h.Before, h.After, func(w *analyze.HopWindow) string { return units.Percent(w.FailureRate, 1) }),
		shift(h.Before, h.After, func(w *analyze.HopWindow) string { return w.Class }))
}

// compareHeadOf is the comparison table's head: without outcomes in the
// logs, no failure rate and no class ("0% → 0%", "none → none" say
// nothing the logs know).
func compareHeadOf(outcomes bool) []string {
	h := []string{"HOP", "TAIL +", "TYPICAL +", "P50", "P95", "P99", "FAILED", "CLASS"}
	if !outcomes {
		h = h[:6]
	}
	return h
}

// compareRight are the comparison table's right-aligned columns.
func compareRight(outcomes bool) []bool {
	r := []bool{false, true, true, true, true, true, true, false}
	return r[:len(compareHeadOf(outcomes))]
}

// outcomesKnown says whether some span of the logs says how it ended;
// when none does, every request counts as succeeded only by inference and
// failure rates and classes are empty words.
func outcomesKnown(rep *analyze.Report) bool {
	for _, w := range rep.Warnings {
		if w.Code == analyze.WarnUnknownOutcomes {
			return false
		}
	}
	return !rep.Requests.SucceededInferred
}

// fewCompared is the note of a comparison whose smaller window holds
// fewer requests than a percentile can be read from (the recommendation's
// own threshold, analyze.MinSamplesRecommend), or "".
func fewCompared(c *analyze.Comparison, names option.Names) string {
	n, which := c.Before.Requests, "before"
	if c.After.Requests < n {
		n, which = c.After.Requests, "after"
	}
	if n >= analyze.MinSamplesRecommend {
		return ""
	}
	return fmt.Sprintf("the window %s holds only %s: too few to tell a change from noise (%d or more make a p99 worth comparing; a longer %s gives more)",
		which, units.Count(n, "request", "requests"), analyze.MinSamplesRecommend, names.Of(option.CompareWindow))
}

// compareLegend says what the two scores of the comparison table are.
const compareLegend = "tail +: what the hop's change adds to a slow request (its critical-path time in the slowest 10%, and its failures); " +
	"typical +: what it adds to a typical request (its p50's change × its calls per request); ranked by the larger"

// writeTailText writes the text report's opening sections.
func writeTailText(e *errWriter, rep *analyze.Report) {
	attrs, attrMore := attrRows(rep)
	rows, more := tailRows(rep)
	if len(rows) == 0 && len(attrs) > 0 {
		e.printf("%s\n", e.paint(ansiBold, "where the tail comes from"))
	}
	if len(rows) > 0 {
		e.printf("%s: %s", e.paint(ansiBold, "where the tail comes from"), tailWhich(rep.TailRequests))
		if tr := rep.TailRequests; tr != nil && len(tr.Examples) > 0 {
			e.printf("; %s", Visible(examplesText(tr.Examples)))
		}
		e.printf("\n")
		for i, x := range rows {
			text := Visible(x.Reason)
			if len(x.Examples) > 0 {
				text += "; " + Visible(examplesText(x.Examples))
			}
			rank, share := fmt.Sprintf("  %d. ", i+1), " "+units.Percent(x.Share, 1)+": "
			e.para(rank+e.paint(ansiBold, Visible(x.Hop))+share, rank+Visible(x.Hop)+share, text, "     ")
		}
		if more != "" {
			e.line("  ", ansiDim, more)
		}
		if d := dominantLine(rep, e.names); d != "" {
			e.line("  ", ansiAmber, Visible(d))
		}
	}
	if len(attrs) > 0 {
		e.printf("  %s\n", e.paint(ansiBold, "on one instance or attribute:"))
		for _, r := range attrs {
			e.printf("    %s\n", Visible(attrLine(r)))
		}
		if attrMore != "" {
			e.printf("    %s\n", e.paint(ansiDim, attrMore))
		}
	}
	if gs := gapHops(rep); len(gs) > 0 {
		e.line("  ", ansiAmber, gapRule())
		for _, h := range gs {
			e.para("    ", "    ", Visible(gapLine(h)), "      ")
		}
	}
	if c := rep.Compare; c != nil {
		e.printf("\n%s: %s → %s\n", e.paint(ansiBold, "what changed"), Visible(c.Before.Label), Visible(c.After.Label))
		outcomes := outcomesKnown(rep)
		e.printf("  before: %s\n  after:  %s\n", windowLine(c.Before, outcomes), windowLine(c.After, outcomes))
		if few := fewCompared(c, e.names); few != "" {
			e.line("  ", ansiAmber, few)
		}
		rows := compareRows(c)
		if len(rows) == 0 {
			e.printf("  %s\n", e.paint(ansiDim, "no hop's change lengthened the slowest requests"))
		} else {
			t := &table{head: compareHeadOf(outcomes), right: compareRight(outcomes)}
			for _, h := range rows {
				t.add(compareCells(h, outcomes)...)
			}
			t.paint = func(row, col int, cell string) string {
				if row < 0 {
					return ansiBold
				}
				if col == 1 || col == 2 {
					return ansiAmber
				}
				return ""
			}
			t.write(e, "  ")
			e.line("  ", ansiDim, compareLegend)
			for _, h := range rows[:min(len(rows), reasonsShown)] {
				e.printf("  %s: %s", Visible(h.Hop), Visible(h.Reason))
				if len(h.Examples) > 0 {
					e.printf("; %s", Visible(examplesText(h.Examples)))
				}
				e.printf("\n")
			}
		}
	}
	if len(rep.TailRanking) > 0 || len(attrs) > 0 || len(gapHops(rep)) > 0 || rep.Compare != nil {
		e.printf("\n")
	}
}

// writeTailMarkdown writes the Markdown report's opening sections.
func writeTailMarkdown(e *errWriter, rep *analyze.Report) {
	rows, more := tailRows(rep)
	gaps := gapHops(rep)
	attrs, attrMore := attrRows(rep)
	if len(rows) > 0 || len(gaps) > 0 || len(attrs) > 0 {
		e.printf("#### Where the tail comes from\n\n")
	}
	if len(rows) > 0 {
		e.printf("%s", md(capFirst(tailWhich(rep.TailRequests))))
		if tr := rep.TailRequests; tr != nil && len(tr.Examples) > 0 {
			e.printf("; %s", e.links.md(examplesText(tr.Examples)))
		}
		e.printf(":\n\n")
		for i, x := range rows {
			e.printf("%d. **%s** %s: %s", i+1, md(x.Hop), units.Percent(x.Share, 1), md(x.Reason))
			if len(x.Examples) > 0 {
				e.printf("; %s", e.links.md(examplesText(x.Examples)))
			}
			e.printf("\n")
		}
		if more != "" {
			e.printf("\n%s.\n", capFirst(more))
		}
		if d := dominantLine(rep, e.names); d != "" {
			e.printf("\n%s.\n", md(capFirst(d)))
		}
		e.printf("\n")
	}
	if len(attrs) > 0 {
		e.printf("On one instance or attribute:\n\n")
		for _, r := range attrs {
			e.printf("- %s\n", md(attrLine(r)))
		}
		if attrMore != "" {
			e.printf("\n%s.\n", capFirst(attrMore))
		}
		e.printf("\n")
	}
	if len(gaps) > 0 {
		e.printf("⚠ %s:\n\n", md(capFirst(gapRule())))
		for _, h := range gaps {
			e.printf("- %s\n", md(gapLine(h)))
		}
		e.printf("\n")
	}
	if c := rep.Compare; c != nil {
		e.printf("#### What changed\n\n")
		outcomes := outcomesKnown(rep)
		e.printf("**Before** (%s): %s  \n**After** (%s): %s\n\n", md(c.Before.Label), md(windowLine(c.Before, outcomes)), md(c.After.Label), md(windowLine(c.After, outcomes)))
		if few := fewCompared(c, e.names); few != "" {
			e.printf("⚠ %s.\n\n", md(capFirst(few)))
		}
		rs := compareRows(c)
		if len(rs) == 0 {
			e.printf("No hop's change lengthened the slowest requests.\n\n")
			return
		}
		var cells [][]string
		for _, h := range rs {
			row := compareCells(h, outcomes)
			for i := range row {
				row[i] = md(row[i])
			}
			cells = append(cells, row)
		}
		var head []string
		for _, c := range compareHeadOf(outcomes) {
			head = append(head, strings.ToLower(c))
		}
		mdTable(e, head, compareRight(outcomes), cells)
		e.printf("\n")
		for _, h := range rs[:min(len(rs), reasonsShown)] {
			e.printf("- **%s**: %s", md(h.Hop), md(h.Reason))
			if len(h.Examples) > 0 {
				e.printf("; %s", e.links.md(examplesText(h.Examples)))
			}
			e.printf("\n")
		}
		e.printf("\n")
	}
}

// tailView is what the "tail" HTML template draws (nil: nothing).
type tailView struct {
	Which, Examples string
	Rows            []tailRowView
	More            string
	Dominant        string
	Gaps            []string
	GapRule         string
	Compare         *compareView
	// Attrs are the attributions shown (attrLine), AttrMore a note on the
	// rest.
	Attrs    []attrView
	AttrMore string
}

type attrView struct {
	Hop, Key, Value, Text, Examples string
}

type tailRowView struct {
	Rank               int
	Hop, Share, Reason string
	Examples           string
	// Width is the share bar's width in px (0–120).
	Width int
}

type compareView struct {
	Before, After, BeforeLabel, AfterLabel string
	Head                                   []string
	Rows                                   []compareRowView
	Legend                                 string
	// Few is the note of a window too small to compare (fewCompared).
	Few string
	// Nums is how many columns of Head after the hop's are numbers.
	Nums int
}

type compareRowView struct {
	Cells            []string
	Hop              string
	Reason, Examples string
}

// tailViewOf builds the HTML view of the opening sections.
func tailViewOf(rep *analyze.Report, names option.Names) *tailView {
	v := &tailView{}
	rows, more := tailRows(rep)
	for i, x := range rows {
		v.Rows = append(v.Rows, tailRowView{Rank: i + 1, Hop: x.Hop, Share: units.Percent(x.Share, 1), Reason: x.Reason,
			Examples: examplesText(x.Examples), Width: int(math.Round(120 * math.Min(1, math.Max(0, x.Share))))})
	}
	if len(rows) > 0 {
		v.Which = capFirst(tailWhich(rep.TailRequests))
		if tr := rep.TailRequests; tr != nil {
			v.Examples = examplesText(tr.Examples)
		}
	}
	v.More = capFirst(more)
	v.Dominant = capFirst(dominantLine(rep, names))
	attrs, attrMore := attrRows(rep)
	for _, r := range attrs {
		v.Attrs = append(v.Attrs, attrViewOf(r.Hop, r.A))
	}
	v.AttrMore = capFirst(attrMore)
	for _, h := range gapHops(rep) {
		v.Gaps = append(v.Gaps, gapLine(h))
	}
	if len(v.Gaps) > 0 {
		v.GapRule = capFirst(gapRule())
	}
	if c := rep.Compare; c != nil {
		outcomes := outcomesKnown(rep)
		cv := &compareView{Before: windowLine(c.Before, outcomes), After: windowLine(c.After, outcomes), BeforeLabel: c.Before.Label, AfterLabel: c.After.Label,
			Legend: capFirst(compareLegend) + ".", Few: capFirst(fewCompared(c, names))}
		for _, c := range compareHeadOf(outcomes) {
			cv.Head = append(cv.Head, strings.ToLower(c))
		}
		cv.Head = append(cv.Head, "why")
		cv.Nums = 5 // tail +, typical +, p50, p95, p99
		if outcomes {
			cv.Nums = 6 // and failed
		}
		for _, h := range compareRows(c) {
			cv.Rows = append(cv.Rows, compareRowView{Cells: compareCells(h, outcomes)[1:], Hop: h.Hop, Reason: h.Reason, Examples: examplesText(h.Examples)})
		}
		v.Compare = cv
	}
	if len(v.Rows) == 0 && len(v.Gaps) == 0 && len(v.Attrs) == 0 && v.Compare == nil {
		return nil
	}
	return v
}

func attrViewOf(hop string, a analyze.Attribution) attrView {
	return attrView{Hop: hop, Key: a.Key, Value: a.Value, Text: attrText(a), Examples: examplesText(a.Examples)}
}

// tailTemplate draws tailView; html.tmpl calls it as {{template "tail"
// .Tail}}. Every value from the logs goes through vis or name.
const tailTemplate = `{{define "tail"}}{{with .}}
{{- if or .Rows .Gaps .Attrs}}
<h2 id="tail">Where the tail comes from</h2>
<div class="panel tablewrap" data-section="tail">
{{- if .Rows}}
<p>{{vis .Which}}{{if .Examples}}<span class="muted">; {{traces .Examples}}</span>{{end}}:</p>
<table id="tail-table">
<thead><tr><th class="num">#</th><th>hop</th><th class="num">share</th><th>why</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr data-tail="{{vis .Hop}}"><td class="num">{{.Rank}}</td><td class="hopname"><b>{{name .Hop}}</b></td><td class="num">{{.Share}}<br/><span style="display:inline-block;height:6px;border-radius:3px;background:var(--bar);width:{{.Width}}px"></span></td><td class="basis">{{vis .Reason}}{{if .Examples}} <span class="muted">({{traces .Examples}})</span>{{end}}</td></tr>
{{- end}}
</tbody>
</table>
{{- if .More}}
<p class="muted">{{vis .More}}.</p>
{{- end}}
{{- if .Dominant}}
<p class="dominant" id="tail-dominant">{{vis .Dominant}}.</p>
{{- end}}
{{- end}}
{{- if .Attrs}}
<p><b>On one instance or attribute:</b></p>
<ul id="attribution">
{{- range .Attrs}}
<li data-attr-hop="{{vis .Hop}}" data-attr="{{vis .Key}}={{vis .Value}}"><b>{{name .Hop}}</b>: {{vis .Text}}{{if .Examples}} <span class="muted">({{traces .Examples}})</span>{{end}}</li>
{{- end}}
</ul>
{{- if .AttrMore}}
<p class="muted">{{vis .AttrMore}}.</p>
{{- end}}
{{- end}}
{{- if .Gaps}}
<div class="gaps" style="border-left:3px solid var(--warn);padding-left:10px"><p>⚠ {{vis .GapRule}}:</p>
<ul>
{{- range .Gaps}}
<li class="gap" data-gap="1">{{vis .}}</li>
{{- end}}
</ul></div>
{{- end}}
</div>
{{- end}}
{{- with .Compare}}
<h2 id="compare">What changed</h2>
<div class="panel tablewrap" data-section="compare">
<p><b>Before</b> <span class="muted">({{vis .BeforeLabel}})</span>: {{vis .Before}}<br/><b>After</b> <span class="muted">({{vis .AfterLabel}})</span>: {{vis .After}}</p>
{{- if .Few}}
<p class="dominant" id="compare-few">⚠ {{vis .Few}}.</p>
{{- end}}
{{- if .Rows}}
<table id="compare-table">
{{- $nums := .Nums}}
<thead><tr>{{range $i, $h := .Head}}<th{{if and $i (le $i $nums)}} class="num"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr data-compare="{{vis .Hop}}"><td class="hopname"><b>{{name .Hop}}</b></td>{{range $i, $c := .Cells}}<td{{if lt $i $nums}} class="num"{{else}} style="white-space:nowrap"{{end}}>{{vis $c}}</td>{{end}}<td class="basis">{{vis .Reason}}{{if .Examples}} <span class="muted">({{traces .Examples}})</span>{{end}}</td></tr>
{{- end}}
</tbody>
</table>
<p class="muted">{{vis .Legend}}</p>
{{- else}}
<p class="muted">No hop's change lengthened the slowest requests.</p>
{{- end}}
</div>
{{- end}}
{{- end}}{{end}}`

func init() {
	template.Must(htmlTemplate.New("tail").Parse(tailTemplate))
	template.Must(htmlPristine.New("tail").Parse(tailTemplate))
}

// AttrShown is how many attributions the opening section shows (the hop
// details and JSON hold them all).
const AttrShown = 5

// attrRow is one attribution of one hop.
type attrRow struct {
	Hop string
	A   analyze.Attribution
}

// attrRows are the attributions the opening section shows: the ranked
// hops' first, in the ranking's order, then the other hops' in the hop
// table's; and a note on the rest.
func attrRows(rep *analyze.Report) (rows []attrRow, more string) {
	byHop := map[string]*analyze.Hop{}
	for i := range rep.Hops {
		byHop[rep.Hops[i].Hop] = &rep.Hops[i]
	}
	var order []string
	seen := map[string]bool{}
	for _, e := range rep.TailRanking {
		if !seen[e.Hop] && byHop[e.Hop] != nil {
			order, seen[e.Hop] = append(order, e.Hop), true
		}
	}
	for _, h := range rep.Hops {
		if !seen[h.Hop] {
			order, seen[h.Hop] = append(order, h.Hop), true
		}
	}
	total := 0
	for _, name := range order {
		for _, a := range byHop[name].Attribution {
			total++
			if len(rows) < AttrShown {
				rows = append(rows, attrRow{name, a})
			}
		}
	}
	if n := total - len(rows); n > 0 {
		more = fmt.Sprintf("%s in the hop details", units.Count(n, "more attribution", "more attributions"))
	}
	return rows, more
}

// attrText is one attribution in words, without its hop: "78% of its slow
// attempts on k8s.pod.name=cart-3 (lift 3.9×, 41 of 52)".
func attrText(a analyze.Attribution) string {
	what, n := "slow attempts", a.Tail
	if a.Of == "failures" {
		what, n = "failures", a.Failed
	}
	return fmt.Sprintf("%s of its %s on %s=%s (lift %s×, %d of %d)", units.Percent(a.Share, 1), what, a.Key, a.Value,
		strconv.FormatFloat(a.Lift, 'f', -1, 64), n, a.HopCount)
}

// attrLine is attrText with its hop and first example trace.
func attrLine(r attrRow) string {
	s := r.Hop + ": " + attrText(r.A)
	if len(r.A.Examples) > 0 {
		s += ", " + examplesText(r.A.Examples[:1])
	}
	return s
}

// hopExamplesText names the traces behind a hop's figures: "traces:
// slowest (10.9s) req-0022, cut at the timeout req-0022, failed req-0101".
func hopExamplesText(x *analyze.HopExamples) string {
	if x == nil {
		return ""
	}
	var parts []string
	if x.SlowestTraceID != "" {
		parts = append(parts, fmt.Sprintf("slowest (%s) %s", units.Millis(x.SlowestMs), x.SlowestTraceID))
	}
	if x.TimeoutTraceID != "" {
		parts = append(parts, "cut at the timeout "+x.TimeoutTraceID)
	}
	if x.FailedTraceID != "" {
		parts = append(parts, "failed "+x.FailedTraceID)
	}
	if len(parts) == 0 {
		return ""
	}
	return "traces: " + strings.Join(parts, ", ")
}
