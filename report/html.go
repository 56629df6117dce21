package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
)

// The HTML report is one self-contained file an SRE can attach to an
// incident or a pull request: inline CSS and SVG, no script, no font or
// image fetched, and a Content-Security-Policy that forbids both, so that
// the page behaves the same offline and a hostile string in the logs can
// at worst show up as text. html/template escapes every value from the
// logs or a policy, and the template passes each through Visible (as
// "vis") so that control, bidi and zero-width characters show as escapes,
// in attributes too; this file only computes what the template draws.

//go:embed html.tmpl
var htmlSource string

var htmlFuncs = template.FuncMap{
	"join":      strings.Join,
	"vis":       Visible,
	"hasPrefix": strings.HasPrefix,
	"name":      breakable,
	// traces is a sentence that cites trace ids; with a trace URL the ids
	// become links (tracelink.go, bound per page on a clone).
	"traces": (*linker)(nil).html,
}

var htmlTemplate = template.Must(template.New("report").Funcs(htmlFuncs).Parse(htmlSource))

// htmlPristine is the same template never executed, which html/template
// requires of a template it clones: a page with trace links runs on a
// clone whose traces links them.
var htmlPristine = template.Must(template.New("report").Funcs(htmlFuncs).Parse(htmlSource))

// breakable shows a name from the logs (made Visible and escaped) with
// line-break opportunities before each '/' and '.' and after each ':' and
// '-', so that a long name such as host.domain/package.Service/Method wraps
// at its parts instead of widening the hop table past the page.
func breakable(s string) template.HTML {
	s = Visible(s)
	var b strings.Builder
	start := 0
	brk := func(at int) {
		if at > start && at < len(s) {
			b.WriteString(template.HTMLEscapeString(s[start:at]))
			b.WriteString("<wbr/>")
			start = at
		}
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '/', '.':
			brk(i)
		case ':', '-':
			brk(i + 1)
		}
	}
	b.WriteString(template.HTMLEscapeString(s[start:]))
	return template.HTML(b.String())
}

// page is what html.tmpl renders.
type page struct {
	Kind     string // analyze or check
	Title    string
	Summary  string
	Inputs   []analyze.Input
	Read     int64
	Spans    int64
	Skipped  int64
	Filtered int64
	Skips    []skipRow
	Cards    []card
	Analysis *analysisView
	Check    *checkView
	Warnings []warnRow
}

type card struct {
	Label, Value, Note, Class string
}

type skipRow struct {
	Reason string
	Count  int64
}

type warnRow struct {
	N                  int
	Code, Hop, Message string
}

type analysisView struct {
	// Outcomes is false on logs in which no span says how it ended: the
	// hop table then has no failed count and no failure class.
	Outcomes bool
	// Timeline is the "over time" section: its lines (headroom,
	// incidents) and a chart per drawn hop (timeline.go).
	TimelineLines  []string
	TimelineCharts []*timelineChart
	// SummaryLines are the answer-first summary (summary.go), without its
	// title line.
	SummaryLines []string
	// Effect is the predicted-effect table: a header row, then one row
	// per policy (see effectRows).
	EffectHead []string
	EffectRows [][]string
	EffectNote string
	Hops       []hopView
	Budget     string
	// Rec are the hops the recommended policy sets a timeout for (they
	// point into Hops); Untimed is the one line that counts the others.
	Rec     []*hopView
	Untimed string
	// RecNotShown counts the hops with a timeout past the table's limit
	// (maxDrawnHops), which only the hop table lists.
	RecNotShown     int
	RecNotShownNote string
	// Check is the recommended policy replayed on its logs; CheckMet is
	// false when it missed the target (drawn as a warning); Raised names
	// the hops replay raised.
	Check    string
	CheckMet bool
	// Safety are the held-out and out-of-sample lines (safetyLines);
	// SafetyBad marks them as a warning.
	Safety    []string
	SafetyBad bool
	Raised    string
	// Drawn are the hops given a section with charts (they point into
	// Hops, in its order): all of them up to maxDrawnHops. NotDrawn
	// counts the others, which only the hop table lists.
	Drawn        []*hopView
	NotDrawn     int
	NotDrawnNote string
	// NotShown counts the hops left out of Hops when the hop names look
	// unbounded (bounded.go).
	NotShown     int
	NotShownNote string
	Landing      *chart
	MTTF         string
	// Tail is where the tail comes from and what changed (tail.go).
	Tail *tailView
}

