// Package report renders tailscope's results — the analysis and the check —
// as text, Markdown, JSON or HTML, through one dispatch per result kind.
//
// Renderers see results, never compute them: every number shown comes from
// the analyze.Report or check.Report given, so all formats agree. Output is
// deterministic (sorted hops, no wall-clock times) and every write error is
// returned.
package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
)

// Formats are the output formats, as --format spells them.
var Formats = []string{"text", "markdown", "json", "html"}

// Options tune rendering.
type Options struct {
	// Color enables ANSI colour in text output (only on a terminal, never
	// with NO_COLOR).
	Color bool
	// TraceURL, when set, makes the trace ids a report cites links in
	// HTML and Markdown: TraceIDPlaceholder in it is replaced by the id
	// (tracelink.go).
	TraceURL string
}

// ValidFormat reports whether f is one of Formats.
func ValidFormat(f string) bool {
	for _, x := range Formats {
		if x == f {
			return true
		}
	}
	return false
}

// Analysis renders an analysis report.
func Analysis(w io.Writer, format string, rep *analyze.Report, opt Options) error {
	bw := bufio.NewWriter(w)
	var err error
	switch format {
	case "json":
		err = writeJSON(bw, rep)
	case "text":
		err = analysisText(bw, rep, opt)
	case "markdown":
		err = analysisMarkdownOpt(bw, rep, opt)
	case "html":
		err = analysisHTMLOpt(bw, rep, opt)
	default:
		return fmt.Errorf("unknown format %q", format)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// Check renders a check report.
func Check(w io.Writer, format string, rep *check.Report, opt Options) error {
	bw := bufio.NewWriter(w)
	var err error
	switch format {
	case "json":
		err = writeJSON(bw, rep)
	case "text":
		err = checkText(bw, rep, opt)
	case "markdown":
		err = checkMarkdown(bw, rep)
	case "html":
		err = checkHTML(bw, rep)
	default:
		return fmt.Errorf("unknown format %q", format)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}
