package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/quantile"
)

// errWriter is a writer that remembers its first error, so renderers can write
// freely and check once.
type errWriter struct {
	w     io.Writer
	err   error
	color bool
	links *linker // Markdown's trace links (nil: none)
	names option.Names
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// table lays out rows in aligned columns; right-aligned columns hold
// numbers. paint, when set, gives the ANSI style of a cell (row -1 is the
// header); it is applied around the text only, so colour never shifts the
// alignment.
type table struct {
	head  []string
	right []bool
	rows  [][]string
	paint func(row, col int, cell string) string
}

func (t *table) add(cells ...string) {
	for i := range cells {
		cells[i] = Visible(cells[i])
	}
	t.rows = append(t.rows, cells)
}

func (t *table) write(e *errWriter, indent string) {
	width := make([]int, len(t.head))
	for i, h := range t.head {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(c))
			}
		}
	}
	line := func(row int, cells []string) {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			text := c
			if t.paint != nil && e.color {
				if st := t.paint(row, i, c); st != "" && c != "" {
					text = st + c + ansiReset
				}
			}
			if t.right != nil && t.right[i] {
				b.WriteString(pad + text)
			} else if i == len(cells)-1 {
				b.WriteString(text)
			} else {
				b.WriteString(text + pad)
			}
		}
		e.printf("%s\n", strings.TrimRight(b.String(), " "))
	}
	line(-1, t.head)
	for i, r := range t.rows {
		line(i, r)
	}
}

// spansText is the span count of a report's header, with the copies of a
// repeated span id the call trees left out ("45398 spans (73 duplicates
// left out of the requests)"): the per-hop numbers count every span read,
// the requests only the first copy (the duplicate-span-id warning says
// which was kept).
func spansText(rs analyze.ReadStats) string {
	s := units.Count(rs.Spans, "span", "spans")
	if d := rs.DuplicateSpans; d > 0 {
		s += fmt.Sprintf(" (%s left out of the requests)", units.Count(d, "duplicate", "duplicates"))
	}
	return s
}

// inferredNote follows a success rate the logs do not state (see
// analyze.Requests.SucceededInferred).
func inferredNote(rq analyze.Requests) string {
	if rq.SucceededInferred {
		return ", inferred: the logs carry no outcome"
	}
	return ""
}

// latencyAt is a hop's percentile by its name in Censored.Unknown.
func latencyAt(l analyze.Latency, name string) *float64 {
	switch name {
	case "p50":
		return l.P50
	case "p90":
		return l.P90
	case "p95":
		return l.P95
	case "p99":
		return l.P99
	case "p999":
		return l.P999
	case "max":
		return l.Max
	}
	return nil
}

// hopColumnUnit is the unit of one latency column of a hop table (p50,
// p90, p95, p99 or max), from the cells it shows: a censored cell shows its
// lower bound. Each column has its own: the p50 of a millisecond-scale
// system reads in ms even when its max column reads in seconds.
func hopColumnUnit(hops []analyze.Hop, name string) units.Column {
	vs := make([]*float64, 0, len(hops))
	for i := range hops {
		h := &hops[i]
		v := latencyAt(h.LatencyMs, name)
		if v == nil && h.Censored != nil {
			for _, x := range h.Censored.Unknown {
				if x == name {
					v = &h.Censored.AtLeastMs
				}
			}
		}
		vs = append(vs, v)
	}
	return units.ColumnFor(vs...)
}

// percentile shows a hop percentile, or "≥ cut" when it is censored.
func percentile(u units.Column, v *float64, name string, c *analyze.Censored) string {
	if v == nil && c != nil {
		for _, x := range c.Unknown {
			if x == name {
				return "≥" + u.Text(c.AtLeastMs)
			}
		}
	}
	return u.Cell(v)
}

