package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests open the HTML reports in headless Chromium (Debian's
// `chromium`, which .ci/run installs) and check what a reader's browser
// would do with them: load with no console message (the page's strict
// Content-Security-Policy turns any fetch or script into one), draw every
// chart, and run nothing from a hostile hop name. They skip when chromium
// is absent, and fail then when TAILSCOPE_REQUIRE_CHROMIUM is set (.ci/run
// sets it). Set TAILSCOPE_SCREENSHOTS=DIR to keep the screenshots.

// chromiumFlags keep the browser from touching the network or a profile.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--enable-logging=stderr", "--v=0", "--hide-scrollbars",
}

func chromiumPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("headless browser tests are slow; skipped with -short")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TAILSCOPE_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium not installed, and TAILSCOPE_REQUIRE_CHROMIUM is set (CI): apt-get install chromium")
	}
	t.Skip("chromium not installed (apt-get install chromium)")
	return ""
}

// browse opens file in headless Chromium with extra flags and returns its
// stdout and the console messages it logged.
func browse(t *testing.T, bin, file string, extra ...string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append(append([]string{"--user-data-dir=" + t.TempDir()}, chromiumFlags...), extra...)
	args = append(args, "file://"+file)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	var console []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			console = append(console, l)
		}
	}
	return stdout.String(), console
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	reSVG    = regexp.MustCompile(`<svg[^>]*data-chart="([a-z]+)"[^>]*data-hop="([^"]*)"`)
	reBar    = regexp.MustCompile(`<rect class="bar [^"]*"[^>]*data-count="`)
	reMarker = regexp.MustCompile(`data-marker="([a-z0-9]+)"`)
	// reHandler finds an element carrying an on* attribute: it walks the
	// tag's quoted attributes, so text inside a value does not count.
	reHandler = regexp.MustCompile(`<[a-zA-Z][\w:-]*(?:\s+[\w:-]+(?:="[^"]*")?)*\s+on[a-z]+=`)
)

// TestChromiumHarnessDetects is the control: a page that fetches an image
// and runs a script must be caught by the same checks, or the other tests
// would pass for the wrong reason.
func TestChromiumHarnessDetects(t *testing.T) {
	bin := chromiumPath(t)
	bad := `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"/>` +
		`<title>control</title></head><body><img src="http://127.0.0.1:9/x.png" onerror="document.title='ran'"/><script>document.title="ran"</script></body></html>`
	dom, console := browse(t, bin, writeTemp(t, "control.html", []byte(bad)), "--dump-dom")
	if len(console) < 2 {
		t.Errorf("the blocked image and script were not reported on the console: %q", console)
	}
	if !strings.Contains(dom, "<img") || !strings.Contains(dom, "<title>control</title>") {
		t.Errorf("DOM dump does not show the control page:\n%s", dom)
	}
	if !reHandler.MatchString(dom) {
		t.Errorf("the event handler of the control page was not found in:\n%s", dom)
	}
}

