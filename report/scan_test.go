package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
)

// One rule for numbers (internal/units), checked on what the
// reports print rather than on the functions that print it: every output
// format of every fixture is scanned for
//
//   - a duration or a percentage with more than three significant digits
//     (whole seconds from 1000s on, and a share just below 100% that three
//     digits would read as 100%, are the rule's own exceptions);
//   - one value printed two ways in one document (1458ms beside 1.46s,
//     34.669% beside 34.7%);
//   - a table column whose single-duration cells mix units (Markdown and
//     HTML tables: the text tables print the same cells, which
//     TestHopTableUnitsOnRealExports holds);
//   - a raw nanosecond timestamp (19 digits of Unix ns) in text, or as a
//     JSON number outside a key that names its unit as ns.

// scanned is one rendered output: the fixture, the format, the bytes.
type scanned struct {
	name, format string
	out          string
}

// scanFixtures renders every fixture in every format: the golden cases,
// the seed as logged under A with no policy in force, the real exports,
// comparisons of a few and of many requests, a check of a hand-written
// policy, and the verbose text.
func scanFixtures(t *testing.T) []scanned {
	t.Helper()
	var out []scanned
	analysis := func(name string, rep *analyze.Report) {
		for _, f := range Formats {
			var b bytes.Buffer
			if err := Analysis(&b, f, rep, Options{}); err != nil {
				t.Fatal(err)
			}
			out = append(out, scanned{name, f, b.String()})
		}
		var b bytes.Buffer
		if err := Analysis(&b, "text", rep, Options{Verbose: true}); err != nil {
			t.Fatal(err)
		}
		out = append(out, scanned{name, "text --verbose", b.String()})
	}
	checkOf := func(name string, rep *check.Report) {
		for _, f := range Formats {
			var b bytes.Buffer
			if err := Check(&b, f, rep, Options{}); err != nil {
				t.Fatal(err)
			}
			out = append(out, scanned{name, f, b.String()})
		}
	}
	seed, _ := analysisOf(t, "spans.jsonl", "")
	analysis("seed", seed)
	underA, _ := analysisOf(t, "recorded-under-A.jsonl", "A")
	analysis("seed under A, A in force", underA)
	asLogged, l := analysisOf(t, "recorded-under-A.jsonl", "")
	analysis("seed under A", asLogged)
	for _, w := range []time.Duration{10 * time.Second, time.Minute} {
		rep, l := analysisOf(t, "recorded-under-A.jsonl", "")
		c, ok := l.CompareWindows(w, w.String(), analyze.Options{})
		if !ok {
			t.Fatalf("no %s comparison", w)
		}
		rep.Compare = c
		analysis("seed under A, --compare-window "+w.String(), rep)
	}
	names := make([]string, 0)
	reals := realReports(t)
	for n := range reals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		analysis(n, reals[n])
	}
	checkOf("demo", demoCheck(t))
	pols, err := pipeline.SeedPolicies()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pols {
		if p.Name == "C" {
			checkOf("check C on the seed under A", check.Run(asLogged, l.Requests, []*policy.Policy{p}, check.Options{Replay: replay.Options{RetryModel: replay.ModelSame}}))
		}
	}
	return out
}

// humanText is what a person reads of an output: HTML without its tags,
// style and attributes, entities decoded; JSON's string values; text and
// Markdown as they are.
func humanText(t *testing.T, format, out string) string {
	t.Helper()
	switch format {
	case "html":
		out = reStyle.ReplaceAllString(out, " ")
		out = reTag.ReplaceAllString(out, " ")
		return html.UnescapeString(out)
	case "json":
		var doc any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				b.WriteString(x)
				b.WriteString("\n")
			case []any:
				for _, y := range x {
					walk(y)
				}
			case map[string]any:
				for _, y := range x {
					walk(y)
				}
			}
		}
		walk(doc)
		return b.String()
	}
	return out
}

var (
	reStyle = regexp.MustCompile(`(?s)<style.*?</style>`)
	reTag   = regexp.MustCompile(`<[^>]*>`)
	// A duration: a number and a unit, not inside a word, a version, an
	// id or a longer number.
	reDur = regexp.MustCompile(`(^|[^0-9A-Za-z.\-_/])(\d+(?:\.\d+)?)(ns|µs|ms|s)($|[^A-Za-z0-9_])`)
	// A percentage.
	rePct = regexp.MustCompile(`(^|[^0-9A-Za-z.\-_/])(\d+(?:\.\d+)?)%`)
	// Nineteen or eighteen digits not inside a longer run of digits or
	// hex: Unix nanoseconds from 1973 to 2286.
	reNanos = regexp.MustCompile(`(^|[^0-9A-Fa-f])(\d{18,19})($|[^0-9A-Fa-f])`)
)

// number is a duration or percentage token as printed.
type number struct {
	text  string  // as printed, "1.46s"
	value float64 // in ns for durations, in percent for percentages
	sig   int     // significant digits shown
	dur   bool
}