type hopView struct {
	ID, Name                    string
	Notes                       []int
	Attempts, Calls, Failed     int
	P50, P95, P99, Max, Timeout string
	// HeadP50 and HeadP99 are the hop section's header values, written as
	// its chart's marks write them (the table's cells are in the column's
	// unit, the section's in the value's own).
	HeadP50, HeadP99          string
	TimeoutSource             string
	Class, Evidence           string
	Action, RecTimeout, Basis string
	// ShortBasis is the recommendation table's few words (basisShort);
	// the full Basis folds under it.
	ShortBasis        string
	RecRetries        int
	Yield             string
	Latency, Failures *chart
	// Timed is false for a hop the policy gives no timeout of its own
	// (callee-side, in-process, request): no timeout or retries shown.
	Timed bool
	// RaisedFrom is the timeout before replay raised it, or "".
	RaisedFrom string
	// PeakRate is the hop's attempts per second in its busiest block.
	PeakRate string
	// RecTimeoutText is the recommended timeout as the hop's section says
	// it in a sentence, each value in its own unit (the tables' cells are
	// in their column's).
	RecTimeoutText string
	// Attrs are the hop's attributions; Examples its example traces.
	Attrs    []attrView
	Examples string
	// Drawn is set when the hop has its own section with charts (the
	// table links to it); Yield and the charts are only set then.
	Drawn bool
}

type checkView struct {
	Verdict   string
	Failed    int
	Rows      []policyRow
	Landing   []*chart
	Findings  []findingsView
	LandingHi string
	// CutShort explains the † of the latency cells (see cutShortNote).
	CutShort string
}

type policyRow struct {
	Name, Path, HopTimeout, Retries, Budget string
	OK, Success, P50, P95, P99, Fails       string
	MTTF, RetrySpent, RetryWasted, Verdict  string
	Baseline                                bool
}

type findingsView struct {
	Policy, Path, Verdict string
	Undetermined          string
	Lint                  []check.Finding
	Gates                 []check.Gate
}

func warnRows(ws []analyze.Warning) []warnRow {
	ns := notes(ws)
	out := make([]warnRow, 0, len(ns))
	for i, w := range ns {
		out = append(out, warnRow{N: i + 1, Code: w.Code, Hop: w.Hop, Message: w.Message})
	}
	return out
}

func skipRows(by map[string]int64) []skipRow {
	var out []skipRow
	for _, k := range slices.Sorted(maps.Keys(by)) {
		out = append(out, skipRow{k, by[k]})
	}
	return out
}

func optDur(v *float64) string {
	if v == nil {
		return "–"
	}
	return units.Millis(*v)
}

func analysisHTML(w io.Writer, rep *analyze.Report) error {
	return analysisHTMLOpt(w, rep, Options{})
}

