package report

import (
	"bytes"
	"encoding/json"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/pipeline"
)

// sigDigitsOf counts the significant digits a cell shows ("0.029ms": 2,
// "1101ms": 4) and its decimals.
func sigDigitsOf(cell string) (sig, decimals int) {
	num := strings.TrimLeft(cell, "≥<")
	num = strings.TrimRightFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i := strings.IndexByte(num, '.'); i >= 0 {
		decimals = len(num) - i - 1
	}
	digits := strings.TrimLeft(strings.ReplaceAll(num, ".", ""), "0")
	return len(digits), decimals
}

// cellValue reads a cell back in ms.
func cellValue(t *testing.T, cell string) float64 {
	t.Helper()
	num := strings.TrimLeft(cell, "≥")
	mult := 1.0
	switch {
	case strings.HasSuffix(num, "µs"):
		num, mult = strings.TrimSuffix(num, "µs"), 0.001
	case strings.HasSuffix(num, "ms"):
		num = strings.TrimSuffix(num, "ms")
	case strings.HasSuffix(num, "s"):
		num, mult = strings.TrimSuffix(num, "s"), 1000
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("cell %q: %v", cell, err)
	}
	return v * mult
}

var (
	reHTMLHopRow = regexp.MustCompile(`<tr data-hop="([^"]*)"><td class="hopname">.*?</td>((?:<td class="num">[^<]*</td>)+)`)
	reHTMLNum    = regexp.MustCompile(`<td class="num">([^<]*)</td>`)
	reHTMLFacts  = regexp.MustCompile(`p50 <b>([^<]*)</b> · p99 <b>([^<]*)</b>`)
	reHTMLMark   = regexp.MustCompile(`<text[^>]*>(p50|p99) ([^<]*)</text>`)
)

// realReports analyses the real Nezha exports, keyed by their names under
// ../shared/data: the TrainTicket fault and baseline minutes and the
// Online Boutique minute, their copies under testdata/real (the full files
// with TAILSCOPE_REALDATA=full) (the fault minute whole, subsets of whole traces of
// the others) under testdata/real.
func realReports(t *testing.T) map[string]*analyze.Report {
	t.Helper()
	nezha := map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID",
		"service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}
	out := map[string]*analyze.Report{}
	for _, name := range []string{trainTicketFault, trainTicketBaseline, "nezha-online-boutique/2022-08-23-12_02_trace.csv"} {
		l, err := pipeline.Read([]string{realdata.Path(t, name)}, pipeline.Options{Ingest: ingest.Options{Map: nezha}})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = l.Report(analyze.Options{})
	}
	return out
}

// The TrainTicket pair: a minute with a fault injected and a fault-free
// minute of the same deployment.
const (
	trainTicketFault    = "nezha-trainticket/fault-12_06_trace.csv"
	trainTicketBaseline = "nezha-trainticket/baseline-11_39_trace.csv"
)

