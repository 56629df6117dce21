package report

import (
	"bytes"
	"strings"
	"testing"
)

// With a trace URL, the trace ids a report cites become links in HTML and
// Markdown (an id with characters no id has is left as escaped text);
// without one the pages are as before.
func TestTraceLinks(t *testing.T) {
	rep, _ := analysisOf(t, "recorded-under-A.jsonl", "")
	rep.TailRequests.Examples = append(rep.TailRequests.Examples, `x"><script>alert(1)</script>`)
	const tmpl = "https://jaeger.example/trace/{trace_id}?uiEmbed=v0"
	var h, m, plain bytes.Buffer
	if err := analysisHTMLOpt(&h, rep, Options{TraceURL: tmpl}); err != nil {
		t.Fatal(err)
	}
	if err := analysisMarkdownOpt(&m, rep, Options{TraceURL: tmpl}); err != nil {
		t.Fatal(err)
	}
	if err := analysisHTML(&plain, rep); err != nil {
		t.Fatal(err)
	}
	id := rep.TailRequests.Examples[0]
	if !strings.Contains(h.String(), `<a class="trace" href="https://jaeger.example/trace/`+id+`?uiEmbed=v0">`+id+`</a>`) {
		t.Errorf("HTML: no link for %s", id)
	}
	if strings.Contains(h.String(), "<script>alert") || strings.Contains(m.String(), "<script>alert") {
		t.Error("a hostile trace id was written raw")
	}
	if !strings.Contains(m.String(), "["+id+"](https://jaeger.example/trace/"+id+"?uiEmbed=v0)") {
		t.Errorf("Markdown: no link for %s", id)
	}
	if strings.Contains(plain.String(), `class="trace"`) {
		t.Error("links without a trace URL")
	}
	for _, c := range []struct {
		url string
		ok  bool
	}{{tmpl, true}, {"https://x/{trace_id}", true}, {"https://x/trace", false}, {"ftp://x/{trace_id}", false}, {"{trace_id}", false}} {
		if got := ValidTraceURL(c.url) == ""; got != c.ok {
			t.Errorf("ValidTraceURL(%q) ok = %v, want %v", c.url, got, c.ok)
		}
	}

}
