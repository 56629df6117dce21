package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/logs"
)

// renderAll renders an analysis in text, Markdown and HTML.
func renderAll(t *testing.T, rep *analyze.Report) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"text", "markdown", "html"} {
		var b bytes.Buffer
		if err := Analysis(&b, f, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		out[f] = b.String()
	}
	return out
}

// On the real exports a client/server gap is listed only when it passes
// the stated thresholds, and once: in the tail's section, not again as a
// footnote or under a hop's failures.
func TestGapsOnceAndOnlyWhenTheyMatter(t *testing.T) {
	listed := 0
	for path, rep := range realReports(t) {
		out := renderAll(t, rep)
		for _, h := range rep.Hops {
			g := h.Gap
			if g == nil {
				continue
			}
			if g.MakesTail && (*g.GapP99Ms < analyze.GapMinMs || *g.GapP99Ms < *g.ClientP99Ms/2 || *g.ServerP99Ms > *g.ClientP99Ms/2 || g.Pairs < analyze.GapMinPairs) {
				t.Errorf("%s: %s: gap p99 %.3gms listed below the thresholds: %+v", path, h.Hop, *g.GapP99Ms, *g)
			}
			if strings.Contains(h.Evidence, g.ServerHop) {
				t.Errorf("%s: %s: the failure evidence repeats the gap: %q", path, h.Hop, h.Evidence)
			}
			for f, s := range out {
				want := 0
				if g.MakesTail {
					want = 1
				}
				pair := h.Hop + " → " + g.ServerHop + ":"
				if f == "markdown" {
					pair = md(h.Hop) + " → " + md(g.ServerHop) + ":"
				} else if f == "html" {
					pair = htmlText(h.Hop) + " → " + htmlText(g.ServerHop) + ":"
				}
				if n := strings.Count(s, pair); n != want {
					t.Errorf("%s, %s: the gap of %s is written %d times, want %d", path, f, h.Hop, n, want)
				}
			}
			if g.MakesTail {
				listed++
			}
		}
		for f, s := range out {
			if strings.Contains(s, "gap-tail") {
				t.Errorf("%s, %s: a gap-tail footnote repeats the tail's section", path, f)
			}
			if listed > 0 && !strings.Contains(s, "at least "+dur(analyze.GapMinMs)) {
				t.Errorf("%s, %s: the gaps' thresholds are not stated", path, f)
			}
		}
	}
	t.Logf("%d gaps listed", listed)
}

// htmlText escapes s as html/template writes text.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// The header counts the files spans came from: a Tempo block's meta.json
// and bloom filter are listed in the JSON inputs with the reason they were
// passed over, not counted as files read.
func TestHeaderCountsFilesRead(t *testing.T) {
	l, err := logs.Read([]string{"../testdata/bad/tempo-block"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := l.Report(analyze.Options{})
	skipped := 0
	for _, in := range rep.Inputs {
		if in.SkippedReason != "" {
			skipped++
		}
	}
	if skipped == 0 || rep.FilesRead() != len(rep.Inputs)-skipped {
		t.Fatalf("inputs %+v: %d passed over, FilesRead %d", rep.Inputs, skipped, rep.FilesRead())
	}
	want := count(rep.FilesRead(), "file", "files")
	out := renderAll(t, rep)
	for _, f := range []string{"text", "markdown"} {
		if !strings.Contains(out[f], " from "+want+" (") {
			t.Errorf("%s header does not say %q:\n%.300s", f, want, out[f])
		}
	}
}

// The header's span count says how many spans repeated an id and were
// left out of the requests.
func TestHeaderCountsDuplicates(t *testing.T) {
	l, err := logs.Read([]string{"../testdata/bad/jsonl/duplicate-ids.jsonl"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := l.Report(analyze.Options{})
	if rep.DuplicateSpans != int64(l.Problems.DuplicateSpanIDs) || rep.DuplicateSpans == 0 {
		t.Fatalf("duplicate_spans %d, the trees dropped %d", rep.DuplicateSpans, l.Problems.DuplicateSpanIDs)
	}
	want := count(rep.DuplicateSpans, "duplicate", "duplicates") + " left out of the requests"
	for f, s := range renderAll(t, rep) {
		if !strings.Contains(s, want) {
			t.Errorf("%s: the header does not say %q", f, want)
		}
	}
}