// sparkline draws a histogram in one line of block characters, n columns
// over [lo, hi] on a log axis. Each bucket's count is spread over the
// columns it overlaps, in proportion to the overlap, so that buckets
// narrower than a column do not leave false gaps.
func sparkline(bs []quantile.Bucket, lo, hi float64, n int) string {
	if len(bs) == 0 || hi <= lo || n <= 0 {
		return ""
	}
	counts := make([]float64, n)
	llo, lhi := math.Log10(math.Max(lo, 1e-3)), math.Log10(hi)
	col := (lhi - llo) / float64(n)
	for _, b := range bs {
		a, z := math.Log10(math.Max(b.FromMs, 1e-3)), math.Log10(math.Max(b.ToMs, 1e-3))
		a, z = math.Max(a, llo), math.Min(z, lhi)
		if z <= a {
			i := min(max(int((a-llo)/col), 0), n-1)
			counts[i] += float64(b.Count)
			continue
		}
		for i := max(int((a-llo)/col), 0); i < n; i++ {
			c0, c1 := llo+float64(i)*col, llo+float64(i+1)*col
			if c0 >= z {
				break
			}
			counts[i] += float64(b.Count) * (math.Min(z, c1) - math.Max(a, c0)) / (z - a)
		}
	}
	top := 0.0
	for _, c := range counts {
		top = max(top, c)
	}
	runes := []rune(" ▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, c := range counts {
		k := 0
		if c > 0 {
			k = 1 + int(math.Round(c/top*7))
		}
		b.WriteRune(runes[k])
	}
	return b.String()
}

// ANSI styles of the text report; used only when Options.Color is set.
const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiAmber = "\x1b[33m"
	ansiCyan  = "\x1b[36m"
)

// paint wraps s in an ANSI style when colour is on.
func (e *errWriter) paint(style, s string) string {
	if !e.color || style == "" || s == "" {
		return s
	}
	return style + s + ansiReset
}

// classStyle colours a failure class by how much it should worry the
// reader: ran-to-timeout means retries are waste.
func classStyle(class string) string {
	switch class {
	case "ran-to-timeout":
		return ansiRed
	case "mixed":
		return ansiAmber
	case "transient":
		return ansiCyan
	case "none":
		return ansiGreen
	}
	return ansiDim
}

func verdictStyle(v string) string {
	switch v {
	case check.Pass:
		return ansiGreen
	case check.Fail:
		return ansiRed + ansiBold
	}
	return ansiDim
}

// footnotes numbers the warnings and says which marks go after each hop, so
// that a table row points at the caveats that qualify its numbers.
type footnotes struct {
	byHop map[string][]int
}

func newFootnotes(ws []analyze.Warning) footnotes {
	f := footnotes{byHop: map[string][]int{}}
	for i, w := range notes(ws) {
		if w.Hop != "" {
			f.byHop[w.Hop] = append(f.byHop[w.Hop], i+1)
		}
		for _, h := range w.Hops {
			f.byHop[h] = append(f.byHop[h], i+1)
		}
	}
	return f
}

// mark is the superscript reference list of a hop ("¹²"), or "".
func (f footnotes) mark(hop string) string {
	var b strings.Builder
	for i, n := range f.byHop[hop] {
		if i > 0 {
			b.WriteString("˒")
		}
		b.WriteString(superscript(n))
	}
	return b.String()
}

// superscript writes n in superscript digits.
func superscript(n int) string {
	const sup = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	digits := []rune(sup)
	s := fmt.Sprint(n)
	var b strings.Builder
	for _, c := range s {
		b.WriteRune(digits[c-'0'])
	}
	return b.String()
}

// histRange is the span of the latency histograms of all hops, so that
// every sparkline is drawn on the same axis and hops compare at a glance.
func histRange(hops []analyze.Hop) (lo, hi float64) {
	lo, hi = math.Inf(1), 0.0
	for _, h := range hops {
		for _, b := range h.LatencyHistogram {
			lo, hi = math.Min(lo, math.Max(b.FromMs, 1)), math.Max(hi, b.ToMs)
		}
	}
	return lo, hi
}

// readCounts reconciles what was read: "read 600, skipped 0", with the
// records --since/--until/--hops left out when there are any ("read 600,
// filtered 400, skipped 0"): read = used + filtered + skipped.
func readCounts(read, filtered, skipped int64) string {
	if filtered > 0 {
		return fmt.Sprintf("read %d, filtered %d, skipped %d", read, filtered, skipped)
	}
	return fmt.Sprintf("read %d, skipped %d", read, skipped)
}

