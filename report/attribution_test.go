package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/span"
)

// badPodReport analyses generated traces of a gateway calling cart and
// auth: cart runs on five pods and cart-3 is slow on a quarter of its
// calls; the client spans carry the peer's address, the server spans their
// pod.
func badPodReport(t *testing.T) *analyze.Report {
	t.Helper()
	r := rand.New(rand.NewPCG(4, 2))
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	var spans []span.Span
	for i := range 1500 {
		trace := fmt.Sprintf("%032x", uint64(i)*0x9E3779B97F4A7C15)
		root := span.Span{TraceID: trace, SpanID: trace[:8] + "r", Service: "gw", Name: "GET /", Kind: "server", Hop: "gw GET /", Start: t0, Weight: 1, Status: span.OK}
		at := t0 + int64(time.Millisecond)
		for k, svc := range []string{"cart", "auth"} {
			pod := r.IntN(5)
			server := time.Duration(float64(40*time.Millisecond) * math.Exp(0.3*r.NormFloat64()))
			if svc == "cart" && pod == 3 && r.IntN(4) == 0 {
				server += time.Duration(300+r.IntN(400)) * time.Millisecond
			}
			gap := time.Duration(1+r.IntN(3)) * time.Millisecond
			id := fmt.Sprintf("%s%d", trace[:8], k)
			cl := span.Span{TraceID: trace, SpanID: id + "c", ParentID: root.SpanID, Service: "gw", Name: "→ " + svc, Kind: "client",
				Hop: "gw → " + svc, Start: at, Duration: int64(server + gap), Weight: 1, Status: span.OK,
				Attrs: []span.Attr{{Key: "network.peer.address", Value: fmt.Sprintf("10.0.%d.%d", k, pod)}}}
			sv := span.Span{TraceID: trace, SpanID: id + "s", ParentID: cl.SpanID, Service: svc, Name: "handle", Kind: "server",
				Hop: svc + " handle", Start: at + int64(gap)/2, Duration: int64(server), Weight: 1, Status: span.OK,
				Attrs: []span.Attr{{Key: "k8s.pod.name", Value: fmt.Sprintf("%s-%d", svc, pod)}, {Key: "service.version", Value: "2.1"}}}
			spans = append(spans, cl, sv)
			at += cl.Duration
		}
		root.Duration = at - t0 + int64(time.Millisecond)
		spans = append(spans, root)
		t0 += int64(time.Second)
	}
	l := pipeline.FromSpans(spans, &ingest.Stats{Files: []string{"bad-pod.jsonl"}})
	return l.Report(analyze.Options{})
}

