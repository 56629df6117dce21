package report

import (
	"bytes"
	"encoding/json"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// answerScript reports where the summary panel ends, in CSS px from the
// top of the page.
const answerScript = `<script>
(function () {
  var a = document.getElementById("answer"), r = a ? a.getBoundingClientRect() : null;
  var p = document.createElement("pre"); p.id = "answer-measure";
  p.textContent = JSON.stringify({found: !!a, bottom: r ? r.bottom + window.scrollY : -1, width: window.innerWidth});
  document.body.appendChild(p);
})();
</script>`

var reAnswer = regexp.MustCompile(`<pre id="answer-measure">([^<]*)</pre>`)

// TestChromiumSummaryAboveTheFold: in a 1400×900 window the HTML
// analysis's summary ends above the fold, on the seed and on the real
// minutes, drawn by the real headless Chromium.
func TestChromiumSummaryAboveTheFold(t *testing.T) {
	bin := chromiumPath(t)
	reps := realReports(t)
	for _, f := range []string{"spans.jsonl", "recorded-under-A.jsonl"} {
		rep, _ := analysisOf(t, f, "")
		reps[f] = rep
	}
	for name, rep := range reps {
		var b bytes.Buffer
		if err := analysisHTML(&b, rep); err != nil {
			t.Fatal(err)
		}
		doc := reCSP.ReplaceAllString(b.String(), "")
		doc = strings.Replace(doc, "</body>", answerScript+"</body>", 1)
		dom, console := browse(t, bin, writeTemp(t, "answer.html", []byte(doc)), "--dump-dom", "--window-size=1400,900")
		if len(console) > 0 {
			t.Errorf("%s: console messages:\n%s", name, strings.Join(console, "\n"))
		}
		m := reAnswer.FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("%s: the measuring script did not run", name)
		}
		var got struct {
			Found  bool
			Bottom float64
			Width  int
		}
		if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &got); err != nil {
			t.Fatal(err)
		}
		if !got.Found || got.Width != 1400 {
			t.Fatalf("%s: summary found %v in a %d px window", name, got.Found, got.Width)
		}
		if got.Bottom > 900 {
			t.Errorf("%s: the summary ends at %s px, below the fold of a 1400×900 window", name, strconv.FormatFloat(got.Bottom, 'f', 0, 64))
		}
		t.Logf("%s: summary ends at %.0f px", name, got.Bottom)
	}
}