// sigOf counts the significant digits a number shows: leading zeros are
// not, nor are an integer's trailing zeros ("1100": 2, "1.00": 3).
func sigOf(num string) int {
	digits := strings.ReplaceAll(num, ".", "")
	digits = strings.TrimLeft(digits, "0")
	if !strings.Contains(num, ".") {
		digits = strings.TrimRight(digits, "0")
	}
	return len(digits)
}

var unitNs = map[string]float64{"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}

// numbersIn finds the durations and percentages of a text.
func numbersIn(s string) []number {
	var out []number
	for _, m := range reDur.FindAllStringSubmatch(s, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		out = append(out, number{text: m[2] + m[3], value: v * unitNs[m[3]], sig: sigOf(m[2]), dur: true})
	}
	for _, m := range rePct.FindAllStringSubmatch(s, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		out = append(out, number{text: m[2] + "%", value: v, sig: sigOf(m[2])})
	}
	return out
}

// tooPrecise says why a number breaks the three-digit rule, or "".
func tooPrecise(n number) string {
	if n.sig <= 3 {
		return ""
	}
	switch {
	case n.dur && n.value >= 1000e9 && !strings.Contains(n.text, "."):
		return "" // whole seconds from 1000s on
	case !n.dur && n.value >= 99 && n.value < 100:
		return "" // a share just below 100% keeps what tells it apart
	}
	return fmt.Sprintf("%s shows %d significant digits", n.text, n.sig)
}

// roundSig rounds x to n significant digits.
func roundSig(x float64, n int) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, float64(n-1-int(math.Floor(math.Log10(math.Abs(x))))))
	return math.Round(x*p) / p
}

// twoWays says whether a and b print one value two ways: both carry at
// least three significant digits, they read differently, and the finer
// rounded to the coarser's digits is the coarser (in a common unit).
// Values with fewer digits ("12s", "1.4s") are round numbers that many
// different quantities share; they say nothing about one value.
func twoWays(a, b number) bool {
	if a.dur != b.dur || a.text == b.text || a.sig < 3 || b.sig < 3 || a.value == 0 {
		return false
	}
	if a.sig > b.sig {
		a, b = b, a
	}
	// a is the coarser: b rounded to a's digits must be a, and the two
	// must differ in what they print (a unit, or digits).
	return roundSig(b.value, a.sig) == roundSig(a.value, a.sig)
}