// On real millisecond-scale exports, the hop table's latency cells show
// three significant digits (or the thousandth of their unit), two values
// that differ by more than 1% never print alike, and the text, Markdown and
// HTML tables print the same cells; the HTML section of a hop says its p50
// and p99 as its chart's marks do.
func TestHopTableUnitsOnRealExports(t *testing.T) {
	for path, rep := range realReports(t) {
		t.Run(path, func(t *testing.T) {
			var txt, md, ht bytes.Buffer
			for f, b := range map[string]*bytes.Buffer{"text": &txt, "markdown": &md, "html": &ht} {
				if err := Analysis(b, f, rep, Options{}); err != nil {
					t.Fatal(err)
				}
			}
			// The Markdown table: hop, attempts, calls, failed, p50, p95, p99, max.
			// Logs without outcomes have no failed and class columns: the
			// cells are found by the header.
			mdCells := map[string][]string{}
			ncols, p50 := 0, 0
			for _, line := range strings.Split(md.String(), "\n") {
				cells := strings.Split(strings.Trim(line, "| "), " | ")
				if cells[0] == "hop" && len(cells) > 1 && cells[1] == "attempts" {
					ncols = len(cells)
					for i, c := range cells {
						if c == "p50" {
							p50 = i
						}
					}
					continue
				}
				if ncols > 0 && len(cells) == ncols && !strings.HasPrefix(cells[0], ":--") {
					name := strings.TrimRight(cells[0], " ¹²³⁴⁵⁶⁷⁸⁹⁰˒")
					mdCells[html.UnescapeString(regexp.MustCompile(`\\(.)`).ReplaceAllString(name, "$1"))] = cells[p50 : p50+4]
				}
			}
			if outcome := outcomesKnown(rep); outcome != (p50 == 4) {
				t.Errorf("outcomes known %v, the markdown hop table's p50 is column %d", outcome, p50)
			}
			if len(mdCells) != len(rep.Hops) {
				t.Fatalf("markdown hop table has %d rows, want %d", len(mdCells), len(rep.Hops))
			}
			byCol := make([]map[string]float64, 4) // column → cell → value
			for i := range byCol {
				byCol[i] = map[string]float64{}
			}
			for _, h := range rep.Hops {
				cells := mdCells[h.Hop]
				if cells == nil {
					t.Fatalf("hop %q not in the markdown table", h.Hop)
				}
				l := h.LatencyMs
				for i, v := range []*float64{l.P50, l.P95, l.P99, l.Max} {
					c := cells[i]
					if v == nil || strings.HasPrefix(c, "≥") {
						continue
					}
					sig, dec := sigDigitsOf(c)
					if *v > 0 && sig < 3 && dec < 3 {
						t.Errorf("%s: cell %q for %.4gms shows %d significant digits", h.Hop, c, *v, sig)
					}
					if got := cellValue(t, c); math.Abs(got-*v) > 0.005**v+0.0005 {
						t.Errorf("%s: cell %q reads %.4gms, the value is %.4gms", h.Hop, c, got, *v)
					}
					if w, ok := byCol[i][c]; ok && math.Abs(w-*v) > 0.01*max(w, *v) {
						t.Errorf("column %d: %.4gms and %.4gms both print as %q", i, w, *v, c)
					}
					byCol[i][c] = *v
				}
				// The text row holds the same cells, in order.
				for _, line := range strings.Split(txt.String(), "\n") {
					if strings.HasPrefix(line, h.Hop+" ") && strings.Contains(line, " "+cells[0]+" ") {
						rest := line
						for _, c := range cells {
							i := strings.Index(rest, " "+c+" ")
							if i < 0 {
								t.Errorf("text row of %s lacks %q in order: %s", h.Hop, c, line)
								break
							}
							rest = rest[i+len(c)+1:]
						}
					}
				}
			}
			page := ht.String()
			rows := reHTMLHopRow.FindAllStringSubmatch(page, -1)
			if len(rows) != len(rep.Hops) {
				t.Fatalf("HTML hop table has %d rows, want %d", len(rows), len(rep.Hops))
			}
			for _, r := range rows {
				name := html.UnescapeString(r[1])
				nums := reHTMLNum.FindAllStringSubmatch(r[2], -1)
				want := mdCells[name]
				for i := range want {
					if got := html.UnescapeString(nums[p50-1+i][1]); got != want[i] {
						t.Errorf("%s: HTML cell %q, markdown %q", name, got, want[i])
					}
				}
			}
			// Each drawn hop's header against its latency chart's marks.
			sections := strings.Split(page, `<article class="panel hop"`)
			checked := 0
			for _, s := range sections[1:] {
				facts := reHTMLFacts.FindStringSubmatch(s)
				if facts == nil {
					continue
				}
				marks := map[string]string{}
				for _, m := range reHTMLMark.FindAllStringSubmatch(s, -1) {
					marks[m[1]] = html.UnescapeString(m[2])
				}
				for i, k := range []string{"p50", "p99"} {
					head := html.UnescapeString(facts[1+i])
					if m, ok := marks[k]; ok && m != head {
						t.Errorf("hop section: header %s %q, chart mark %q", k, head, m)
					}
				}
				checked++
			}
			if checked == 0 {
				t.Error("no hop section with a header found in the HTML page")
			}
		})
	}
}

