package report

import (
	"bytes"
	"fmt"
	"github.com/tailscope/tailscope/internal/cputime"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/pipeline"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

func recHop(name, action string, timeoutMs float64) analyze.Hop {
	return analyze.Hop{Hop: name, Recommendation: analyze.Recommendation{Action: action, TimeoutMs: timeoutMs}}
}

func TestUntimedSummary(t *testing.T) {
	var hops []analyze.Hop
	for i := 0; i < 3; i++ {
		hops = append(hops, recHop(fmt.Sprint("c", i), analyze.ActionCallee, 0))
	}
	hops = append(hops, recHop("root", analyze.ActionRequest, 0), recHop("set", analyze.ActionSet, 120), recHop("keep", analyze.ActionKeep, 0))
	for i := 0; i < 5; i++ {
		hops = append(hops, recHop(fmt.Sprint("i", i), analyze.ActionInProcess, 0))
	}
	want := "5 in-process (work inside one service), 3 callee-side (their caller's timeout bounds them), 1 request (the trace root: the budget bounds it)"
	if got := untimedSummary(hops); got != want {
		t.Errorf("untimedSummary:\n got %q\nwant %q", got, want)
	}
	if got := untimedSummary(hops[:1]); got != "1 callee-side (its caller's timeout bounds it)" {
		t.Errorf("one callee-side hop: %q", got)
	}
	if got := untimedSummary(hops[4:6]); got != "" {
		t.Errorf("only timed hops: %q, want no line", got)
	}
	for _, c := range []struct {
		h    analyze.Hop
		want string
	}{
		{hops[0], "–"}, {hops[3], "–"}, {hops[4], "120ms"}, {hops[5], "–"},
	} {
		if got := recTimeout(units.ColumnFor(&c.h.Recommendation.TimeoutMs), c.h.Recommendation); got != c.want {
			t.Errorf("%s (%s): timeout cell %q, want %q", c.h.Hop, c.h.Recommendation.Action, got, c.want)
		}
	}
	from := 800.0
	r := analyze.Recommendation{Action: analyze.ActionSet, TimeoutMs: 1200, RaisedFromMs: &from}
	// One unit for the column: the raised value and the one it came from.
	if _, u := timeoutColumns([]analyze.Hop{{Recommendation: r}}); recTimeout(u, r) != "1.20s ↑ from 0.800s" {
		t.Errorf("raised timeout cell %q", recTimeout(u, r))
	}
}

func TestCheckLine(t *testing.T) {
	for _, c := range []struct {
		chk  analyze.RecommendationCheck
		want string
	}{
		{analyze.RecommendationCheck{Target: 0.001, CallsPerRequest: 10.8475, Percentile: 99.9908, LoggedOK: 59, Met: true},
			"replayed on these logs: 0 of 59 requests that succeeded fail under it (target 0.1%); timeouts at p99.991 per call (~10.8 calls per request)"},
		{analyze.RecommendationCheck{Target: 0.001, CallsPerRequest: 1, Percentile: 99.9, LoggedOK: 1, Failed: 1, Share: 1},
			"replayed on these logs: 1 of 1 request that succeeded fails under it (100%, target 0.1%: missed); timeouts at p99.9 per call (~1 call per request)"},
		{analyze.RecommendationCheck{Target: 0.001, CallsPerRequest: 3, Percentile: 99.967, LoggedOK: 200, Failed: 0, Undetermined: 4, Met: true},
			"replayed on these logs: 0 of 200 requests that succeeded fail under it (target 0.1%), 4 undetermined (the logs do not show how they would end); timeouts at p99.967 per call (~3 calls per request)"},
		{analyze.RecommendationCheck{Target: 0.001, Met: true},
			"replayed on these logs: no request succeeded as logged, so none could fail under it"},
	} {
		if got := checkLine(&c.chk); got != c.want {
			t.Errorf("checkLine:\n got %q\nwant %q", got, c.want)
		}
	}
	if raisedLine(&analyze.RecommendationCheck{RaisedHops: []string{}}) != "" {
		t.Error("a raised-hops line with no hop raised")
	}
	got := raisedLine(&analyze.RecommendationCheck{RaisedHops: []string{"a", "b"}})
	if got != "raised after replay: a, b (↑ in the table; the basis says why)" {
		t.Errorf("raisedLine: %q", got)
	}
}

// nezhaMap names the columns of the Nezha TrainTicket CSV export.
var nezhaMap = map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID",
	"service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}

// trainTicketReport analyses the real TrainTicket fault minute (kept whole
// in testdata/real): 237 hops, of which the policy times out 24.
func trainTicketReport(t *testing.T) *analyze.Report {
	t.Helper()
	path := realdata.Path(t, trainTicketFault)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spans []span.Span
	st, err := ingest.ReadStream(path, bytes.NewReader(data), ingest.Options{Map: nezhaMap}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) }))
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.FromSpans(spans, st).Report(analyze.Options{})
}