func analysisText(w io.Writer, rep *analyze.Report, opt Options) error {
	e := &errWriter{w: w, color: opt.Color, names: opt.Names}
	rep, hidden := boundedHops(rep)
	e.printf("%s: %s in %s from %s (%s)\n\n", e.paint(ansiBold, "tailscope analyze"),
		spansText(rep.ReadStats), units.Count(rep.Requests.Count, "request", "requests"), units.Count(rep.FilesRead(), "file", "files"), readCounts(rep.Read, rep.Filtered, rep.Skipped))
	if rep.Skipped > 0 {
		writeSkips(e, rep.SkippedByReason, rep.SkipExamples)
	}
	if lines := summaryLines(rep, e.names); len(lines) > 0 {
		e.printf("%s\n", e.paint(ansiBold, lines[0]))
		for _, l := range lines[1:] {
			e.printf("%s\n", l)
		}
		e.printf("\n")
	}
	writeTailText(e, rep)
	writeHopTableText(e, rep.Hops, rep.Warnings, hidden, rep.Timeline, outcomesKnown(rep))
	writeFailureEvidenceText(e, rep.Hops)
	writeRequestsText(e, rep.Requests)
	if lines := timelineLines(rep, e.names); len(lines) > 0 {
		e.printf("\n")
		for _, l := range lines {
			e.printf("%s\n", l)
		}
	}
	writeRecommendationText(e, rep, opt.Verbose)
	writePredictedEffectText(e, rep.PredictedEffect)
	writeWarnings(e, rep.Warnings)
	return e.err
}

// writeHopTableText writes the per-hop table: counts, percentiles in one
// unit per column, the logged timeout, the failure class and a latency
// sparkline on one log axis shared by every hop; hidden is how many hops
// the bounded table leaves out.
func writeHopTableText(e *errWriter, hops []analyze.Hop, warnings []analyze.Warning, hidden int, tl *analyze.Timeline, outcomes bool) {
	lo, hi := histRange(hops)
	u50, u90, u95, u99, umax := hopColumnUnit(hops, "p50"), hopColumnUnit(hops, "p90"), hopColumnUnit(hops, "p95"),
		hopColumnUnit(hops, "p99"), hopColumnUnit(hops, "max")
	fn := newFootnotes(warnings)
	spark := "LATENCY"
	if hi > lo {
		spark = fmt.Sprintf("LATENCY %s–%s (log)", units.Millis(lo), units.Millis(hi))
	}
	head := []string{"HOP", "ATTEMPTS", "CALLS", "FAILED", "P50", "P90", "P95", "P99", "MAX", "TIMEOUT", "CLASS", "PEAK/S", spark}
	right := []bool{false, true, true, true, true, true, true, true, true, true, false, true, false}
	keep := outcomeColumns(head, outcomes)
	t := &table{head: pick(head, keep), right: pick(right, keep)}
	uto, _ := timeoutColumns(hops)
	for _, h := range hops {
		l := h.LatencyMs
		to := uto.Cell(h.TimeoutMs)
		name := h.Hop
		if m := fn.mark(h.Hop); m != "" {
			name += " " + m
		}
		t.add(pick([]string{name, fmt.Sprint(h.Attempts), fmt.Sprint(h.Calls), fmt.Sprint(h.FailedAttempts),
			percentile(u50, l.P50, "p50", h.Censored), percentile(u90, l.P90, "p90", h.Censored),
			percentile(u95, l.P95, "p95", h.Censored), percentile(u99, l.P99, "p99", h.Censored),
			percentile(umax, l.Max, "max", h.Censored), to, h.FailureClass, peakRate(tl, &h), sparkline(h.LatencyHistogram, lo, hi, 16)}, keep)...)
	}
	shown := t.head
	t.paint = func(row, col int, cell string) string {
		switch {
		case row < 0:
			return ansiBold
		case shown[col] == "CLASS":
			return classStyle(cell)
		case strings.HasPrefix(cell, "≥"):
			return ansiAmber
		case cell == "–":
			return ansiDim
		case shown[col] == "FAILED" && cell != "0":
			return ansiRed
		case col == len(shown)-1:
			return ansiCyan
		}
		return ""
	}
	t.write(e, "")
	if l := peakRateLegend(tl, hops); l != "" {
		e.printf("%s\n", e.paint(ansiDim, l))
	}
	if hidden > 0 {
		e.printf("%s\n", e.paint(ansiAmber, notShownLine(len(hops), hidden)))
	}
	e.printf("\n")
}