// analysisHTMLOpt is analysisHTML with the trace links of opt.
func analysisHTMLOpt(w io.Writer, rep *analyze.Report, opt Options) error {
	t := htmlTemplate
	if opt.TraceURL != "" {
		c, err := htmlPristine.Clone()
		if err != nil {
			return err
		}
		t = c.Funcs(template.FuncMap{"traces": newLinker(rep, opt.TraceURL).html})
	}
	rep, hidden := boundedHops(rep)
	rq := rep.Requests
	p := &page{
		Kind: "analyze", Title: "tailscope analyze",
		Inputs: rep.Inputs, Read: rep.Read, Spans: rep.Spans, Skipped: rep.Skipped, Filtered: rep.Filtered,
		Skips: skipRows(rep.SkippedByReason), Warnings: warnRows(rep.Warnings),
	}
	rateClass := "good"
	if rq.SuccessRate < 1 {
		rateClass = "warn"
	}
	p.Summary = fmt.Sprintf("%s in %s over %s", spansText(rep.ReadStats), units.Count(rq.Count, "request", "requests"), units.Count(len(rep.Hops)+hidden, "hop", "hops"))
	rateNote := fmt.Sprintf("%d failed", rq.Count-rq.Succeeded)
	if rq.SucceededInferred {
		rateClass, rateNote = "warn", "inferred: the logs carry no outcome"
	}
	p.Cards = []card{
		{"Requests", fmt.Sprint(rq.Count), fmt.Sprintf("%d succeeded", rq.Succeeded), ""},
		{"Success rate", units.Percent(rq.SuccessRate, 1), rateNote, rateClass},
		{"p50", optDur(rq.LatencyMs.P50), "request latency", ""},
		{"p95", optDur(rq.LatencyMs.P95), "request latency", ""},
		{"p99", optDur(rq.LatencyMs.P99), "request latency", ""},
	}
	av := &analysisView{Tail: tailViewOf(rep, opt.Names), Outcomes: outcomesKnown(rep)}
	if hidden > 0 {
		av.NotShown, av.NotShownNote = hidden, notShownLine(len(rep.Hops), hidden)+"."
	}
	if rq.MeanTimeToFailureMs != nil {
		av.MTTF = units.Millis(*rq.MeanTimeToFailureMs)
		p.Cards = append(p.Cards, card{"Mean time to failure", av.MTTF, "how long a failing request holds on", "bad"})
	}
	if rep.RecommendedPolicy != nil {
		av.Budget = units.Millis(rep.RecommendedPolicy.BudgetMs)
	}
	av.Untimed = untimedSummary(rep.Hops)
	if c := rep.RecommendationCheck; c != nil {
		av.Check, av.CheckMet, av.Raised = capFirst(checkLine(c)), c.Met, capFirst(raisedLine(c))
	}
	if rp := rep.RecommendedPolicy; rp != nil {
		lines, bad := safetyLines(rp.Safety)
		for _, l := range lines {
			av.Safety = append(av.Safety, capFirst(l))
		}
		av.SafetyBad = bad
	}
	if len(rep.PredictedEffect) > 0 {
		av.EffectHead, _, av.EffectRows, av.EffectNote = effectRows(rep.PredictedEffect)
	}
	u50, u95, u99, umax := hopColumnUnit(rep.Hops, "p50"), hopColumnUnit(rep.Hops, "p95"), hopColumnUnit(rep.Hops, "p99"), hopColumnUnit(rep.Hops, "max")
	uto, urec := timeoutColumns(rep.Hops)
	fn := newFootnotes(rep.Warnings)
	av.Hops = make([]hopView, len(rep.Hops))
	for i, h := range rep.Hops {
		l := h.LatencyMs
		hv := hopView{
			ID: fmt.Sprintf("hop-%d", i+1), Name: h.Hop, Notes: fn.byHop[h.Hop],
			Attempts: h.Attempts, Calls: h.Calls, Failed: h.FailedAttempts,
			P50: percentile(u50, l.P50, "p50", h.Censored), P95: percentile(u95, l.P95, "p95", h.Censored),
			P99: percentile(u99, l.P99, "p99", h.Censored), Max: percentile(umax, l.Max, "max", h.Censored),
			HeadP50: markText(l.P50, "p50", h.Censored), HeadP99: markText(l.P99, "p99", h.Censored),
			Timeout: uto.Cell(h.TimeoutMs), TimeoutSource: h.TimeoutSource,
			Class: h.FailureClass, Evidence: h.Evidence,
			Action: h.Recommendation.Action, RecTimeout: recTimeout(urec, h.Recommendation),
			RecRetries: h.Recommendation.Retries, Basis: h.Recommendation.Basis, ShortBasis: basisShort(&h),
			Timed: timed(h.Recommendation), Examples: hopExamplesText(h.Examples),
		}
		for _, a := range h.Attribution {
			hv.Attrs = append(hv.Attrs, attrViewOf(h.Hop, a))
		}
		hv.RecTimeoutText = recTimeoutText(h.Recommendation)
		hv.PeakRate = peakRate(rep.Timeline, &h)
		if r := h.Recommendation; hv.Timed && r.RaisedFromMs != nil {
			hv.RecTimeout, hv.RaisedFrom = urec.Text(r.TimeoutMs), urec.Text(*r.RaisedFromMs)
		}
		av.Hops[i] = hv
	}
	rec := recRows(rep.Hops, maxDrawnHops)
	for _, i := range rec {
		av.Rec = append(av.Rec, &av.Hops[i])
	}
	if av.RecNotShown = len(timedHops(rep.Hops)) - len(rec); av.RecNotShown > 0 {
		av.RecNotShownNote = fmt.Sprintf("%s the policy sets a timeout for %s not listed here: the hop table gives each one's action, timeout and retries, "+
			"%s json or tailscope recommend its basis.", units.Count(av.RecNotShown, "more hop", "more hops"), units.Plural(av.RecNotShown, "is", "are"), opt.Names.Of(option.Format))
	}
	for _, i := range drawnHops(rep.Hops, maxDrawnHops) {
		h, hv := &rep.Hops[i], &av.Hops[i]
		hv.Drawn = true
		av.Drawn = append(av.Drawn, hv)
		if y := h.RetryYield; y != nil {
			hv.Yield = yieldText(y)
		}
		hv.Latency = histChart(hv.ID+"-latency", "latency", h.Hop, "Latency of "+h.Hop+" attempts",
			h.LatencyHistogram, latencyMarks(h), true, 640, 210, 0, "lat")
		// A hop with no failure gets no failure chart: an empty frame
		// beside every healthy hop's latency was a chart to read for nothing.
		if len(h.FailureHistogram) > 0 {
			var fm []markIn
			if h.TimeoutMs != nil {
				fm = append(fm, markIn{"timeout", *h.TimeoutMs, "timeout " + units.Millis(*h.TimeoutMs), false})
			}
			hv.Failures = histChart(hv.ID+"-failures", "failures", h.Hop, "When "+h.Hop+" attempts failed",
				h.FailureHistogram, fm, false, 420, 210, 0, "fail")
		}
	}
	if av.NotDrawn = len(rep.Hops) - len(av.Drawn); av.NotDrawn > 0 {
		av.NotDrawnNote = fmt.Sprintf("%d of %d hops are drawn below: those the recommended policy sets a timeout for and those with failures first. "+
			"%s not drawn (the hop table lists every hop); see %s json for their histograms.",
			len(av.Drawn), len(rep.Hops), units.Count(av.NotDrawn, "more hop is", "more hops are"), opt.Names.Of(option.Format))
	}
	var lm []markIn
	if rq.MeanTimeToFailureMs != nil {
		lm = append(lm, markIn{"mean", *rq.MeanTimeToFailureMs, "mean " + units.Millis(*rq.MeanTimeToFailureMs), false})
	}
	if len(rq.FailureLanding) > 0 {
		av.Landing = histChart("requests-landing", "landing", "", "When failed requests gave up",
			rq.FailureLanding, lm, false, 1080, 200, 0, "fail")
	}
	if lines := summaryLines(rep, opt.Names); len(lines) > 1 {
		av.SummaryLines = lines[1:]
	}
	if head, _, incidents := timelineParts(rep, opt.Names); len(head) > 0 {
		for _, l := range append(head, incidents...) {
			av.TimelineLines = append(av.TimelineLines, strings.TrimSpace(l))
		}
		av.TimelineCharts = timelineCharts(rep)
	}
	p.Analysis = av
	return t.Execute(w, p)
}