// TestRecommendationOnlyTimedHops: on a real export whose hops are mostly
// server-side and in-process spans, the recommendation lists only the hops
// the policy sets a timeout for, then one line that counts the others by
// action; no cell shows a 0s timeout; JSON still has every hop.
func TestRecommendationOnlyTimedHops(t *testing.T) {
	rep := trainTicketReport(t)
	set := timedHops(rep.Hops)
	byAction := map[string]int{}
	for _, h := range rep.Hops {
		byAction[h.Recommendation.Action]++
	}
	untimedN := byAction[analyze.ActionCallee] + byAction[analyze.ActionInProcess] + byAction[analyze.ActionRequest]
	if len(set) == 0 || untimedN < len(set) || len(set)+untimedN != len(rep.Hops) {
		t.Fatalf("fixture: %d hops, %d timed, by action %v", len(rep.Hops), len(set), byAction)
	}
	summary := untimedSummary(rep.Hops)
	for _, a := range []string{analyze.ActionInProcess, analyze.ActionCallee, analyze.ActionRequest} {
		if n := byAction[a]; n > 0 && !strings.Contains(summary, fmt.Sprintf("%d %s (", n, a)) {
			t.Errorf("summary %q does not count %d %s", summary, n, a)
		}
	}
	render := func(format string) string {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	// Text: the table between the header and the summary line.
	txt := render("text")
	_, rec, ok := strings.Cut(txt, "\nrecommendation (budget")
	if !ok {
		t.Fatal("text: no recommendation")
	}
	rec, _, _ = strings.Cut(rec, "\n\n")
	lines := strings.Split(unwrapContinued(rec), "\n")[1:]
	safety, _ := safetyLines(rep.RecommendedPolicy.Safety)
	if !strings.HasPrefix(lines[0], "  HOP ") || len(lines) != 1+len(set)+3+len(safety) {
		t.Fatalf("text: %d lines under the recommendation, want header, %d hops, where the basis is, summary, check and %d safety lines:\n%s", len(lines), len(set), len(safety), rec)
	}
	if got := lines[1+len(set)]; !strings.Contains(got, option.Verbose.String()) {
		t.Errorf("text: the line under the table is %q, want where each hop's full basis is", got)
	}
	for i, l := range safety {
		if got := lines[4+len(set)+i]; got != "  "+l {
			t.Errorf("text: safety line %q, want %q", got, l)
		}
	}
	for i, h := range set {
		row := lines[1+i]
		if !strings.HasPrefix(row, "  "+h.Hop+" ") || !strings.Contains(row, " "+h.Recommendation.Action+" ") {
			t.Errorf("text: row %d is %q, want %s", i, row, h.Hop)
		}
		if regexp.MustCompile(`\s0s\s`).MatchString(row) {
			t.Errorf("text: row %q shows a 0s timeout", row)
		}
	}
	if got, want := lines[2+len(set)], "  not timed out: "+summary; got != want {
		t.Errorf("text: summary line %q, want %q", got, want)
	}
	if got := lines[3+len(set)]; got != "  "+checkLine(rep.RecommendationCheck) {
		t.Errorf("text: check line %q", got)
	}

	// Markdown: one bullet per timed hop, then the summary; the hop table
	// shows – for the recommended timeout and retries of the others.
	mdOut := render("markdown")
	_, mrec, _ := strings.Cut(mdOut, "#### Recommendation")
	mrec, _, _ = strings.Cut(mrec, "\n####")
	if n := strings.Count(mrec, "\n- **"); n != len(set) {
		t.Errorf("markdown: %d recommendation bullets, want %d", n, len(set))
	}
	if !strings.Contains(mrec, "\nNot timed out: "+md(summary)+"  \n") {
		t.Errorf("markdown: no summary line in:\n%s", mrec)
	}
	for _, h := range rep.Hops {
		if timed(h.Recommendation) {
			continue
		}
		row := ""
		re := regexp.MustCompile(`^\| ` + regexp.QuoteMeta(md(h.Hop)) + `( [⁰¹²³⁴⁵⁶⁷⁸⁹˒]+)? \|`)
		for _, l := range strings.Split(mdOut, "\n") {
			if re.MatchString(l) {
				row = l
			}
		}
		// Its action and no timeout, then the peak/s cell.
		if want := "| " + h.Recommendation.Action + " | – | – | " + peakRate(rep.Timeline, &h) + " |"; !strings.HasSuffix(row, want) {
			t.Errorf("markdown: hop row %q should end with its action, no timeout and its peak/s: %q", row, want)
		}
	}

	// HTML: the recommendation table holds the timed hops; the hop table
	// every hop, none with a 0s recommendation.
	doc := []byte(render("html"))
	root := parseHTML(t, doc)
	checkSelfContained(t, doc, root)
	recRows := root.all(func(n *node) bool { return n.name == "tr" && n.attr["data-rec"] != "" })
	if len(recRows) != len(set) {
		t.Errorf("html: %d recommendation rows, want %d", len(recRows), len(set))
	}
	for i := range recRows {
		if i < len(set) && recRows[i].attr["data-rec"] != set[i].Hop {
			t.Errorf("html: recommendation row %d is %s, want %s", i, recRows[i].attr["data-rec"], set[i].Hop)
		}
	}
	hopRows := root.all(func(n *node) bool { return n.name == "tr" && n.attr["data-hop"] != "" })
	if len(hopRows) != len(rep.Hops) {
		t.Fatalf("html: %d hop rows, want %d", len(hopRows), len(rep.Hops))
	}
	_, urec := timeoutColumns(rep.Hops)
	for i, h := range rep.Hops {
		cells := hopRows[i].all(func(n *node) bool { return n.name == "td" })
		last := cells[len(cells)-1]
		action := last.all(func(n *node) bool { return n.name == "span" && strings.HasPrefix(n.attr["class"], "action-") })
		if len(action) != 1 || action[0].text != h.Recommendation.Action {
			t.Errorf("html: %s: recommendation cell does not start with its action %s", h.Hop, h.Recommendation.Action)
		}
		rest := strings.TrimSpace(last.text)
		switch want := recTimeout(urec, h.Recommendation) + ", "; {
		case timed(h.Recommendation) && !strings.HasPrefix(rest, want):
			t.Errorf("html: %s: recommendation cell %q, want %q…", h.Hop, rest, want)
		case !timed(h.Recommendation) && rest != "":
			t.Errorf("html: %s: recommendation cell has %q after %s, want nothing", h.Hop, rest, h.Recommendation.Action)
		}
	}
	for _, a := range root.all(func(n *node) bool { return n.name == "article" }) {
		txt := a.textContent()
		if strings.Contains(txt, "timeout 0s") || strings.Contains(txt, ", 0 retries.") && strings.Contains(txt, "no timeout of its own") {
			t.Errorf("html: %s: %q", a.attr["data-hop"], txt)
		}
	}
	if u := root.all(func(n *node) bool { return n.name == "p" && n.attr["class"] == "untimed" }); len(u) != 1 || !strings.Contains(u[0].textContent(), summary) {
		t.Errorf("html: no summary paragraph with %q", summary)
	}
	if c := root.all(func(n *node) bool { return n.name == "p" && strings.HasPrefix(n.attr["class"], "check") }); len(c) != 1 ||
		c[0].attr["data-met"] != "true" || strings.Contains(c[0].attr["class"], "warning") {
		t.Errorf("html: want one check paragraph, met, no warning")
	}

	// JSON keeps every hop's recommendation (the contract).
	js := render("json")
	if n := strings.Count(js, `"action": "`); n != len(rep.Hops) {
		t.Errorf("json: %d actions, want %d", n, len(rep.Hops))
	}
}

// raisedReport is the seed report as if replay had raised forward's
// timeout from 800ms to 1.2s and still missed the target.
func raisedReport(t *testing.T) *analyze.Report {
	t.Helper()
	rep, _ := analysisOf(t, "spans.jsonl", "")
	from := 800.0
	var h *analyze.Hop
	for i := range rep.Hops {
		if rep.Hops[i].Hop == "forward" {
			h = &rep.Hops[i]
		}
	}
	if h == nil || h.Recommendation.Action != analyze.ActionSet {
		t.Fatal("fixture: no hop forward whose timeout is set")
	}
	h.Recommendation.TimeoutMs, h.Recommendation.RaisedFromMs = 1200, &from
	c := rep.RecommendationCheck
	c.Failed, c.Share, c.Met, c.Rounds, c.RaisedHops = 3, 0.015, false, 4, []string{"forward"}
	return rep
}

// TestRecommendationCheckMissed: a missed target is a warning in every
// format (red in colour text, a warning class in HTML), and a raised
// timeout says from what.
func TestRecommendationCheckMissed(t *testing.T) {
	rep := raisedReport(t)
	check := checkLine(rep.RecommendationCheck)
	if !strings.Contains(check, "3 of 200 requests that succeeded fail under it (1.5%, target 0.1%: missed)") {
		t.Fatalf("check line %q", check)
	}
	render := func(format string, opt Options) string {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, opt); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	txt := render("text", Options{})
	if !regexp.MustCompile(`(?m)^  forward\s+set\s+1\.20s ↑ from 0\.800s\s+0  `).MatchString(txt) {
		t.Errorf("text: forward's row does not show the raise:\n%s", txt)
	}
	for _, want := range []string{"\n  " + check + "\n", "\n  raised after replay: forward (↑ in the table; the basis says why)\n"} {
		if !strings.Contains(unwrapContinued(txt), want) {
			t.Errorf("text: no line %q", want)
		}
	}
	// The check line wraps; each of its lines is red.
	col := render("text", Options{Color: true})
	first := wrapWords(check, TextWidth-2, TextWidth-4)[0]
	if !strings.Contains(col, "  "+ansiRed+ansiBold+first+ansiReset+"\n") {
		t.Errorf("colour text: the missed check is not red")
	}
	if col := render("text", Options{Color: true}); stripANSI(col) != txt {
		t.Errorf("colour text differs from plain text beyond escapes")
	}
	mdOut := render("markdown", Options{})
	for _, want := range []string{"- **forward**: set timeout 1.2s ↑ from 800ms, 0 retries", "⚠️ **" + md(capFirst(check)) + "**", "| set | 1.20s ↑ from 0.800s | 0 |"} {
		if !strings.Contains(mdOut, want) {
			t.Errorf("markdown: no %q", want)
		}
	}
	root := parseHTML(t, []byte(render("html", Options{})))
	c := root.all(func(n *node) bool { return n.name == "p" && strings.HasPrefix(n.attr["class"], "check") })
	if len(c) != 1 || c[0].attr["class"] != "check warning" || c[0].attr["data-met"] != "false" || !strings.Contains(c[0].textContent(), capFirst(check)) {
		t.Errorf("html: the missed check is not one warning paragraph")
	}
	rows := root.all(byAttr("data-rec", "forward"))
	if len(rows) != 1 || rows[0].attr["class"] != "raised" || !strings.Contains(rows[0].textContent(), "1.20s ↑ from 0.800s") {
		t.Errorf("html: forward's recommendation row does not show the raise")
	}
	if r := root.all(func(n *node) bool { return n.attr["class"] == "raised-hops" }); len(r) != 1 || !strings.Contains(r[0].textContent(), "forward") {
		t.Errorf("html: no raised-hops line")
	}
}

// syntheticHops is a report of n hops as a large flat log gives them:
// one to a few attempts each, every fourth hop in-process, every fifth
// callee-side, every seventh with failures, and a too-few-samples warning
// per hop; it skips the analysis so that rendering is all that is timed.
func syntheticReport(n int) *analyze.Report {
	f := func(x float64) *float64 { return &x }
	rep := &analyze.Report{Schema: analyze.Schema, ReadStats: analyze.ReadStats{Spans: int64(n), Read: int64(n), SkippedByReason: map[string]int64{}},
		RecommendedPolicy:   &analyze.PolicyDoc{BudgetMs: 2000, Hops: map[string]analyze.HopPolicy{}},
		RecommendationCheck: &analyze.RecommendationCheck{Target: 0.001, CallsPerRequest: 10, Percentile: 99.99, LoggedOK: n / 10, Met: true, RaisedHops: []string{}},
		Requests:            analyze.Requests{Count: n / 10, Succeeded: n / 10, SuccessRate: 1, LatencyMs: analyze.Latency{P50: f(40), P95: f(80), P99: f(90)}}}
	for i := 0; i < n; i++ {
		d := float64(5 + i%17)
		h := analyze.Hop{Hop: fmt.Sprintf("svc-%d.example/Service/Method%06d", i%37, i), Attempts: 1 + i%3, Calls: 1,
			LatencyMs:        analyze.Latency{P50: f(d), P90: f(d), P95: f(d), P99: f(d), P999: f(d), Max: f(d)},
			LatencyHistogram: []quantile.Bucket{{FromMs: d, ToMs: d * 1.2589, Count: 1 + i%3}},
			FailureClass:     "too-few", Evidence: "1 attempt", TimeoutSource: "unknown",
			Recommendation: analyze.Recommendation{Action: analyze.ActionKeep, TimeoutMs: 50, Basis: "too few to measure"}}
		switch {
		case i%4 == 0:
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionInProcess, Basis: "work inside one service"}
		case i%5 == 0:
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionCallee, Basis: "the callee's own record"}
		}
		if i%7 == 0 {
			h.FailedAttempts = 1
			h.FailureHistogram = []quantile.Bucket{{FromMs: d, ToMs: d + 1, Count: 1}}
		}
		rep.Hops = append(rep.Hops, h)
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: "too-few-samples", Hop: h.Hop, Message: "1 attempt: p99 needs at least 100"})
	}
	return rep
}