// writeFailureEvidenceText writes, under the table, what each hop with
// failed attempts shows of them: the evidence, the timeout and where it
// came from, and example traces.
func writeFailureEvidenceText(e *errWriter, hops []analyze.Hop) {
	for _, h := range hops {
		if h.FailedAttempts > 0 {
			text := Visible(h.Evidence)
			if h.TimeoutMs != nil {
				text += fmt.Sprintf(" (timeout %s: %s)", units.Millis(*h.TimeoutMs), Visible(h.TimeoutSource))
			}
			if x := hopExamplesText(h.Examples); x != "" {
				text += "; " + Visible(x)
			}
			lead := "  " + Visible(h.Hop) + ": "
			e.para(lead, lead, text, "    ")
		}
	}
}

// writeRequestsText writes the request-level line: count, successes and
// percentiles, and where failures land.
func writeRequestsText(e *errWriter, rq analyze.Requests) {
	e.printf("\n%s %d, %d succeeded (%s); p50 %s, p95 %s, p99 %s\n", e.paint(ansiBold, "requests:"), rq.Count, rq.Succeeded,
		e.paint(rateStyle(rq.SuccessRate), units.Percent(rq.SuccessRate, 1)+inferredNote(rq)),
		optDur(rq.LatencyMs.P50), optDur(rq.LatencyMs.P95), optDur(rq.LatencyMs.P99))
	if rq.MeanTimeToFailureMs != nil {
		e.printf("failures land: %s; mean time to failure %s\n", landing(rq.FailureLanding), units.Millis(*rq.MeanTimeToFailureMs))
	}
}

// writeRecommendationText writes the recommendation: the budget, a table
// of the timed hops, the hops left untimed, how the policy fared replayed
// on its own logs and what it risks beyond them.
func writeRecommendationText(e *errWriter, rep *analyze.Report, verbose bool) {
	if rp := rep.RecommendedPolicy; rp != nil {
		e.printf("\n%s (budget %s)\n", e.paint(ansiBold, "recommendation"), units.Millis(rp.BudgetMs))
	} else {
		e.printf("\n%s\n", e.paint(ansiBold, "recommendation"))
	}
	if set := timedHops(rep.Hops); len(set) > 0 {
		rt := &table{head: []string{"HOP", "ACTION", "TIMEOUT", "RETRIES", "BASIS"}, right: []bool{false, false, true, true, false}}
		_, urec := timeoutColumns(rep.Hops)
		for _, h := range set {
			r := h.Recommendation
			rt.add(h.Hop, r.Action, recTimeout(urec, r), recRetries(r), basisShort(h))
		}
		rt.paint = func(row, col int, cell string) string {
			switch {
			case row < 0:
				return ansiBold
			case col == 1 && cell == analyze.ActionSet:
				return ansiGreen
			case col == 1:
				return ansiAmber
			case col == 2 && strings.Contains(cell, "↑"):
				return ansiAmber
			}
			return ""
		}
		rt.write(e, "  ")
		if verbose {
			e.printf("  %s\n", e.paint(ansiBold, "basis"))
			for _, h := range set {
				e.line("    ", "", Visible(h.Hop)+": "+Visible(h.Recommendation.Basis))
			}
		} else {
			e.printf("  %s\n", e.paint(ansiDim, "each hop's full basis: "+e.names.Of(option.Verbose)+", or "+e.names.Of(option.Format)+" json (hops[].recommendation.basis)"))
		}
	}
	if s := untimedSummary(rep.Hops); s != "" {
		e.line("  ", ansiDim, "not timed out: "+s)
	}
	if c := rep.RecommendationCheck; c != nil {
		style := ansiDim
		if !c.Met {
			style = ansiRed + ansiBold
		}
		e.line("  ", style, checkLine(c))
		if s := raisedLine(c); s != "" {
			e.line("  ", ansiAmber, Visible(s))
		}
	}
	if rp := rep.RecommendedPolicy; rp != nil {
		lines, bad := safetyLines(rp.Safety)
		style := ansiDim
		if bad {
			style = ansiAmber
		}
		for _, l := range lines {
			e.line("  ", style, l)
		}
	}
}

