package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
)

// node is a parsed element of the HTML report. The report is written as
// well-formed XHTML-style markup precisely so that a strict XML parser can
// check its structure without an HTML parser dependency.
type node struct {
	name     string
	attr     map[string]string
	text     string
	children []*node
	parent   *node
}

func parseHTML(t *testing.T, doc []byte) *node {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	root := &node{name: "#root", attr: map[string]string{}}
	cur := root
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			line, col := d.InputPos()
			t.Fatalf("report is not well-formed at %d:%d: %v", line, col, err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			n := &node{name: x.Name.Local, attr: map[string]string{}, parent: cur}
			for _, a := range x.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			cur.children = append(cur.children, n)
			cur = n
		case xml.EndElement:
			cur = cur.parent
		case xml.CharData:
			cur.text += string(x)
		}
	}
	return root
}

// all returns the elements below n that match.
func (n *node) all(match func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		for _, c := range x.children {
			if match(c) {
				out = append(out, c)
			}
			walk(c)
		}
	}
	walk(n)
	return out
}

// textContent is all character data below n.
func (n *node) textContent() string {
	var b strings.Builder
	b.WriteString(n.text)
	for _, c := range n.children {
		b.WriteString(c.textContent())
	}
	return b.String()
}

func byAttr(k, v string) func(*node) bool {
	return func(n *node) bool { return n.attr[k] == v }
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return f
}

// checkSelfContained fails on anything that would make the page fetch or
// run something: scripts, external references, event handlers.
func checkSelfContained(t *testing.T, doc []byte, root *node) {
	t.Helper()
	csp := root.all(func(n *node) bool { return n.name == "meta" && n.attr["http-equiv"] == "Content-Security-Policy" })
	if len(csp) != 1 || !strings.Contains(csp[0].attr["content"], "default-src 'none'") {
		t.Error("no strict Content-Security-Policy meta tag")
	}
	for _, n := range root.all(func(*node) bool { return true }) {
		switch n.name {
		case "script", "iframe", "object", "embed", "link", "img", "image", "use", "foreignObject":
			t.Errorf("element <%s> in a self-contained report", n.name)
		}
		for k, v := range n.attr {
			if strings.HasPrefix(strings.ToLower(k), "on") {
				t.Errorf("event handler attribute %s=%q", k, v)
			}
			if (k == "href" || k == "src") && !strings.HasPrefix(v, "#") {
				t.Errorf("%s=%q points outside the page", k, v)
			}
		}
	}
	if bytes.Contains(doc, []byte("url(")) || bytes.Contains(doc, []byte("@import")) {
		t.Error("CSS fetches a resource")
	}
}

// markers returns a chart's markers by kind: value (data-ms) and x.
func markers(t *testing.T, svg *node) map[string][2]float64 {
	t.Helper()
	out := map[string][2]float64{}
	for _, g := range svg.all(func(n *node) bool { return n.attr["data-marker"] != "" }) {
		var x float64
		for _, c := range g.children {
			if c.name == "line" {
				x = num(t, c.attr["x1"])
			}
		}
		out[g.attr["data-marker"]] = [2]float64{num(t, g.attr["data-ms"]), x}
	}
	return out
}

func barTotal(t *testing.T, svg *node) int {
	t.Helper()
	n := 0
	for _, r := range svg.all(func(n *node) bool { return n.name == "rect" && n.attr["data-count"] != "" }) {
		c, err := strconv.Atoi(r.attr["data-count"])
		if err != nil {
			t.Fatalf("bad data-count %q", r.attr["data-count"])
		}
		n += c
	}
	return n
}