// TestHTMLDrawsAtMostMaxHops: past maxDrawnHops, the hop table still lists
// every hop, but only maxDrawnHops get a section with charts (timed hops
// with failures first), the others no link, and a note says how many were
// left out; the recommendation table is capped likewise.
func TestHTMLDrawsAtMostMaxHops(t *testing.T) {
	n := 2*maxDrawnHops + 37
	rep := syntheticReport(n)
	var b bytes.Buffer
	if err := Analysis(&b, "html", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	root := parseHTML(t, b.Bytes())
	checkSelfContained(t, b.Bytes(), root)
	rows := root.all(func(n *node) bool { return n.name == "tr" && n.attr["data-hop"] != "" })
	arts := root.all(func(n *node) bool { return n.name == "article" })
	if len(rows) != n || len(arts) != maxDrawnHops {
		t.Fatalf("%d hop rows and %d hop sections, want %d and %d", len(rows), len(arts), n, maxDrawnHops)
	}
	if got := len(root.all(byAttr("data-chart", "latency"))); got != maxDrawnHops {
		t.Errorf("%d latency charts, want %d", got, maxDrawnHops)
	}
	ids := map[string]bool{}
	for _, a := range arts {
		ids[a.attr["id"]] = true
	}
	drawn := map[string]bool{}
	for _, a := range arts {
		drawn[a.attr["data-hop"]] = true
	}
	links := 0
	for _, r := range rows {
		for _, a := range r.all(func(n *node) bool { return n.name == "a" && strings.HasPrefix(n.attr["href"], "#hop-") }) {
			links++
			if !ids[strings.TrimPrefix(a.attr["href"], "#")] {
				t.Errorf("row %s links to %s, which is not drawn", r.attr["data-hop"], a.attr["href"])
			}
		}
	}
	if links != maxDrawnHops {
		t.Errorf("%d hop rows link to a section, want %d", links, maxDrawnHops)
	}
	// Timed hops with failures are drawn before untimed ones.
	timedFailing, drawnUntimed := 0, 0
	for _, h := range rep.Hops {
		if timed(h.Recommendation) && h.FailedAttempts > 0 && !drawn[h.Hop] {
			timedFailing++
		}
		if !timed(h.Recommendation) && drawn[h.Hop] {
			drawnUntimed++
		}
	}
	if timedFailing > 0 || drawnUntimed > 0 {
		t.Errorf("%d timed hops with failures not drawn, %d untimed hops drawn: want the timed ones first", timedFailing, drawnUntimed)
	}
	note := root.all(byAttr("id", "not-drawn"))
	if len(note) != 1 || note[0].attr["data-not-drawn"] != fmt.Sprint(n-maxDrawnHops) ||
		!strings.Contains(note[0].textContent(), fmt.Sprintf("%d more hops are not drawn", n-maxDrawnHops)) || !strings.Contains(note[0].textContent(), option.Format.String()+" json") {
		t.Errorf("no note on the %d hops not drawn", n-maxDrawnHops)
	}
	recRows := root.all(func(n *node) bool { return n.name == "tr" && n.attr["data-rec"] != "" })
	timedN := len(timedHops(rep.Hops))
	if len(recRows) != maxDrawnHops || timedN <= maxDrawnHops {
		t.Errorf("%d recommendation rows of %d timed hops, want %d", len(recRows), timedN, maxDrawnHops)
	}
	if rn := root.all(byAttr("id", "rec-not-shown")); len(rn) != 1 || rn[0].attr["data-not-shown"] != fmt.Sprint(timedN-maxDrawnHops) {
		t.Errorf("no note on the timed hops left out of the recommendation table")
	}

	// At or below the limit, everything is drawn and nothing is noted.
	small := syntheticReport(40)
	b.Reset()
	if err := Analysis(&b, "html", small, Options{}); err != nil {
		t.Fatal(err)
	}
	root = parseHTML(t, b.Bytes())
	if got := len(root.all(func(n *node) bool { return n.name == "article" })); got != 40 {
		t.Errorf("40 hops: %d sections", got)
	}
	if len(root.all(byAttr("id", "not-drawn"))) != 0 || len(root.all(byAttr("id", "rec-not-shown"))) != 0 {
		t.Error("40 hops: a note on hops not drawn")
	}
}

// counter counts the bytes written to it.
type counter int

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

// renderTime is the shortest of five renders of rep in format, and the
// size of the output.
func renderTime(t testing.TB, rep *analyze.Report, format string) (time.Duration, int) {
	best, size := time.Duration(1<<62), 0
	for i := 0; i < 5; i++ {
		var c counter
		runtime.GC()
		start := cputime.Now()
		if err := Analysis(&c, format, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		best, size = min(best, cputime.Since(start)), int(c)
	}
	return best, size
}

// TestRenderLinear guards against rendering time or size growing faster
// than the number of hops: 4× the hops must take well under 16× the time
// (the ratio of a quadratic), whatever the machine's speed. (200,000 hops
// took 2 minutes to render as HTML, a section with two charts per hop,
// against 14 s for JSON.)
func TestRenderLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("times renders of up to 40,000 hops")
	}
	for _, c := range []struct {
		format string
		n      int
	}{{"html", 4000}, {"text", 10000}, {"markdown", 10000}} {
		small, large := syntheticReport(c.n), syntheticReport(4*c.n)
		var ts, tl time.Duration
		var ss, sl int
		var ratio float64
		// A busy machine can slow one measurement down several times:
		// the ratio must stay in bounds in one of three tries.
		for try := 0; try < 3; try++ {
			ts, ss = renderTime(t, small, c.format)
			tl, sl = renderTime(t, large, c.format)
			ratio = float64(tl) / float64(ts)
			t.Logf("%s: %d hops %v (%d bytes), %d hops %v (%d bytes): ×%.1f", c.format, c.n, ts, ss, 4*c.n, tl, sl, ratio)
			if ratio <= 10 {
				break
			}
		}
		if ratio > 10 {
			t.Errorf("%s: 4× the hops took %.1f× the time (%v → %v): rendering grows faster than linearly", c.format, ratio, ts, tl)
		}
		if r := float64(sl) / float64(ss); r > 4.5 {
			t.Errorf("%s: 4× the hops gave %.1f× the bytes", c.format, r)
		}
		// Past maxDrawnHops, an HTML hop costs a table row, not a section.
		if per := sl / (4 * c.n); c.format == "html" && per > 1500 {
			t.Errorf("html: %d bytes per hop at %d hops", per, 4*c.n)
		}
	}
}

// BenchmarkAnalysisHTML renders the HTML report of 20,000 hops.
func BenchmarkAnalysisHTML(b *testing.B) {
	rep := syntheticReport(20000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var w bytes.Buffer
		if err := Analysis(&w, "html", rep, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalysisJSON is the baseline BenchmarkAnalysisHTML compares to.
func BenchmarkAnalysisJSON(b *testing.B) {
	rep := syntheticReport(20000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var w bytes.Buffer
		if err := Analysis(&w, "json", rep, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// unwrapContinued joins the text report's wrapped sentences back: a line
// that starts four spaces in continues the line before it.
func unwrapContinued(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "    ") && len(out) > 0 {
			out[len(out)-1] += " " + strings.TrimLeft(l, " ")
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
