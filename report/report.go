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
	"github.com/tailscope/tailscope/option"
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
	// Verbose prints each timed hop's full basis under the text report's
	// recommendation table, whose BASIS column otherwise says in a few
	// words what set the value (shortWhy). Markdown and HTML keep the full
	// basis in a details block, JSON in hops[].recommendation.basis.
	Verbose bool
	// Names names the settings the reports' hints mention (Verbose,
	// Format, PolicyInForce, Compare, CompareWindow, ExcludeWindow:
	// option.Verbose, …) as the caller's user knows them; nil: by
	// option's own names.
	Names option.Names
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

// aboutTheRecommendation are the analysis's warnings on the policy it
// recommends: its out-of-sample bound, its replay, its held-out fit, its
// caps. A check report checks other policies, and its lint says the same
// things of each of them in their words ("this policy"); printed there,
// these would speak of a policy no one is checking, and the out-of-sample
// one would be said twice.
var aboutTheRecommendation = map[string]bool{
	analyze.CodeOutOfSample:       true,
	"provisional-policy":          true,
	"false-timeout-target-missed": true,
	"held-out-target-missed":      true,
	"budget-capped":               true,
	"duration-capped":             true,
}

// checkWarnings is rep with the analysis's warnings about the recommended
// policy left out.
func checkWarnings(rep *check.Report) *check.Report {
	var keep []analyze.Warning
	for _, w := range rep.Warnings {
		if !aboutTheRecommendation[w.Code] {
			keep = append(keep, w)
		}
	}
	if len(keep) == len(rep.Warnings) {
		return rep
	}
	out := *rep
	out.Warnings = keep
	if out.Warnings == nil {
		out.Warnings = []analyze.Warning{}
	}
	return &out
}

// Check renders a check report.
func Check(w io.Writer, format string, rep *check.Report, opt Options) error {
	rep = checkWarnings(rep)
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
