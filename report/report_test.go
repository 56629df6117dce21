package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/quantile"
)

// cases are the reports the golden files are made of: the seed sample as
// recorded without timeouts, as config A logged it (timeouts, retries,
// censored tails), and demo's check of A–E.
var cases = []struct {
	name          string
	file, inForce string
	check         bool
}{
	{name: "analyze-seed", file: "spans.jsonl"},
	{name: "analyze-seed-under-A", file: "recorded-under-A.jsonl", inForce: "A"},
	{name: "check-demo", check: true},
}

func render(t *testing.T, format string, name, file, inForce string, isCheck bool, opt Options) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	if isCheck {
		err = Check(&b, format, demoCheck(t), opt)
	} else {
		rep, _ := analysisOf(t, file, inForce)
		err = Analysis(&b, format, rep, opt)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", name, format, err)
	}
	return b.Bytes()
}

// TestGolden compares every format with its golden file, HTML included (the
// page is deterministic: no times or random ids, so it needs no
// normalising; the browser tests check how it renders).
func TestGolden(t *testing.T) {
	for _, c := range cases {
		for _, f := range []struct{ format, ext string }{{"text", "txt"}, {"markdown", "md"}, {"json", "json"}, {"html", "html"}} {
			t.Run(c.name+"."+f.ext, func(t *testing.T) {
				got := render(t, f.format, c.name, c.file, c.inForce, c.check, Options{Names: cliLike})
				golden(t, c.name+"."+f.ext, got)
			})
		}
	}
	t.Run("analyze-seed-under-A.color.txt", func(t *testing.T) {
		got := render(t, "text", "color", "recorded-under-A.jsonl", "A", false, Options{Color: true, Names: cliLike})
		golden(t, "analyze-seed-under-A.color.txt", got)
	})
}

// TestDeterministic renders every format twice from independently built
// reports: same input, byte-identical output.
func TestDeterministic(t *testing.T) {
	for _, c := range cases {
		for _, format := range Formats {
			a := render(t, format, c.name, c.file, c.inForce, c.check, Options{})
			b := render(t, format, c.name, c.file, c.inForce, c.check, Options{})
			if !bytes.Equal(a, b) {
				t.Errorf("%s --format %s: two renders of the same input differ", c.name, format)
			}
		}
	}
}

// TestColorOnlyWhenAsked: no escape sequence leaks into uncoloured text,
// and colour changes nothing but the escapes.
func TestColorOnlyWhenAsked(t *testing.T) {
	for _, c := range cases {
		plain := render(t, "text", c.name, c.file, c.inForce, c.check, Options{})
		color := render(t, "text", c.name, c.file, c.inForce, c.check, Options{Color: true})
		if bytes.Contains(plain, []byte("\x1b[")) {
			t.Errorf("%s: escape sequence without Options.Color", c.name)
		}
		if !bytes.Contains(color, []byte("\x1b[")) {
			t.Errorf("%s: no colour with Options.Color", c.name)
		}
		if got := stripANSI(string(color)); got != string(plain) {
			t.Errorf("%s: coloured text differs from plain text beyond escapes:\n%s", c.name, got)
		}
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && s[j] != 'm' {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestTextColumnsAligned: in every table of the text report, each column
// starts at the same rune offset on every row (the header's offsets).
func TestTextColumnsAligned(t *testing.T) {
	out := string(render(t, "text", "a", "recorded-under-A.jsonl", "A", false, Options{}))
	lines := strings.Split(out, "\n")
	var head string
	for _, l := range lines {
		if strings.HasPrefix(l, "HOP ") {
			head = l
			break
		}
	}
	if head == "" {
		t.Fatalf("no hop table in:\n%s", out)
	}
	// The right edge of the ATTEMPTS column is where the numbers end.
	edge := runeIndex(head, "ATTEMPTS") + utf8.RuneCountInString("ATTEMPTS")
	rows := 0
	for _, l := range lines {
		for _, h := range []string{"forward", "generate", "retrieve"} {
			if strings.HasPrefix(l, h+" ") && strings.Contains(l, "ran-to-timeout") {
				rows++
				r := []rune(l)
				if edge > len(r) || r[edge-1] == ' ' || (edge < len(r) && r[edge] != ' ') {
					t.Errorf("row %q: attempts do not end at column %d", l, edge)
				}
			}
		}
	}
	if rows != 3 {
		t.Errorf("found %d hop rows, want 3", rows)
	}
}

func runeIndex(s, sub string) int {
	i := strings.Index(s, sub)
	return utf8.RuneCountInString(s[:i])
}

func TestWarningsAreFootnotes(t *testing.T) {
	rep, _ := analysisOf(t, "recorded-under-A.jsonl", "A")
	if len(rep.Warnings) == 0 {
		t.Fatal("fixture has no warnings")
	}
	for _, format := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for i, w := range rep.Warnings {
			mark := superscript(i + 1)
			if !strings.Contains(out, mark+" ") || !strings.Contains(out, w.Code) {
				t.Errorf("%s: warning %d (%s) has no footnote %s", format, i+1, w.Code, mark)
			}
			if w.Hop != "" && !strings.Contains(out, w.Hop+" "+mark) {
				t.Errorf("%s: hop %s does not point at footnote %s", format, w.Hop, mark)
			}
		}
	}
}

func TestCheckMarkdownVerdictFirst(t *testing.T) {
	cr := demoCheck(t)
	var b bytes.Buffer
	if err := Check(&b, "markdown", cr, Options{}); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	if !strings.Contains(first, verdictMark(cr.Verdict)) {
		t.Errorf("first line %q does not give the verdict %q", first, cr.Verdict)
	}
	// One table row per policy, in order, each with its own verdict.
	for _, r := range cr.Results {
		row := "| **" + r.Policy.Name + "** |"
		line := ""
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, row) {
				line = l
			}
		}
		if line == "" {
			t.Errorf("no row for policy %s", r.Policy.Name)
			continue
		}
		if !strings.HasSuffix(line, "| "+verdictMark(r.Verdict)+" |") {
			t.Errorf("row %q does not end in verdict %s", line, r.Verdict)
		}
	}
}

func TestMarkdownEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"forward", "forward"},
		{"a|b", `a\|b`},
		{"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{`"><img src=x onerror=alert(1)>`, `"&gt;&lt;img src=x onerror=alert(1)&gt;`},
		{"*bold* _it_ `code` [link](x) ~s~", "\\*bold\\* \\_it\\_ \\`code\\` \\[link\\](x) \\~s\\~"},
		{"two\nlines", `two\\nlines`},
		{"esc\x1b[2J", `esc\\x1b\[2J`},
		{`back\slash & co`, `back\\slash &amp; co`},
	} {
		if got := md(c.in); got != c.want {
			t.Errorf("md(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSparkline(t *testing.T) {
	bs := []quantile.Bucket{{FromMs: 100, ToMs: 125.9, Count: 10}, {FromMs: 1000, ToMs: 1258.9, Count: 40}, {FromMs: 7943, ToMs: 10000, Count: 5}}
	s := sparkline(bs, 100, 10000, 16)
	r := []rune(s)
	if len(r) != 16 {
		t.Fatalf("sparkline %q has %d columns, want 16", s, len(r))
	}
	// The tallest bar is the 1–1.26s bucket, halfway along a 100ms–10s log axis.
	if r[8] != '█' {
		t.Errorf("sparkline %q: column 8 should be full", s)
	}
	if r[0] == ' ' || r[15] == ' ' {
		t.Errorf("sparkline %q: the first and last buckets are missing", s)
	}
	if r[4] != ' ' {
		t.Errorf("sparkline %q: an empty range should be blank", s)
	}
	if sparkline(nil, 1, 10, 8) != "" || sparkline(bs, 10, 10, 8) != "" {
		t.Error("empty input or range should give an empty sparkline")
	}
}

func TestSuperscript(t *testing.T) {
	for n, want := range map[int]string{1: "¹", 9: "⁹", 10: "¹⁰", 23: "²³"} {
		if got := superscript(n); got != want {
			t.Errorf("superscript(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestNiceBounds(t *testing.T) {
	for _, c := range []struct{ x, floor, ceil float64 }{
		{1, 1, 1}, {3, 2, 5}, {7, 5, 10}, {199.5, 100, 200}, {12589, 10000, 20000}, {0.3, 0.2, 0.5},
	} {
		if f := niceFloor(c.x); f != c.floor {
			t.Errorf("niceFloor(%g) = %g, want %g", c.x, f, c.floor)
		}
		if g := niceCeil(c.x); g != c.ceil {
			t.Errorf("niceCeil(%g) = %g, want %g", c.x, g, c.ceil)
		}
	}
}

// fullDisk fails after n bytes, to check that write errors surface.
type fullDisk struct{ n int }

func (w *fullDisk) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteErrorsReturned(t *testing.T) {
	rep, _ := analysisOf(t, "recorded-under-A.jsonl", "A")
	cr := demoCheck(t)
	for _, format := range Formats {
		if err := Analysis(&fullDisk{n: 100}, format, rep, Options{}); err == nil {
			t.Errorf("analysis %s: write error not returned", format)
		}
		if err := Check(&fullDisk{n: 100}, format, cr, Options{}); err == nil {
			t.Errorf("check %s: write error not returned", format)
		}
	}
}

// The check fixture must exercise lint findings for the golden files to
// mean something; fail loudly if the fixture changes shape.
func TestFixturesHaveContent(t *testing.T) {
	cr := demoCheck(t)
	if len(cr.Results) != 5 {
		t.Fatalf("demo check has %d results, want 5", len(cr.Results))
	}
	rep, _ := analysisOf(t, "recorded-under-A.jsonl", "A")
	failed := 0
	for _, h := range rep.Hops {
		failed += h.FailedAttempts
	}
	if failed == 0 || rep.Requests.MeanTimeToFailureMs == nil {
		t.Fatal("recorded-under-A has no failures: the failure charts would go untested")
	}
}

// TestTextNoTerminalEscapes: a hop name carrying escape sequences (which
// could retitle or recolour the reader's terminal) prints inert.
func TestTextNoTerminalEscapes(t *testing.T) {
	var in bytes.Buffer
	for i := 0; i < 5; i++ {
		in.WriteString(`{"trace_id":"t` + string(rune('a'+i)) + `","span_id":"s","hop":"evil\u001b]0;pwned\u0007\u001b[2J","start":1,"duration_ms":` +
			string(rune('1'+i)) + `,"status":"error"}` + "\n")
	}
	l := readLogs(t, "evil.jsonl", in.Bytes())
	rep := l.Report(analyze.Options{})
	var b bytes.Buffer
	if err := Analysis(&b, "text", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(b.Bytes(), "\x1b\x07") {
		t.Errorf("text report passes control characters through:\n%q", b.String())
	}
	if !strings.Contains(b.String(), `evil\x1b]0;pwned\x07\x1b[2J`) {
		t.Errorf("the hop name is not shown with its control characters replaced:\n%s", b.String())
	}
}