// writePredictedEffectText writes the predicted effect of the
// recommended policy: the logged requests replayed under it and under
// the policy in force.
func writePredictedEffectText(e *errWriter, effects []analyze.Effect) {
	if len(effects) > 0 {
		e.printf("\n%s (the logged requests replayed)\n", e.paint(ansiBold, "predicted effect"))
		head, right, rows, note := effectRows(effects)
		et := &table{head: head, right: right}
		for _, r := range rows {
			et.add(r...)
		}
		et.write(e, "  ")
		if note != "" {
			e.line("  ", ansiDim, Visible(note))
		}
	}
}

// effectRows lays out the predicted-effect table (policy in force or as
// logged, against the recommendation) for every renderer, with the note
// its cut-short marks need (see cutShortNote).
func effectRows(effs []analyze.Effect) (head []string, right []bool, rows [][]string, note string) {
	var lat []*float64
	for _, ef := range effs {
		lat = append(lat, ef.LatencyMs.P50, ef.LatencyMs.P95, ef.LatencyMs.P99)
	}
	u := units.ColumnFor(lat...)
	head = []string{"POLICY", "OK", "SUCCESS", "P50", "P95", "P99", "FAILURES LAND", "RETRY TIME"}
	right = []bool{false, true, true, true, true, true, false, true}
	names := make([]string, len(effs))
	sums := make([]check.Replay, len(effs))
	for i, ef := range effs {
		r := ef.Summary
		rows = append(rows, []string{ef.Policy, okText(r), successText(r),
			latCell(u, r.LatencyMs.P50, r), latCell(u, r.LatencyMs.P95, r), latCell(u, r.LatencyMs.P99, r), failText(r), units.Millis(ef.RetryMs.Spent)})
		names[i], sums[i] = ef.Policy, r
	}
	return head, right, rows, cutShortNote(names, sums)
}

// replayRows are the names and replays of a check table's rows (the
// baseline first when there is one), for cutShortNote.
func replayRows(rows []check.Result, baseline bool) ([]string, []check.Replay) {
	names := make([]string, len(rows))
	sums := make([]check.Replay, len(rows))
	for i, r := range rows {
		names[i], sums[i] = r.Policy.Name, r.Replay
		if baseline && i == 0 {
			names[i] += " (baseline)"
		}
	}
	return names, sums
}

// cutShortMark follows a replayed request percentile that counts failed
// requests at the time they gave up.
const cutShortMark = "†"

// latCell is a replayed request percentile: marked when the row has
// failed requests, whose ends it counts (a request cut short at 60 ms
// pulls the p50 down as if it had been answered fast).
func latCell(u units.Column, v *float64, r check.Replay) string {
	s := u.Cell(v)
	if v != nil && r.Failed > 0 {
		s += cutShortMark
	}
	return s
}