// The bad pod shows where the tail comes from in every format: a line per
// attribution under the ranking (hop, share of its slow attempts, key=value,
// lift, counts, an example trace), the eject advice in the recommendation,
// and, in HTML, the hop's own details; the JSON carries the contract's
// fields.
func TestAttributionInReports(t *testing.T) {
	rep := badPodReport(t)
	var a *analyze.Attribution
	for _, h := range rep.Hops {
		if h.Hop == "cart handle" && len(h.Attribution) > 0 {
			a = &h.Attribution[0]
		}
	}
	if a == nil || a.Value != "cart-3" {
		t.Fatalf("cart handle's attribution: %+v", a)
	}
	text := fmt.Sprintf("%s of its slow attempts on k8s.pod.name=cart-3 (lift %s×, %d of %d)", units.Percent(a.Share, 1), trimFloat(a.Lift), a.Tail, a.HopCount)
	want := "cart handle: " + text + ", e.g. trace " + a.Examples[0]
	for _, format := range []string{"text", "markdown", "html"} {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if format == "html" {
			out = html.UnescapeString(out)
		} else if format == "markdown" {
			out = strings.ReplaceAll(out, `\`, "")
		}
		if format == "html" {
			// The hop name in bold, the examples in a muted span.
			want = text + ` <span class="muted">(e.g. trace ` + a.Examples[0]
		}
		if !strings.Contains(out, want) {
			t.Errorf("%s: no line %q in\n%s", format, want, out)
		}
		// The calling hop, which the policy times, is told to eject the
		// instance its own spans name (the peer address).
		if !strings.Contains(out, "eject network.peer.address=10.0.0.3 (outlier detection)") {
			t.Errorf("%s: the recommendation does not say eject", format)
		}
		// Under the ranking: the attribution comes after the ranking's
		// first row and before the hop table.
		rank, attr := strings.Index(out, "1. "), strings.Index(out, "of its slow attempts on")
		if format == "html" {
			rank, attr = strings.Index(out, `id="tail-table"`), strings.Index(out, `id="attribution"`)
		}
		if rank < 0 || attr < rank {
			t.Errorf("%s: the attribution is not under the ranking (%d, %d)", format, rank, attr)
		}
	}
	var b bytes.Buffer
	if err := Analysis(&b, "json", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hops []struct {
			Hop         string
			Attribution []map[string]any
			Examples    map[string]any
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range doc.Hops {
		if h.Examples["slowest_trace_id"] == nil {
			t.Errorf("%s: no slowest_trace_id in %v", h.Hop, h.Examples)
		}
		for _, x := range h.Attribution {
			for _, k := range []string{"key", "value", "lift", "tail", "total", "examples", "of", "p_value"} {
				if _, ok := x[k]; !ok {
					t.Errorf("%s: attribution without %s: %v", h.Hop, k, x)
				}
			}
			found = true
		}
	}
	if !found {
		t.Error("no attribution in the JSON")
	}
}

func trimFloat(x float64) string {
	s := fmt.Sprintf("%g", x)
	return s
}

// attrScript measures the opening section and the hop details in the
// browser: each attribution item's text and box, and anything past the
// window's right edge.
const attrScript = `<script>
(function () {
  var W = document.documentElement.clientWidth, out = {top: [], detail: [], rank: 0, off: []};
  var box = function (e) { var r = e.getBoundingClientRect(); return {text: e.innerText, w: r.width, h: r.height, right: r.right, top: r.top}; };
  document.querySelectorAll("#attribution li").forEach(function (e) { out.top.push(box(e)); });
  document.querySelectorAll(".hop .attribution li").forEach(function (e) { out.detail.push(box(e)); });
  var t = document.getElementById("tail-table");
  if (t) { out.rank = t.tBodies[0].rows.length; out.rankBottom = t.getBoundingClientRect().bottom; }
  document.querySelectorAll("body *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > W + 1 && out.off.length < 10) out.off.push(e.tagName + "." + e.className + " right " + Math.round(r.right));
  });
  var p = document.createElement("pre"); p.id = "measure"; p.textContent = JSON.stringify(out); document.body.appendChild(p);
})();
</script>`

// In the browser, the HTML report shows the ranking and, under it, the
// attribution as visible, readable lines (the pod, its lift, an example
// trace), the same in the hop's details, all within a laptop window; the
// page itself (with its CSP) logs nothing.
func TestChromiumAttribution(t *testing.T) {
	bin := chromiumPath(t)
	rep := badPodReport(t)
	var b bytes.Buffer
	if err := Analysis(&b, "html", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, console := browse(t, bin, writeTemp(t, "attr.html", b.Bytes()), "--dump-dom"); len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	doc := reCSP.ReplaceAllString(b.String(), "")
	doc = strings.Replace(doc, "</body>", attrScript+"</body>", 1)
	dom, console := browse(t, bin, writeTemp(t, "attr-measure.html", []byte(doc)), "--dump-dom", "--window-size=1366,900")
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	m := regexp.MustCompile(`<pre id="measure">([^<]*)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the script did not run:\n%.2000s", dom)
	}
	type item struct {
		Text        string
		W, H, Right float64
		Top         float64
	}
	var got struct {
		Top, Detail []item
		Rank        int
		RankBottom  float64
		Off         []string
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &got); err != nil {
		t.Fatal(err)
	}
	if got.Rank == 0 {
		t.Error("no ranking rows rendered")
	}
	if len(got.Top) == 0 || len(got.Detail) == 0 {
		t.Fatalf("attribution rendered: top %d, details %d", len(got.Top), len(got.Detail))
	}
	for _, set := range [][]item{got.Top, got.Detail} {
		seen := false
		for _, x := range set {
			if x.W <= 0 || x.H <= 0 || x.H > 100 {
				t.Errorf("item %q is %gx%g px: not a readable line", x.Text, x.W, x.H)
			}
			if strings.Contains(x.Text, "k8s.pod.name=cart-3") && strings.Contains(x.Text, "lift") && strings.Contains(x.Text, "e.g. trace") {
				seen = true
			}
		}
		if !seen {
			t.Errorf("no visible line names cart-3 with its lift and a trace: %+v", set)
		}
	}
	if got.Top[0].Top < got.RankBottom {
		t.Errorf("the attribution (top %g) is not under the ranking (bottom %g)", got.Top[0].Top, got.RankBottom)
	}
	if len(got.Off) > 0 {
		t.Errorf("past the window's right edge: %v", got.Off)
	}
}
