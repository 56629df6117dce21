package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/replay"
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
				if f == "text" {
					// The text report wraps its sentences.
					s, pair = strings.Join(strings.Fields(s), " "), strings.Join(strings.Fields(pair), " ")
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
			if listed > 0 && !strings.Contains(s, "at least "+units.Millis(analyze.GapMinMs)) {
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
	l, err := pipeline.Read([]string{"../testdata/bad/tempo-block"}, pipeline.Options{})
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
	want := units.Count(rep.FilesRead(), "file", "files")
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
	l, err := pipeline.Read([]string{"../testdata/bad/jsonl/duplicate-ids.jsonl"}, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := l.Report(analyze.Options{})
	if rep.DuplicateSpans != int64(l.Problems.DuplicateSpanIDs) || rep.DuplicateSpans == 0 {
		t.Fatalf("duplicate_spans %d, the trees dropped %d", rep.DuplicateSpans, l.Problems.DuplicateSpanIDs)
	}
	want := units.Count(rep.DuplicateSpans, "duplicate", "duplicates") + " left out of the requests"
	for f, s := range renderAll(t, rep) {
		if !strings.Contains(s, want) {
			t.Errorf("%s: the header does not say %q", f, want)
		}
	}
}

// A policy that cuts most requests short has a low p50 over all requests
// (each failed one counted when it gave up): its latency cells are marked
// in every format, and the note gives the percentiles over the requests
// that succeeded, which the JSON holds as latency_ok_ms, equal to the
// percentiles of the successful outcomes' ends. A row without failures is
// not marked.
func TestCutShortLatencyLabelled(t *testing.T) {
	rep, l := analysisOf(t, "spans.jsonl", "")
	short, err := policy.Parse("short.yaml", []byte("budget: 30s\ndefault: {timeout: 400ms, retries: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	short.Name = "short"
	pols, err := pipeline.SeedPolicies()
	if err != nil {
		t.Fatal(err)
	}
	var c *policy.Policy
	for _, p := range pols {
		if p.Name == "C" {
			c = p
		}
	}
	cr := check.Run(rep, l.Requests, []*policy.Policy{short, c}, check.Options{})
	sr, cres := cr.Results[0].Replay, cr.Results[1].Replay
	if sr.Failed == 0 || cres.Failed != 0 || *sr.LatencyMs.P50 >= *cres.LatencyMs.P50 {
		t.Fatalf("the test needs a policy that fails fast beside one that fails nothing: %+v / %+v", sr, cres)
	}
	var ok []int64
	for _, o := range replay.Run(l.Requests, short, replay.Options{}).Outcomes {
		if o.OK && !o.Undetermined {
			ok = append(ok, o.End)
		}
	}
	quantile.SortInt64(ok)
	wantP50 := math.Round(quantile.Int64(ok, 0.5)/1e3) / 1e3
	if sr.LatencyOKMs.P50 == nil || *sr.LatencyOKMs.P50 != wantP50 || *sr.LatencyOKMs.P50 <= *sr.LatencyMs.P50 {
		t.Fatalf("latency_ok_ms %+v, the successes' p50 is %v (all: %v)", sr.LatencyOKMs, wantP50, *sr.LatencyMs.P50)
	}
	for _, f := range []string{"text", "markdown", "html", "json"} {
		var b bytes.Buffer
		if err := Check(&b, f, cr, Options{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if f == "json" {
			if !strings.Contains(out, `"latency_ok_ms"`) {
				t.Errorf("json: no latency_ok_ms")
			}
			continue
		}
		if n := strings.Count(out, cutShortMark); n < 3 {
			t.Errorf("%s: %d marks, want the short policy's two cells and the note", f, n)
		}
		if !strings.Contains(out, "short: p50 "+units.Millis(*sr.LatencyOKMs.P50)) {
			t.Errorf("%s: the note does not give the p50 over successes (%s)", f, units.Millis(*sr.LatencyOKMs.P50))
		}
		if strings.Contains(out, "C: p50") {
			t.Errorf("%s: a policy without failures is listed in the note", f)
		}
	}
}

// When one hop holds most of the plain ranking, every format says so and
// points to the comparison flags; a report that compares does not.
func TestDominantHopPointsToCompare(t *testing.T) {
	reps := realReports(t)
	seed, _ := analysisOf(t, "spans.jsonl", "")
	reps["seed"] = seed
	seen := 0
	for name, rep := range reps {
		dominant := len(rep.TailRanking) > 0 && rep.TailRanking[0].Share >= analyze.DominantShare
		if dominant {
			seen++
		}
		for f, s := range renderAll(t, rep) {
			has := strings.Contains(s, option.CompareWindow.String())
			if has != dominant {
				t.Errorf("%s, %s: ranking led by %v, points to the compare window: %v", name, f, rep.TailRanking[0], has)
			}
		}
		if !dominant {
			continue
		}
		cmp := *rep
		cmp.Compare = analyze.Compare(rep, rep, "same", "same")
		for f, s := range renderAll(t, &cmp) {
			if strings.Contains(s, "on its own: a hop that is always slow") {
				t.Errorf("%s, %s: a comparing report still points to comparing", name, f)
			}
		}
	}
	if seen == 0 {
		t.Error("no report with a dominant hop: the test shows nothing")
	}
}

// A success rate the logs do not state says so in every format.
func TestInferredSuccessSaid(t *testing.T) {
	for name, rep := range realReports(t) {
		if !rep.Requests.SucceededInferred {
			t.Fatalf("%s: a Nezha export has no outcome field, yet succeeded is not marked inferred", name)
		}
		for f, s := range renderAll(t, rep) {
			if !strings.Contains(s, "inferred: the logs carry no outcome") || !strings.Contains(s, analyze.WarnUnknownOutcomes) {
				t.Errorf("%s, %s: the inferred success rate is not said", name, f)
			}
		}
	}
	seed, _ := analysisOf(t, "spans.jsonl", "")
	for f, s := range renderAll(t, seed) {
		if strings.Contains(s, "inferred") {
			t.Errorf("seed, %s: logs with a status read as inferred", f)
		}
	}
}

// Real shapes with weights: the TrainTicket minute with a weight column
// added (10 on the spans slower than 50 ms: each stands for ten, so the
// weighted percentiles can only rise) is weighted hop by hop and request
// by request;
// the real Zipkin export (spans with kinds, no weight) says its sample
// may be biased, and the unchanged CSV (no kinds) says nothing of it.
func TestWeightsOnRealShapes(t *testing.T) {
	const src = "../testdata/real/nezha-trainticket/fault-12_06_trace.csv"
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var b strings.Builder
	b.WriteString(lines[0] + ",weight\n")
	heavy := 0
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		us, err := strconv.ParseInt(f[len(f)-1], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		w := "1"
		if us > 50_000 {
			w, heavy = "10", heavy+1
		}
		b.WriteString(l + "," + w + "\n")
	}
	weightedPath := filepath.Join(t.TempDir(), "weighted.csv")
	if err := os.WriteFile(weightedPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	nezha := ingest.Options{Map: map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID",
		"service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}}
	read := func(p string, opt ingest.Options) *analyze.Report {
		l, err := pipeline.Read([]string{p}, pipeline.Options{Ingest: opt})
		if err != nil {
			t.Fatal(err)
		}
		return l.Report(analyze.Options{})
	}
	plain, weighted := read(src, nezha), read(weightedPath, nezha)
	codes := func(r *analyze.Report) map[string]bool {
		m := map[string]bool{}
		for _, w := range r.Warnings {
			m[w.Code] = true
		}
		return m
	}
	if heavy == 0 || !codes(weighted)[analyze.WarnWeighted] || codes(plain)[analyze.WarnWeighted] || codes(plain)[analyze.WarnUnweighted] {
		t.Fatalf("%d heavy spans; warnings weighted %v, plain %v", heavy, codes(weighted), codes(plain))
	}
	byName := map[string]*analyze.Hop{}
	for i := range plain.Hops {
		byName[plain.Hops[i].Hop] = &plain.Hops[i]
	}
	rose := 0
	for _, h := range weighted.Hops {
		p := byName[h.Hop]
		if !h.Weighted || h.LatencyMs.P50 == nil || p.LatencyMs.P50 == nil {
			continue
		}
		if *h.LatencyMs.P50 < *p.LatencyMs.P50 || *h.LatencyMs.P99 < *p.LatencyMs.P99 {
			t.Errorf("%s: weighting slow spans up lowered p50 %v → %v or p99 %v → %v", h.Hop, *p.LatencyMs.P50, *h.LatencyMs.P50, *p.LatencyMs.P99, *h.LatencyMs.P99)
		}
		if *h.LatencyMs.P50 > *p.LatencyMs.P50 {
			rose++
		}
	}
	if rose == 0 || !weighted.Requests.Weighted || *weighted.Requests.LatencyMs.P50 <= *plain.Requests.LatencyMs.P50 {
		t.Errorf("%d hops' p50 rose; requests weighted %v, p50 %v → %v", rose, weighted.Requests.Weighted,
			*plain.Requests.LatencyMs.P50, *weighted.Requests.LatencyMs.P50)
	}
	if z := read("../testdata/real/zipkin/smartthings-oauth-authorization.json", ingest.Options{}); !codes(z)[analyze.WarnUnweighted] {
		t.Errorf("a Zipkin export without weights does not say its sample may be biased: %v", codes(z))
	}
}
