package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
)

// manyHopName is the long, unbreakable name of hop k, the way service
// meshes spell them (host, package, service and method in one token).
func manyHopName(k int) string {
	return fmt.Sprintf("checkout-frontend-gateway.payments-prod.svc.cluster.local/com.example.commerce.checkout.v3.CheckoutOrchestrationService/PlaceOrderWithInventoryReservation%02d", k)
}

// manyHopsLogs are n hops; every other hop has fewer attempts than a p99
// needs (few), the rest 150. One attempt in ten fails: on every third hop
// at a 2 s timeout, elsewhere fast with a 503.
func manyHopsLogs(n, few int) []byte {
	var b bytes.Buffer
	for k := 0; k < n; k++ {
		attempts := 150
		if k%2 == 0 {
			attempts = few
		}
		for i := 0; i < attempts; i++ {
			d, status, code := 80+(i*37+k*11)%400, "ok", 200
			if i%10 == 0 {
				status, code = "error", 503
				if k%3 == 0 {
					d = 2000
				} else {
					d = 15 + i%7
				}
			}
			fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"s%d","hop":%q,"start":%d,"duration_ms":%d,"status":%q,"code":%d}`+"\n",
				i, k, manyHopName(k), 1_700_000_000_000_000_000+int64(i)*1_000_000_000+int64(k)*3_000_000, d, status, code)
		}
	}
	return b.Bytes()
}

func manyHopsReport(t *testing.T, n, few int) *analyze.Report {
	t.Helper()
	l := readLogs(t, "many-hops.jsonl", manyHopsLogs(n, few))
	rep := l.Report(analyze.Options{})
	if len(rep.Hops) != n {
		t.Fatalf("fixture gave %d hops, want %d", len(rep.Hops), n)
	}
	return rep
}

// TestTooFewSamplesOneLine: 28 of 55 hops with too few attempts for a p99
// give one footnote that names them, in text, Markdown and HTML, while the
// JSON report keeps the 28 warnings; every such hop's row carries its mark.
func TestTooFewSamplesOneLine(t *testing.T) {
	rep := manyHopsReport(t, 55, 40)
	var few []string
	for _, w := range rep.Warnings {
		if w.Code == "too-few-samples" {
			few = append(few, w.Hop)
		}
	}
	if len(few) != 28 {
		t.Fatalf("%d too-few-samples warnings, want 28", len(few))
	}
	render := func(format string) string {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	head := "28 hops have fewer than 100 attempts (p99 rests on the largest values): "
	tail := ", … and 23 more"
	for _, format := range []string{"text", "markdown"} {
		out := render(format)
		if format == "text" {
			out = unwrapWarnings(out)
		}
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "too-few-samples") || strings.Contains(l, "too\\-few\\-samples") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 {
			t.Fatalf("%s: %d too-few-samples lines, want 1:\n%s", format, len(lines), strings.Join(lines, "\n"))
		}
		want := head + strings.Join(few[:5], ", ") + tail
		if format == "markdown" {
			want = md(want)
		}
		if !strings.Contains(lines[0], want) {
			t.Errorf("%s: footnote\n%s\nwant it to contain\n%s", format, lines[0], want)
		}
		// The footnote's mark is on every hop it stands for, and on no other.
		mark := regexp.MustCompile(`^\s*(\S+) \S*too`).FindStringSubmatch(strings.ReplaceAll(lines[0], "**", ""))
		if mark == nil {
			t.Fatalf("%s: no mark in %q", format, lines[0])
		}
		marked := 0
		for _, m := range regexp.MustCompile(`Reservation\d\d ([⁰¹²³⁴⁵⁶⁷⁸⁹˒]+)`).FindAllStringSubmatch(out, -1) {
			for _, x := range strings.Split(m[1], "˒") {
				if x == mark[1] {
					marked++
				}
			}
		}
		if marked != 28 {
			t.Errorf("%s: %d rows carry the mark %s, want 28", format, marked, mark[1])
		}
	}
	root := parseHTML(t, []byte(render("html")))
	lis := root.all(byAttr("data-warning", "too-few-samples"))
	if len(lis) != 1 {
		t.Fatalf("html: %d too-few-samples warnings, want 1", len(lis))
	}
	if txt := lis[0].textContent(); !strings.Contains(txt, head+strings.Join(few[:5], ", ")+tail) {
		t.Errorf("html: warning reads %q", txt)
	}
	id := lis[0].attr["id"]
	notes := 0
	for _, a := range root.all(func(n *node) bool { return n.name == "a" && n.attr["href"] == "#"+id }) {
		_ = a
		notes++
	}
	if notes != 28 {
		t.Errorf("html: %d hop rows point at %s, want 28", notes, id)
	}
	if js := render("json"); strings.Count(js, `"code": "too-few-samples"`) != 28 {
		t.Errorf("json: %d too-few-samples warnings, want 28 (the JSON keeps them all)", strings.Count(js, `"code": "too-few-samples"`))
	}
}

// TestTooFewSamplesShortList: with a few such hops, the line names them
// all; with one, the hop's own warning is shown.
func TestTooFewSamplesShortList(t *testing.T) {
	for _, c := range []struct {
		n, few int
		want   string
	}{
		{12, 40, "6 hops have fewer than 100 attempts (p99 rests on the largest values): " +
			strings.Join([]string{manyHopName(0), manyHopName(2), manyHopName(4), manyHopName(6), manyHopName(8), manyHopName(10)}, ", ")},
		{2, 1, manyHopName(0) + ": 1 attempt: p99 needs at least 100"},
	} {
		rep := manyHopsReport(t, c.n, c.few)
		var b bytes.Buffer
		if err := Analysis(&b, "text", rep, Options{}); err != nil {
			t.Fatal(err)
		}
		if strings.Count(b.String(), "too-few-samples") != 1 || !strings.Contains(unwrapWarnings(b.String()), c.want) {
			t.Errorf("%d hops: want one too-few-samples line with %q:\n%s", c.n, c.want, b.String())
		}
	}
}

// TestSingularCounts: one of anything is not "1 requests".
func TestSingularCounts(t *testing.T) {
	in := `{"trace_id":"t1","span_id":"s1","hop":"lonely","start":1700000000000000000,"duration_ms":40,"status":"error","code":503}` + "\n"
	l := readLogs(t, "one.jsonl", []byte(in))
	rep := l.Report(analyze.Options{})
	p, err := policy.Parse("one.yaml", []byte("budget: 1s\ndefault:\n  timeout: 100ms\n  retries: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	p.Name = "one"
	cr := check.Run(rep, l.Requests, []*policy.Policy{p}, check.Options{Replay: replay.Options{RetryModel: replay.ModelSame}})
	var out strings.Builder
	for _, format := range []string{"text", "markdown", "html"} {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := Check(&b, format, cr, Options{}); err != nil {
			t.Fatal(err)
		}
		s := b.String()
		if format == "html" {
			s = parseHTML(t, b.Bytes()).textContent()
		}
		out.WriteString(s)
	}
	// check's lint says "all 1 hops seen use default": check/ is not
	// this package's to fix.
	s := strings.ReplaceAll(out.String(), "all 1 hops seen", "")
	for _, bad := range regexp.MustCompile(`\b1 (requests|spans|files|hops|attempts|calls|failed attempts|records|policies|retried calls|retries)\b`).FindAllString(s, -1) {
		t.Errorf("%q in the reports", bad)
	}
	for _, want := range []string{"1 span in 1 request from 1 file", "1 failed attempt", "1 attempt: p99", "1 request replayed from 1 span"} {
		if !strings.Contains(s, want) {
			t.Errorf("reports do not say %q", want)
		}
	}
	if t.Failed() {
		t.Log(s)
	}
}

// unwrapWarnings joins the text report's wrapped footnotes back into one
// line each: a line of the warnings section that continues a footnote
// (four spaces, no mark) goes back onto it after a space.
func unwrapWarnings(s string) string {
	var out []string
	in := false
	for _, l := range strings.Split(s, "\n") {
		switch {
		case l == "warnings":
			in = true
		case l == "":
			in = false
		case in && strings.HasPrefix(l, "    ") && len(out) > 0:
			out[len(out)-1] += " " + strings.TrimPrefix(l, "    ")
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
