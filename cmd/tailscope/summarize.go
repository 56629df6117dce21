// The summarize and merge commands: their flags and usage; write partial summaries (.tss).

package main

import (
	"fmt"
	"github.com/tailscope/tailscope/analyze"
	"io"

	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/summary"
)

const summarizeUsage = `Usage: tailscope summarize [flags] PATH... -o PART.tss

Reads span logs (any format analyze reads, and other summaries) and writes
their analysis state to a partial summary: per hop the attempt counts and
latency digests (exact values up to 100,000 per hop, 0.4%-accurate bins
beyond), the deterministic trace sample's spans, and what was read. Run it
where the logs lie, one machine per share of them; 'tailscope merge'
combines the summaries, and analyze, recommend and check take summaries
as input next to logs. The report on merged summaries is the report on all
the logs read at once (docs/DESIGN.md, "Partial summaries").

The input flags (--since, --hops, --hop-by…) apply to the logs read here;
a summary given as input is taken as it was made (a note says the filters
did not apply to it). A summary records its --hop-by and --map: summaries
made with different ones are refused rather than merged into mixed hops.

Examples:
  tailscope summarize /data/day1/ -o day1.tss
  tailscope merge day*.tss -o week.tss
  tailscope analyze week.tss
`

func runSummarize(e *env, args []string) error {
	fs := newFlags(e, "summarize", summarizeUsage)
	var in inputFlags
	var output string
	fs.StringVarP(&output, "output", "o", "", "write the summary to this file (atomically); - for stdout")
	in.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if output == "" {
		return usagef("say where the summary goes: -o PART.tss (or -o - for stdout)")
	}
	paths := fs.Args()
	opt, err := in.inputs(e, paths, output)
	if err != nil {
		return err
	}
	lo, m := in.read(e, opt)
	s, err := pipeline.Summarize(paths, lo)
	m.done()
	if err != nil {
		return err
	}
	if in.strict && s.Stats.Skipped > 0 {
		return pipeline.Strict(s.Stats, flagNames)
	}
	return writeTo(e, output, func(w io.Writer) error { return summary.Write(w, s) })
}

const mergeUsage = `Usage: tailscope merge PART.tss... -o ALL.tss

Combines partial summaries (see 'tailscope summarize') into one: the
report on it is the report on all their logs read at once. Merging is
associative and order-independent, so summaries may be merged in any
order and in stages; a trace whose spans are in different summaries is
whole again in the merge. Summaries are read one at a time.

Examples:
  tailscope merge part-*.tss -o all.tss
  tailscope analyze all.tss
`

func runMerge(e *env, args []string) error {
	fs := newFlags(e, "merge", mergeUsage)
	var output string
	var quiet bool
	var maxHops int
	fs.StringVarP(&output, "output", "o", "", "write the merged summary to this file (atomically); - for stdout")
	fs.IntVar(&maxHops, "max-hops", analyze.DefaultMaxHops, "most distinct hops the merge may hold (protects memory, as for the logs read directly)")
	fs.BoolVarP(&quiet, "quiet", "q", false, "no notes on stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	if output == "" {
		return usagef("say where the merged summary goes: -o ALL.tss (or -o - for stdout)")
	}
	paths := fs.Args()
	if len(paths) == 0 {
		return usagef("no input: give the summaries to merge")
	}
	if err := notAnInput(e, output, paths); err != nil {
		return err
	}
	if maxHops <= 0 {
		return usagef("--max-hops %d: want a number above 0", maxHops)
	}
	s, err := summary.MergeFilesMax(paths, maxHops, flagNames)
	if err != nil {
		return err
	}
	if !quiet {
		for _, n := range s.Stats.Notes {
			fmt.Fprintf(e.stderr, "tailscope: note: %s\n", visible(n))
		}
	}
	return writeTo(e, output, func(w io.Writer) error { return summary.Write(w, s) })
}
