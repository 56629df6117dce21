package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// The summary fits one screen on the seed and on real minutes: at most
// SummaryMaxLines lines of at most SummaryMaxWidth characters, it opens the
// text and Markdown reports, and names every hop whose timeout changes (or
// counts those it has no room for).
func TestSummaryFitsOneScreen(t *testing.T) {
	reps := realReports(t)
	for _, f := range []string{"spans.jsonl", "recorded-under-A.jsonl"} {
		rep, _ := analysisOf(t, f, "")
		reps[f] = rep
	}
	for name, rep := range reps {
		lines := summaryLines(rep, nil)
		if len(lines) == 0 || lines[0] != "summary" {
			t.Fatalf("%s: no summary", name)
		}
		if len(lines) > SummaryMaxLines {
			t.Errorf("%s: summary of %d lines", name, len(lines))
		}
		body := strings.Join(lines, "\n")
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > SummaryMaxWidth {
				t.Errorf("%s: a line of %d characters: %q", name, n, l)
			}
		}
		changed, listed := 0, 0
		for _, h := range rep.Hops {
			r := h.Recommendation
			if !timed(r) || r.TimeoutMs <= 0 || h.TimeoutMs != nil && *h.TimeoutMs == r.TimeoutMs && r.Retries == 0 {
				continue
			}
			changed++
			if strings.Contains(body, "    "+shortName(Visible(h.Hop))+" ") {
				listed++
			}
		}
		if listed < changed && !strings.Contains(body, "more hop") {
			t.Errorf("%s: %d of %d changed hops listed, and no count of the rest", name, listed, changed)
		}
		if !strings.Contains(body, "recommended: budget") || !(strings.Contains(body, "as logged:") || strings.Contains(body, "in force:")) {
			t.Errorf("%s: the summary lacks the verdicts:\n%s", name, body)
		}
		var txt, md bytes.Buffer
		if err := analysisText(&txt, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := analysisMarkdown(&md, rep); err != nil {
			t.Fatal(err)
		}
		if i := strings.Index(txt.String(), "\nsummary\n"); i < 0 || i > strings.Index(txt.String(), "\nrecommendation") && strings.Contains(txt.String(), "\nrecommendation") {
			t.Errorf("%s: the text report does not open with the summary", name)
		}
		if !strings.Contains(md.String(), "#### Summary") {
			t.Errorf("%s: the Markdown report has no summary", name)
		}
	}
}
