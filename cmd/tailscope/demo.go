package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/logs"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/report"
	"github.com/tailscope/tailscope/samples"
	"github.com/tailscope/tailscope/span"
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
	var pols []*policy.Policy
	for _, name := range samples.Policies {
		path := "seed-chain/" + name + ".yaml"
		data, err := samples.SeedChain.ReadFile(path)
		if err != nil {
			return err
		}
		p, err := policy.Parse(path, data)
		if err != nil {
			return fmt.Errorf("embedded policy: %w", err)
		}
		p.Name = name
		pols = append(pols, p)
	}
	data, err := samples.SeedChain.ReadFile("seed-chain/spans.jsonl")
	if err != nil {
		return err
	}
	var spans []span.Span
	st, err := ingest.ReadStream("seed-chain/spans.jsonl", bytes.NewReader(data), ingest.Options{}, func(s *span.Span) { spans = append(spans, *s) })
	if err != nil {
		return err
	}
	l := logs.FromSpans(spans, st)
	rep := l.Report(analyze.Options{})
	cr := check.Run(rep, l.Requests, pols, copt)
	return out.write(e, func(w io.Writer) error {
		return report.Check(w, out.format, cr, renderOptions(e, out.output))
	})
}