// cutShortNote explains the marks of latCell, with the percentiles over
// the requests that succeeded for each marked row, or "" when no row has
// failures.
func cutShortNote(names []string, rs []check.Replay) string {
	var parts []string
	for i, r := range rs {
		if r.Failed == 0 {
			continue
		}
		l := r.LatencyOKMs
		if l.P50 == nil {
			parts = append(parts, names[i]+": none")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: p50 %s, p95 %s", names[i], units.Millis(*l.P50), optDur(l.P95)))
	}
	if len(parts) == 0 {
		return ""
	}
	return cutShortMark + " counts each failed request at the time it gave up (a request cut short early reads as a fast one); over the requests that succeeded only, " + strings.Join(parts, "; ")
}

// rateStyle colours a success rate: green when nothing failed.
func rateStyle(r float64) string {
	if r >= 1 {
		return ansiGreen
	}
	return ansiAmber
}

func writeSkips(e *errWriter, by map[string]int64, examples []string) {
	e.printf("skipped:")
	for _, r := range slices.Sorted(maps.Keys(by)) {
		e.printf(" %s %d;", Visible(r), by[r])
	}
	e.printf("\n")
	for _, x := range examples {
		e.printf("  %s\n", Visible(x))
	}
	e.printf("\n")
}

// writeWarnings lists the caveats as footnotes; the table rows carry the
// matching superscript marks.
func writeWarnings(e *errWriter, ws []analyze.Warning) {
	if len(ws) == 0 {
		return
	}
	e.printf("\n%s\n", e.paint(ansiBold, "warnings"))
	for i, w := range notes(ws) {
		hop := ""
		if w.Hop != "" {
			hop = " " + Visible(w.Hop) + ":"
		}
		mark := superscript(i + 1)
		lead := "  " + mark + " " + Visible(w.Code) + hop + " "
		lines := wrapWords(Visible(w.Message), TextWidth-runeLen(lead), TextWidth-4)
		e.printf("  %s %s%s %s\n", mark, e.paint(ansiAmber, Visible(w.Code)), hop, lines[0])
		for _, l := range lines[1:] {
			e.printf("    %s\n", l)
		}
	}
}

// para prints a sentence after lead (shown as painted, counted as
// plain), wrapped at TextWidth with its continuations under indent.
func (e *errWriter) para(painted, plain, text, indent string) {
	lines := wrapWords(text, TextWidth-runeLen(plain), TextWidth-runeLen(indent))
	e.printf("%s%s\n", painted, lines[0])
	for _, l := range lines[1:] {
		e.printf("%s%s\n", indent, l)
	}
}

// line prints a painted sentence at indent, wrapped at TextWidth, each
// line painted on its own (so that a colour never runs across a line
// break) and the continuations two spaces further in.
func (e *errWriter) line(indent, style, text string) {
	lines := wrapWords(text, TextWidth-runeLen(indent), TextWidth-runeLen(indent)-2)
	for i, l := range lines {
		in := indent
		if i > 0 {
			in += "  "
		}
		e.printf("%s%s\n", in, e.paint(style, l))
	}
}

// TextWidth is where the text report wraps its sentences (warnings):
// the summary's width, so that a terminal shows them whole. Tables and
// their rows do not wrap.
const TextWidth = SummaryMaxWidth

func runeLen(s string) int { return len([]rune(s)) }

// wrapWords cuts s at spaces into lines of at most first runes for the
// first and rest for the others; a word longer than a line (a URL, a
// long hop name) stands alone on its line, uncut.
func wrapWords(s string, first, rest int) []string {
	var out []string
	line, width := "", max(first, 20)
	for _, w := range strings.Split(s, " ") {
		switch {
		case line == "":
			line = w
		case runeLen(line)+1+runeLen(w) <= width:
			line += " " + w
		default:
			out = append(out, line)
			line, width = w, max(rest, 20)
		}
	}
	return append(out, line)
}

// landing describes a failure-landing histogram in words: "9–10s: 12, 10–11s: 7".
func landing(bs []quantile.Bucket) string {
	if len(bs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("%s: %d", units.MillisRange(b.FromMs, b.ToMs), b.Count))
	}
	return strings.Join(parts, ", ")
}

// undeterminedText explains the requests a policy's replay cannot decide.
func undeterminedText(r check.Replay) string {
	if r.Undetermined == 1 {
		return "1 request undetermined: it hit a timeout when logged and this policy waits longer; success is " + successText(r)
	}
	return fmt.Sprintf("%d requests undetermined: they hit a timeout when logged and this policy waits longer; success is %s",
		r.Undetermined, successText(r))
}

// successText is "90.5%" or "90.5–100%" when undetermined requests widen it.
func successText(r check.Replay) string {
	if r.Undetermined == 0 {
		return units.Percent(r.SuccessRate.Low, 1)
	}
	return strings.TrimSuffix(units.Percent(r.SuccessRate.Low, 1), "%") + "–" + units.Percent(r.SuccessRate.High, 1)
}

func okText(r check.Replay) string {
	s := fmt.Sprintf("%d/%d", r.Succeeded, r.Requests)
	if r.Undetermined > 0 {
		s += fmt.Sprintf(" +%d?", r.Undetermined)
	}
	return s
}

func failText(r check.Replay) string {
	if r.Failed == 0 {
		return "none"
	}
	lo, hi := *r.FailureMs.Min, *r.FailureMs.Max
	if hi-lo < 0.5 {
		return fmt.Sprintf("at %s, %d", units.Millis(lo), r.Failed)
	}
	return fmt.Sprintf("%s, %d", units.MillisRange(lo, hi), r.Failed)
}