// maxDrawnHops is the number of hops the HTML report draws in full, with
// a section and two charts each (about 5 kB), and the number of rows of its
// recommendation table: a page of 200,000 hops drawn in full would be
// about 1 GB, which no browser opens, and took 2 minutes to write. Past
// it, the hop table still lists every hop with its recommended action,
// timeout and retries, and a note says how many were left out and where
// to find them.
const maxDrawnHops = 500

// recRows picks the hops the recommendation table lists: every hop the
// policy sets a timeout for, up to limit (those replay raised first, then
// those with failures, then the rest), in report order.
func recRows(hops []analyze.Hop, limit int) []int {
	return pickHops(hops, limit, func(h *analyze.Hop) int {
		switch {
		case !timed(h.Recommendation):
			return -1
		case h.Recommendation.RaisedFromMs != nil:
			return 0
		case h.FailedAttempts > 0:
			return 1
		}
		return 2
	})
}

// pickHops returns the indexes of at most limit hops, in report order,
// chosen by rank (lowest first; a negative rank is never chosen), in
// report order within a rank.
func pickHops(hops []analyze.Hop, limit int, rank func(*analyze.Hop) int) []int {
	var byRank [][]int
	for i := range hops {
		r := rank(&hops[i])
		if r < 0 {
			continue
		}
		for len(byRank) <= r {
			byRank = append(byRank, nil)
		}
		byRank[r] = append(byRank[r], i)
	}
	var out []int
	for _, is := range byRank {
		out = append(out, is[:min(len(is), limit-len(out))]...)
	}
	sort.Ints(out)
	return out
}