func TestAnalysisHTMLStructure(t *testing.T) {
	for _, c := range cases[:2] {
		t.Run(c.name, func(t *testing.T) {
			rep, _ := analysisOf(t, c.file, c.inForce)
			var b bytes.Buffer
			if err := Analysis(&b, "html", rep, Options{}); err != nil {
				t.Fatal(err)
			}
			root := parseHTML(t, b.Bytes())
			checkSelfContained(t, b.Bytes(), root)

			rows := root.all(func(n *node) bool { return n.name == "tr" && n.attr["data-hop"] != "" })
			lat := root.all(byAttr("data-chart", "latency"))
			// A failure chart for each hop with failures, none for a
			// hop without: an empty frame says nothing.
			fail := map[string]*node{}
			failing := 0
			for _, n := range root.all(byAttr("data-chart", "failures")) {
				fail[n.attr["data-hop"]] = n
			}
			for _, h := range rep.Hops {
				if h.FailedAttempts > 0 {
					failing++
				}
			}
			if len(rows) != len(rep.Hops) || len(lat) != len(rep.Hops) || len(fail) != failing {
				t.Fatalf("%d hops (%d with failures) but %d table rows, %d latency charts, %d failure charts", len(rep.Hops), failing, len(rows), len(lat), len(fail))
			}
			for i, h := range rep.Hops {
				if rows[i].attr["data-hop"] != h.Hop || lat[i].attr["data-hop"] != h.Hop {
					t.Errorf("hop %d: row/chart order does not follow the report (%s)", i, h.Hop)
				}
				if (fail[h.Hop] != nil) != (h.FailedAttempts > 0) {
					t.Errorf("%s: %d failed attempts, failure chart drawn: %v", h.Hop, h.FailedAttempts, fail[h.Hop] != nil)
				}
				// Every attempt is in the latency histogram, every failed
				// attempt in the failure histogram.
				if got := barTotal(t, lat[i]); got != h.Attempts {
					t.Errorf("%s: latency bars hold %d attempts, want %d", h.Hop, got, h.Attempts)
				}
				if f := fail[h.Hop]; f != nil {
					if got := barTotal(t, f); got != h.FailedAttempts {
						t.Errorf("%s: failure bars hold %d, want %d", h.Hop, got, h.FailedAttempts)
					}
					if f.attr["data-scale"] != "linear" {
						t.Errorf("%s: failures must be on a linear axis", h.Hop)
					}
				}
				m := markers(t, lat[i])
				want := map[string]float64{"recommended": h.Recommendation.TimeoutMs}
				if h.LatencyMs.P50 != nil {
					want["p50"] = *h.LatencyMs.P50
				}
				switch {
				case h.LatencyMs.P99 != nil:
					want["p99"] = *h.LatencyMs.P99
				case h.Censored != nil:
					want["p99"] = h.Censored.AtLeastMs
				}
				if h.TimeoutMs != nil {
					want["timeout"] = *h.TimeoutMs
				}
				if len(m) != len(want) {
					t.Errorf("%s: markers %v, want %v", h.Hop, m, want)
				}
				for k, v := range want {
					if m[k][0] != v {
						t.Errorf("%s: marker %s at data-ms %v, want %v", h.Hop, k, m[k][0], v)
					}
				}
				// On one axis, a larger value sits further right.
				for a, va := range m {
					for b, vb := range m {
						if va[0] < vb[0] && va[1] >= vb[1] {
							t.Errorf("%s: marker %s (%vms, x=%v) is not left of %s (%vms, x=%v)", h.Hop, a, va[0], va[1], b, vb[0], vb[1])
						}
					}
				}
				if lat[i].attr["data-scale"] != "log" {
					t.Errorf("%s: latency must be on a log axis", h.Hop)
				}
				if h.TimeoutMs != nil && h.FailedAttempts > 0 {
					fm := markers(t, fail[h.Hop])
					if fm["timeout"][0] != *h.TimeoutMs {
						t.Errorf("%s: failure chart has no timeout marker at %v", h.Hop, *h.TimeoutMs)
					}
				}
			}
			land := root.all(byAttr("data-chart", "landing"))
			failed := rep.Requests.Count - rep.Requests.Succeeded
			switch {
			case failed == 0:
				if len(land) != 0 || !bytes.Contains(b.Bytes(), []byte(`id="no-failed-request"`)) {
					t.Errorf("no request failed: %d failure-landing charts, and no note saying so", len(land))
				}
			case len(land) != 1:
				t.Errorf("%d failure-landing charts, want 1", len(land))
			default:
				if got := barTotal(t, land[0]); got != failed {
					t.Errorf("landing bars hold %d requests, want %d failed", got, failed)
				}
			}
			if ws := root.all(func(n *node) bool { return n.attr["data-warning"] != "" }); len(ws) != len(rep.Warnings) {
				t.Errorf("%d warnings shown, want %d", len(ws), len(rep.Warnings))
			}
		})
	}
}

