package report

import (
	"bytes"
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
)

// Quiet where there is nothing to say: no outcome columns on
// logs that carry no outcome, a small comparison said to be small, and
// check's warnings about the policy it checks, each once.

// renderEvery renders an analysis in every format.
func renderEvery(t *testing.T, rep *analyze.Report) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range Formats {
		var b bytes.Buffer
		if err := Analysis(&b, f, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		out[f] = b.String()
	}
	return out
}

// On a real export whose spans say nothing of how they ended (the Nezha
// CSV), --compare-window shows latency before → after and no failure rate
// or class; on logs with outcomes the same columns are there.
func TestCompareWithoutOutcomesHasNoOutcomeColumns(t *testing.T) {
	nezha := map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID",
		"service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}
	l, err := pipeline.Read([]string{realdata.Path(t, trainTicketFault)}, pipeline.Options{Ingest: ingest.Options{Map: nezha}})
	if err != nil {
		t.Fatal(err)
	}
	rep := l.Report(analyze.Options{})
	if outcomesKnown(rep) {
		t.Fatalf("%s: the analysis says outcomes are known; the test needs logs without them", trainTicketFault)
	}
	c, ok := l.CompareWindows(20*time.Second, "20s", analyze.Options{})
	if !ok || len(compareRows(c)) == 0 {
		t.Fatalf("no comparison with rows over 20s windows of %s", trainTicketFault)
	}
	rep.Compare = c
	out := renderEvery(t, rep)
	for _, f := range []string{"text", "markdown", "html"} {
		section := out[f][strings.Index(strings.ToLower(out[f]), "what changed"):]
		// The section ends where the next begins.
		end := map[string]string{"text": "\n\n", "markdown": "\n| hop | attempts", "html": "<h2"}[f]
		if i := strings.Index(section[1:], end); i >= 0 {
			section = section[:i+1]
		}
		for _, no := range []string{"0% → 0%", "none → none", "FAILED", "| failed", ">failed<", "% ok"} {
			if strings.Contains(section, no) {
				t.Errorf("%s: the comparison of logs without outcomes shows %q", f, no)
			}
		}
		if !strings.Contains(section, "outcomes unknown") {
			t.Errorf("%s: the comparison does not say the outcomes are unknown", f)
		}
	}

	seed, sl := analysisOf(t, "recorded-under-A.jsonl", "")
	if !outcomesKnown(seed) {
		t.Fatal("the seed sample's outcomes read as unknown")
	}
	sc, ok := sl.CompareWindows(10*time.Second, "10s", analyze.Options{})
	if !ok {
		t.Fatal("no 10s comparison on the seed sample")
	}
	seed.Compare = sc
	txt := renderEvery(t, seed)["text"]
	if !strings.Contains(txt, "FAILED") || !strings.Contains(txt, "CLASS") {
		t.Errorf("with outcomes, the comparison lost its FAILED and CLASS columns:\n%s", txt)
	}
}

// A comparison whose smaller window holds fewer requests than the
// recommendation reads a percentile from says so, with the count, in every
// human format; one over larger windows does not.
func TestCompareOfFewRequestsSaysSo(t *testing.T) {
	rep, l := analysisOf(t, "recorded-under-A.jsonl", "")
	for _, w := range []time.Duration{10 * time.Second, 60 * time.Second} {
		c, ok := l.CompareWindows(w, w.String(), analyze.Options{})
		if !ok {
			t.Fatalf("no %s comparison on the seed sample", w)
		}
		rep.Compare = c
		n := min(c.Before.Requests, c.After.Requests)
		few := n < analyze.MinSamplesRecommend
		out := renderEvery(t, rep)
		for _, f := range []string{"text", "markdown", "html"} {
			said := strings.Contains(out[f], "too few to tell a change from noise")
			if said != few {
				t.Errorf("%s windows (%d and %d requests), %s: says too few %v, want %v", w, c.Before.Requests, c.After.Requests, f, said, few)
			}
			if want := "only " + units.Count(n, "request", "requests"); few && !strings.Contains(out[f], want) {
				t.Errorf("%s: the note does not say %q", f, want)
			}
		}
	}
}