// drawnHops picks the hops drawn in full, at most limit, returned in report
// order: first those the recommended policy sets a timeout for that had
// failures, then the other timed hops, then the other hops with failures,
// then the rest, each group in report order.
func drawnHops(hops []analyze.Hop, limit int) []int {
	return pickHops(hops, limit, func(h *analyze.Hop) int {
		r := 0
		if !timed(h.Recommendation) {
			r += 2
		}
		if h.FailedAttempts == 0 {
			r++
		}
		return r
	})
}

// latencyMarks are the reference lines of a hop's latency chart: what the
// hop does (p50, p99), what it is allowed (the timeout in force) and what
// tailscope recommends.
func latencyMarks(h *analyze.Hop) []markIn {
	var ms []markIn
	if v := h.LatencyMs.P50; v != nil {
		ms = append(ms, markIn{"p50", *v, "p50 " + markText(v, "p50", h.Censored), false})
	}
	if v := h.LatencyMs.P99; v != nil {
		ms = append(ms, markIn{"p99", *v, "p99 " + markText(v, "p99", h.Censored), false})
	} else if h.Censored != nil {
		ms = append(ms, markIn{"p99", h.Censored.AtLeastMs, "p99 " + markText(nil, "p99", h.Censored), true})
	}
	if h.TimeoutMs != nil {
		ms = append(ms, markIn{"timeout", *h.TimeoutMs, "timeout " + units.Millis(*h.TimeoutMs), false})
	}
	if r := h.Recommendation; r.TimeoutMs > 0 {
		ms = append(ms, markIn{"recommended", r.TimeoutMs, "recommended " + units.Millis(r.TimeoutMs), false})
	}
	return ms
}

// markText is a hop percentile as its chart's mark and its section's
// header write it: "250ms", "≥ 3s" when censored, "–" when unknown.
func markText(v *float64, name string, c *analyze.Censored) string {
	if v != nil {
		return units.Millis(*v)
	}
	if c != nil {
		for _, x := range c.Unknown {
			if x == name {
				return "≥ " + units.Millis(c.AtLeastMs)
			}
		}
	}
	return "–"
}

func yieldText(y *analyze.Yield) string {
	if y.RetriedCalls == 0 {
		return "no call was retried"
	}
	s := fmt.Sprintf("%d of %s recovered (%s)", y.Recovered, units.Count(y.RetriedCalls, "retried call", "retried calls"), units.Percent(y.Rate, 1))
	var parts []string
	if t := y.AfterTimeout; t.Retried > 0 {
		parts = append(parts, fmt.Sprintf("after a timeout %d of %s succeeded", t.Succeeded, units.Count(t.Retried, "retry", "retries")))
	}
	if t := y.AfterFastFailure; t.Retried > 0 {
		parts = append(parts, fmt.Sprintf("after a fast failure %d of %d", t.Succeeded, t.Retried))
	}
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, "; ")
	}
	return s
}

