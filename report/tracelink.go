package report

import (
	"html/template"
	"net/url"
	"regexp"
	"strings"

	"github.com/tailscope/tailscope/analyze"
)

// Trace links (Options.TraceURL, --trace-url): where a report names a
// trace by its id, HTML and Markdown make the id a link to the user's
// trace UI. Only the ids the report itself cites are linked (tokens of the
// sentence that are one of them), so a hop or attribute value that happens
// to look like an id is left alone.

// TraceIDPlaceholder is what a trace URL template writes where the trace
// id goes.
const TraceIDPlaceholder = "{trace_id}"

// ValidTraceURL says what is wrong with a trace URL template, or "".
func ValidTraceURL(t string) string {
	if !strings.Contains(t, TraceIDPlaceholder) {
		return "no " + TraceIDPlaceholder + " in it"
	}
	u, err := url.Parse(strings.ReplaceAll(t, TraceIDPlaceholder, "x"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "want an http:// or https:// URL"
	}
	return ""
}

// traceHref is the link to trace id.
func traceHref(tmpl, id string) string {
	return strings.ReplaceAll(tmpl, TraceIDPlaceholder, url.PathEscape(id))
}

// reToken splits a sentence into the tokens a trace id can be.
var reToken = regexp.MustCompile(`[A-Za-z0-9_\-:.]+`)

// citedTraces are the trace ids a report cites as examples.
func citedTraces(rep *analyze.Report) map[string]bool {
	ids := map[string]bool{}
	add := func(xs ...string) {
		for _, x := range xs {
			if x != "" {
				ids[x] = true
			}
		}
	}
	if tr := rep.TailRequests; tr != nil {
		add(tr.Examples...)
	}
	for _, x := range rep.TailRanking {
		add(x.Examples...)
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if e := h.Examples; e != nil {
			add(e.SlowestTraceID, e.TimeoutTraceID, e.FailedTraceID)
		}
		for _, a := range h.Attribution {
			add(a.Examples...)
		}
		if g := h.Gap; g != nil {
			add(g.Examples...)
		}
	}
	if c := rep.Compare; c != nil {
		for _, h := range c.Ranking {
			add(h.Examples...)
		}
	}
	return ids
}

// linker links the cited trace ids of sentences, for one report.
type linker struct {
	tmpl string
	ids  map[string]bool
}

func newLinker(rep *analyze.Report, tmpl string) *linker {
	if tmpl == "" {
		return &linker{}
	}
	return &linker{tmpl: tmpl, ids: citedTraces(rep)}
}

// html is s escaped for HTML (made Visible first), its cited trace ids
// links.
func (l *linker) html(s string) template.HTML {
	s = Visible(s)
	if l == nil || l.tmpl == "" {
		return template.HTML(template.HTMLEscapeString(s))
	}
	var b strings.Builder
	last := 0
	for _, m := range reToken.FindAllStringIndex(s, -1) {
		tok := s[m[0]:m[1]]
		if !l.ids[tok] {
			continue
		}
		b.WriteString(template.HTMLEscapeString(s[last:m[0]]))
		b.WriteString(`<a class="trace" href="` + template.HTMLEscapeString(traceHref(l.tmpl, tok)) + `">` + template.HTMLEscapeString(tok) + `</a>`)
		last = m[1]
	}
	b.WriteString(template.HTMLEscapeString(s[last:]))
	return template.HTML(b.String())
}

// md is s for Markdown (md), its cited trace ids links.
func (l *linker) md(s string) string {
	if l == nil || l.tmpl == "" {
		return md(s)
	}
	var b strings.Builder
	last := 0
	for _, m := range reToken.FindAllStringIndex(s, -1) {
		tok := s[m[0]:m[1]]
		if !l.ids[tok] {
			continue
		}
		b.WriteString(md(s[last:m[0]]))
		b.WriteString("[" + md(tok) + "](" + strings.ReplaceAll(traceHref(l.tmpl, tok), ")", "%29") + ")")
		last = m[1]
	}
	b.WriteString(md(s[last:]))
	return b.String()
}