// check of a hand-written policy: the out-of-sample finding is said once,
// by the lint, of "this policy"; the analysis's warnings about the policy
// tailscope would recommend are not printed beside it, in any format.
func TestCheckWarningsSpeakOfThePolicyChecked(t *testing.T) {
	rep, l := analysisOf(t, "recorded-under-A.jsonl", "")
	hasOOS := false
	for _, w := range rep.Warnings {
		if aboutTheRecommendation[w.Code] {
			hasOOS = true
		}
	}
	if !hasOOS {
		t.Fatal("the analysis carries no warning about its recommended policy: the test checks nothing")
	}
	pols, err := pipeline.SeedPolicies()
	if err != nil {
		t.Fatal(err)
	}
	var c []*policy.Policy
	for _, p := range pols {
		if p.Name == "C" {
			c = append(c, p)
		}
	}
	cr := check.Run(rep, l.Requests, c, check.Options{Replay: replay.Options{RetryModel: replay.ModelSame}})
	lints := 0
	for _, f := range cr.Results[0].Lint {
		if f.Code == analyze.CodeOutOfSample {
			lints++
		}
	}
	if lints != 1 {
		t.Fatalf("C's check has %d out-of-sample findings, want 1", lints)
	}
	for _, f := range Formats {
		var b bytes.Buffer
		if err := Check(&b, f, cr, Options{}); err != nil {
			t.Fatal(err)
		}
		s := b.String()
		if f == "html" {
			s = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(s, "")
		}
		if f == "json" {
			var doc struct {
				Warnings []analyze.Warning `json:"warnings"`
			}
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			for _, w := range doc.Warnings {
				if aboutTheRecommendation[w.Code] {
					t.Errorf("json: warning %s about the recommended policy in a check report", w.Code)
				}
			}
			continue
		}
		if got := strings.Count(s, analyze.CodeOutOfSample); got != lints {
			t.Errorf("%s: %s said %d times, want %d (once, by the lint)", f, analyze.CodeOutOfSample, got, lints)
		}
		if strings.Contains(s, "recommended policy") {
			t.Errorf("%s: a check of C speaks of the recommended policy:\n%s", f, s)
		}
	}
	// The filter leaves the report it was given as it was.
	if len(cr.Warnings) == len(checkWarnings(cr).Warnings) {
		t.Error("checkWarnings left every warning in")
	}
}