func checkText(w io.Writer, rep *check.Report, opt Options) error {
	e := &errWriter{w: w, color: opt.Color, names: opt.Names}
	e.printf("%s: %s replayed from %s (%s)\n\n", e.paint(ansiBold, "tailscope check"),
		units.Count(rep.Requests, "request", "requests"), spansText(rep.ReadStats), readCounts(rep.Read, rep.Filtered, rep.Skipped))
	if rep.Skipped > 0 {
		writeSkips(e, rep.SkippedByReason, nil)
	}
	rows := rep.Results
	if rep.Baseline != nil {
		rows = append([]check.Result{*rep.Baseline}, rows...)
	}
	var lat []*float64
	for _, r := range rows {
		lat = append(lat, r.Replay.LatencyMs.P50, r.Replay.LatencyMs.P95)
	}
	u := units.ColumnFor(lat...)
	t := &table{
		head:  []string{"CONFIG", "HOP TIMEOUT", "RETRIES", "BUDGET", "OK", "SUCCESS", "P50", "P95", "FAILURES LAND", "MEAN TTF", "RETRY TIME", "VERDICT"},
		right: []bool{false, true, true, true, true, true, true, true, false, true, true, false},
	}
	for i, r := range rows {
		name := r.Policy.Name
		verdict := r.Verdict
		if rep.Baseline != nil && i == 0 {
			name += " (baseline)"
			verdict = "–"
		}
		ttf := "–"
		if r.Replay.FailureMs.Mean != nil {
			ttf = units.Millis(*r.Replay.FailureMs.Mean)
		}
		t.add(name, r.HopTimeout, r.Retries, r.Budget, okText(r.Replay), successText(r.Replay),
			latCell(u, r.Replay.LatencyMs.P50, r.Replay), latCell(u, r.Replay.LatencyMs.P95, r.Replay), failText(r.Replay), ttf,
			units.Millis(r.Replay.RetryMs.Spent), verdict)
	}
	names, sums := replayRows(rows, rep.Baseline != nil)
	t.paint = func(row, col int, cell string) string {
		switch {
		case row < 0:
			return ansiBold
		case col == 11:
			return verdictStyle(cell)
		case cell == "–":
			return ansiDim
		}
		return ""
	}
	t.write(e, "")
	if note := cutShortNote(names, sums); note != "" {
		e.line("", ansiDim, Visible(note))
	}
	for i, r := range rows {
		if rep.Baseline != nil && i == 0 {
			continue
		}
		if len(r.Lint) == 0 && len(r.Gates) == 0 && r.Replay.Undetermined == 0 {
			continue
		}
		e.printf("\n%s (%s): %s\n", e.paint(ansiBold, Visible(r.Policy.Name)), Visible(r.Policy.Path), e.paint(verdictStyle(r.Verdict), strings.ToUpper(r.Verdict)))
		if r.Replay.Undetermined > 0 {
			e.printf("  %s\n", undeterminedText(r.Replay))
		}
		for _, f := range r.Lint {
			hop := ""
			if f.Hop != "" {
				hop = " " + Visible(f.Hop) + ":"
			}
			sev := fmt.Sprintf("%-7s", Visible(f.Severity))
			e.para("  "+e.paint(severityStyle(f.Severity), sev)+" "+Visible(f.Code)+hop+" ", "  "+sev+" "+Visible(f.Code)+hop+" ", Visible(f.Message), "          ")
		}
		for _, g := range r.Gates {
			mark := e.paint(ansiGreen, "pass")
			if !g.Pass {
				mark = e.paint(ansiRed+ansiBold, "FAIL")
			}
			e.printf("  gate %s %s: want %s, got %s\n", mark, Visible(g.Name), Visible(g.Want), Visible(g.Got))
		}
	}
	writeWarnings(e, rep.Warnings)
	e.printf("\nverdict: %s\n", e.paint(verdictStyle(rep.Verdict), rep.Verdict))
	return e.err
}

func severityStyle(s string) string {
	switch s {
	case check.SevError:
		return ansiRed
	case check.SevWarning:
		return ansiAmber
	}
	return ansiDim
}
