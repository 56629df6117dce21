package report

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/span"
)

// incidentLogs is 90 minutes of requests through one call "db", 8× slower
// from 10:30 to 10:36.
func incidentLogs() []span.Span {
	r := rand.New(rand.NewPCG(2, 9))
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	var out []span.Span
	for m := 0; m < 90; m++ {
		for i := 0; i < 30; i++ {
			id := fmt.Sprintf("t%d-%d", m, i)
			start := t0 + int64(m)*int64(time.Minute) + int64(i)*int64(2*time.Second)
			f := 1.0
			if m >= 30 && m < 36 {
				f = 8
			}
			d := int64(float64(40*time.Millisecond) * math.Exp(0.3*r.NormFloat64()) * f)
			out = append(out,
				span.Span{TraceID: id, SpanID: "r", Service: "api", Name: "GET /", Hop: "api GET /", Kind: "server", Start: start, Duration: d + int64(time.Millisecond)},
				span.Span{TraceID: id, SpanID: "c", ParentID: "r", Service: "api", Name: "db", Hop: "db", Kind: "client", Start: start, Duration: d})
		}
	}
	return out
}

// The timeline in every human format: the text and Markdown sections name
// the incident and draw db's blocks with "!" on it; the HTML page draws a
// chart per hop whose bars are the blocks' p99s (as in the JSON) and a
// band on the incident's block.
func TestTimelineReports(t *testing.T) {
	rep, _ := pipeline.FromSpans(incidentLogs(), &ingest.Stats{}).Recommend(analyze.Options{})
	if len(rep.Incidents) != 1 || rep.Incidents[0].Hop != "db" || !strings.HasPrefix(rep.Incidents[0].From, "2026-03-02T10:30") {
		t.Fatalf("incidents %+v: want db's at 10:30", rep.Incidents)
	}
	var txt, md, html bytes.Buffer
	if err := analysisText(&txt, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := analysisMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := analysisHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String()} {
		for _, want := range []string{"over time: 9 blocks of 10m", "1 incident:", "10:30–10:40 db: p99", "!"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s report does not say %q", name, want)
			}
		}
	}
	page := html.String()
	charts := regexp.MustCompile(`<svg class="chart" id="timeline-\d+" data-chart="timeline" data-hop="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(charts) == 0 {
		t.Fatal("no timeline chart in the HTML page")
	}
	var db *analyze.Hop
	for i := range rep.Hops {
		if rep.Hops[i].Hop == "db" {
			db = &rep.Hops[i]
		}
	}
	// db's chart: one bar per block with a p99, values as in the JSON.
	at := strings.Index(page, `data-chart="timeline" data-hop="db"`)
	if at < 0 {
		t.Fatal("no timeline chart for db")
	}
	svg := page[at : at+strings.Index(page[at:], "</svg>")]
	bars := regexp.MustCompile(`class="bar (lat|fail)"[^>]*data-p99-ms="([^"]*)"`).FindAllStringSubmatch(svg, -1)
	if len(bars) != len(db.Blocks) {
		t.Fatalf("db chart has %d bars, want one per block (%d)", len(bars), len(db.Blocks))
	}
	for i, b := range bars {
		if want := fmt.Sprintf("%g", *db.Blocks[i].P99Ms); b[2] != want {
			t.Errorf("bar %d: p99 %s, JSON %s", i, b[2], want)
		}
		if (b[1] == "fail") != db.Blocks[i].Incident {
			t.Errorf("bar %d drawn as %s, incident %v", i, b[1], db.Blocks[i].Incident)
		}
	}
	if bands := strings.Count(svg, `class="band"`); bands != 1 || !strings.Contains(svg, `class="band" x=`) {
		t.Errorf("db chart has %d incident bands, want 1", bands)
	}
}