// cellsOf are the table rows of a Markdown or HTML output, cells as text.
func cellsOf(format, out string) [][][]string {
	var tables [][][]string
	switch format {
	case "markdown":
		var cur [][]string
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "|") {
				if cur != nil {
					tables = append(tables, cur)
					cur = nil
				}
				continue
			}
			if strings.HasPrefix(l, "|:") || strings.HasPrefix(l, "|-") {
				continue
			}
			cells := strings.Split(strings.Trim(l, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], `\`, ""))
			}
			cur = append(cur, cells)
		}
		if cur != nil {
			tables = append(tables, cur)
		}
	case "html":
		for _, tb := range reTable.FindAllString(out, -1) {
			var rows [][]string
			for _, tr := range reRow.FindAllString(tb, -1) {
				var cells []string
				for _, td := range reCell.FindAllStringSubmatch(tr, -1) {
					c := reDetails.ReplaceAllString(td[1], "")
					cells = append(cells, strings.TrimSpace(html.UnescapeString(reTag.ReplaceAllString(c, ""))))
				}
				rows = append(rows, cells)
			}
			tables = append(tables, rows)
		}
	}
	return tables
}

var (
	reTable   = regexp.MustCompile(`(?s)<table.*?</table>`)
	reRow     = regexp.MustCompile(`(?s)<tr.*?</tr>`)
	reCell    = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
	reDetails = regexp.MustCompile(`(?s)<details>.*?</details>`)
	// A cell that is one duration, maybe marked (≥, †, ¹, "↑ from …").
	reDurCell = regexp.MustCompile(`^[≥<]?\s?(\d+(?:\.\d+)?)(ns|µs|ms|s)\b`)
)

// mixedColumns says which columns of a table hold single-duration cells
// in more than one unit.
func mixedColumns(rows [][]string) []string {
	var out []string
	if len(rows) < 2 {
		return nil
	}
	for col := range rows[0] {
		us := map[string]string{}
		for _, r := range rows[1:] {
			if col >= len(r) {
				continue
			}
			if m := reDurCell.FindStringSubmatch(r[col]); m != nil && strings.TrimSpace(reDurCell.ReplaceAllString(r[col], "")) == "" {
				us[m[2]] = r[col]
			}
		}
		if len(us) > 1 {
			var ex []string
			for u, c := range us {
				ex = append(ex, u+" ("+c+")")
			}
			sort.Strings(ex)
			out = append(out, fmt.Sprintf("column %q: %s", rows[0][col], strings.Join(ex, ", ")))
		}
	}
	return out
}

// unitOf is a number's unit as printed.
func unitOf(n number) string {
	return strings.TrimLeft(n.text, "0123456789.")
}

// reTableLine is a line of an aligned text table: three cells or more
// apart by runs of spaces.
var reTableLine = regexp.MustCompile(`\S(\s{2,}\S+){2,}`)

// proseOf is the human text without its tables: Markdown's rows, HTML's
// tables, the text report's aligned rows.
func proseOf(format, text string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		switch format {
		case "markdown":
			if strings.HasPrefix(t, "|") {
				continue
			}
		case "text", "text --verbose":
			if reTableLine.MatchString(t) {
				continue
			}
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	return b.String()
}

// rawNanos lists the JSON numbers that look like Unix nanoseconds under a
// key that does not say ns.
func rawNanos(t *testing.T, out string) []string {
	t.Helper()
	var doc any
	d := json.NewDecoder(strings.NewReader(out))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var found []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case json.Number:
			if f, err := x.Float64(); err == nil && math.Abs(f) >= 1e17 && !strings.HasSuffix(key, "_ns") {
				found = append(found, key+": "+x.String())
			}
		case []any:
			for _, y := range x {
				walk(key, y)
			}
		case map[string]any:
			for k, y := range x {
				walk(k, y)
			}
		}
	}
	walk("", doc)
	return found
}

func TestNumbersReadAlikeInEveryFormat(t *testing.T) {
	outs := scanFixtures(t)
	for _, s := range outs {
		text := humanText(t, s.format, s.out)
		where := s.name + " (" + s.format + ")"
		nums := numbersIn(text)
		if len(nums) == 0 {
			t.Errorf("%s: no duration or percentage found: the scan reads nothing", where)
		}
		seen := map[string]bool{}
		for _, n := range nums {
			if why := tooPrecise(n); why != "" && !seen[why] {
				seen[why] = true
				t.Errorf("%s: %s", where, why)
			}
		}
		// One value two ways: each distinct printing once. Across units
		// only in prose: a table column keeps one unit (STYLE.md 7), so
		// a cell of an ms column may read 2050ms where a sentence says
		// 2.05s; in one unit, anywhere.
		prose := map[string]bool{}
		proseText := text
		if s.format == "html" {
			proseText = humanText(t, "html", reTable.ReplaceAllString(s.out, " "))
		}
		for _, n := range numbersIn(proseOf(s.format, proseText)) {
			prose[n.text] = true
		}
		byText := map[string]number{}
		for _, n := range nums {
			byText[n.text] = n
		}
		texts := make([]string, 0, len(byText))
		for k := range byText {
			texts = append(texts, k)
		}
		sort.Strings(texts)
		for i, a := range texts {
			for _, b := range texts[i+1:] {
				x, y := byText[a], byText[b]
				if unitOf(x) != unitOf(y) && !(prose[a] && prose[b]) {
					continue
				}
				if twoWays(x, y) {
					t.Errorf("%s: one value printed two ways: %s and %s", where, a, b)
				}
			}
		}
		for _, m := range reNanos.FindAllStringSubmatch(text, -1) {
			t.Errorf("%s: a raw nanosecond timestamp: %s", where, m[2])
		}
		if s.format == "json" {
			for _, n := range rawNanos(t, s.out) {
				t.Errorf("%s: a raw nanosecond timestamp: %s", where, n)
			}
		}
		for _, tb := range cellsOf(s.format, s.out) {
			for _, m := range mixedColumns(tb) {
				t.Errorf("%s: mixed units in %s", where, m)
			}
		}
	}
}

// The scan's rules fail where they should: on the report's own bad cases
// that were reported against it, written out.
func TestNumberScanCatches(t *testing.T) {
	bad := "in the table 1458ms; the summary says ≥ p99 1.46s; 46.942% of calls; held out since 1772445601000000000"
	nums := numbersIn(bad)
	var precise []string
	for _, n := range nums {
		if why := tooPrecise(n); why != "" {
			precise = append(precise, n.text)
		}
	}
	if strings.Join(precise, " ") != "1458ms 46.942%" {
		t.Errorf("too precise: %v, want 1458ms and 46.942%%", precise)
	}
	a, b := number{}, number{}
	for _, n := range nums {
		switch n.text {
		case "1458ms":
			a = n
		case "1.46s":
			b = n
		}
	}
	if !twoWays(a, b) {
		t.Error("1458ms and 1.46s are not seen as one value printed two ways")
	}
	if twoWays(number{text: "1.43s", value: 1.43e9, sig: 3, dur: true}, number{text: "1.4s", value: 1.4e9, sig: 2, dur: true}) {
		t.Error("1.43s and 1.4s (a round number) are taken for one value")
	}
	if m := reNanos.FindAllString(bad, -1); len(m) != 1 {
		t.Errorf("raw ns timestamps found: %v", m)
	}
	if m := reNanos.FindAllString("trace 00000000000000002db17286b3e6b148 and span 1234567890123456", -1); len(m) != 0 {
		t.Errorf("ids taken for timestamps: %v", m)
	}
	if got := mixedColumns([][]string{{"p99"}, {"999ms"}, {"1.20s"}}); len(got) != 1 {
		t.Errorf("a column of 999ms and 1.20s: %v, want one mixed column", got)
	}
	if got := mixedColumns([][]string{{"p99"}, {"999ms"}, {"≥1200ms"}, {"–"}}); len(got) != 0 {
		t.Errorf("a column of ms: %v, want none mixed", got)
	}
}