// The real exports' pages, opened in headless Chromium at 1400 px: no
// console message, nothing wider than the window, the hop table in its
// card.
func TestChromiumRealExports(t *testing.T) {
	bin := chromiumPath(t)
	for path, rep := range realReports(t) {
		var b bytes.Buffer
		if err := Analysis(&b, "html", rep, Options{}); err != nil {
			t.Fatal(err)
		}
		l := measure(t, bin, b.Bytes(), 1400, "")
		if l.Rows != len(rep.Hops) {
			t.Errorf("%s: the hop table has %d rows, want %d", path, l.Rows, len(rep.Hops))
		}
		if why := l.fits(); why != "" {
			t.Errorf("%s at 1400 px: %s", path, why)
		}
	}
}

// labelScript measures every chart's marker labels as the browser lays
// them out and writes the pairs that overlap into <pre id="measure">.
const labelScript = `<script>
(function () {
  var out = {charts: 0, labels: 0, overlaps: []};
  document.querySelectorAll("svg.chart").forEach(function (svg) {
    out.charts++;
    var boxes = [];
    svg.querySelectorAll("g.marker text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      boxes.push({text: t.textContent, l: r.left, r: r.right, t: r.top, b: r.bottom});
    });
    out.labels += boxes.length;
    for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i], b = boxes[j];
      if (a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b && out.overlaps.length < 20)
        out.overlaps.push(svg.getAttribute("data-hop") + ": " + a.text + " / " + b.text);
    }
  });
  var p = document.createElement("pre"); p.id = "measure"; p.textContent = JSON.stringify(out); document.body.appendChild(p);
})();
</script>`

// The charts' marker labels ("p99 771ms", "recommended 1.25s") never
// overlap as Chromium draws them at 1400 px, on the real exports and the
// seed sample recorded under a policy (every kind of marker).
func TestChromiumMarkerLabelsApart(t *testing.T) {
	bin := chromiumPath(t)
	reps := realReports(t)
	seed, _ := analysisOf(t, "recorded-under-A.jsonl", "A")
	reps["seed under A"] = seed
	for name, rep := range reps {
		var b bytes.Buffer
		if err := Analysis(&b, "html", rep, Options{}); err != nil {
			t.Fatal(err)
		}
		doc := reCSP.ReplaceAllString(b.String(), "")
		doc = strings.Replace(doc, "</body>", labelScript+"</body>", 1)
		dom, console := browse(t, bin, writeTemp(t, "labels.html", []byte(doc)), "--dump-dom", "--window-size=1400,900")
		if len(console) > 0 {
			t.Errorf("%s: console messages:\n%s", name, strings.Join(console, "\n"))
		}
		m := reMeasure.FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("%s: the measuring script did not run", name)
		}
		var got struct {
			Charts, Labels int
			Overlaps       []string
		}
		if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &got); err != nil {
			t.Fatal(err)
		}
		if got.Labels == 0 {
			t.Errorf("%s: no marker label measured in %d charts", name, got.Charts)
		}
		for _, o := range got.Overlaps {
			t.Errorf("%s: marker labels overlap: %s", name, o)
		}
	}
}

// The real TrainTicket pair compared (the fault-free minute against the
// fault minute) fits 1400 px in Chromium, its comparison table with both
// scores and the legend that says what they are.
func TestChromiumCompareFits(t *testing.T) {
	bin := chromiumPath(t)
	reps := realReports(t)
	before, after := reps[trainTicketBaseline], reps[trainTicketFault]
	c := *after
	c.Compare = analyze.Compare(before, after, "baseline", "fault")
	var b bytes.Buffer
	if err := Analysis(&b, "html", &c, Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `id="compare-table"`) || !strings.Contains(page, `<th class="num">typical &#43;</th>`) || !strings.Contains(page, "ranked by the larger") {
		t.Fatal("the comparison table, its typical + column or its legend is missing")
	}
	if why := measure(t, bin, b.Bytes(), 1400, "").fits(); why != "" {
		t.Errorf("compare page at 1400 px: %s", why)
	}
}
