// The demo command: runs check on the embedded seed sample with policies A–E and renders the table.

package main

import (
	"io"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/report"
)

const demoUsage = `Usage: tailscope demo [flags]

Runs check on the embedded seed sample — the source article's 200 requests
over forward → retrieve → generate, recorded with no timeouts — with its
five configs:

  A  3s per hop, 2 retries, 30s budget   (chosen by feel)
  B  3s, no retry, 30s
  C  12s, no retry, 30s                  (per-hop timeout from the tail)
  D  3s, 2 retries, 9s budget            (budget = timeout × hops: dead retries)
  E  1s, 1 retry, 8s                     (aggressive)

and prints the side-by-side table. No files, no network.
`

func runDemo(e *env, args []string) error {
	fs := newFlags(e, "demo", demoUsage)
	var out outputFlags
	var c checkFlags
	out.register(fs)
	c.registerModel(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("demo takes no arguments (got %q)", fs.Arg(0))
	}
	copt, err := c.options()
	if err != nil {
		return err
	}
	pols, err := pipeline.SeedPolicies()
	if err != nil {
		return err
	}
	l, err := pipeline.Seed("spans.jsonl")
	if err != nil {
		return err
	}
	rep := l.Report(analyze.Options{Names: flagNames})
	cr := check.Run(rep, l.Requests, pols, copt)
	return out.write(e, func(w io.Writer) error {
		return report.Check(w, out.format, cr, renderOptions(e, out.output))
	})
}