func checkHTML(w io.Writer, rep *check.Report) error {
	p := &page{
		Kind: "check", Title: "tailscope check",
		Inputs: rep.Inputs, Read: rep.Read, Spans: rep.Spans, Skipped: rep.Skipped, Filtered: rep.Filtered,
		Skips: skipRows(rep.SkippedByReason), Warnings: warnRows(rep.Warnings),
	}
	cv := &checkView{Verdict: rep.Verdict}
	for _, r := range rep.Results {
		if r.Verdict == check.Fail {
			cv.Failed++
		}
	}
	p.Summary = fmt.Sprintf("%s replayed over %s (%s)", units.Count(len(rep.Results), "policy", "policies"),
		units.Count(rep.Requests, "request", "requests"), spansText(rep.ReadStats))
	rows := rep.Results
	if rep.Baseline != nil {
		rows = append([]check.Result{*rep.Baseline}, rows...)
	}
	var lat []*float64
	hi := 0.0
	for _, r := range rows {
		lat = append(lat, r.Replay.LatencyMs.P50, r.Replay.LatencyMs.P95, r.Replay.LatencyMs.P99)
		for _, b := range r.Replay.FailureLanding {
			hi = max(hi, b.ToMs)
		}
	}
	u := units.ColumnFor(lat...)
	// Small multiples share one time axis so that "failures at 9 s" and
	// "failures at 3 s" sit where they belong relative to each other. The
	// axis covers the failures; a budget is marked when it falls inside.
	shared := niceCeil(hi * 1.1)
	if hi == 0 {
		shared = 0
		for _, r := range rows {
			if c := r.Policy.Content; c != nil {
				shared = max(shared, c.BudgetMs)
			}
		}
		shared = niceCeil(shared)
	}
	cv.LandingHi = units.Millis(shared)
	cv.CutShort = cutShortNote(replayRows(rows, rep.Baseline != nil))
	for i, r := range rows {
		base := rep.Baseline != nil && i == 0
		row := policyRow{
			Name: r.Policy.Name, Path: r.Policy.Path, HopTimeout: r.HopTimeout, Retries: r.Retries, Budget: r.Budget,
			OK: okText(r.Replay), Success: successText(r.Replay),
			P50: latCell(u, r.Replay.LatencyMs.P50, r.Replay), P95: latCell(u, r.Replay.LatencyMs.P95, r.Replay), P99: latCell(u, r.Replay.LatencyMs.P99, r.Replay),
			Fails: failText(r.Replay), MTTF: optDur(r.Replay.FailureMs.Mean),
			RetrySpent: units.Millis(r.Replay.RetryMs.Spent), RetryWasted: units.Millis(r.Replay.RetryMs.Wasted),
			Verdict: r.Verdict, Baseline: base,
		}
		cv.Rows = append(cv.Rows, row)
		var marks []markIn
		caption := "no budget"
		if c := r.Policy.Content; c != nil && c.BudgetMs > 0 {
			caption = "budget " + units.Millis(c.BudgetMs)
			if c.BudgetMs <= shared {
				marks = append(marks, markIn{"budget", c.BudgetMs, "budget " + units.Millis(c.BudgetMs), false})
			}
		}
		name := r.Policy.Name
		if base {
			name += " (baseline)"
		}
		ch := histChart(fmt.Sprintf("policy-%d-landing", i+1), "landing", r.Policy.Name, "When requests failed under "+name,
			r.Replay.FailureLanding, marks, false, 480, 170, shared, "fail")
		if len(r.Replay.FailureLanding) == 0 {
			ch.Empty = "no request failed"
		}
		ch.Title, ch.Caption = name, fmt.Sprintf("%s failed · %s", okFailed(r.Replay), caption)
		cv.Landing = append(cv.Landing, ch)
		if base {
			continue
		}
		f := findingsView{Policy: r.Policy.Name, Path: r.Policy.Path, Verdict: r.Verdict, Lint: r.Lint, Gates: r.Gates}
		if r.Replay.Undetermined > 0 {
			f.Undetermined = undeterminedText(r.Replay)
		}
		cv.Findings = append(cv.Findings, f)
	}
	p.Check = cv
	return htmlTemplate.Execute(w, p)
}

// okFailed is "19 of 200" requests failed.
func okFailed(r check.Replay) string {
	return fmt.Sprintf("%d of %d", r.Failed, r.Requests)
}