func TestChromiumSeedReport(t *testing.T) {
	bin := chromiumPath(t)
	rep, _ := analysisOf(t, "recorded-under-A.jsonl", "A")
	var b bytes.Buffer
	if err := Analysis(&b, "html", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	file := writeTemp(t, "seed.html", b.Bytes())
	dom, console := browse(t, bin, file, "--dump-dom")
	if len(console) > 0 {
		t.Errorf("console messages (a blocked fetch or script, or an error):\n%s", strings.Join(console, "\n"))
	}
	charts := map[string][]string{}
	for _, m := range reSVG.FindAllStringSubmatch(dom, -1) {
		charts[m[1]] = append(charts[m[1]], m[2])
	}
	for _, kind := range []string{"latency", "failures"} {
		if len(charts[kind]) != len(rep.Hops) {
			t.Errorf("rendered DOM has %d %s charts, want one per hop (%d)", len(charts[kind]), kind, len(rep.Hops))
		}
	}
	if len(charts["landing"]) != 1 {
		t.Errorf("rendered DOM has %d failure-landing charts, want 1", len(charts["landing"]))
	}
	if n := len(reBar.FindAllString(dom, -1)); n == 0 {
		t.Error("no histogram bars in the rendered DOM")
	}
	kinds := map[string]int{}
	for _, m := range reMarker.FindAllStringSubmatch(dom, -1) {
		kinds[m[1]]++
	}
	for _, k := range []string{"p50", "p99", "timeout", "recommended"} {
		if kinds[k] < len(rep.Hops) {
			t.Errorf("%d %s markers in the rendered DOM, want at least %d", kinds[k], k, len(rep.Hops))
		}
	}
	screenshot(t, bin, file, "analyze-seed-under-A.png")

	cr := demoCheck(t)
	b.Reset()
	if err := Check(&b, "html", cr, Options{}); err != nil {
		t.Fatal(err)
	}
	file = writeTemp(t, "demo.html", b.Bytes())
	dom, console = browse(t, bin, file, "--dump-dom")
	if len(console) > 0 {
		t.Errorf("check report: console messages:\n%s", strings.Join(console, "\n"))
	}
	if n := len(reSVG.FindAllString(dom, -1)); n != len(cr.Results) {
		t.Errorf("check report: %d charts rendered, want one per policy (%d)", n, len(cr.Results))
	}
	screenshot(t, bin, file, "check-demo.png")
}

// screenshot renders the page to a PNG and checks it is a real picture:
// the right width and more than a handful of colours (a blank or error
// page has few).
func screenshot(t *testing.T, bin, file, name string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	if dir := os.Getenv("TAILSCOPE_SCREENSHOTS"); dir != "" {
		out = filepath.Join(dir, name)
	}
	_, console := browse(t, bin, file, "--window-size=1280,2400", "--screenshot="+out)
	if len(console) > 0 {
		t.Errorf("screenshot: console messages:\n%s", strings.Join(console, "\n"))
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if w := img.Bounds().Dx(); w != 1280 {
		t.Errorf("screenshot is %d px wide, want 1280", w)
	}
	if n := colours(img, 64); n < 64 {
		t.Errorf("screenshot has %d distinct colours: the page looks blank", n)
	}
}

// colours counts distinct colours in img, stopping at limit.
func colours(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 3 {
		for x := bd.Min.X; x < bd.Max.X; x += 3 {
			r, g, b, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, b, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func TestChromiumHostileNames(t *testing.T) {
	bin := chromiumPath(t)
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
		dom, console := browse(t, bin, writeTemp(t, kind+".html", b.Bytes()), "--dump-dom")
		// A script that ran would be blocked by the CSP and logged; an
		// injected element would show up in the DOM.
		if len(console) > 0 {
			t.Errorf("%s: console messages (a script tried to run?):\n%s", kind, strings.Join(console, "\n"))
		}
		for _, bad := range []string{"<script", "<img", "<b>not-in-logs"} {
			if strings.Contains(dom, bad) {
				t.Errorf("%s: rendered DOM contains %q: a hostile name was injected", kind, bad)
			}
		}
		// Chromium serialises attribute values quoted, with '"' as an
		// entity, so an event handler on any element shows up here.
		if m := reHandler.FindString(dom); m != "" {
			t.Errorf("%s: rendered DOM has an element with an event handler: %s", kind, m)
		}
		if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the hostile hop name is not shown as text", kind)
		}
		if !strings.Contains(dom, "<title>tailscope "+kind+"</title>") {
			t.Errorf("%s: page title changed: a hostile name broke out of an element", kind)
		}
	}
}

// measureScript lays out the page and writes what TestChromiumManyHopsFit
// checks into <pre id="measure">: the viewport and page widths, the hop
// table's card (its visible and scrolled widths) and header cells, and
// any element whose right edge passes the viewport.
const measureScript = `<script>
(function () {
  var de = document.documentElement, W = de.clientWidth;
  var out = {inner: window.innerWidth, client: W, scroll: de.scrollWidth, rows: 0, heads: {}, off: []};
  var t = document.getElementById("hop-table"), card = t.parentElement, cr = card.getBoundingClientRect();
  out.cardRight = cr.right; out.cardScroll = card.scrollWidth; out.cardClient = card.clientWidth;
  out.rows = t.tBodies[0].rows.length;
  t.tHead.querySelectorAll("th").forEach(function (th) { out.heads[th.textContent] = th.getBoundingClientRect().right; });
  document.querySelectorAll("body *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > W + 1 && out.off.length < 10) out.off.push(e.tagName + "." + e.className + " right " + Math.round(r.right));
  });
  var p = document.createElement("pre"); p.id = "measure"; p.textContent = JSON.stringify(out); document.body.appendChild(p);
})();
</script>`

var (
	reCSP     = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`)
	reMeasure = regexp.MustCompile(`<pre id="measure">([^<]*)</pre>`)
)

type layout struct {
	Inner, Client, Scroll, Rows int
	CardRight                   float64
	CardScroll, CardClient      int
	Heads                       map[string]float64
	Off                         []string
}

// measure opens page at width px with measureScript added (the page's CSP,
// which forbids every script, taken out for the test only).
func measure(t *testing.T, bin string, page []byte, width int, extraCSS string) layout {
	t.Helper()
	doc := reCSP.ReplaceAllString(string(page), "")
	if doc == string(page) {
		t.Fatal("the page has no Content-Security-Policy to take out: the test page would not run its script")
	}
	doc = strings.Replace(doc, "</head>", "<style>"+extraCSS+"</style></head>", 1)
	doc = strings.Replace(doc, "</body>", measureScript+"</body>", 1)
	dom, console := browse(t, bin, writeTemp(t, "measure.html", []byte(doc)), "--dump-dom", "--window-size="+strconv.Itoa(width)+",900")
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	m := reMeasure.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the measuring script did not run; DOM:\n%.2000s", dom)
	}
	var l layout
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &l); err != nil {
		t.Fatalf("measure: %v: %s", err, m[1])
	}
	if l.Inner != width {
		t.Fatalf("the window is %d px wide, want %d: --window-size was not applied", l.Inner, width)
	}
	return l
}

// fits says why a layout does not fit its page, or "".
func (l layout) fits() string {
	switch {
	case l.Scroll > l.Client:
		return fmt.Sprintf("the page is %d px wide in a %d px window", l.Scroll, l.Client)
	case len(l.Off) > 0:
		return fmt.Sprintf("elements end past the window's right edge: %s", strings.Join(l.Off, "; "))
	case l.CardScroll > l.CardClient:
		return fmt.Sprintf("the hop table is %d px wide in a %d px card", l.CardScroll, l.CardClient)
	}
	// The failures column is left out on logs without outcomes (their
	// tests say so); the others are always there.
	for _, h := range []string{"timeout", "failures", "peak/s", "recommendation"} {
		r, ok := l.Heads[h]
		if !ok && h == "failures" {
			continue
		}
		if !ok || r > l.CardRight {
			return fmt.Sprintf("the %s column ends at %.0f px, past its card (%.0f px)", h, r, l.CardRight)
		}
	}
	return ""
}

// TestChromiumManyHopsFit: 55 hops with long, unbreakable service-mesh
// names fit a laptop window: the hop table, its timeout and class columns
// included, lies within its card and nothing on the page is wider than
// the window. The control (the table's cells kept from wrapping, as long
// names did before) must be caught by the same measurement.
func TestChromiumManyHopsFit(t *testing.T) {
	bin := chromiumPath(t)
	rep := manyHopsReport(t, 55, 40)
	var b bytes.Buffer
	if err := Analysis(&b, "html", rep, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1366} { // narrower than a 1400 px laptop window
		l := measure(t, bin, b.Bytes(), width, "")
		if l.Rows != 55 {
			t.Errorf("%d px: the hop table has %d rows, want 55", width, l.Rows)
		}
		if why := l.fits(); why != "" {
			t.Errorf("%d px: %s", width, why)
		}
	}
	if dir := os.Getenv("TAILSCOPE_SCREENSHOTS"); dir != "" {
		_, _ = browse(t, bin, writeTemp(t, "many.html", b.Bytes()), "--window-size=1366,1400", "--screenshot="+filepath.Join(dir, "analyze-55-hops-1366.png"))
	}
	control := measure(t, bin, b.Bytes(), 1366, "#hop-table td { white-space: nowrap; overflow-wrap: normal; }")
	if control.fits() == "" {
		t.Errorf("control: a hop table whose names cannot wrap was measured as fitting: %+v", control)
	}
}
