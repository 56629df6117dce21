package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tailscope/tailscope/analyze"
)

// invisibleClasses are the characters a reader cannot see or that act on
// the terminal or on the order of the text around them, by class.
var invisibleClasses = []struct {
	class string
	in    string
	want  string
}{
	{"C0 ESC", "a\x1b[2Jb", `a\x1b[2Jb`},
	{"C0 BEL", "a\x07b", `a\x07b`},
	{"C0 NUL", "a\x00b", `a\x00b`},
	{"C0 OSC title", "a\x1b]0;pwned\x07b", `a\x1b]0;pwned\x07b`},
	{"C0 tab newline CR", "a\tb\nc\rd", `a\tb\nc\rd`},
	{"C0 backspace", "ok\x08\x08no", `ok\x08\x08no`},
	{"DEL", "a\x7fb", `a\x7fb`},
	{"C1 NEL", "a\u0085b", `a\u0085b`},
	{"C1 CSI", "a\u009b31mb", `a\u009b31mb`},
	{"C1 OSC ST", "a\u009d0;x\u009cb", `a\u009d0;x\u009cb`},
	{"raw 8-bit CSI byte", "a\x9b31mb", `a\x9b31mb`},
	{"invalid UTF-8", "a\xff\xfeb", `a\xff\xfeb`},
	{"bidi RLO", "user\u202Egnp.exe", `user\u202egnp.exe`},
	{"bidi LRE RLE PDF LRO", "\u202A\u202B\u202C\u202D", `\u202a\u202b\u202c\u202d`},
	{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`},
	{"bidi marks", "a\u200Eb\u200Fc\u061Cd", `a\u200eb\u200fc\u061cd`},
	{"zero-width space joiners", "pay\u200Bment\u200C\u200D", `pay\u200bment\u200c\u200d`},
	{"word joiner", "a\u2060b", `a\u2060b`},
	{"BOM", "\uFEFFcheckout", `\ufeffcheckout`},
	{"soft hyphen", "ca\u00ADrt", `ca\u00adrt`},
	{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
	{"Hangul filler", "a\u3164b", `a\u3164b`},
	{"tag characters", "a\U000E0041\U000E007Fb", `a\U000e0041\U000e007fb`},
}

// visibleKept pass through unchanged.
var visibleKept = []string{
	"", "checkout", "payments.v2/Authorize", "café", "日本語のホップ", "עברית", "مرحبا", "🚀 launch",
	`C:\logs\spans.jsonl`, "a b", "\u00A0nbsp", "x\u0301", // combining acute stays: it is visible on its letter
}

func TestVisible(t *testing.T) {
	for _, c := range invisibleClasses {
		got := Visible(c.in)
		if got != c.want {
			t.Errorf("%s: Visible(%q) = %q, want %q", c.class, c.in, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: Visible(%q) is not UTF-8", c.class, c.in)
		}
		if hasInvisible(got) {
			t.Errorf("%s: Visible(%q) = %q still holds an invisible character", c.class, c.in, got)
		}
	}
	for _, s := range visibleKept {
		if got := Visible(s); got != s {
			t.Errorf("Visible(%q) = %q, want it unchanged", s, got)
		}
	}
}

func hasInvisible(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if invisible(r, n) {
			return true
		}
		i += n
	}
	return false
}

// TestNoInvisibleInReports: hop names carrying every class reach no text
// output raw: text, Markdown and HTML (whose XML parse would also fail on
// a raw control character, attributes included); each shows the escape
// instead. JSON keeps the real names.
func TestNoInvisibleInReports(t *testing.T) {
	var in bytes.Buffer
	for i, c := range invisibleClasses {
		q, err := jsonString(c.in)
		if err != nil {
			t.Fatal(err)
		}
		// JSON needs control characters and invalid bytes escaped; keep
		// the rest raw so the decoder sees them as they came.
		q = strings.NewReplacer("\x1b", `\u001b`, "\x07", `\u0007`, "\x00", `\u0000`, "\t", `\t`, "\n", `\n`, "\r", `\r`,
			"\x08", `\u0008`, "\x7f", `\u007f`).Replace(q)
		for j := 0; j < 3; j++ {
			status := "ok"
			if j == 0 {
				status = "error"
			}
			in.WriteString(`{"trace_id":"t` + string(rune('a'+i)) + string(rune('a'+j)) + `","span_id":"s","hop":` + q +
				`,"start":1700000000000000000,"duration_ms":` + string(rune('1'+j)) + `,"status":"` + status + `"}` + "\n")
		}
	}
	l := readLogs(t, "invisible.jsonl", in.Bytes())
	rep := l.Report(analyze.Options{})
	raw := 0
	for _, h := range rep.Hops {
		if hasInvisible(h.Hop) {
			raw++
		}
	}
	if raw < len(invisibleClasses)-3 {
		t.Fatalf("only %d of %d hop names reached the report with their characters: the fixture tests nothing", raw, len(invisibleClasses))
	}
	for _, format := range []string{"text", "markdown", "html"} {
		var b bytes.Buffer
		if err := Analysis(&b, format, rep, Options{Color: format == "text"}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if format == "text" {
			out = stripANSI(out)
		}
		if format == "html" {
			out = parseHTML(t, b.Bytes()).textContent()
		}
		for i := 0; i < len(out); {
			r, n := utf8.DecodeRuneInString(out[i:])
			if invisible(r, n) && r != '\n' && !(format == "html" && (r == '\t' || r == '\r')) {
				line := out[strings.LastIndexByte(out[:i], '\n')+1:]
				if k := strings.IndexByte(line, '\n'); k >= 0 {
					line = line[:k]
				}
				t.Errorf("%s: raw %U in output line %q", format, r, line)
				break
			}
			i += n
		}
		for _, want := range []string{`\x1b[2J`, `\u202egnp`, `\u2066a`, `pay\u200bment`, `\ufeffcheckout`, `\u009b31m`} {
			w := want
			if format == "markdown" {
				w = md(want)
			}
			if !strings.Contains(out, w) {
				t.Errorf("%s: escape %q not shown", format, w)
			}
		}
	}
	var b bytes.Buffer
	if err := Analysis(&b, "json", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "user\u202Egnp.exe") {
		t.Error("json: the real hop name is not kept")
	}
}