// TestPileUpStandsOut: in the recorded-under-A sample every failure ran to
// the 3s timeout, so the failure chart must show one bar at the timeout
// marker holding all of them.
func TestPileUpStandsOut(t *testing.T) {
	rep, _ := analysisOf(t, "recorded-under-A.jsonl", "A")
	var b bytes.Buffer
	if err := Analysis(&b, "html", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	root := parseHTML(t, b.Bytes())
	for _, svg := range root.all(byAttr("data-chart", "failures")) {
		hop := svg.attr["data-hop"]
		var h *analyze.Hop
		for i := range rep.Hops {
			if rep.Hops[i].Hop == hop {
				h = &rep.Hops[i]
			}
		}
		if h == nil || h.TimeoutMs == nil || h.FailureClass != "ran-to-timeout" {
			t.Fatalf("%s: fixture is not ran-to-timeout with a known timeout", hop)
		}
		tx := markers(t, svg)["timeout"][1]
		bars := svg.all(func(n *node) bool { return n.name == "rect" && n.attr["data-count"] != "" })
		top := bars[0]
		for _, r := range bars {
			if num(t, r.attr["data-count"]) > num(t, top.attr["data-count"]) {
				top = r
			}
		}
		x0, w := num(t, top.attr["x"]), num(t, top.attr["width"])
		if tx < x0-2 || tx > x0+w+2 {
			t.Errorf("%s: the tallest failure bar (x %v–%v) is not at the timeout marker (x %v)", hop, x0, x0+w, tx)
		}
		if from := num(t, top.attr["data-from-ms"]); from > *h.TimeoutMs || num(t, top.attr["data-to-ms"]) <= *h.TimeoutMs {
			t.Errorf("%s: tallest bar %v–%v ms does not contain the timeout %v", hop, from, top.attr["data-to-ms"], *h.TimeoutMs)
		}
	}
}

func TestCheckHTMLStructure(t *testing.T) {
	cr := demoCheck(t)
	var b bytes.Buffer
	if err := Check(&b, "html", cr, Options{}); err != nil {
		t.Fatal(err)
	}
	root := parseHTML(t, b.Bytes())
	checkSelfContained(t, b.Bytes(), root)
	v := root.all(func(n *node) bool { return n.attr["data-verdict"] != "" })
	if len(v) != 1 || v[0].attr["data-verdict"] != cr.Verdict {
		t.Errorf("verdict banner missing or not %q", cr.Verdict)
	}
	rows := root.all(func(n *node) bool { return n.name == "tr" && n.attr["data-policy"] != "" })
	land := root.all(byAttr("data-chart", "landing"))
	if len(rows) != len(cr.Results) || len(land) != len(cr.Results) {
		t.Fatalf("%d policies but %d rows and %d landing charts", len(cr.Results), len(rows), len(land))
	}
	var axisEnd string
	for i, r := range cr.Results {
		if rows[i].attr["data-policy"] != r.Policy.Name || land[i].attr["data-hop"] != r.Policy.Name {
			t.Errorf("policy %d: order differs from the report (%s)", i, r.Policy.Name)
		}
		if !strings.Contains(rows[i].textContent(), r.Verdict) {
			t.Errorf("%s: row does not show verdict %s", r.Policy.Name, r.Verdict)
		}
		if got := barTotal(t, land[i]); got != r.Replay.Failed {
			t.Errorf("%s: landing bars hold %d, want %d failed", r.Policy.Name, got, r.Replay.Failed)
		}
		ticks := land[i].all(func(n *node) bool { return n.name == "text" && n.attr["class"] == "xtick" })
		if len(ticks) == 0 {
			t.Fatalf("%s: no x axis", r.Policy.Name)
		}
		end := ticks[len(ticks)-1].text
		if axisEnd == "" {
			axisEnd = end
		} else if end != axisEnd {
			t.Errorf("%s: axis ends at %s, others at %s: small multiples must share the axis", r.Policy.Name, end, axisEnd)
		}
		if c := r.Policy.Content; c != nil {
			if m, ok := markers(t, land[i])["budget"]; ok && m[0] != c.BudgetMs {
				t.Errorf("%s: budget marker at %v, want %v", r.Policy.Name, m[0], c.BudgetMs)
			}
		}
		f := root.all(byAttr("data-findings", r.Policy.Name))
		if len(f) != 1 {
			t.Fatalf("%s: %d findings blocks", r.Policy.Name, len(f))
		}
		if got := len(f[0].all(func(n *node) bool { return n.attr["data-lint"] != "" })); got != len(r.Lint) {
			t.Errorf("%s: %d lint findings shown, want %d", r.Policy.Name, got, len(r.Lint))
		}
		if got := len(f[0].all(func(n *node) bool { return n.attr["data-gate"] != "" })); got != len(r.Gates) {
			t.Errorf("%s: %d gates shown, want %d", r.Policy.Name, got, len(r.Gates))
		}
	}
}

// Hostile strings from logs and policies. Each would run script or inject
// an element if it reached the page unescaped.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(1)>`,
	`</title><svg onload=alert(1)>`,
}