// The recommendation table says in a few words what set each timeout;
// the full basis is under it with Verbose (text), folded in a details
// block (Markdown, HTML), and whole in JSON.
func TestBasisInDetailsAndVerbose(t *testing.T) {
	for _, file := range []string{"spans.jsonl", "recorded-under-A.jsonl"} {
		rep, _ := analysisOf(t, file, "")
		hs := timedHops(rep.Hops)
		if len(hs) == 0 {
			t.Fatalf("%s: no timed hop", file)
		}
		render := func(f string, o Options) string {
			var b bytes.Buffer
			if err := Analysis(&b, f, rep, o); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		txt, verbose := render("text", Options{}), render("text", Options{Verbose: true})
		md, ht, js := render("markdown", Options{}), render("html", Options{}), render("json", Options{})
		for _, h := range hs {
			full := h.Recommendation.Basis
			if len(full) < 2*len(basisShort(h)) {
				t.Fatalf("%s %s: the basis %q is no longer than its short form %q: the test shows nothing", file, h.Hop, full, basisShort(h))
			}
			if strings.Contains(txt, full) {
				t.Errorf("%s %s: the text report prints the full basis without --verbose", file, h.Hop)
			}
			if !strings.Contains(txt, basisShort(h)) {
				t.Errorf("%s %s: the text table lacks the short basis %q", file, h.Hop, basisShort(h))
			}
			if !strings.Contains(strings.Join(strings.Fields(verbose), " "), strings.Join(strings.Fields(h.Hop+": "+full), " ")) {
				t.Errorf("%s %s: --verbose does not print the full basis", file, h.Hop)
			}
			if !strings.Contains(md, "<details><summary>basis</summary>"+html.EscapeString(full)+"</details>") {
				t.Errorf("%s %s: Markdown does not fold the full basis in a details block", file, h.Hop)
			}
			if !strings.Contains(ht, "<details><summary>basis</summary>"+htmlText(full)+"</details>") {
				t.Errorf("%s %s: HTML does not fold the full basis in a details block", file, h.Hop)
			}
			b, _ := json.Marshal(full)
			if !strings.Contains(js, string(b)) {
				t.Errorf("%s %s: JSON lacks the full basis", file, h.Hop)
			}
		}
		for _, l := range strings.Split(txt[strings.Index(txt, "\nrecommendation"):], "\n") {
			if strings.HasPrefix(l, "  ") && len([]rune(l)) > 160 && strings.Contains(l, "  set  ") {
				t.Errorf("%s: a recommendation row of %d characters: %s", file, len([]rune(l)), l)
			}
		}
	}
}

// PEAK/S is a hop's attempts per second in its busiest timeline block:
// counted here again from the spans, by their starts, in the blocks the
// report names.
func TestPeakRateFromTheSpans(t *testing.T) {
	rep, l := analysisOf(t, "recorded-under-A.jsonl", "")
	tl := rep.Timeline
	if tl == nil || len(tl.Blocks) < 2 {
		t.Fatal("the seed under A has no timeline to count by")
	}
	var txt bytes.Buffer
	if err := Analysis(&txt, "text", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "PEAK/S") || !strings.Contains(txt.String(), "busiest "+tl.Block+" block") {
		t.Fatalf("the text hop table has no PEAK/S column and legend:\n%s", txt.String())
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		most := 0
		for _, b := range tl.Blocks {
			from, err1 := time.Parse(time.RFC3339, b.From)
			until, err2 := time.Parse(time.RFC3339, b.Until)
			if err1 != nil || err2 != nil {
				t.Fatalf("block %s–%s: %v %v", b.From, b.Until, err1, err2)
			}
			n := 0
			for _, s := range l.Spans {
				if s.Hop == h.Hop && s.Start >= from.UnixNano() && s.Start < until.UnixNano() {
					n++
				}
			}
			most = max(most, n)
		}
		want := sig3(float64(most) / (tl.BlockMs / 1000))
		if got := peakRate(tl, h); got != want {
			t.Errorf("%s: peak/s %s, counted from the spans %s (%d attempts in a %s block)", h.Hop, got, want, most, tl.Block)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(h.Hop) + ` .*\s` + regexp.QuoteMeta(want) + `\s`).MatchString(txt.String()) {
			t.Errorf("%s: the text hop table does not show %s", h.Hop, want)
		}
	}
}

// The hop table of logs without outcomes has no failed count and no
// failure class, in any human format; with outcomes it has both.
func TestHopTableWithoutOutcomes(t *testing.T) {
	nezha := realReports(t)[trainTicketFault]
	seed, _ := analysisOf(t, "recorded-under-A.jsonl", "")
	for _, c := range []struct {
		rep  *analyze.Report
		want bool
	}{{nezha, false}, {seed, true}} {
		if outcomesKnown(c.rep) != c.want {
			t.Fatalf("outcomes known %v, want %v", outcomesKnown(c.rep), c.want)
		}
		out := renderEvery(t, c.rep)
		heads := map[string]string{"text": "\nHOP ", "markdown": "\n| hop | attempts", "html": `<table id="hop-table">`}
		for f, head := range heads {
			i := strings.Index(out[f], head)
			if i < 0 {
				t.Fatalf("%s: no hop table", f)
			}
			line := out[f][i+1:]
			line = line[:strings.Index(line, "\n")]
			if f == "html" {
				line = out[f][i : i+strings.Index(out[f][i:], "</thead>")]
			}
			cols := map[string][]string{"text": {" FAILED ", " CLASS "}, "markdown": {"| failed |", "| class |"}, "html": {">failed<", ">failures<"}}[f]
			for _, col := range cols {
				if got := strings.Contains(line, col); got != c.want {
					t.Errorf("%s, outcomes %v: the hop table's head has %q: %v\n%s", f, c.want, col, got, line)
				}
			}
		}
	}
}

// The text report's warnings wrap at TextWidth, each continuation under
// its footnote, and read back whole.
func TestWarningsWrap(t *testing.T) {
	for _, file := range []string{"spans.jsonl", "recorded-under-A.jsonl"} {
		rep, _ := analysisOf(t, file, "A")
		var b bytes.Buffer
		if err := Analysis(&b, "text", rep, Options{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		sec := out[strings.Index(out, "\nwarnings\n"):]
		wrapped := false
		for _, l := range strings.Split(sec, "\n") {
			if n := len([]rune(l)); n > TextWidth {
				t.Errorf("%s: a warnings line of %d runes: %s", file, n, l)
			}
			if strings.HasPrefix(l, "    ") {
				wrapped = true
			}
		}
		if !wrapped {
			t.Errorf("%s: no warning needed wrapping: the test shows nothing", file)
		}
		whole := unwrapWarnings(out)
		for _, w := range rep.Warnings {
			if !strings.Contains(whole, Visible(w.Message)) {
				t.Errorf("%s: warning %s does not read back whole", file, w.Code)
			}
		}
	}
}