// hostileLogs are spans whose hop names are the hostile strings, one
// failing attempt each so that every section of the report names them.
func hostileLogs() []byte {
	var b bytes.Buffer
	for i := 0; i < 30; i++ {
		for j, h := range hostile {
			q, _ := jsonString(h)
			status := "ok"
			if i%10 == 0 {
				status = "error"
			}
			b.WriteString(`{"trace_id":"t` + strconv.Itoa(i) + `","span_id":"s` + strconv.Itoa(i) + "-" + strconv.Itoa(j) +
				`","hop":` + q + `,"start":` + strconv.Itoa(1_700_000_000_000_000_000+i*1_000_000_000) +
				`,"duration_ms":` + strconv.Itoa(100+i*7+j) + `,"status":"` + status + `"}` + "\n")
		}
	}
	return b.Bytes()
}

func jsonString(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// hostileReports are an analysis and a check whose hops, policy name and
// lint messages carry the hostile strings.
func hostileReports(t *testing.T) (*analyze.Report, *check.Report) {
	t.Helper()
	l := readLogs(t, hostile[0]+".jsonl", hostileLogs())
	rep := l.Report(analyze.Options{})
	if len(rep.Hops) != len(hostile) {
		t.Fatalf("hostile fixture gave %d hops, want %d", len(rep.Hops), len(hostile))
	}
	y := "budget: 10s\ndefault:\n  timeout: 1s\n  retries: 1\nhops:\n  '" + strings.ReplaceAll(hostile[1], "'", "''") + "':\n    timeout: 2s\n  '<b>not-in-logs</b>':\n    timeout: 1s\n"
	p, err := policy.Parse(hostile[2]+".yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	p.Name = hostile[0]
	cr := check.Run(rep, l.Requests, []*policy.Policy{p}, check.Options{Replay: replay.Options{RetryModel: replay.ModelSame}, Gates: check.Gates{MinSuccess: 0.999}})
	return rep, cr
}

func TestHostileNamesEscaped(t *testing.T) {
	rep, cr := hostileReports(t)
	for _, kind := range []string{"analyze", "check"} {
		var b bytes.Buffer
		var err error
		if kind == "analyze" {
			err = Analysis(&b, "html", rep, Options{})
		} else {
			err = Check(&b, "html", cr, Options{})
		}
		if err != nil {
			t.Fatal(err)
		}
		root := parseHTML(t, b.Bytes())
		checkSelfContained(t, b.Bytes(), root)
		text := root.textContent()
		for _, h := range hostile {
			if !strings.Contains(text, h) {
				t.Errorf("%s: %q does not appear as text", kind, h)
			}
		}
		if kind == "analyze" {
			for _, h := range hostile {
				if len(root.all(byAttr("data-hop", h))) == 0 {
					t.Errorf("%s: no element carries data-hop %q intact", kind, h)
				}
			}
		}
	}
	// Markdown: no raw angle bracket from a hostile string survives.
	var b bytes.Buffer
	if err := Analysis(&b, "markdown", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Check(&b, "markdown", cr, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "<img", "<svg", "</title"} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("markdown contains raw %q", bad)
		}
	}
}
